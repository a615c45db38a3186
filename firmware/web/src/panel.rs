//! The panel's files, embedded in the binary, and the OpenAPI document.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::{error, ApiError};

/// The panel's files, embedded at build time (web-ui/, under 300 KB with uPlot).
pub(crate) const PANEL: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("../../../web-ui/index.html")),
    ("/app.js", "text/javascript; charset=utf-8", include_str!("../../../web-ui/app.js")),
    ("/app.css", "text/css; charset=utf-8", include_str!("../../../web-ui/app.css")),
    ("/status.js", "text/javascript; charset=utf-8", include_str!("../../../web-ui/status.js")),
    ("/settings.js", "text/javascript; charset=utf-8", include_str!("../../../web-ui/settings.js")),
    (
        "/vendor/uPlot.iife.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web-ui/vendor/uPlot.iife.min.js"),
    ),
    ("/vendor/uPlot.min.css", "text/css; charset=utf-8", include_str!("../../../web-ui/vendor/uPlot.min.css")),
];

pub(crate) async fn panel_file(uri: axum::http::Uri) -> Result<Response, ApiError> {
    match PANEL.iter().find(|(p, _, _)| *p == uri.path()) {
        Some((_, kind, body)) => Ok((
            [
                (header::CONTENT_TYPE, *kind),
                (header::CACHE_CONTROL, "no-cache"),
                (header::CONTENT_SECURITY_POLICY, "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            *body,
        )
            .into_response()),
        None => Err(error(StatusCode::NOT_FOUND, "not found")),
    }
}

/// The OpenAPI document of this API.
pub const OPENAPI: &str = include_str!("../openapi.json");

pub(crate) async fn openapi() -> Result<Response, ApiError> {
    Ok(([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response())
}

/// The panel's total size, bytes.
pub fn panel_size() -> usize {
    PANEL.iter().map(|(_, _, b)| b.len()).sum()
}
