//! Talkback's sound (issue 39): the talker's voice into Opus packets of 10 ms (the low-delay
//! mode: 2.5 ms look-ahead), and the far talker's packets decoded to the headphones, a WAV file
//! or nowhere. Apart from the programme's pipelines: talk is never mixed into what is sent or
//! recorded. With the `test` source the voice is a 440 Hz beep of 100 ms at each second of the
//! wall clock, and the receiver reads when each beep begins: mouth to ear, when both boxes'
//! clocks agree (one machine, or NTP).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use telebridge_sync::Locked;

use gst::prelude::*;
use telebridge_config::{AudioSource, TalkOutput};
use tracing::{info, warn};

use crate::error::{make, MediaError};

/// Talk's sample rate and frame: 48 kHz mono, 10 ms.
pub const RATE: u32 = 48_000;
/// Samples in one 10 ms frame.
const FRAME: usize = (RATE / 100) as usize;
/// The test beep: its pitch (apart from the programme's 1 kHz test tone) and length.
pub const BEEP_HZ: f64 = 440.0;
/// The test beep's length, ms (it starts on each second).
pub const BEEP_MS: u64 = 100;

/// Where a talker's Opus packets go.
pub type PacketSink = Arc<dyn Fn(&[u8]) + Send + Sync>;

fn unix_ms() -> u64 {
    crate::timecode::now_us() / 1_000
}

/// The test voice for the 10 ms starting at `start_ms` (wall clock): the beep during the first
/// [`BEEP_MS`] of each second, silence otherwise. Pure.
pub fn test_voice(start_ms: u64) -> Vec<i16> {
    (0..FRAME)
        .map(|i| {
            let t_us = start_ms * 1_000 + (i as u64 * 1_000_000) / RATE as u64;
            if (t_us / 1_000) % 1_000 < BEEP_MS {
                let phase = 2.0 * std::f64::consts::PI * BEEP_HZ * (t_us as f64 / 1e6);
                (phase.sin() * 12_000.0) as i16
            } else {
                0
            }
        })
        .collect()
}

/// Finds where beeps begin in decoded talk: a sample over [`OnsetDetector::LOUD`] after at least
/// 200 ms without one. Pure.
#[derive(Debug, Default)]
pub struct OnsetDetector {
    /// Samples since the last loud one.
    since_loud: usize,
}

impl OnsetDetector {
    /// A sample this loud is the beep.
    pub const LOUD: i16 = 3_000;
    /// Samples without a loud one before a beep, (200 ms).
    const QUIET_BEFORE: usize = (RATE / 5) as usize;

    /// `samples` are heard from `at_ms` (wall clock, the first sample's time): the wall-clock
    /// time of a beep's start among them, if one starts.
    pub fn feed(&mut self, samples: &[i16], at_ms: u64) -> Option<u64> {
        let mut onset = None;
        for (i, s) in samples.iter().enumerate() {
            if s.unsigned_abs() >= Self::LOUD.unsigned_abs() {
                if self.since_loud >= Self::QUIET_BEFORE && onset.is_none() {
                    onset = Some(at_ms + (i as u64 * 1_000) / RATE as u64);
                }
                self.since_loud = 0;
            } else {
                self.since_loud += 1;
            }
        }
        onset
    }
}

/// The talker's side: the microphone (or the test beep) into Opus packets, handed to a
/// [`PacketSink`] as they come.
pub struct TalkSender {
    pipeline: gst::Pipeline,
    stop: Arc<AtomicBool>,
    feeder: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for TalkSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TalkSender").finish_non_exhaustive()
    }
}

