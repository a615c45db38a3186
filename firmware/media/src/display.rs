//! The display: decoded frames to the screen, and a slate when none arrive. Its pipeline is
//! built once and never torn down, so the HDMI output never goes black.
//!
//! ```text
//! appsrc(raw, do-timestamp) [! videoconvert ! videoscale] ! kmssink | autovideosink | fakesink
//!                            ! videoconvert ! videoscale ! x264enc ! matroskamux ! filesink   (file:PATH, for tests)
//! ```
//! A watchdog thread pushes the slate (a still picture saying what the box waits for) five
//! times a second whenever no frame has arrived for [`SLATE_AFTER`].

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gst::prelude::*;
use tracing::{info, warn};

use crate::error::{make, MediaError};
use crate::kms::{connected_output, drm_connectors, preferred_mode};
pub use crate::slate_picture::render_slate;
use crate::watched::Watched;
use telebridge_contract::feed::Feed;

/// How long a question from the stats loop (the slate's words, the transitions) waits for the
/// display's lock before it logs who holds it and goes on without an answer.
const QUERY_WAIT: Duration = Duration::from_millis(200);

/// No frame for this long and the slate shows.
pub const SLATE_AFTER: Duration = Duration::from_millis(500);

/// Where the picture goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkKind {
    /// The HDMI output through KMS (`kmssink`), optionally on a given connector.
    Kms {
        /// DRM connector id; the first connected one when `None`.
        connector: Option<u32>,
    },
    /// A window on the desktop (`autovideosink`).
    Window,
    /// Nowhere (`fakesink`): headless boxes and tests.
    Fake,
    /// A Matroska file of what the screen would show (for tests).
    File(PathBuf),
}

impl SinkKind {
    /// The sink for the configured `decoder.sink`; `auto` picks KMS if a display is connected,
    /// else a window if a desktop is running, else fake.
    pub fn from_config(sink: &telebridge_config::DecoderSink) -> Self {
        use telebridge_config::DecoderSink;
        match sink {
            DecoderSink::Auto => Self::auto(),
            DecoderSink::Kms => Self::Kms { connector: None },
            DecoderSink::Window => Self::Window,
            DecoderSink::Fake => Self::Fake,
            DecoderSink::File(p) => Self::File(p.clone()),
        }
    }

    fn auto() -> Self {
        if connected_output(&drm_connectors()).is_some() && crate::has_element("kmssink") {
            Self::Kms { connector: None }
        } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() {
            Self::Window
        } else {
            Self::Fake
        }
    }

    /// A short name for stats.
    pub fn name(&self) -> &'static str {
        match self {
            SinkKind::Kms { .. } => "kms",
            SinkKind::Window => "window",
            SinkKind::Fake => "fake",
            SinkKind::File(_) => "file",
        }
    }
}

struct State {
    last_frame: Option<Instant>,
    /// Wall-clock ms when the slate or the picture last came on screen.
    slate_since_unix_ms: Option<u64>,
    video_since_unix_ms: Option<u64>,
    slate_text: String,
    /// The tally: the slate is framed in red while the box is on air.
    on_air: bool,
    slate: Option<(String, (u32, u32), bool, gst::Sample)>,
    size: (u32, u32),
    /// The sound's meters: while the slate is up and sound arrives, the slate shows its meter.
    levels: Option<Arc<telebridge_contract::sound::LevelBoard>>,
}

/// The running display.
pub struct Display {
    pipeline: gst::Pipeline,
    appsrc: gst_app::AppSrc,
    state: Arc<Watched<State>>,
    showing_slate: Arc<AtomicBool>,
    frames_shown: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    watchdog: Option<JoinHandle<()>>,
    kind: SinkKind,
    /// The DRM card kmssink draws on, opened here (kmssink's `fd`); kept open while it runs.
    _card: Option<std::fs::File>,
}

