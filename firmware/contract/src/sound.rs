//! The sound's levels: what each stream's meter reads (peak and RMS per channel, ten readings a
//! second from GStreamer's `level` element), kept on one board the pipelines write and the
//! panel, the status, the metrics and the alerts read; and how long a stream has been silent.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

pub use crate::feed::Feed;

/// The lowest level a meter shows, dBFS: below it is silence (GStreamer's `level` says -350 dB
/// of a digital silence's peak, -700 of its RMS).
pub const FLOOR_DB: f64 = -100.0;

/// A stream whose loudest channel peaks below this is silent, dBFS (the EBU's -60 dBFS "no
/// signal" threshold for programme audio).
pub const SILENCE_DB: f64 = -60.0;

/// Silent this long while the stream runs, and the panel says so.
pub const SILENCE_ALERT_AFTER: Duration = Duration::from_secs(5);

/// A meter that has read nothing for this long is gone (its pipeline stopped).
pub const STALE_AFTER: Duration = Duration::from_secs(1);

/// The name of `feed`'s meter element in a pipeline.
pub fn meter_element(feed: Feed) -> &'static str {
    match feed {
        Feed::Programme => "meter-programme",
        Feed::Received => "meter-received",
    }
}

/// The feed whose meter is the element named `name`, if one is.
pub fn meter_feed(name: &str) -> Option<Feed> {
    Feed::ALL.into_iter().find(|f| meter_element(*f) == name)
}

/// The words for a feed's sound in an alert.
fn words(feed: Feed) -> &'static str {
    match feed {
        Feed::Programme => "the programme's sound (what this box sends)",
        Feed::Received => "the received sound",
    }
}

/// One channel over the meter's last interval, dBFS, [`FLOOR_DB`] at the lowest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChannelLevel {
    /// The loudest sample.
    pub peak_db: f64,
    /// The root mean square: how loud it sounds.
    pub rms_db: f64,
}

impl ChannelLevel {
    /// A reading as `level` gives it (any finite or infinite dB), held at [`FLOOR_DB`] and 0.
    pub fn new(peak_db: f64, rms_db: f64) -> Self {
        let clamp = |db: f64| if db.is_nan() { FLOOR_DB } else { db.clamp(FLOOR_DB, 0.0) };
        Self { peak_db: clamp(peak_db), rms_db: clamp(rms_db) }
    }
}

/// A stream's meter as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamLevels {
    /// Which stream.
    pub stream: Feed,
    /// Each channel, left first.
    pub channels: Vec<ChannelLevel>,
    /// How long every channel has peaked below [`SILENCE_DB`], seconds (0 while there is sound).
    pub silent_s: f64,
}

impl StreamLevels {
    /// Whether it has been silent long enough to say so.
    pub fn silence_alert(&self) -> Option<String> {
        (self.silent_s >= SILENCE_ALERT_AFTER.as_secs_f64()).then(|| {
            format!(
                "{} has been silent for {:.0} s (below {SILENCE_DB:.0} dBFS): check the source's sound",
                words(self.stream),
                self.silent_s
            )
        })
    }
}

#[derive(Debug, Clone)]
struct Meter {
    channels: Vec<ChannelLevel>,
    /// The last reading.
    read_at: Instant,
    /// Since when every channel has been below [`SILENCE_DB`]; `None` while there is sound.
    silent_since: Option<Instant>,
}

/// The meters of the streams running now: the pipelines write each reading, the daemon and the
/// panel read them.
#[derive(Debug, Default)]
pub struct LevelBoard {
    meters: Mutex<BTreeMap<Feed, Meter>>,
}

impl LevelBoard {
    /// A reading of `stream`'s meter at `now`.
    pub fn set(&self, stream: Feed, channels: Vec<ChannelLevel>, now: Instant) {
        let loud = channels.iter().any(|c| c.peak_db >= SILENCE_DB);
        let mut meters = self.meters.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let fresh = meters.get(&stream).filter(|m| now.saturating_duration_since(m.read_at) < STALE_AFTER);
        let silent_since = match (loud, fresh.and_then(|m| m.silent_since)) {
            (true, _) => None,
            (false, Some(since)) => Some(since),
            (false, None) => Some(now),
        };
        meters.insert(stream, Meter { channels, read_at: now, silent_since });
    }