impl TalkSender {
    /// Starts capturing from `source`; each Opus packet goes to `on_packet`.
    pub fn start(source: &AudioSource, on_packet: PacketSink) -> Result<Self, MediaError> {
        let pipeline = gst::Pipeline::with_name("talk-send");
        let raw = gst::Caps::builder("audio/x-raw")
            .field("format", "S16LE")
            .field("rate", RATE as i32)
            .field("channels", 1i32)
            .field("layout", "interleaved")
            .build();
        let (src, feeder_src) = match source {
            AudioSource::Test => {
                let src = gst_app::AppSrc::builder().caps(&raw).is_live(true).format(gst::Format::Time).build();
                src.set_property("do-timestamp", true);
                (src.clone().upcast::<gst::Element>(), Some(src))
            }
            AudioSource::Alsa { device } => {
                let src = make("alsasrc", "gstreamer1.0-alsa")?;
                src.set_property("device", device);
                src.set_property("buffer-time", 20_000i64);
                src.set_property("latency-time", 5_000i64);
                (src, None)
            }
        };
        let convert = make("audioconvert", "gstreamer1.0-plugins-base")?;
        let resample = make("audioresample", "gstreamer1.0-plugins-base")?;
        let filter = gst::ElementFactory::make("capsfilter").property("caps", &raw).build()?;
        let enc = make("opusenc", "gstreamer1.0-plugins-base")?;
        enc.set_property_from_str("frame-size", "10");
        enc.set_property_from_str("audio-type", "restricted-lowdelay");
        enc.set_property("bitrate", 32_000i32);
        let sink = gst_app::AppSink::builder().sync(false).build();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |s| {
                    let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    if let Some(map) = sample.buffer().and_then(|b| b.map_readable().ok()) {
                        on_packet(map.as_slice());
                    }
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
        let chain = [src, convert, resample, filter, enc, sink.upcast()];
        pipeline.add_many(&chain)?;
        gst::Element::link_many(&chain)?;
        pipeline.set_state(gst::State::Playing)?;
        let stop = Arc::new(AtomicBool::new(false));
        let feeder = match feeder_src {
            Some(src) => Some(spawn_test_voice(src, stop.clone())?),
            None => None,
        };
        info!(source = %source, "talkback: microphone open");
        Ok(Self { pipeline, stop, feeder })
    }

    /// Stops capturing.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(f) = self.feeder.take() {
            let _ = f.join();
        }
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

/// Feeds the test voice in real time, 10 ms at a time, each frame pushed when its last sample
/// has been "spoken" (as a microphone's capture period would).
fn spawn_test_voice(src: gst_app::AppSrc, stop: Arc<AtomicBool>) -> Result<JoinHandle<()>, MediaError> {
    std::thread::Builder::new()
        .name("talk-test-voice".into())
        .spawn(move || {
            let mut start = unix_ms().div_ceil(10) * 10;
            while !stop.load(Ordering::Relaxed) {
                let due = start + 10;
                let now = unix_ms();
                if now < due {
                    std::thread::sleep(Duration::from_millis(due - now));
                }
                let bytes: Vec<u8> = test_voice(start).iter().flat_map(|s| s.to_le_bytes()).collect();
                if src.push_buffer(gst::Buffer::from_mut_slice(bytes)).is_err() {
                    break;
                }
                start = due.max(unix_ms().saturating_sub(10) / 10 * 10);
            }
        })
        .map_err(|e| MediaError::Gst(e.to_string()))
}

/// The listener's side: the far talker's packets decoded and played.
pub struct TalkReceiver {
    pipeline: gst::Pipeline,
    appsrc: gst_app::AppSrc,
    /// The last test beep's mouth-to-ear time, ms (0: none heard yet).
    beep_lag_ms: Arc<AtomicU64>,
    output: String,
}

impl std::fmt::Debug for TalkReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TalkReceiver").field("output", &self.output).finish_non_exhaustive()
    }
}

