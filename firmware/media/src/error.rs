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
        /// It came from the video source ([`VIDEO_SOURCE`] or an element inside it): a capture
        /// device that is missing, busy or gone, which the user can fix.
        at_source: bool,
    },
    /// A viewer's WebRTC offer cannot be answered: why, in words.
    #[error("{0}")]
    Offer(String),
    /// `decoder.sink = window` on a box without a desktop to open a window on.
    #[error(
        "decoder.sink is \"window\" but no desktop could be opened (neither WAYLAND_DISPLAY nor DISPLAY leads to \
         one): choose kms for the HDMI output, or fake"
    )]
    NoDesktop,
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

/// The name of the encoder pipeline's video source element: an error from it, or from inside
/// it, is the source's ([`MediaError::Pipeline`]'s `at_source`).
pub const VIDEO_SOURCE: &str = "video-source";

impl MediaError {
    /// Turns a bus error message into a typed error naming the element.
    pub fn from_bus_error(err: &gst::message::Error) -> Self {
        let src = err.src();
        let mut at_source = false;
        let mut cur = src.cloned();
        while let Some(o) = cur {
            if o.name() == VIDEO_SOURCE {
                at_source = true;
                break;
            }
            cur = o.parent();
        }
        MediaError::Pipeline {
            element: src.map(|s| s.path_string().to_string()).unwrap_or_else(|| "pipeline".into()),
            error: err.error().to_string(),
            debug: err.debug().map(|d| d.to_string()),
            at_source,
        }
    }
}

/// Makes an element, naming the package to install when it is missing.
pub fn make(factory: &'static str, package: &'static str) -> Result<gst::Element, MediaError> {
    gst::ElementFactory::make(factory).build().map_err(|_| MediaError::ElementMissing { element: factory, package })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an element posts, read as [`MediaError::from_bus_error`] reads it.
    fn posted_by(element: &gst::Element) -> MediaError {
        let msg = gst::message::Error::builder(gst::CoreError::Failed, "boom").src(element).build();
        match msg.view() {
            gst::MessageView::Error(e) => MediaError::from_bus_error(e),
            _ => unreachable!(),
        }
    }

    #[test]
    fn an_error_from_the_video_source_or_inside_it_is_the_source_s() {
        gst::init().unwrap();
        let pipeline = gst::Pipeline::new();
        let source = gst::Bin::builder().name(VIDEO_SOURCE).build();
        let inner = gst::ElementFactory::make("identity").name("inner").build().unwrap();
        let other = gst::ElementFactory::make("identity").name("x264enc").build().unwrap();
        source.add(&inner).unwrap();
        pipeline.add_many([source.upcast_ref(), &other]).unwrap();
        let at = |e: MediaError| match e {
            MediaError::Pipeline { at_source, element, .. } => (at_source, element),
            _ => unreachable!(),
        };
        assert!(at(posted_by(source.upcast_ref())).0);
        let (inside, path) = at(posted_by(&inner));
        assert!(inside, "{path}");
        assert!(!at(posted_by(&other)).0);
    }
}
