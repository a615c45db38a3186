//! Errors of the media layer.

use gst::prelude::*;

use crate::capture_device::CaptureError;
use crate::encoder_choice::NoEncoder;

/// Why a pipeline could not be built or stopped running.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// A GStreamer element this feature needs is not installed.
    #[error("GStreamer element {element} is missing: install {package}")]
    ElementMissing {
        /// Factory name.
        element: &'static str,
        /// Debian package that provides it.
        package: &'static str,
    },
    /// The capture device cannot be used.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// No encoder works.
    #[error(transparent)]
    NoEncoder(#[from] NoEncoder),
    /// An element posted an error on the bus.
    #[error("{element}: {error}")]
    Pipeline {
        /// Path of the element that failed.
        element: String,
        /// The error it posted.
        error: String,
        /// GStreamer's debug string (for the log, not for users).
        debug: Option<String>,
    },
    /// GStreamer refused an operation (linking, a state change).
    #[error("GStreamer: {0}")]
    Gst(String),
}

impl From<gst::glib::BoolError> for MediaError {
    fn from(e: gst::glib::BoolError) -> Self {
        MediaError::Gst(e.to_string())
    }
}

impl From<gst::StateChangeError> for MediaError {
    fn from(e: gst::StateChangeError) -> Self {
        MediaError::Gst(e.to_string())
    }
}

impl MediaError {
    /// Turns a bus error message into a typed error naming the element.
    pub fn from_bus_error(err: &gst::message::Error) -> Self {
        MediaError::Pipeline {
            element: err.src().map(|s| s.path_string().to_string()).unwrap_or_else(|| "pipeline".into()),
            error: err.error().to_string(),
            debug: err.debug().map(|d| d.to_string()),
        }
    }
}

/// Makes an element, naming the package to install when it is missing.
pub fn make(factory: &'static str, package: &'static str) -> Result<gst::Element, MediaError> {
    gst::ElementFactory::make(factory).build().map_err(|_| MediaError::ElementMissing { element: factory, package })
}
