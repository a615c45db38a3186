//! Errors at the level of the whole box, with their sources kept typed to the end: the command
//! line turns each into its exit code ([`AppError::exit_code`]), the API into its answer.

use telebridge_config::ValidationErrors;
use telebridge_gpio::backend::GpioError;
use telebridge_media::MediaError;
use telebridge_srt::input::InputError;
use telebridge_srt::output::OutputError;

/// Why a role could not run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// Something the user gave is wrong, in words that say what to fix.
    #[error("{0}")]
    BadInput(String),
    /// Something failed while running.
    #[error("{0}")]
    Runtime(String),
    /// The media: a missing element, a capture device, no encoder (the user's to fix), or a
    /// pipeline that failed.
    #[error(transparent)]
    Media(#[from] MediaError),
    /// A configuration that does not validate.
    #[error(transparent)]
    Config(#[from] ValidationErrors),
    /// The GPIO pins the configuration names cannot be opened.
    #[error(transparent)]
    Gpio(#[from] GpioError),
    /// An SRT output could not start.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// An SRT input could not start.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A task of the box panicked or was cancelled.
    #[error("a task of the box ended abnormally: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl AppError {
    /// Whether the user can fix it (a setting, a device, a package): the command line then
    /// says so in one line and exits with 2.
    pub fn is_bad_input(&self) -> bool {
        match self {
            AppError::BadInput(_) | AppError::Config(_) | AppError::Gpio(_) => true,
            // (A capture device that disappears or is busy fails in the source's elements.)
            AppError::Media(m) => match m {
                MediaError::Capture(_)
                | MediaError::ElementMissing { .. }
                | MediaError::NoEncoder(_)
                | MediaError::NoDesktop
                | MediaError::Offer(_) => true,
                MediaError::Pipeline { at_source, .. } => *at_source,
                MediaError::Gst(_) => false,
            },
            AppError::Runtime(_) | AppError::Output(_) | AppError::Input(_) | AppError::Task(_) => false,
        }
    }

    /// The command line's exit code: 2 for what the user can fix, 1 for a failure while running.
    pub fn exit_code(&self) -> u8 {
        if self.is_bad_input() {
            2
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_user_can_fix_exits_with_2_and_a_failure_while_running_with_1() {
        let missing = MediaError::ElementMissing { element: "kmssink", package: "gstreamer1.0-plugins-bad" };
        assert_eq!(AppError::from(missing).exit_code(), 2);
        let failed =
            MediaError::Pipeline { element: "x264enc".into(), error: "boom".into(), debug: None, at_source: false };
        assert_eq!(AppError::from(failed).exit_code(), 1);
        let gone = MediaError::Pipeline {
            element: "/GstPipeline:pipeline0/GstV4l2Src:video-source".into(),
            error: "Could not read from resource.".into(),
            debug: None,
            at_source: true,
        };
        assert_eq!(AppError::from(gone).exit_code(), 2);
        let invalid = telebridge_config::Config { role: "mixer".into(), ..Default::default() }.validate().unwrap_err();
        let e = AppError::from(invalid);
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("role: \"mixer\" is not one of"), "{e}");
        assert_eq!(AppError::from(OutputError::Thread("no threads".into())).exit_code(), 1);
        assert_eq!(AppError::BadInput("x".into()).exit_code(), 2);
    }
}
