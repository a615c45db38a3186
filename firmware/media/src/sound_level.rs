//! The sound's meters in a pipeline: GStreamer's `level` element on the raw sound of a stream
//! (the programme before its encoder, what is received after its decoder), ten readings a
//! second, each written to the contract's [`LevelBoard`] as the bus gets it.
//!
//! ```text
//! ... ! audioresample ! 48 kHz stereo ! level (meter-programme) ! encoder ...
//! ... ! decoder ! audioconvert ! F32 ! level (meter-received) ! audioresample ! sink
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use gst::prelude::*;
use telebridge_contract::sound::{ChannelLevel, Feed, LevelBoard};

use crate::error::{make, MediaError};

/// How often a meter reads: ten times a second.
pub const METER_INTERVAL: Duration = Duration::from_millis(100);

/// The meter of `stream`: a `level` element that passes the sound on untouched.
pub fn meter(stream: Feed) -> Result<gst::Element, MediaError> {
    let level = make("level", "gstreamer1.0-plugins-good")?;
    level.set_property("name", telebridge_contract::sound::meter_element(stream));
    level.set_property("interval", METER_INTERVAL.as_nanos() as u64);
    level.set_property("post-messages", true);
    Ok(level)
}

/// Each channel's peak and RMS in a `level` message's structure; `None` if it is not one, or
/// if its interval held no sound (the one `level` posts at the end of a stream says an RMS of
/// NaN).
pub fn read_level(s: &gst::StructureRef) -> Option<Vec<ChannelLevel>> {
    if s.name() != "level" {
        return None;
    }
    let db = |field: &str| -> Option<Vec<f64>> {
        let values = s.get::<gst::glib::ValueArray>(field).ok()?;
        values.iter().map(|v| v.get::<f64>().ok()).collect()
    };
    let (peak, rms) = (db("peak")?, db("rms")?);
    let sound = peak.len() == rms.len() && !peak.is_empty() && !rms.iter().any(|r| r.is_nan());
    sound.then(|| peak.iter().zip(&rms).map(|(p, r)| ChannelLevel::new(*p, *r)).collect())
}

/// Writes the readings of the meters in the pipeline of `bus` to `board`, as they are posted
/// (from the streaming thread, without waiting for whoever reads the bus); they are not passed
/// on. Every other message is. Sets the bus's one sync handler.
pub fn watch(bus: &gst::Bus, board: Arc<LevelBoard>) {
    bus.set_sync_handler(move |_, msg| {
        let gst::MessageView::Element(e) = msg.view() else { return gst::BusSyncReply::Pass };
        let Some(stream) = msg.src().and_then(|src| telebridge_contract::sound::meter_feed(&src.name())) else {
            return gst::BusSyncReply::Pass;
        };
        if let Some(channels) = e.structure().and_then(read_level) {
            board.set(stream, channels, Instant::now());
        }
        gst::BusSyncReply::Drop
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real pipeline: a sine at half scale on the left, silence on the right, metered; the
    /// board reads about -6 dBFS peak and -9 dBFS RMS on the left and the floor on the right
    /// (the last reading, the empty one `level` posts at the end, is not one), and the bus
    /// carries everything else as before (the end of the stream).
    #[test]
    fn a_metered_pipeline_writes_its_readings_to_the_board() {
        crate::init().unwrap();
        let pipeline = gst::parse::launch(
            "audiotestsrc num-buffers=50 volume=0.5 samplesperbuffer=480 ! audio/x-raw,rate=48000,channels=1 \
             ! interleave name=i ! audio/x-raw,rate=48000,channels=2 ! queue name=q \
             audiotestsrc num-buffers=50 wave=silence samplesperbuffer=480 ! audio/x-raw,rate=48000,channels=1 ! i.",
        )
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
        let level = meter(Feed::Programme).unwrap();
        let sink = gst::ElementFactory::make("fakesink").property("sync", false).build().unwrap();
        pipeline.add_many([&level, &sink]).unwrap();
        gst::Element::link_many([&pipeline.by_name("q").unwrap(), &level, &sink]).unwrap();
        let board = Arc::new(LevelBoard::default());
        let bus = pipeline.bus().unwrap();
        watch(&bus, board.clone());
        pipeline.set_state(gst::State::Playing).unwrap();
        let eos = bus.timed_pop_filtered(gst::ClockTime::from_seconds(10), &[gst::MessageType::Eos]);
        pipeline.set_state(gst::State::Null).unwrap();
        assert!(eos.is_some(), "the end of the stream still reaches whoever reads the bus");
        let read = board.read(Instant::now());
        assert_eq!(read.len(), 1, "{read:?}");
        let [left, right] = read[0].channels[..] else { panic!("{read:?}") };
        assert!((left.peak_db + 6.02).abs() < 0.5 && (left.rms_db + 9.03).abs() < 0.5, "{left:?}");
        assert_eq!(right, ChannelLevel::new(-100.0, -100.0));
        assert_eq!(read[0].silent_s, 0.0, "a channel with sound is sound");
    }
}
