//! The decoder role: SRT in, decode, show; a slate saying what the box waits for whenever no
//! picture arrives; glass-to-glass latency from the timecodes the test source burns in.
//!
//! ```text
//! SrtInput (srtsrc ! appsink) ──TS──► DecodePipeline (restarted per connection) ──frames──► Display (never torn down)
//!                                              └── timecode reader ──► LatencyWindow
//! ```

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use telebridge_config::Config;
use telebridge_config::{SrtMode, SrtUrl};
use telebridge_media::decode_pipeline::{AudioOut, DecodePipeline, DecoderCounters};
use telebridge_media::decoder_choice::{choose_decoder, DecoderChoice};
use telebridge_media::display::{Display, SinkKind};
use telebridge_media::latency::{LatencyHistogram, LatencySummary, LatencyWindow};
use telebridge_media::timecode;
use telebridge_media::Platform;
use telebridge_media::{EncoderPipeline, EncoderSettings, TsFanout};
use telebridge_srt::{InputStatus, OutputStatus, SrtInput, SrtOutput};
use tracing::{info, warn};

use crate::AppError;

/// Receives each one-second decoder sample.
pub type DecodeSampleCallback = Arc<dyn Fn(&DecodeSample) + Send + Sync>;

/// How to run the decoder.
#[derive(Clone)]
pub struct DecodeOptions {
    /// The box's name, for the slate.
    pub name: String,
    /// Where the stream comes from.
    pub input: SrtUrl,
    /// Where the picture goes.
    pub sink: SinkKind,
    /// Where the sound goes.
    pub audio: AudioOut,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Called with each one-second sample.
    pub on_sample: Option<DecodeSampleCallback>,
    /// Re-encode what is shown and send it here (round-trip measurement: A -> B -> A).
    pub loop_to: Option<SrtUrl>,
    /// The bridge: the stream comes from the paired box on the connection `input` names, which
    /// the bridge's encoder holds, not from an SRT input of the decoder's own.
    pub peer: Option<Arc<crate::bridge_role::PeerFeed>>,
    /// The bridge: each timecode read goes here, for this box's encoder to return it.
    pub echo: Option<timecode::Echo>,
    /// The bridge: the paired box's name, for the slate.
    pub peer_name: Option<String>,
    /// Keep a small JPEG of what is shown here, once a second (the panel's preview).
    pub preview: Option<telebridge_media::PreviewSlot>,
}

impl std::fmt::Debug for DecodeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeOptions").field("input", &self.input).field("sink", &self.sink).finish_non_exhaustive()
    }
}

/// Decoder figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DecoderStats {
    /// The decoder element.
    pub element: String,
    /// Frames decoded per second over the last interval.
    pub fps: f64,
    /// Frames decoded so far.
    pub frames_decoded: u64,
    /// Frames missing between timecodes (lost for good upstream), test-pattern senders only.
    pub frames_missing: u64,
    /// Audio frames decoded so far.
    pub audio_frames: u64,
    /// Picture size of the last frame.
    pub width: u32,
    /// Picture height.
    pub height: u32,
    /// Why a stream arrives but shows no picture, in words (an unsupported codec, data that
    /// is not MPEG-TS); null while the picture shows or nothing arrives.
    pub problem: Option<String>,
}

/// What the screen shows.
#[derive(Debug, Clone, Serialize)]
pub struct DisplayStats {
    /// kms, window, fake, file.
    pub sink: String,
    /// `video` or `slate`.
    pub showing: &'static str,
    /// The slate's words (what the box waits for, and why).
    pub slate: String,
    /// When the slate last came on screen (ms since the Unix epoch).
    pub slate_since_unix_ms: Option<u64>,
    /// When the picture last came on screen (ms since the Unix epoch).
    pub video_since_unix_ms: Option<u64>,
}

