//! Any output (SRT, RTMP, WHIP, recording) behind one trait over bytes: the encoder's fan-out and the
//! relay's input hand every output the same TS bytes, and start and stop them the same way.

use std::sync::Arc;

use telebridge_config::{OutputSpec, SrtUrl};
use telebridge_outputs::{Recording, RtmpOutput, WhipOutput};
use telebridge_srt::{OutputStatus, SrtOutput};

use crate::AppError;

/// One output, whatever its kind.
pub trait Output: Send + Sync {
    /// Hands it TS bytes; never blocks (an output that falls behind drops and counts).
    fn send(&self, data: &[u8]);
    /// Its status.
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus>;
    /// Its status now, with what only the output itself knows at the moment of asking (a
    /// bonded output's uplinks).
    fn snapshot(&self) -> OutputStatus {
        self.status().borrow().clone()
    }
    /// Stops it and joins its thread.
    fn stop(self: Box<Self>);
    /// An SRT output, for what only SRT has (its links' counters for the adaptive bitrate, its
    /// pacing, a message to the paired box); `None` for the others.
    fn srt(&self) -> Option<&SrtOutput> {
        None
    }
    /// A bonded output's view of its uplinks for the adaptive bitrate (packets that arrived
    /// ahead of SRT's cumulative ACK, the queue on the least queued uplink); `None` for the
    /// others.
    fn bond_reading(&self) -> Option<telebridge_bond::sender::BondReading> {
        None
    }
}

impl Output for SrtOutput {
    fn send(&self, data: &[u8]) {
        SrtOutput::send(self, data)
    }
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        SrtOutput::status(self)
    }
    fn stop(self: Box<Self>) {
        SrtOutput::stop(*self)
    }
    fn srt(&self) -> Option<&SrtOutput> {
        Some(self)
    }
}

impl Output for RtmpOutput {
    fn send(&self, data: &[u8]) {
        RtmpOutput::send(self, data)
    }
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        RtmpOutput::status(self)
    }
    fn stop(self: Box<Self>) {
        RtmpOutput::stop(*self)
    }
}

impl Output for WhipOutput {
    fn send(&self, data: &[u8]) {
        WhipOutput::send(self, data)
    }
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        WhipOutput::status(self)
    }
    fn stop(self: Box<Self>) {
        WhipOutput::stop(*self)
    }
}

impl Output for Recording {
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

/// Starts the output `spec` named `name` with about `queue_bytes` of buffer (RTMP's queue);
/// `keyframe` asks the source for a keyframe when a peer joins.
pub fn start(
    name: &str,
    spec: &OutputSpec,
    queue_bytes: u64,
    keyframe: Arc<dyn Fn() + Send + Sync>,
) -> Result<Box<dyn Output>, AppError> {
    Ok(match spec {
        OutputSpec::Srt(url) => start_srt(name, url, keyframe)?,
        OutputSpec::Rtmp(url) => Box::new(RtmpOutput::start(name.to_string(), url.clone(), queue_bytes, keyframe)),
        OutputSpec::File(f) => Box::new(Recording::start(name.to_string(), f.clone())),
        OutputSpec::Whip(url) => Box::new(WhipOutput::start(name.to_string(), url.clone(), queue_bytes, keyframe)),
    })
}

/// An SRT output; bonded over its uplinks when its URL says `bond=`.
fn start_srt(name: &str, url: &SrtUrl, keyframe: Arc<dyn Fn() + Send + Sync>) -> Result<Box<dyn Output>, AppError> {
    if url.bond.is_empty() {
        return Ok(Box::new(SrtOutput::start(name.to_string(), url.clone(), keyframe)?));
    }
    Ok(Box::new(BondedSrt::start(name, url, keyframe)?))
}

/// An SRT output carried over several uplinks: libsrt calls the bonding sender on loopback,
/// which spreads the connection's packets over the uplinks to a bonding receiver.
pub struct BondedSrt {
    srt: SrtOutput,
    bond: telebridge_bond::BondSender,
}

impl BondedSrt {
    fn start(name: &str, url: &SrtUrl, keyframe: Arc<dyn Fn() + Send + Sync>) -> Result<Self, AppError> {
        use std::net::ToSocketAddrs;
        let host = url.host.as_deref().unwrap_or_default();
        let receiver =
            (host, url.port).to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or_else(|| {
                AppError::BadInput(format!("output {name}: cannot resolve the bonding receiver {host}"))
            })?;
        // TELEBRIDGE_BOND_TRACE=FILE records every uplink's state (as TELEBRIDGE_RATE_TRACE
        // records the rate law's steps).
        let trace = std::env::var_os("TELEBRIDGE_BOND_TRACE").map(std::path::PathBuf::from);
        let bond = telebridge_bond::BondSender::start(&url.bond, receiver, trace.as_deref())
            .map_err(|e| AppError::Runtime(format!("output {name}: cannot start bonding: {e}")))?;
        let local = bond.local_addr();
        let mut inner = url.clone();
        inner.host = Some(local.ip().to_string());
        inner.port = local.port();
        inner.bond.clear();
        inner.local_address = None;
        inner.local_port = None;
        let srt = SrtOutput::start(name.to_string(), inner, keyframe)?;
        Ok(BondedSrt { srt, bond })
    }

