//! One viewer: the feed's MPEG-TS, demuxed, its H.264 put in RTP as it is and its sound made
//! Opus, sent through GStreamer's `webrtcbin` to the browser that offered.
//!
//! ```text
//! appsrc(TS) ! tsdemux ┬ queue ! (alignment=au) ! h264parse ! rtph264pay ─────────────┐
//!                      └ queue ! aacparse ! avdec_aac | opusdec ! audioconvert ! audioresample
//!                                ! opusenc ! rtpopuspay ─────────────────────────── webrtcbin
//! ```

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gst::prelude::*;
use gst_webrtc::prelude::*;
use gst_webrtc::{WebRTCICEGatheringState, WebRTCPeerConnectionState, WebRTCSDPType, WebRTCSessionDescription};

use telebridge_contract::monitor::REPORTS_TO_KNOW;

use super::offer::{choose, Chosen, Offered};
use crate::error::{make, MediaError};

/// How long the ICE candidates of the box's addresses may take to gather.
const GATHER_WAIT: Duration = Duration::from_secs(3);

/// A running viewer.
pub struct Viewer {
    pipeline: gst::Pipeline,
    webrtc: gst::Element,
    appsrc: gst_app::AppSrc,
    started: Instant,
    /// When the browser's last RTCP arrived, ms after `started` (0: none yet).
    heard_ms: Arc<AtomicU64>,
    /// The longest time between two of its RTCP packets, ms.
    gap_ms: Arc<AtomicU64>,
    /// How many RTCP packets it sent.
    reports: Arc<AtomicU64>,
}

impl std::fmt::Debug for Viewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Viewer").field("state", &self.state()).finish_non_exhaustive()
    }
}

/// The codecs an offer lists, read from its SDP.
fn offered(sdp: &gst_sdp::SDPMessageRef) -> Vec<Offered> {
    let mut out = Vec::new();
    for m in sdp.medias() {
        let media = m.media().unwrap_or_default().to_string();
        for a in m.attributes() {
            if a.key() != "rtpmap" {
                continue;
            }
            let Some((pt, rest)) = a.value().and_then(|v| v.split_once(' ')) else { continue };
            let Ok(pt) = pt.parse::<u8>() else { continue };
            let encoding = rest.split('/').next().unwrap_or_default().to_string();
            let fmtp = m
                .attributes()
                .filter(|f| f.key() == "fmtp")
                .filter_map(|f| f.value()?.strip_prefix(&format!("{pt} ")).map(str::to_string))
                .next()
                .unwrap_or_default();
            out.push(Offered { media: media.clone(), pt, encoding, fmtp });
        }
    }
    out
}