impl std::fmt::Debug for Display {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Display").field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl Display {
    /// Starts the display on `kind`, showing the slate with `slate_text` until frames arrive.
    /// `size` is the slate's size until the first frame sets it.
    pub fn start(kind: SinkKind, size: (u32, u32), slate_text: String) -> Result<Self, MediaError> {
        let pipeline = gst::Pipeline::with_name("display");
        let appsrc = live_frame_source("frames");
        let mut chain: Vec<gst::Element> = vec![appsrc.clone().upcast()];
        let mut card = None;
        match &kind {
            SinkKind::Fake => chain
                .push(gst::ElementFactory::make("fakesink").property("sync", false).property("async", false).build()?),
            SinkKind::Window | SinkKind::Kms { .. } => {
                chain.push(make("videoconvert", "gstreamer1.0-plugins-base")?);
                chain.push(make("videoscale", "gstreamer1.0-plugins-base")?);
                let sink = if let SinkKind::Kms { connector } = &kind {
                    let (sink, opened) = kms_sink(*connector, &mut chain)?;
                    card = opened;
                    sink
                } else {
                    window_sink(Desktop::here())?
                };
                sink.set_property("sync", false);
                chain.push(sink);
            }
            SinkKind::File(path) => file_chain(path, size, &mut chain)?,
        }
        pipeline.add_many(&chain)?;
        gst::Element::link_many(&chain)?;
        pipeline.set_state(gst::State::Playing)?;
        info!(sink = kind.name(), "display started");

        let state = Arc::new(Watched::new(
            "display",
            State {
                last_frame: None,
                slate_since_unix_ms: None,
                video_since_unix_ms: None,
                slate_text,
                on_air: false,
                slate: None,
                size,
                levels: None,
            },
        ));
        let showing_slate = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, src, showing, stopping) = (state.clone(), appsrc.clone(), showing_slate.clone(), stop.clone());
        let watchdog = std::thread::Builder::new()
            .name("slate".into())
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    let sample = {
                        let mut s = st.lock();
                        if s.last_frame.is_some_and(|t| t.elapsed() < SLATE_AFTER) {
                            None
                        } else {
                            let (text, size, on_air) = (s.slate_text.clone(), s.size, s.on_air);
                            let fresh =
                                s.slate.as_ref().is_some_and(|(t, z, a, _)| *t == text && *z == size && *a == on_air);
                            if !fresh {
                                s.slate = Some((text.clone(), size, on_air, render_slate(&text, size, on_air)));
                            }
                            let sound = s
                                .levels
                                .as_ref()
                                .and_then(|b| b.read(Instant::now()).into_iter().find(|l| l.stream == Feed::Received));
                            s.slate.as_ref().map(|(_, _, _, sample)| match &sound {
                                Some(l) => crate::slate_picture::with_meters(sample, &l.channels),
                                None => sample.clone(),
                            })
                        }
                    };
                    match sample {
                        Some(sample) => {
                            if !showing.swap(true, Ordering::Relaxed) {
                                st.lock().slate_since_unix_ms = Some(unix_ms());
                                info!("no picture: showing the slate");
                            }
                            push_fresh(&src, &sample);
                            std::thread::sleep(Duration::from_millis(200));
                        }
                        None => std::thread::sleep(Duration::from_millis(50)),
                    }
                }
            })
            .map_err(|e| MediaError::Gst(e.to_string()))?;
        Ok(Self {
            pipeline,
            appsrc,
            state,
            showing_slate,
            frames_shown: Arc::new(AtomicU64::new(0)),
            stop,
            watchdog: Some(watchdog),
            kind,
            _card: card,
        })
    }

    /// Shows a decoded frame.
    pub fn show(&self, sample: &gst::Sample) {
        {
            let mut s = self.state.lock();
            s.last_frame = Some(Instant::now());
            if let Some(info) = sample.caps().and_then(|c| gst_video::VideoInfo::from_caps(c).ok()) {
                s.size = (info.width(), info.height());
            }
        }
        let first = self.frames_shown.load(Ordering::Relaxed) == 0;
        if self.showing_slate.swap(false, Ordering::Relaxed) || first {
            self.state.lock().video_since_unix_ms = Some(unix_ms());
            info!("picture on screen");
        }
        self.frames_shown.fetch_add(1, Ordering::Relaxed);
        push_fresh(&self.appsrc, sample);
    }

    /// Changes what the slate says (skipped, and logged with who holds it, when the display's
    /// lock is not free within `QUERY_WAIT`: the next call says it again).
    pub fn set_slate_text(&self, text: &str) {
        if let Some(mut s) = self.state.lock_within(QUERY_WAIT) {
            if s.slate_text != text {
                s.slate_text = text.to_string();
            }
        }
    }

    /// The tally: frames the slate in red while the box is on air (skipped, as
    /// [`Display::set_slate_text`], when the display's lock is not free in time).
    pub fn set_on_air(&self, on_air: bool) {
        if let Some(mut s) = self.state.lock_within(QUERY_WAIT) {
            s.on_air = on_air;
        }
    }

    /// Shows the received sound's meter on the slate (sound that arrives without a picture, or
    /// before it), read from `board`.
    pub fn set_levels(&self, board: Arc<telebridge_contract::sound::LevelBoard>) {
        self.state.lock().levels = Some(board);
    }

    /// Whether the slate is on screen.
    pub fn showing_slate(&self) -> bool {
        self.showing_slate.load(Ordering::Relaxed)
    }

    /// When (wall clock, ms since the epoch) the slate last came on, and the picture last came on
    /// (unknown while the display's lock is not free within `QUERY_WAIT`).
    pub fn transitions(&self) -> (Option<u64>, Option<u64>) {
        self.state.lock_within(QUERY_WAIT).map_or((None, None), |s| (s.slate_since_unix_ms, s.video_since_unix_ms))
    }

    /// What the slate says now (empty while the display's lock is not free within `QUERY_WAIT`).
    pub fn slate_text(&self) -> String {
        self.state.lock_within(QUERY_WAIT).map(|s| s.slate_text.clone()).unwrap_or_default()
    }

    /// Which sink is in use.
    pub fn kind(&self) -> &SinkKind {
        &self.kind
    }

    /// Ends the picture cleanly (a file sink gets its index) and stops.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        let _ = self.appsrc.end_of_stream();
        if let Some(bus) = self.pipeline.bus() {
            let _ = bus
                .timed_pop_filtered(gst::ClockTime::from_seconds(3), &[gst::MessageType::Eos, gst::MessageType::Error]);
        }
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        self.stop();
    }
}