    /// The meters read within [`STALE_AFTER`] of `now`, in [`Feed::ALL`]'s order.
    pub fn read(&self, now: Instant) -> Vec<StreamLevels> {
        let meters = self.meters.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        meters
            .iter()
            .filter(|(_, m)| now.saturating_duration_since(m.read_at) < STALE_AFTER)
            .map(|(stream, m)| StreamLevels {
                stream: *stream,
                channels: m.channels.clone(),
                silent_s: m.silent_since.map_or(0.0, |t| now.saturating_duration_since(t).as_secs_f64()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stereo(peak: f64) -> Vec<ChannelLevel> {
        vec![ChannelLevel::new(peak, peak - 3.0), ChannelLevel::new(peak, peak - 3.0)]
    }

    #[test]
    fn a_reading_is_held_between_the_floor_and_full_scale() {
        assert_eq!(ChannelLevel::new(-350.0, -700.0), ChannelLevel { peak_db: FLOOR_DB, rms_db: FLOOR_DB });
        assert_eq!(ChannelLevel::new(f64::NEG_INFINITY, f64::NAN).rms_db, FLOOR_DB);
        assert_eq!(ChannelLevel::new(0.4, -6.0), ChannelLevel { peak_db: 0.0, rms_db: -6.0 });
    }

    #[test]
    fn silence_is_counted_from_its_first_reading_and_sound_ends_it() {
        let board = LevelBoard::default();
        let t0 = Instant::now();
        board.set(Feed::Programme, stereo(-12.0), t0);
        assert_eq!(board.read(t0)[0].silent_s, 0.0);
        // Quiet from 0.1 s: five tenths-of-a-second later, still no alert; past 5 s, one.
        for tenth in 1..=52 {
            board.set(Feed::Programme, stereo(-75.0), t0 + Duration::from_millis(100 * tenth));
        }
        let read = board.read(t0 + Duration::from_millis(5200));
        assert!((read[0].silent_s - 5.1).abs() < 1e-9, "{read:?}");
        let alert = read[0].silence_alert().unwrap();
        assert!(alert.starts_with("the programme's sound (what this box sends) has been silent for 5 s"), "{alert}");
        assert_eq!(board.read(t0 + Duration::from_millis(4000))[0].silence_alert(), None);
        // One channel's sound is sound.
        let t1 = t0 + Duration::from_millis(5300);
        board.set(Feed::Programme, vec![ChannelLevel::new(-80.0, -90.0), ChannelLevel::new(-20.0, -25.0)], t1);
        assert_eq!(board.read(t1)[0].silent_s, 0.0);
    }

    #[test]
    fn a_meter_that_stopped_reading_is_gone_and_its_silence_starts_again() {
        let board = LevelBoard::default();
        let t0 = Instant::now();
        board.set(Feed::Received, stereo(-80.0), t0);
        board.set(Feed::Programme, stereo(-10.0), t0);
        let both = board.read(t0 + Duration::from_millis(500));
        assert_eq!(both.iter().map(|l| l.stream).collect::<Vec<_>>(), [Feed::Programme, Feed::Received]);
        assert!(board.read(t0 + STALE_AFTER).is_empty());
        // A new stream after a pause is silent from its own first reading, not the old one's.
        let t1 = t0 + Duration::from_secs(30);
        board.set(Feed::Received, stereo(-80.0), t1);
        assert_eq!(board.read(t1)[0].silent_s, 0.0);
    }

    #[test]
    fn each_stream_has_its_elements_name() {
        for f in Feed::ALL {
            assert_eq!(meter_feed(meter_element(f)), Some(f));
        }
        assert_eq!(meter_feed("level0"), None);
    }
}
