//! Request bodies: read within a size and a time limit.

use std::time::Duration;

use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::error::{error, ApiError};

/// The largest small JSON body (login, live, password...) read.
pub(crate) const SMALL_BODY: usize = 16 << 10;
/// The largest configuration or backup read.
pub(crate) const LARGE_BODY: usize = 1 << 20;
/// How long a body may take to arrive.
const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// The request's body, at most `limit` bytes, arriving within [`BODY_TIMEOUT`].
pub(crate) async fn read_body(req: Request, limit: usize) -> Result<axum::body::Bytes, ApiError> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(req.into_body(), limit)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(error(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over {limit} bytes, or broken"))),
        Err(_) => Err(error(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs()),
        )),
    }
}

/// What a JSON body must look like, for the answer to one that does not.
pub(crate) trait Shape {
    /// An example, `{"live": true}`.
    const SHAPE: &'static str;
}

/// The one JSON extractor of the API: a small body (at most [`SMALL_BODY`] bytes, arriving
/// within [`BODY_TIMEOUT`]) read as `T`; one too big, too late or not a `T` is answered with the
/// shape expected and what was wrong, naming the field.
pub(crate) struct SmallJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Shape> FromRequest<S> for SmallJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        let bytes = read_body(req, SMALL_BODY).await?;
        serde_json::from_slice(&bytes)
            .map(SmallJson)
            .map_err(|e| error(StatusCode::UNPROCESSABLE_ENTITY, format!("body must be {}: {e}", T::SHAPE)))
    }
}
