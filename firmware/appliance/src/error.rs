//! Errors at the level of the whole box.

/// Why a role could not run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Something the user gave is wrong (bad device, missing element for a chosen feature):
    /// the command line exits with code 2.
    #[error("{0}")]
    BadInput(String),
    /// Something failed while running.
    #[error("{0}")]
    Runtime(String),
}

impl From<telebridge_media::MediaError> for AppError {
    fn from(e: telebridge_media::MediaError) -> Self {
        use telebridge_media::MediaError as M;
        match e {
            M::Capture(_) | M::ElementMissing { .. } | M::NoEncoder(_) => AppError::BadInput(e.to_string()),
            other => AppError::Runtime(other.to_string()),
        }
    }
}