fn unix_ms() -> u64 {
    crate::timecode::now_us() / 1000
}

/// A live source of raw frames pushed by the application: stamped on arrival, never blocking,
/// keeping at most three and dropping the oldest (the display, and the loop encoder's input).
pub fn live_frame_source(name: &str) -> gst_app::AppSrc {
    gst_app::AppSrc::builder()
        .name(name)
        .format(gst::Format::Time)
        .is_live(true)
        .do_timestamp(true)
        .block(false)
        .max_buffers(3)
        .leaky_type(gst_app::AppLeakyType::Downstream)
        .build()
}

/// Pushes a frame with fresh timestamps (the appsrc stamps it), sharing its memory.
pub fn push_fresh(appsrc: &gst_app::AppSrc, sample: &gst::Sample) {
    let (Some(buffer), Some(caps)) = (sample.buffer(), sample.caps_owned()) else { return };
    let mut copy = buffer.copy();
    {
        let b = copy.make_mut();
        b.set_pts(gst::ClockTime::NONE);
        b.set_dts(gst::ClockTime::NONE);
        b.set_duration(gst::ClockTime::NONE);
    }
    let fresh = gst::Sample::builder().buffer(&copy).caps(&caps).build();
    let _ = appsrc.push_sample(&fresh);
}

/// kmssink on the card with a monitor, in the monitor's preferred mode (a caps filter pushed on
/// `chain` for it), and the card, which must stay open while it draws.
/// Which desktops this process could open a window on: what its environment names.
#[derive(Debug, Clone, Copy)]
struct Desktop {
    wayland: bool,
    x: bool,
}

impl Desktop {
    fn here() -> Self {
        Self { wayland: std::env::var_os("WAYLAND_DISPLAY").is_some(), x: std::env::var_os("DISPLAY").is_some() }
    }
}

/// A window on the desktop: Wayland's sink, else X's, the first that opens. Not
/// `autovideosink`: with no desktop its last resort is DirectFB (`dfbvideosink`), which takes the
/// console and crashed the whole daemon from a thread of its own (a box set to `window` and run
/// headless, as the API tests run it).
fn window_sink(desktop: Desktop) -> Result<gst::Element, MediaError> {
    let candidates = [("waylandsink", desktop.wayland), ("xvimagesink", desktop.x), ("ximagesink", desktop.x)];
    for (name, _) in candidates.iter().filter(|(_, there)| *there) {
        let Ok(sink) = gst::ElementFactory::make(name).build() else { continue };
        if sink.set_state(gst::State::Ready).is_ok() {
            sink.set_state(gst::State::Null)?;
            return Ok(sink);
        }
    }
    Err(MediaError::NoDesktop)
}

