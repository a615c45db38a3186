//! The box's feed offered to a WebRTC receiver (a WHIP server): the same sending pipeline a
//! viewer has (the H.264 as it is, the sound made Opus), but the box makes the offer and the
//! server answers.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gst::prelude::*;
use gst_webrtc::prelude::*;
use gst_webrtc::{WebRTCPeerConnectionState, WebRTCSDPType, WebRTCSessionDescription};

use super::offer::{Chosen, VideoAnswer};
use super::viewer::{build, described, kept, on_rtcp};
use crate::MediaError;

/// What the box offers: H.264 Main (level 3.1, any level taken back: level-asymmetry-allowed),
/// packetization mode 1, and Opus, under the payload types browsers use.
fn offered() -> Chosen {
    Chosen { video: VideoAnswer { pt: 102, profile_level_id: "4d001f".into() }, audio_pt: Some(111) }
}

/// A running WebRTC sender that made an offer.
pub struct Publisher {
    pipeline: gst::Pipeline,
    webrtc: gst::Element,
    appsrc: gst_app::AppSrc,
    /// RTP bytes handed to the connection since it was first connected.
    sent: Arc<AtomicU64>,
    started: Instant,
    /// When the server's last RTCP arrived, ms after `started` (0: none yet).
    heard_ms: Arc<AtomicU64>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher").field("state", &self.state()).finish_non_exhaustive()
    }
}

impl Publisher {
    /// A sender and its offer's SDP, every ICE candidate in it, gathered on `local` only (the
    /// address the route to the server leaves from; `None`: every address of the box).
    pub fn offer(local: Option<IpAddr>) -> Result<(Self, String), MediaError> {
        let (pipeline, webrtc, appsrc) = build("whip", &offered())?;
        if let Some(address) = local {
            let ice = webrtc.property::<gst_webrtc::WebRTCICE>("ice-agent");
            ice.emit_add_local_ip_address(&address.to_string());
        }
        let sent = Arc::new(AtomicU64::new(0));
        count_sent(&webrtc, &sent);
        pipeline.set_state(gst::State::Playing)?;
        let (started, heard_ms) = (Instant::now(), Arc::new(AtomicU64::new(0)));
        let publisher = Self { pipeline, webrtc, appsrc, sent, started, heard_ms };
        let promise = gst::Promise::new();
        publisher.webrtc.emit_by_name::<()>("create-offer", &[&None::<gst::Structure>, &promise]);
        let reply = kept(&promise, "the offer")?.ok_or_else(|| MediaError::Gst("webrtcbin made no offer".into()))?;
        let offer = reply
            .get::<WebRTCSessionDescription>("offer")
            .map_err(|_| MediaError::Gst("webrtcbin's reply holds no offer".into()))?;
        let promise = gst::Promise::new();
        publisher.webrtc.emit_by_name::<()>("set-local-description", &[&offer, &promise]);
        kept(&promise, "the offer set")?;
        let sdp = described(&publisher.webrtc)?;
        Ok((publisher, sdp))
    }

    /// Takes the server's answer (SDP text).
    pub fn accept(&self, answer: &str) -> Result<(), MediaError> {
        let sdp = gst_sdp::SDPMessage::parse_buffer(answer.as_bytes())
            .map_err(|_| MediaError::Offer("the server's answer is not SDP".into()))?;
        if !sdp.medias().any(|m| m.media() == Some("video")) {
            return Err(MediaError::Offer("the server's answer takes no video".into()));
        }
        let answer = WebRTCSessionDescription::new(WebRTCSDPType::Answer, sdp);
        let promise = gst::Promise::new();
        self.webrtc.emit_by_name::<()>("set-remote-description", &[&answer, &promise]);
        match kept(&promise, "the answer")? {
            Some(reply) if reply.has_field("error") => {
                let e = reply.get::<gst::glib::Error>("error").map(|e| e.to_string()).unwrap_or_default();
                Err(MediaError::Offer(format!("the server's answer does not fit the offer: {e}")))
            }
            _ => {
                // rtpbin's session exists once the answer is set.
                let (heard, started) = (self.heard_ms.clone(), self.started);
                on_rtcp(&self.webrtc, move || {
                    heard.store(started.elapsed().as_millis().max(1) as u64, Ordering::Relaxed)
                });
                Ok(())
            }
        }
    }

    /// Hands the sender one buffer of the feed's MPEG-TS; never blocks.
    pub fn push(&self, data: &[u8]) {
        let _ = self.appsrc.push_buffer(gst::Buffer::from_slice(data.to_vec()));
    }

    /// The connection as webrtcbin sees it.
    pub fn state(&self) -> WebRTCPeerConnectionState {
        self.webrtc.property::<WebRTCPeerConnectionState>("connection-state")
    }

    /// RTP bytes sent over the connection since it connected.
    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// How long since the server's last RTCP report (`None`: none came yet). A server that went
    /// away sends none, and ICE alone would not notice for long.
    pub fn server_silent_for(&self) -> Option<Duration> {
        let heard = self.heard_ms.load(Ordering::Relaxed);
        (heard > 0).then(|| self.started.elapsed().saturating_sub(Duration::from_millis(heard)))
    }

    /// Bytes of the feed waiting in the sender's input queue.
    pub fn queued_bytes(&self) -> u64 {
        self.appsrc.current_level_bytes()
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

/// Counts the RTP bytes webrtcbin takes on its sink pads once the connection is up (before,
/// they go nowhere).
fn count_sent(webrtc: &gst::Element, sent: &Arc<AtomicU64>) {
    let connected = Arc::new(AtomicBool::new(false));
    let up = connected.clone();
    webrtc.connect_notify(Some("connection-state"), move |w, _| {
        let state = w.property::<WebRTCPeerConnectionState>("connection-state");
        up.store(state == WebRTCPeerConnectionState::Connected, Ordering::Relaxed);
    });
    for pad in webrtc.sink_pads() {
        let (sent, connected) = (sent.clone(), connected.clone());
        pad.add_probe(gst::PadProbeType::BUFFER | gst::PadProbeType::BUFFER_LIST, move |_, info| {
            if connected.load(Ordering::Relaxed) {
                let n = match &info.data {
                    Some(gst::PadProbeData::Buffer(b)) => b.size(),
                    Some(gst::PadProbeData::BufferList(l)) => l.calculate_size(),
                    _ => 0,
                };
                sent.fetch_add(n as u64, Ordering::Relaxed);
            }
            gst::PadProbeReturn::Ok
        });
    }
}