/// The local description once every ICE candidate is in it (no trickle: a WHEP or WHIP peer
/// gets them all in one SDP), as text.
pub(super) fn described(webrtc: &gst::Element) -> Result<String, MediaError> {
    let until = Instant::now() + GATHER_WAIT;
    while webrtc.property::<WebRTCICEGatheringState>("ice-gathering-state") != WebRTCICEGatheringState::Complete {
        if Instant::now() > until {
            // A browser's offer is answered in milliseconds; one webrtcbin cannot gather for
            // is one it could not make sense of (found by scripts/attack: lines shuffled).
            return Err(MediaError::Offer("no ICE candidates could be gathered for it within 3 s".into()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let local = webrtc.property::<WebRTCSessionDescription>("local-description");
    local.sdp().as_text().map_err(|e| MediaError::Gst(e.to_string()))
}

/// Calls `heard` for each RTCP packet the peer sends (its reports, every second or so).
pub(super) fn on_rtcp(webrtc: &gst::Element, heard: impl Fn() + Send + Sync + 'static) {
    let Some(rtpbin) = webrtc.downcast_ref::<gst::Bin>().and_then(|b| b.by_name("rtpbin")) else { return };
    let Some(session) = rtpbin.emit_by_name::<Option<gst::glib::Object>>("get-internal-session", &[&0u32]) else {
        return;
    };
    session.connect("on-receiving-rtcp", false, move |_| {
        heard();
        None
    });
}

/// A promise kept: its reply.
pub(super) fn kept(promise: &gst::Promise, what: &str) -> Result<Option<gst::Structure>, MediaError> {
    match promise.wait() {
        gst::PromiseResult::Replied => Ok(promise.get_reply().map(|r| r.to_owned())),
        other => Err(MediaError::Gst(format!("webrtcbin: {what}: {other:?}"))),
    }
}

impl Viewer {
    /// A viewer answering `offer` (an SDP offer's text), its ICE candidates on `address` only
    /// (the address the browser reached the panel at; `None`: every address of the box): the
    /// viewer, not yet fed, and the answer's SDP, every candidate in it.
    pub fn answer(offer: &str, address: Option<IpAddr>) -> Result<(Self, String), MediaError> {
        let sdp = gst_sdp::SDPMessage::parse_buffer(offer.as_bytes())
            .map_err(|_| MediaError::Offer("the offer is not SDP".into()))?;
        let chosen = choose(&offered(&sdp)).map_err(MediaError::Offer)?;
        let (pipeline, webrtc, appsrc) = build("viewer", &chosen)?;
        if let Some(address) = address {
            let ice = webrtc.property::<gst_webrtc::WebRTCICE>("ice-agent");
            ice.emit_add_local_ip_address(&address.to_string());
        }
        pipeline.set_state(gst::State::Playing)?;
        let viewer = Self {
            pipeline,
            webrtc,
            appsrc,
            started: Instant::now(),
            heard_ms: Arc::new(AtomicU64::new(0)),
            gap_ms: Arc::new(AtomicU64::new(0)),
            reports: Arc::new(AtomicU64::new(0)),
        };
        let answer = viewer.negotiate(sdp)?;
        viewer.listen_for_rtcp();
        Ok((viewer, answer))
    }

    fn negotiate(&self, offer: gst_sdp::SDPMessage) -> Result<String, MediaError> {
        let offer = WebRTCSessionDescription::new(WebRTCSDPType::Offer, offer);
        let promise = gst::Promise::new();
        self.webrtc.emit_by_name::<()>("set-remote-description", &[&offer, &promise]);
        kept(&promise, "the offer")?;
        let promise = gst::Promise::new();
        self.webrtc.emit_by_name::<()>("create-answer", &[&None::<gst::Structure>, &promise]);
        let reply = kept(&promise, "the answer")?.ok_or_else(|| MediaError::Gst("webrtcbin made no answer".into()))?;
        if let Ok(e) = reply.get::<gst::glib::Error>("error") {
            return Err(MediaError::Offer(format!("webrtcbin cannot answer it: {e}")));
        }
        let answer = reply
            .get::<WebRTCSessionDescription>("answer")
            .map_err(|_| MediaError::Gst("webrtcbin's reply holds no answer".into()))?;
        let promise = gst::Promise::new();
        self.webrtc.emit_by_name::<()>("set-local-description", &[&answer, &promise]);
        kept(&promise, "the answer set")?;
        described(&self.webrtc)
    }

    /// Counts the browser's RTCP (its receiver reports, every second or so): a viewer that
    /// sends none is gone.
    fn listen_for_rtcp(&self) {
        let (heard, gap, started) = (self.heard_ms.clone(), self.gap_ms.clone(), self.started);
        let reports = self.reports.clone();
        on_rtcp(&self.webrtc, move || {
            reports.fetch_add(1, Ordering::Relaxed);
            let now = started.elapsed().as_millis().max(1) as u64;
            let before = heard.swap(now, Ordering::Relaxed);
            if before > 0 {
                gap.fetch_max(now.saturating_sub(before), Ordering::Relaxed);
            }
        });
    }

    /// Hands the viewer one buffer of the feed's MPEG-TS; never blocks.
    pub fn push(&self, data: &[u8]) {
        let _ = self.appsrc.push_buffer(gst::Buffer::from_slice(data.to_vec()));
    }

    /// The connection as webrtcbin sees it.
    pub fn state(&self) -> WebRTCPeerConnectionState {
        self.webrtc.property::<WebRTCPeerConnectionState>("connection-state")
    }

    /// How long since the browser was last heard (its RTCP, or the start when none came yet).
    pub fn silent_for(&self) -> Duration {
        let heard = Duration::from_millis(self.heard_ms.load(Ordering::Relaxed));
        self.started.elapsed().saturating_sub(heard)
    }

    /// How long since the viewer started.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// The longest time between two of the viewer's reports, once it has sent
    /// [`REPORTS_TO_KNOW`] reports: an RTP stack's first reports come sooner than the rest
    /// (RFC 3550 halves the first interval; GStreamer's first two came within a second, then
    /// 5 s apart).
    pub fn report_every(&self) -> Option<Duration> {
        (self.reports.load(Ordering::Relaxed) >= REPORTS_TO_KNOW)
            .then(|| Duration::from_millis(self.gap_ms.load(Ordering::Relaxed)))
    }

    /// Whether the viewer has been heard at all.
    pub fn heard(&self) -> bool {
        self.heard_ms.load(Ordering::Relaxed) > 0
    }
}

impl Drop for Viewer {
    fn drop(&mut self) {
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

/// RTP caps for a payloader's output, as the answer names them.
fn video_rtp(chosen: &Chosen) -> gst::Caps {
    gst::Caps::builder("application/x-rtp")
        .field("media", "video")
        .field("encoding-name", "H264")
        .field("clock-rate", 90_000i32)
        .field("payload", i32::from(chosen.video.pt))
        .field("packetization-mode", "1")
        .field("profile-level-id", chosen.video.profile_level_id.as_str())
        .field("level-asymmetry-allowed", "1")
        .build()
}

fn audio_rtp(pt: u8) -> gst::Caps {
    gst::Caps::builder("application/x-rtp")
        .field("media", "audio")
        .field("encoding-name", "OPUS")
        .field("clock-rate", 48_000i32)
        .field("payload", i32::from(pt))
        .build()
}

/// Links `chain` in order, its last element to a new sink pad of `webrtc` sending `caps` only.
fn to_webrtc(webrtc: &gst::Element, chain: &[&gst::Element], caps: &gst::Caps) -> Result<(), MediaError> {
    gst::Element::link_many(chain)?;
    let last = chain.last().ok_or_else(|| MediaError::Gst("an empty chain".into()))?;
    let pad = webrtc.request_pad_simple("sink_%u").ok_or_else(|| MediaError::Gst("webrtcbin gave no pad".into()))?;
    let src = last.static_pad("src").ok_or_else(|| MediaError::Gst("no src pad".into()))?;
    src.link(&pad).map_err(|e| MediaError::Gst(format!("webrtcbin takes no {caps}: {e}")))?;
    let transceiver = pad.property::<gst_webrtc::WebRTCRTPTransceiver>("transceiver");
    transceiver.set_property("direction", gst_webrtc::WebRTCRTPTransceiverDirection::Sendonly);
    transceiver.set_property("codec-preferences", caps);
    Ok(())
}

/// The sending pipeline for `chosen`, named `name`: the feed's TS in, webrtcbin's sink pads
/// linked (send only), not yet playing.
pub(super) fn build(name: &str, chosen: &Chosen) -> Result<(gst::Pipeline, gst::Element, gst_app::AppSrc), MediaError> {
    let pipeline = gst::Pipeline::with_name(name);
    // Nothing in it waits on the clock (the feed is sent as it comes), and rtpsession needs a
    // configured latency to time its sender reports.
    pipeline.set_latency(gst::ClockTime::ZERO);
    let caps = gst::Caps::builder("video/mpegts").field("systemstream", true).field("packetsize", 188i32).build();
    let appsrc = gst_app::AppSrc::builder()
        .name("ts-in")
        .caps(&caps)
        .format(gst::Format::Time)
        .is_live(true)
        .block(false)
        .max_bytes(2 * 1024 * 1024)
        .leaky_type(gst_app::AppLeakyType::Downstream)
        .build();
    let demux = gst::ElementFactory::make("tsdemux").build()?;
    let webrtc = gst::ElementFactory::make("webrtcbin")
        .property_from_str("bundle-policy", "max-bundle")
        .build()
        .map_err(|_| MediaError::ElementMissing {
            element: "webrtcbin",
            package: "gstreamer1.0-plugins-bad and gstreamer1.0-nice",
        })?;
    pipeline.add_many([appsrc.upcast_ref(), &demux, &webrtc])?;
    appsrc.link(&demux)?;

    let vqueue = gst::ElementFactory::make("queue").property("max-size-time", 500_000_000u64).build()?;
    // One access unit a PES, as every sender muxes it: said so, else h264parse waits for the
    // next to know the current is whole (a frame of delay; the decoder's pipeline does the same).
    let au = gst::Caps::builder("video/x-h264").field("stream-format", "byte-stream").field("alignment", "au").build();
    let au_filter = gst::ElementFactory::make("capsfilter").property("caps", &au).build()?;
    let parse = gst::ElementFactory::make("h264parse").property("config-interval", -1i32).build()?;
    let pay = make("rtph264pay", "gstreamer1.0-plugins-good")?;
    pay.set_property("pt", u32::from(chosen.video.pt));
    pay.set_property("config-interval", -1i32);
    pay.set_property_from_str("aggregate-mode", "zero-latency");
    pay.set_property("mtu", 1200u32);
    // The payloader names the stream's own profile and level (Main at the picture's level); the
    // answer names the offer's (Main 3.1 with level-asymmetry-allowed, or High, which holds
    // Main): the caps webrtcbin takes are the answer's.
    let vcaps = make("capssetter", "gstreamer1.0-plugins-good")?;
    vcaps.set_property("caps", video_rtp(chosen));
    pipeline.add_many([&vqueue, &au_filter, &parse, &pay, &vcaps])?;
    to_webrtc(&webrtc, &[&vqueue, &au_filter, &parse, &pay, &vcaps], &video_rtp(chosen))?;

    let audio_in = match chosen.audio_pt {
        Some(pt) => {
            let convert = make("audioconvert", "gstreamer1.0-plugins-base")?;
            let resample = make("audioresample", "gstreamer1.0-plugins-base")?;
            let enc = make("opusenc", "gstreamer1.0-plugins-base")?;
            enc.set_property("bitrate", 64_000i32);
            enc.set_property_from_str("frame-size", "10");
            let apay = make("rtpopuspay", "gstreamer1.0-plugins-good")?;
            apay.set_property("pt", u32::from(pt));
            let acaps = gst::ElementFactory::make("capsfilter").property("caps", audio_rtp(pt)).build()?;
            pipeline.add_many([&convert, &resample, &enc, &apay, &acaps])?;
            to_webrtc(&webrtc, &[&convert, &resample, &enc, &apay, &acaps], &audio_rtp(pt))?;
            Some(convert)
        }
        None => None,
    };
    let (p, vsink) = (pipeline.clone(), vqueue.static_pad("sink"));
    demux.connect_pad_added(move |_, pad| {
        let name = pad.current_caps().and_then(|c| c.structure(0).map(|s| s.name().to_string())).unwrap_or_default();
        let linked = match name.as_str() {
            "video/x-h264" => vsink.as_ref().map(|sink| pad.link(sink).map(|_| ()).map_err(|e| e.to_string())),
            "audio/mpeg" | "audio/x-opus" => audio_in.as_ref().map(|convert| sound_decoder(&p, pad, &name, convert)),
            _ => None,
        };
        if let Some(Err(e)) = linked {
            tracing::warn!(stream = %name, error = %e, "a viewer cannot take the feed's stream");
        }
    });
    Ok((pipeline, webrtc, appsrc))
}

/// The feed's sound decoded into `convert` (AAC from an encoder, Opus from a bridge).
fn sound_decoder(pipeline: &gst::Pipeline, pad: &gst::Pad, caps: &str, convert: &gst::Element) -> Result<(), String> {
    let make = |f: &str| gst::ElementFactory::make(f).build().map_err(|_| format!("{f} is missing"));
    let queue = make("queue")?;
    let chain = if caps == "audio/mpeg" {
        vec![queue, make("aacparse")?, make("avdec_aac")?]
    } else {
        vec![queue, make("opusdec")?]
    };
    pipeline.add_many(&chain).map_err(|e| e.to_string())?;
    gst::Element::link_many(&chain).map_err(|e| e.to_string())?;
    chain.last().map(|l| l.link(convert)).transpose().map_err(|e| e.to_string())?;
    for e in &chain {
        e.sync_state_with_parent().map_err(|e| e.to_string())?;
    }
    pad.link(&chain[0].static_pad("sink").ok_or("no sink pad")?).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn an_offers_codecs_are_read_with_their_parameters() {
        crate::init().unwrap();
        let sdp = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n\
                   m=video 9 UDP/TLS/RTP/SAVPF 96 112\r\na=rtpmap:96 VP8/90000\r\na=rtpmap:112 H264/90000\r\n\
                   a=fmtp:112 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f\r\n\
                   m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=rtpmap:111 opus/48000/2\r\na=fmtp:111 minptime=10;useinbandfec=1\r\n";
        let msg = gst_sdp::SDPMessage::parse_buffer(sdp.as_bytes()).unwrap();
        let read = offered(&msg);
        assert_eq!(read.len(), 3, "{read:?}");
        assert_eq!(read[1].fmtp, "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f");
        assert_eq!((read[2].media.as_str(), read[2].pt, read[2].encoding.as_str()), ("audio", 111, "opus"));
        assert_eq!(choose(&read).unwrap().video.pt, 112);
    }

    /// An encoder's TS, as the box's fan-out hands it: H.264 Main and AAC in MPEG-TS.
    fn programme(out: impl Fn(&[u8]) + Send + Sync + 'static) -> gst::Pipeline {
        let p = gst::parse::launch(
            "videotestsrc is-live=true ! video/x-raw,width=320,height=240,framerate=30/1 \
             ! x264enc tune=zerolatency key-int-max=30 ! video/x-h264,profile=main ! mpegtsmux name=mux \
             ! appsink name=ts sync=false emit-signals=false \
             audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=2 ! avenc_aac ! aacparse ! mux.",
        )
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
        let sink = p.by_name("ts").unwrap().downcast::<gst_app::AppSink>().unwrap();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |s| {
                    let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    if let Some(map) = sample.buffer().and_then(|b| b.map_readable().ok()) {
                        out(map.as_slice());
                    }
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
        p
    }

    /// GStreamer's own webrtcbin as the browser: it offers to receive H.264 and Opus, the
    /// viewer answers, and the receiver decodes the picture and the sound it is sent, over
    /// loopback only.
    #[test]
    fn a_webrtc_peer_receives_the_feeds_picture_and_sound_as_it_is() {
        crate::init().unwrap();
        let recv = gst::Pipeline::with_name("browser");
        let webrtc =
            gst::ElementFactory::make("webrtcbin").property_from_str("bundle-policy", "max-bundle").build().unwrap();
        recv.add(&webrtc).unwrap();
        webrtc.property::<gst_webrtc::WebRTCICE>("ice-agent").emit_add_local_ip_address("127.0.0.1");
        let video = gst::Caps::from_str(
            "application/x-rtp,media=video,encoding-name=H264,payload=102,clock-rate=90000,\
             packetization-mode=(string)1,profile-level-id=(string)4d001f,level-asymmetry-allowed=(string)1",
        )
        .unwrap();
        let audio =
            gst::Caps::from_str("application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000")
                .unwrap();
        for caps in [&video, &audio] {
            webrtc.emit_by_name::<gst_webrtc::WebRTCRTPTransceiver>(
                "add-transceiver",
                &[&gst_webrtc::WebRTCRTPTransceiverDirection::Recvonly, caps],
            );
        }
        let (frames, sounds) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (f, a, p) = (frames.clone(), sounds.clone(), recv.clone());
        webrtc.connect_pad_added(move |_, pad| {
            let media =
                pad.current_caps().and_then(|c| c.structure(0)?.get::<String>("media").ok()).unwrap_or_default();
            let (chain, count) = if media == "video" {
                ("rtph264depay ! h264parse ! avdec_h264 ! fakesink name=out sync=false", f.clone())
            } else {
                ("rtpopusdepay ! opusdec ! fakesink name=out sync=false", a.clone())
            };
            let bin = gst::parse::bin_from_description(chain, true).unwrap();
            p.add(&bin).unwrap();
            bin.sync_state_with_parent().unwrap();
            pad.link(&bin.static_pad("sink").unwrap()).unwrap();
            let out = bin.by_name("out").unwrap().static_pad("sink").unwrap();
            out.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                count.fetch_add(1, Ordering::Relaxed);
                gst::PadProbeReturn::Ok
            });
        });
        recv.set_state(gst::State::Playing).unwrap();
        let promise = gst::Promise::new();
        webrtc.emit_by_name::<()>("create-offer", &[&None::<gst::Structure>, &promise]);
        let offer = kept(&promise, "offer").unwrap().unwrap().get::<WebRTCSessionDescription>("offer").unwrap();
        webrtc.emit_by_name::<()>("set-local-description", &[&offer, &None::<gst::Promise>]);

        let (viewer, answer) =
            Viewer::answer(&offer.sdp().as_text().unwrap(), Some("127.0.0.1".parse().unwrap())).unwrap();
        assert!(answer.contains("a=candidate:") && answer.contains("127.0.0.1"), "{answer}");
        assert!(answer.contains("profile-level-id=4d001f") && answer.contains("OPUS/48000"), "{answer}");
        let answer = WebRTCSessionDescription::new(
            WebRTCSDPType::Answer,
            gst_sdp::SDPMessage::parse_buffer(answer.as_bytes()).unwrap(),
        );
        webrtc.emit_by_name::<()>("set-remote-description", &[&answer, &None::<gst::Promise>]);
        let viewer = Arc::new(viewer);
        let feeding = viewer.clone();
        let source = programme(move |ts| feeding.push(ts));
        source.set_state(gst::State::Playing).unwrap();
        let until = Instant::now() + Duration::from_secs(15);
        while (frames.load(Ordering::Relaxed) < 30 || sounds.load(Ordering::Relaxed) < 30) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        let heard = viewer.heard();
        source.set_state(gst::State::Null).unwrap();
        recv.set_state(gst::State::Null).unwrap();
        let (frames, sounds) = (frames.load(Ordering::Relaxed), sounds.load(Ordering::Relaxed));
        assert!(frames >= 30 && sounds >= 30, "decoded {frames} frames and {sounds} sound buffers");
        assert!(heard, "the receiver's RTCP reached the viewer");
    }
}
