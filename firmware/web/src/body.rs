//! Request bodies: read within a size and a time limit.

use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Json;

use crate::error::error;

/// The largest small JSON body (login, live, password...) read.
pub(crate) const SMALL_BODY: usize = 16 << 10;
/// The largest configuration or backup read.
pub(crate) const LARGE_BODY: usize = 1 << 20;
/// How long a body may take to arrive.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The request's body, at most `limit` bytes, arriving within [`BODY_TIMEOUT`].
pub(crate) async fn read_body(req: Request, limit: usize) -> Result<axum::body::Bytes, Response> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(req.into_body(), limit)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(error(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over {limit} bytes, or broken"))),
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
        )),
    }
}

pub(crate) async fn json_body<T: serde::de::DeserializeOwned>(req: Request) -> Option<Json<T>> {
    let bytes = read_body(req, SMALL_BODY).await.ok()?;
    serde_json::from_slice(&bytes).ok().map(Json)
}