/// One line of `decode --stats json`.
#[derive(Debug, Clone, Serialize)]
pub struct DecodeSample {
    /// Seconds since start.
    pub t: f64,
    /// The SRT input.
    pub input: InputStatus,
    /// The decoder.
    pub decoder: DecoderStats,
    /// The screen.
    pub display: DisplayStats,
    /// Glass-to-glass latency over the last 5 s, when the sender burns in timecodes.
    pub latency: Option<LatencySummary>,
    /// The bridge's round trip glass to glass over the last 5 s: this box's own timecode, shown
    /// by the far box and returned in its picture, on this box's clock alone.
    pub round_trip: Option<LatencySummary>,
    /// The `--loop-to` output, when there is one.
    pub loop_output: Option<OutputStatus>,
}

/// The decoder's summary at exit.
#[derive(Debug, Clone, Serialize)]
pub struct DecodeSummary {
    /// How long it ran, s.
    pub duration_s: f64,
    /// Decoder totals.
    pub decoder: DecoderStats,
    /// The input's final status.
    pub input: InputStatus,
    /// Latency over the whole run.
    pub latency: Option<LatencySummary>,
    /// The bridge's round trip over the whole run.
    pub round_trip: Option<LatencySummary>,
    /// Seconds the slate was on screen (counted once a second).
    pub slate_s: u64,
}

/// The words on the slate: what the box waits for and, on the next line, why (`reason`).
/// `receiving`: a stream is arriving (but shows no picture).
pub fn slate_text(name: &str, url: &SrtUrl, receiving: bool, reason: Option<&str>) -> String {
    let how = match url.mode {
        _ if receiving => match url.mode {
            SrtMode::Listener => format!("a caller is connected on port {}", url.port),
            _ => format!("connected to SRT {}:{}", url.host.as_deref().unwrap_or(""), url.port),
        },
        SrtMode::Listener => {
            let addrs = local_addresses();
            let at = if addrs.is_empty() { String::new() } else { format!(" at {}", addrs.join(", ")) };
            format!("listening for an SRT caller on port {}{at}", url.port)
        }
        SrtMode::Caller => format!("calling SRT {}:{}", url.host.as_deref().unwrap_or(""), url.port),
        SrtMode::Rendezvous => format!("SRT rendezvous with {}:{}", url.host.as_deref().unwrap_or(""), url.port),
    };
    let mut text = format!("{name}\nNo picture: {how}");
    if let Some(r) = reason {
        text.push('\n');
        text.push_str(r);
    }
    text
}

/// The bridge's slate: what it waits for from the paired box `peer`, and why (`reason`).
pub fn bridge_slate_text(name: &str, peer: &str, url: &SrtUrl, receiving: bool, reason: Option<&str>) -> String {
    let how = match url.mode {
        _ if receiving => format!("{peer} is connected; nothing to show yet"),
        SrtMode::Listener => format!("waiting for {peer} to call (UDP port {})", url.port),
        SrtMode::Caller => format!("calling {peer} at {}:{}", url.host.as_deref().unwrap_or(""), url.port),
        SrtMode::Rendezvous => format!("meeting {peer} at {}:{}", url.host.as_deref().unwrap_or(""), url.port),
    };
    let mut text = format!("{name}\nNo picture: {how}");
    if let Some(r) = reason {
        text.push('\n');
        text.push_str(r);
    }
    text
}

/// What arrived over the last second, to tell why a stream shows no picture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrived {
    /// Bytes received.
    pub bytes: u64,
    /// 188-byte pieces that were not TS packets.
    pub not_ts: u64,
    /// Frames decoded.
    pub frames: u64,
}

