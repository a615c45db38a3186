//! The API's answers that are not a success, in one type: a status with words the user can act
//! on, or an internal failure whose details go to the log and never into the answer.

use std::net::IpAddr;

use crate::config_store::StoreError;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tracing::error as log_error;

use crate::auth;

/// The body of every answer that is not a success, on either side of a pairing: one box
/// writes it, the other reads it back ([`ErrorBody::read`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorBody {
    /// What went wrong and what to do, in words.
    pub error: String,
    /// A configuration that does not validate: each field and its problem.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldProblem>,
}

/// One field of a configuration that does not validate.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FieldProblem {
    /// The field's path (`video.bitrate_kbps`); empty for the whole body.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ErrorBody {
    fn new(error: impl Into<String>) -> Self {
        Self { error: error.into(), errors: Vec::new() }
    }

    /// The body of another box's answer, if it is one of these.
    pub fn read(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

/// An answer that is not a success.
#[derive(Debug)]
pub enum ApiError {
    /// A status the user can act on, with what to do.
    User(StatusCode, String),
    /// The same, and when to try again (`Retry-After`, seconds).
    Later(StatusCode, String, u64),
    /// A configuration that does not validate: each field and its problem.
    Invalid(Vec<(String, String)>),
    /// Something failed inside the box. The answer says `what` failed; the details (paths,
    /// the system's words) go to the log only.
    Internal {
        /// What failed, in the user's words ("cannot save the configuration").
        what: &'static str,
        /// The details, for the log.
        detail: String,
    },
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::User(code, message) => (code, Json(ErrorBody::new(message))).into_response(),
            ApiError::Later(code, message, secs) => {
                let mut r = (code, Json(ErrorBody::new(message))).into_response();
                if let Ok(v) = secs.to_string().parse() {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                r
            }
            ApiError::Invalid(errors) => (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(ErrorBody {
                    error: "the configuration was not changed".into(),
                    errors: errors.into_iter().map(|(field, message)| FieldProblem { field, message }).collect(),
                }),
            )
                .into_response(),
            ApiError::Internal { what, detail } => {
                log_error!(%detail, "{what}");
                (StatusCode::INTERNAL_SERVER_ERROR, Json(ErrorBody::new(format!("{what} (the box logged why)"))))
                    .into_response()
            }
        }
    }
}

/// A failure the user can act on: `code` (4xx, or a 503 with fixed words) and `message`.
pub(crate) fn error(code: StatusCode, message: impl Into<String>) -> ApiError {
    ApiError::User(code, message.into())
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Invalid(errs) => {
                ApiError::Invalid(errs.0.into_iter().map(|e| (e.field.to_string(), e.message)).collect())
            }
            StoreError::Save { .. } => {
                ApiError::Internal { what: "cannot save the configuration", detail: e.to_string() }
            }
            StoreError::Stopped => ApiError::User(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        }
    }
}

/// The answer to an attempt refused before anything was checked (see [`auth`]).
pub(crate) fn refused(ip: IpAddr, refusal: auth::Refusal) -> ApiError {
    match refusal {
        auth::Refusal::Locked(wait) => ApiError::Later(
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many wrong attempts from {ip}: wait {} s", wait.as_secs() + 1),
            wait.as_secs() + 1,
        ),
        auth::Refusal::TooMany => ApiError::Later(
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many attempts from {ip} at once: {} a minute are checked", auth::MAX_FAILURES),
            auth::FAILURE_WINDOW.as_secs(),
        ),
        auth::Refusal::Busy => ApiError::Later(
            StatusCode::SERVICE_UNAVAILABLE,
            "the box is checking other passwords: try again in a few seconds".into(),
            5,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(r: Response) -> (StatusCode, String) {
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap_or_default();
        (status, String::from_utf8_lossy(&bytes).to_string())
    }

    #[tokio::test]
    async fn an_internal_failure_answers_without_its_details() {
        let e = StoreError::Save {
            path: "/etc/telebridge/telebridge.toml".into(),
            message: "No space left on device (os error 28)".into(),
        };
        let (status, text) = body(ApiError::from(e).into_response()).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(text, r#"{"error":"cannot save the configuration (the box logged why)"}"#);
    }

    #[tokio::test]
    async fn user_errors_keep_their_words_and_retry_after() {
        let (status, text) = body(error(StatusCode::CONFLICT, "the password is already set").into_response()).await;
        assert_eq!((status, text.as_str()), (StatusCode::CONFLICT, r#"{"error":"the password is already set"}"#));
        let r = refused("192.0.2.1".parse().unwrap_or(IpAddr::V4(0.into())), auth::Refusal::Busy).into_response();
        assert_eq!(r.headers().get(header::RETRY_AFTER).and_then(|v| v.to_str().ok()), Some("5"));
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}
