//! Any output (SRT, RTMP, recording) behind one type, fed the same TS buffers: the encoder and
//! the relay start and stop them the same way.

use std::sync::Arc;

use telebridge_config::OutputSpec;
use telebridge_outputs::{Recording, RtmpOutput};
use telebridge_srt::{OutputStatus, SrtOutput};

use crate::AppError;

/// Any output, fed the same TS buffers.
#[derive(Debug)]
pub enum Output {
    /// SRT caller, listener or rendezvous.
    Srt(SrtOutput),
    /// RTMP or RTMPS publisher.
    Rtmp(RtmpOutput),
    /// Recording to files.
    File(Recording),
}

impl Output {
    /// Starts the output `spec` named `name` with about `queue_bytes` of buffer; `keyframe`
    /// asks the source for a keyframe when a peer joins.
    pub fn start(
        name: &str,
        spec: &OutputSpec,
        queue_bytes: u64,
        keyframe: Arc<dyn Fn() + Send + Sync>,
    ) -> Result<Self, AppError> {
        Ok(match spec {
            OutputSpec::Srt(url) => Output::Srt(
                SrtOutput::start(name.to_string(), url.clone(), keyframe)
                    .map_err(|e| AppError::BadInput(e.to_string()))?,
            ),
            OutputSpec::Rtmp(url) => {
                Output::Rtmp(RtmpOutput::start(name.to_string(), url.clone(), queue_bytes, keyframe))
            }
            OutputSpec::File(f) => Output::File(Recording::start(name.to_string(), f.clone())),
        })
    }

    /// Hands the output one TS buffer; never blocks.
    pub fn push(&self, buffer: &gst::Buffer) {
        match self {
            Output::Srt(o) => o.push(buffer),
            Output::Rtmp(o) => o.push(buffer),
            Output::File(o) => o.push(buffer),
        }
    }

    /// The output's status.
    pub fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        match self {
            Output::Srt(o) => o.status(),
            Output::Rtmp(o) => o.status(),
            Output::File(o) => o.status(),
        }
    }

    /// Stops the output and joins its thread.
    pub fn stop(self) {
        match self {
            Output::Srt(o) => o.stop(),
            Output::Rtmp(o) => o.stop(),
            Output::File(o) => o.stop(),
        }
    }
}