impl TalkReceiver {
    /// Starts the decoder into `output`.
    pub fn start(output: &TalkOutput) -> Result<Self, MediaError> {
        let pipeline = gst::Pipeline::with_name("talk-receive");
        let opus = gst::Caps::builder("audio/x-opus")
            .field("channel-mapping-family", 0i32)
            .field("channels", 1i32)
            .field("rate", RATE as i32)
            .build();
        let appsrc = gst_app::AppSrc::builder().caps(&opus).is_live(true).format(gst::Format::Time).build();
        appsrc.set_property("do-timestamp", true);
        let dec = make("opusdec", "gstreamer1.0-plugins-base")?;
        dec.set_property("plc", true);
        let convert = make("audioconvert", "gstreamer1.0-plugins-base")?;
        let raw = gst::Caps::builder("audio/x-raw").field("format", "S16LE").field("channels", 1i32).build();
        let filter = gst::ElementFactory::make("capsfilter").property("caps", &raw).build()?;
        let mut chain: Vec<gst::Element> = vec![appsrc.clone().upcast(), dec, convert, filter.clone()];
        match output {
            TalkOutput::None => chain.push(gst::ElementFactory::make("fakesink").property("sync", false).build()?),
            TalkOutput::Alsa(device) => {
                let sink = make("alsasink", "gstreamer1.0-alsa")?;
                sink.set_property("device", device);
                sink.set_property("sync", false);
                sink.set_property("buffer-time", 40_000i64);
                sink.set_property("latency-time", 10_000i64);
                chain.push(sink);
            }
            TalkOutput::File(path) => {
                chain.push(make("wavenc", "gstreamer1.0-plugins-good")?);
                chain.push(
                    gst::ElementFactory::make("filesink").property("location", path.display().to_string()).build()?,
                );
            }
        }
        pipeline.add_many(&chain)?;
        gst::Element::link_many(&chain)?;
        let beep_lag_ms = Arc::new(AtomicU64::new(0));
        let (lag, onsets) = (beep_lag_ms.clone(), Mutex::new(OnsetDetector::default()));
        if let Some(pad) = filter.static_pad("src") {
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                if let Some(map) = info.buffer().and_then(|b| b.map_readable().ok()) {
                    let samples: Vec<i16> =
                        map.as_slice().chunks_exact(2).map(|c| i16::from_le_bytes([c[0], c[1]])).collect();
                    let onset = onsets.locked().feed(&samples, unix_ms());
                    if let Some(at) = onset {
                        lag.store((at % 1_000).max(1), Ordering::Relaxed);
                    }
                }
                gst::PadProbeReturn::Ok
            });
        }
        pipeline.set_state(gst::State::Playing)?;
        info!(output = %output, "talkback: the far talker is heard here");
        Ok(Self { pipeline, appsrc, beep_lag_ms, output: output.to_string() })
    }

    /// One Opus packet of the far talker's voice.
    pub fn push(&self, opus: &[u8]) {
        if self.appsrc.push_buffer(gst::Buffer::from_slice(opus.to_vec())).is_err() {
            warn!("talkback: the decoder took no more packets");
        }
    }

    /// The last test beep's mouth-to-ear time, ms (from the second it was spoken on).
    pub fn beep_lag_ms(&self) -> Option<u64> {
        Some(self.beep_lag_ms.load(Ordering::Relaxed)).filter(|ms| *ms > 0)
    }

    /// Stops (a WAV file gets its header's sizes).
    pub fn stop(self) {
        let _ = self.appsrc.end_of_stream();
        if let Some(bus) = self.pipeline.bus() {
            let _ = bus
                .timed_pop_filtered(gst::ClockTime::from_seconds(2), &[gst::MessageType::Eos, gst::MessageType::Error]);
        }
        let _ = self.pipeline.set_state(gst::State::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_voice_beeps_for_the_first_100_ms_of_each_second() {
        assert!(test_voice(5_000).iter().any(|s| s.unsigned_abs() > 10_000));
        assert!(test_voice(5_090).iter().any(|s| *s != 0));
        assert!(test_voice(5_100).iter().all(|s| *s == 0));
        assert!(test_voice(5_990).iter().all(|s| *s == 0));
        assert_eq!(test_voice(0).len(), FRAME);
    }

    #[test]
    fn an_onset_is_a_loud_sample_after_200_ms_without_one() {
        let mut d = OnsetDetector::default();
        let quiet = vec![0i16; FRAME];
        for k in 0..20 {
            assert_eq!(d.feed(&quiet, k * 10), None);
        }
        let mut beep = vec![0i16; FRAME];
        beep[200] = 2_000;
        beep[240] = 8_000;
        beep[300] = 8_000;
        assert_eq!(d.feed(&beep, 1_000), Some(1_005), "sample 240 of 48 kHz is 5 ms in");
        assert_eq!(d.feed(&beep, 1_010), None, "not after a quiet 200 ms");
    }

    #[test]
    fn the_test_voice_through_opus_is_heard_as_a_beep_on_the_second() {
        crate::init().expect("GStreamer");
        let receiver = Arc::new(TalkReceiver::start(&TalkOutput::None).expect("receiver"));
        let r = receiver.clone();
        let sender = TalkSender::start(&AudioSource::Test, Arc::new(move |p: &[u8]| r.push(p))).expect("sender");
        let heard = (0..40).find_map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            receiver.beep_lag_ms()
        });
        sender.stop();
        let lag = heard.expect("a beep heard within 4 s");
        eprintln!("talkback test voice, mouth to ear with no link: {lag} ms");
        assert!(lag < 500, "mouth to ear on one machine, no link: {lag} ms");
        if let Ok(r) = Arc::try_unwrap(receiver) {
            r.stop();
        }
    }
}