/// Why a stream that arrives shows no picture, in words, or None (a picture shows, or nothing
/// arrives: the input's own reason says why). `unsupported`: the streams of this connection
/// the box cannot decode ("video H.265 (HEVC)").
pub fn stream_problem(receiving: bool, last_second: Arrived, unsupported: &[String]) -> Option<String> {
    if !receiving || last_second.frames > 0 || last_second.bytes == 0 {
        return None;
    }
    if unsupported.iter().any(|s| s.starts_with("video ")) {
        return Some(format!(
            "receiving {}: this box decodes H.264 video and AAC audio; set the sender to H.264",
            unsupported.join(" and ")
        ));
    }
    if last_second.not_ts * 188 * 2 > last_second.bytes {
        return Some(
            "receiving data that is not MPEG-TS: the sender must send MPEG-TS over SRT (188-byte packets, 7 to a datagram)"
                .into(),
        );
    }
    Some("receiving a stream with no picture yet: waiting for H.264 video and a keyframe".into())
}

/// This machine's IPv4 addresses other than loopback, from the kernel's table.
fn local_addresses() -> Vec<String> {
    let Ok(text) = std::fs::read_to_string("/proc/net/fib_trie") else { return Vec::new() };
    let mut out: Vec<String> = Vec::new();
    let mut last_ip: Option<&str> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(ip) = t.strip_prefix("|-- ") {
            last_ip = Some(ip);
        } else if t.contains("/32 host LOCAL") {
            if let Some(ip) = last_ip.filter(|ip| !ip.starts_with("127.")) {
                if !out.iter().any(|o| o == ip) {
                    out.push(ip.to_string());
                }
            }
        }
    }
    out
}

/// Chooses the decoder and logs why.
pub fn select_decoder() -> Result<DecoderChoice, AppError> {
    let choice = choose_decoder(&Platform::detect(), &telebridge_media::has_element)
        .ok_or_else(|| AppError::BadInput("no H.264 decoder: install gstreamer1.0-libav".into()))?;
    info!(decoder = choice.element, reason = %choice.reason, "H.264 decoder chosen");
    Ok(choice)
}

/// The re-encoder of `--loop-to`: the shown frames, encoded again and sent on.
struct Loop {
    pipeline: EncoderPipeline,
    output: Arc<SrtOutput>,
}

fn start_loop(url: &SrtUrl) -> Result<Loop, AppError> {
    let mut config = Config::default();
    config.audio.codec = "none".into();
    let valid = config.validate().map_err(|e| AppError::Runtime(e.to_string()))?;
    let mut settings = EncoderSettings::from_config(&valid, crate::select_encoder(&valid)?);
    settings.frames_from_app = true;
    let fanout = TsFanout::default();
    let pipeline = EncoderPipeline::build(&settings, fanout.clone())?;
    let output = Arc::new(
        SrtOutput::start("loop".into(), url.clone(), pipeline.keyframe_requester())
            .map_err(|e| AppError::BadInput(e.to_string()))?,
    );
    let o = output.clone();
    fanout.add(move |b| o.push(b));
    pipeline.start()?;
    info!(output = %url, "looping the picture back");
    Ok(Loop { pipeline, output })
}

/// The round trip read from the echo strip. The far box may return one timecode in several of
/// its frames (it sends more frames than it shows of ours): only the first counts.
struct RoundTrip {
    last_frame: Option<u32>,
    recent: LatencyWindow,
    whole: LatencyHistogram,
}

impl Default for RoundTrip {
    fn default() -> Self {
        Self {
            last_frame: None,
            recent: LatencyWindow::new(Duration::from_secs(5)),
            whole: LatencyHistogram::default(),
        }
    }
}

impl RoundTrip {
    fn heard(&mut self, mine: timecode::Timecode, now_us: u64, now: Instant) {
        if self.last_frame == Some(mine.frame) {
            return;
        }
        self.last_frame = Some(mine.frame);
        let ms = mine.age_us(now_us) as f64 / 1000.0;
        if ms < 60_000.0 {
            self.recent.push(now, ms);
            self.whole.push(ms);
        }
    }
}

/// Where the stream comes from: the decoder's own SRT input, or the bridge's connection.
enum Source {
    Srt(SrtInput),
    Peer(Arc<crate::bridge_role::PeerFeed>),
}