    /// Every uplink's state.
    pub fn links(&self) -> Vec<telebridge_bond::sender::LinkStatus> {
        self.bond.status()
    }
}

impl std::fmt::Debug for BondedSrt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BondedSrt").field("bond", &self.bond).finish_non_exhaustive()
    }
}

impl Output for BondedSrt {
    fn send(&self, data: &[u8]) {
        self.srt.send(data)
    }
    fn status(&self) -> tokio::sync::watch::Receiver<OutputStatus> {
        self.srt.status()
    }
    fn snapshot(&self) -> OutputStatus {
        let mut s = self.srt.status().borrow().clone();
        s.uplinks = self.bond.status();
        s
    }
    fn stop(self: Box<Self>) {
        let BondedSrt { srt, bond } = *self;
        srt.stop();
        bond.stop();
    }
    fn srt(&self) -> Option<&SrtOutput> {
        Some(&self.srt)
    }
    fn bond_reading(&self) -> Option<telebridge_bond::sender::BondReading> {
        Some(self.bond.reading())
    }
}

/// Whether the output runs a GStreamer pipeline: RTMP and WHIP do; SRT and recording do not.
pub fn needs_gstreamer(spec: &OutputSpec) -> bool {
    matches!(spec, OutputSpec::Rtmp(_) | OutputSpec::Whip(_))
}

/// Starts a relay output of any kind; GStreamer is started for RTMP.
pub fn start_any(name: &str, spec: &OutputSpec, queue_bytes: u64) -> Result<Box<dyn Output>, AppError> {
    if needs_gstreamer(spec) {
        telebridge_media::init()?;
        crate::logs::route_library_logs();
    }
    // A relay cannot ask its source for a keyframe; callers that join wait for the next one.
    start(name, spec, queue_bytes, Arc::new(|| {}))
}

/// Starts an SRT output or a recording, which need no GStreamer: a relay built from this alone
/// links neither GStreamer nor GLib (`telebridge-relay`). RTMP and WHIP are refused.
pub fn start_without_gstreamer(name: &str, spec: &OutputSpec, _queue_bytes: u64) -> Result<Box<dyn Output>, AppError> {
    match spec {
        OutputSpec::Srt(url) => start_srt(name, url, Arc::new(|| {})),
        OutputSpec::File(f) => Ok(Box::new(Recording::start(name.to_string(), f.clone()))),
        OutputSpec::Rtmp(_) => {
            Err(AppError::BadInput(format!("output {name}: RTMP needs GStreamer; run it with `telebridge relay`")))
        }
        OutputSpec::Whip(_) => {
            Err(AppError::BadInput(format!("output {name}: WHIP needs GStreamer; run it with `telebridge relay`")))
        }
    }
}

/// How a relay starts its outputs: [`start_any`] or [`start_without_gstreamer`].
pub type OutputStarter = fn(&str, &OutputSpec, u64) -> Result<Box<dyn Output>, AppError>;
