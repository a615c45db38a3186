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

    /// Hands the output bytes (a relay's input): an SRT output sends them as they are, the
    /// others take them as a GStreamer buffer.
    pub fn send(&self, data: &[u8]) {
        match self {
            Output::Srt(o) => o.send(data),
            Output::File(o) => o.send(data),
            Output::Rtmp(o) => o.push(&gst::Buffer::from_slice(data.to_vec())),
        }
    }

    /// Whether the output runs a GStreamer pipeline: RTMP does; SRT and recording do not.
    pub fn needs_gstreamer(spec: &OutputSpec) -> bool {
        matches!(spec, OutputSpec::Rtmp(_))
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

/// One output of a relay, whatever its kind: what the relay needs of it.
pub trait RelayOutput: Send + Sync {
    /// Hands it bytes as they arrived from the input; never blocks.
    fn send(&self, data: &[u8]);
    /// Its status.
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus>;
    /// Stops it and joins its thread.
    fn stop(self: Box<Self>);
}

impl RelayOutput for Output {
    fn send(&self, data: &[u8]) {
        Output::send(self, data)
    }
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        Output::status(self)
    }
    fn stop(self: Box<Self>) {
        Output::stop(*self)
    }
}

impl RelayOutput for SrtOutput {
    fn send(&self, data: &[u8]) {
        SrtOutput::send(self, data)
    }
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        SrtOutput::status(self)
    }
    fn stop(self: Box<Self>) {
        SrtOutput::stop(*self)
    }
}

impl RelayOutput for Recording {
    fn send(&self, data: &[u8]) {
        Recording::send(self, data)
    }
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        Recording::status(self)
    }
    fn stop(self: Box<Self>) {
        Recording::stop(*self)
    }
}

/// Starts a relay output of any kind; GStreamer is started for RTMP.
pub fn start_any(name: &str, spec: &OutputSpec, queue_bytes: u64) -> Result<Box<dyn RelayOutput>, AppError> {
    if Output::needs_gstreamer(spec) {
        telebridge_media::init()?;
        telebridge_srt::install_log_hook();
    }
    // A relay cannot ask its source for a keyframe; callers that join wait for the next one.
    Ok(Box::new(Output::start(name, spec, queue_bytes, Arc::new(|| {}))?))
}

/// Starts an SRT output or a recording, which need no GStreamer: a relay built from this alone
/// links neither GStreamer nor GLib (`telebridge-relay`). RTMP is refused.
pub fn start_without_gstreamer(
    name: &str,
    spec: &OutputSpec,
    _queue_bytes: u64,
) -> Result<Box<dyn RelayOutput>, AppError> {
    match spec {
        OutputSpec::Srt(url) => Ok(Box::new(
            SrtOutput::start(name.to_string(), url.clone(), Arc::new(|| {}))
                .map_err(|e| AppError::BadInput(e.to_string()))?,
        )),
        OutputSpec::File(f) => Ok(Box::new(Recording::start(name.to_string(), f.clone()))),
        OutputSpec::Rtmp(_) => {
            Err(AppError::BadInput(format!("output {name}: RTMP needs GStreamer; run it with `telebridge relay`")))
        }
    }
}

/// How a relay starts its outputs: [`start_any`] or [`start_without_gstreamer`].
pub type OutputStarter = fn(&str, &OutputSpec, u64) -> Result<Box<dyn RelayOutput>, AppError>;