impl Source {
    fn status(&self) -> InputStatus {
        match self {
            Source::Srt(i) => i.status().borrow().clone(),
            Source::Peer(f) => f.status(),
        }
    }
}

struct Decoding {
    pipeline: Option<DecodePipeline>,
    last_push: Option<Instant>,
}

/// Runs the decoder until `duration` elapses or `shutdown` completes.
pub async fn run_decoder(
    options: DecodeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<DecodeSummary, AppError> {
    telebridge_media::init()?;
    telebridge_srt::install_log_hook();
    let decoder = select_decoder()?;
    let slate = |receiving: bool, reason: Option<&str>| match &options.peer_name {
        Some(peer) => bridge_slate_text(&options.name, peer, &options.input, receiving, reason),
        None => slate_text(&options.name, &options.input, receiving, reason),
    };
    let first_text = slate(false, None);
    let display = Arc::new(Display::start(options.sink.clone(), (1280, 720), first_text)?);
    let counters = Arc::new(DecoderCounters::default());
    let recent = Arc::new(Mutex::new(LatencyWindow::new(Duration::from_secs(5))));
    let whole = Arc::new(Mutex::new(LatencyHistogram::default()));
    let decoding = Arc::new(Mutex::new(Decoding { pipeline: None, last_push: None }));

    let looped = options.loop_to.as_ref().map(start_loop).transpose()?;
    let on_frame: telebridge_media::decode_pipeline::FrameConsumer = {
        let d = display.clone();
        let input = looped.as_ref().and_then(|l| l.pipeline.frame_input().cloned());
        Arc::new(move |s| {
            d.show(s);
            if let Some(i) = &input {
                telebridge_media::display::push_fresh(i, s);
            }
        })
    };
    let round_trip = Arc::new(Mutex::new(RoundTrip::default()));
    let on_timecode: telebridge_media::decode_pipeline::TimecodeConsumer = {
        let (recent, whole, echo_to, round_trip) =
            (recent.clone(), whole.clone(), options.echo.clone(), round_trip.clone());
        Arc::new(move |tc, echo| {
            let (now_us, now) = (timecode::now_us(), Instant::now());
            let ms = tc.age_us(now_us) as f64 / 1000.0;
            if ms < 60_000.0 {
                recent.lock().unwrap_or_else(|p| p.into_inner()).push(now, ms);
                whole.lock().unwrap_or_else(|p| p.into_inner()).push(ms);
            }
            if let Some(e) = &echo_to {
                e.heard(tc, now);
            }
            if let Some(mine) = echo {
                round_trip.lock().unwrap_or_else(|p| p.into_inner()).heard(mine, now_us, now);
            }
        })
    };
    let on_data: telebridge_srt::input::TsConsumer = {
        let (decoding, counters, decoder, audio, preview) =
            (decoding.clone(), counters.clone(), decoder.clone(), options.audio.clone(), options.preview.clone());
        Arc::new(move |data: &[u8]| {
            let mut d = decoding.lock().unwrap_or_else(|p| p.into_inner());
            // A gap means a new connection or a sender restart: start the decoder afresh.
            let stale = d.last_push.is_none_or(|t| t.elapsed() > Duration::from_millis(500));
            if d.pipeline.is_none() || stale {
                d.pipeline = None;
                counters.new_connection();
                let started = DecodePipeline::start(
                    &decoder,
                    &audio,
                    counters.clone(),
                    on_frame.clone(),
                    on_timecode.clone(),
                    preview.clone(),
                );
                match started {
                    Ok(p) => d.pipeline = Some(p),
                    Err(e) => warn!(error = %e, "cannot start the decoder"),
                }
            }
            d.last_push = Some(Instant::now());
            if let Some(p) = &d.pipeline {
                p.push(&gst::Buffer::from_slice(data.to_vec()));
            }
        })
    };
    let input = match &options.peer {
        Some(feed) => {
            feed.attach(on_data);
            Source::Peer(feed.clone())
        }
        None => {
            Source::Srt(SrtInput::start(options.input.clone(), on_data).map_err(|e| AppError::BadInput(e.to_string()))?)
        }
    };
    let started = Instant::now();
    info!(input = %options.input, sink = options.sink.name(), "decoder running");

    tokio::pin!(shutdown);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    let mut last_sample = Instant::now();
    let mut last_frames = 0u64;
    let mut slate_s = 0u64;
    let mut last_arrived = Arrived::default();
    let mut problem: Option<String> = None;
    let stats = |fps: f64, problem: Option<String>| DecoderStats {
        element: decoder.element.to_string(),
        fps,
        frames_decoded: counters.frames_decoded.load(Ordering::Relaxed),
        frames_missing: counters.frames_missing.load(Ordering::Relaxed),
        audio_frames: counters.audio_frames.load(Ordering::Relaxed),
        width: counters.width.load(Ordering::Relaxed),
        height: counters.height.load(Ordering::Relaxed),
        problem,
    };
    loop {
        tokio::select! {
            _ = &mut shutdown => { info!("stopping on request"); break; }
            _ = tick.tick() => {}
        }
        if options.duration.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        {
            let mut d = decoding.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(err) = d.pipeline.as_ref().and_then(|p| p.error()) {
                warn!(error = %err, "decoder failed; restarting it with the next data");
                d.pipeline = None;
            }
        }
        let st = input.status();
        let receiving = st.state == telebridge_srt::input::InputState::Receiving;
        let reason = problem.as_deref().or(st.reason.as_deref());
        // "A caller is connected" only while a stream arrives that shows no picture: a sender
        // that just went away still counts as receiving for up to half a second.
        display.set_slate_text(&slate(problem.is_some(), reason));
        if last_sample.elapsed() >= Duration::from_secs(1) {
            let secs = last_sample.elapsed().as_secs_f64();
            last_sample = Instant::now();
            let frames = counters.frames_decoded.load(Ordering::Relaxed);
            let now = Arrived { bytes: st.bytes, not_ts: st.not_ts_packets, frames };
            let last_second = Arrived {
                bytes: now.bytes.saturating_sub(last_arrived.bytes),
                not_ts: now.not_ts.saturating_sub(last_arrived.not_ts),
                frames: now.frames.saturating_sub(last_arrived.frames),
            };
            last_arrived = now;
            let found = stream_problem(receiving, last_second, &counters.unsupported());
            if found != problem {
                match &found {
                    Some(p) => warn!(problem = %p, "a stream arrives but shows no picture"),
                    None if problem.is_some() => info!("the stream's problem is gone"),
                    None => {}
                }
                problem = found;
            }
            let fps = ((frames - last_frames) as f64 / secs * 10.0).round() / 10.0;
            last_frames = frames;
            let showing_slate = display.showing_slate();
            if showing_slate {
                slate_s += 1;
            }
            let sample = DecodeSample {
                t: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
                input: st,
                decoder: stats(fps, problem.clone()),
                display: DisplayStats {
                    sink: options.sink.name().to_string(),
                    showing: if showing_slate { "slate" } else { "video" },
                    slate: display.slate_text(),
                    slate_since_unix_ms: display.transitions().0,
                    video_since_unix_ms: display.transitions().1,
                },
                latency: recent.lock().unwrap_or_else(|p| p.into_inner()).summary(Instant::now()),
                round_trip: round_trip.lock().unwrap_or_else(|p| p.into_inner()).recent.summary(Instant::now()),
                loop_output: looped.as_ref().map(|l| l.output.status().borrow().clone()),
            };
            if let Some(cb) = &options.on_sample {
                cb(&sample);
            }
        }
    }
    let elapsed = started.elapsed();
    let final_input = input.status();
    if let Source::Srt(i) = input {
        i.stop();
    }
    if let Some(l) = looped {
        l.pipeline.stop(Duration::from_millis(500));
    }
    decoding.lock().unwrap_or_else(|p| p.into_inner()).pipeline = None;
    let frames = counters.frames_decoded.load(Ordering::Relaxed);
    let summary = DecodeSummary {
        duration_s: (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        decoder: stats(((frames as f64 / elapsed.as_secs_f64().max(0.001)) * 10.0).round() / 10.0, problem),
        input: final_input,
        latency: whole.lock().unwrap_or_else(|p| p.into_inner()).summary(),
        round_trip: round_trip.lock().unwrap_or_else(|p| p.into_inner()).whole.summary(),
        slate_s,
    };
    if let Ok(mut d) = Arc::try_unwrap(display) {
        d.stop();
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slate_says_what_the_box_waits_for_and_why() {
        let url = SrtUrl::parse("srt://:9000?mode=listener&passphrase=0123456789").unwrap();
        let t =
            slate_text("studio-a", &url, false, Some("passphrase rejected: the two ends have different passphrases"));
        assert!(t.starts_with("studio-a\nNo picture: listening for an SRT caller on port 9000"), "{t}");
        assert!(t.ends_with("\npassphrase rejected: the two ends have different passphrases"), "{t}");
        assert!(!t.contains("0123456789"));
        let url = SrtUrl::parse("srt://encoder.example:9000").unwrap();
        assert_eq!(slate_text("b", &url, false, None), "b\nNo picture: calling SRT encoder.example:9000");
        let peer = "connection lost: 198.20.0.1:7700 stopped acknowledging for 2.1 s";
        assert_eq!(
            bridge_slate_text("studio-b", "studio-a", &url, false, Some(peer)),
            format!("studio-b\nNo picture: calling studio-a at encoder.example:9000\n{peer}")
        );
        let listen = SrtUrl::parse("srt://:7700?mode=listener").unwrap();
        assert_eq!(
            bridge_slate_text("studio-a", "studio-b", &listen, false, None),
            "studio-a\nNo picture: waiting for studio-b to call (UDP port 7700)"
        );
        // A stream arrives but shows no picture: the slate no longer says it waits for a caller.
        let url = SrtUrl::parse("srt://:9000?mode=listener").unwrap();
        let t = slate_text("c", &url, true, Some("receiving video H.265 (HEVC): ..."));
        assert_eq!(t, "c\nNo picture: a caller is connected on port 9000\nreceiving video H.265 (HEVC): ...");
    }

    #[test]
    fn a_stream_without_a_picture_says_why() {
        let second = |bytes, not_ts, frames| Arrived { bytes, not_ts, frames };
        let hevc = vec!["video H.265 (HEVC)".to_string(), "audio AC-3".to_string()];
        let p = stream_problem(true, second(500_000, 0, 0), &hevc).unwrap();
        assert_eq!(
            p,
            "receiving video H.265 (HEVC) and audio AC-3: this box decodes H.264 video and AAC audio; set the sender to H.264"
        );
        let p = stream_problem(true, second(500_000, 2600, 0), &[]).unwrap();
        assert!(p.starts_with("receiving data that is not MPEG-TS"), "{p}");
        let p = stream_problem(true, second(500_000, 0, 0), &[]).unwrap();
        assert!(p.contains("waiting for H.264 video and a keyframe"), "{p}");
        // A picture shows, or nothing arrives, or nobody is connected: nothing to add.
        assert_eq!(stream_problem(true, second(500_000, 0, 30), &hevc), None);
        assert_eq!(stream_problem(true, second(0, 0, 0), &hevc), None);
        assert_eq!(stream_problem(false, second(500_000, 0, 0), &hevc), None);
        // Only data streams unsupported (teletext beside H.264 that is not decoding yet).
        let p = stream_problem(true, second(500_000, 0, 0), &["data application/x-teletext".to_string()]).unwrap();
        assert!(p.contains("waiting for H.264"), "{p}");
    }
}