fn kms_sink(
    connector: Option<u32>,
    chain: &mut Vec<gst::Element>,
) -> Result<(gst::Element, Option<std::fs::File>), MediaError> {
    let mut card = None;
    let s = gst::ElementFactory::make("kmssink")
        .build()
        .map_err(|_| MediaError::ElementMissing { element: "kmssink", package: "gstreamer1.0-plugins-bad" })?;
    if let Some(c) = connector {
        s.set_property("connector-id", c as i32);
    }
    // kmssink looks for the drivers of a list of boards; hand it the card with the
    // monitor instead (virtio_gpu in qemu is not on its list; a Pi 4 has two cards),
    // and have it set the monitor's preferred mode: drawing on whatever the console
    // left (a plane of another size) is refused by some drivers (virtio-gpu).
    if let Some(connector) = connected_output(&drm_connectors()) {
        let card_name = connector.split('-').next().unwrap_or_default();
        let path = format!("/dev/dri/{card_name}");
        match std::fs::OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => {
                use std::os::fd::AsRawFd;
                s.set_property("fd", f.as_raw_fd());
                card = Some(f);
                let modes = std::fs::read_to_string(format!("/sys/class/drm/{connector}/modes"));
                if let Some((w, h)) = modes.ok().as_deref().and_then(preferred_mode) {
                    s.set_property("force-modesetting", true);
                    let caps = gst::Caps::builder("video/x-raw")
                        .field("width", w as i32)
                        .field("height", h as i32)
                        .field("pixel-aspect-ratio", gst::Fraction::new(1, 1))
                        .build();
                    chain.push(gst::ElementFactory::make("capsfilter").property("caps", caps).build()?);
                    info!(card = %path, connector = %connector, mode = %format!("{w}x{h}"), "HDMI output through KMS");
                } else {
                    info!(card = %path, connector = %connector, "HDMI output through KMS, in the mode it has");
                }
            }
            Err(e) => {
                warn!(card = %path, error = %e, "cannot open the display card; kmssink looks for one")
            }
        }
    }
    Ok((s, card))
}

/// The elements that write what is shown to a file: one size, 30 fps, x264 into Matroska.
fn file_chain(path: &std::path::Path, size: (u32, u32), chain: &mut Vec<gst::Element>) -> Result<(), MediaError> {
    // A file cannot change format mid-way (the slate is 5 fps, streams change size):
    // convert everything to one size and 30 fps before encoding.
    chain.push(make("videoconvert", "gstreamer1.0-plugins-base")?);
    chain.push(make("videoscale", "gstreamer1.0-plugins-base")?);
    chain.push(make("videorate", "gstreamer1.0-plugins-base")?);
    let caps = gst::Caps::builder("video/x-raw")
        .field("width", size.0 as i32)
        .field("height", size.1 as i32)
        .field("format", "I420")
        .field("framerate", gst::Fraction::new(30, 1))
        .field("pixel-aspect-ratio", gst::Fraction::new(1, 1))
        .build();
    chain.push(gst::ElementFactory::make("capsfilter").property("caps", caps).build()?);
    let enc = make("x264enc", "gstreamer1.0-plugins-ugly")?;
    enc.set_property_from_str("tune", "zerolatency");
    enc.set_property_from_str("speed-preset", "ultrafast");
    chain.push(enc);
    chain.push(gst::ElementFactory::make("h264parse").build()?);
    chain.push(make("matroskamux", "gstreamer1.0-plugins-good")?);
    chain.push(
        gst::ElementFactory::make("filesink")
            .property("location", path.display().to_string())
            .property("sync", false)
            .build()?,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sink_names() {
        use telebridge_config::DecoderSink;
        assert_eq!(SinkKind::from_config(&DecoderSink::Fake), SinkKind::Fake);
        assert_eq!(SinkKind::from_config(&DecoderSink::File("/tmp/x.mkv".into())), SinkKind::File("/tmp/x.mkv".into()));
        assert_eq!(SinkKind::from_config(&DecoderSink::Kms), SinkKind::Kms { connector: None });
    }

    /// The threads of this process, by name.
    fn thread_names() -> Vec<String> {
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .map(|n| n.trim().to_string())
            .collect()
    }

    /// A window with no desktop, or with a desktop named that does not answer (this machine
    /// runs none), is refused in words that say what to choose, and nothing else is tried: no
    /// DirectFB thread, which crashed the API tests' process when autovideosink fell back to it.
    #[test]
    fn a_window_without_a_desktop_is_refused_in_words_and_directfb_is_never_tried() {
        crate::init().unwrap();
        for desktop in [Desktop { wayland: false, x: false }, Desktop { wayland: true, x: true }] {
            if desktop.x && (std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()) {
                continue; // a desktop here would rightly open.
            }
            let e = window_sink(desktop).unwrap_err();
            assert!(matches!(e, MediaError::NoDesktop), "{e}");
            let words = e.to_string();
            assert!(words.contains("window") && words.contains("kms") && words.contains("DISPLAY"), "{words}");
        }
        let names = thread_names();
        assert!(!names.iter().any(|n| n.contains("Fusion")), "{names:?}");
    }
}
