//! A mutex that knows who holds it: each lock records the holding thread's name and the line
//! that took it, so a lock that is not given back can be named with its holder. The decoder's
//! stats loop takes its locks with [`Watched::lock_within`]: it never waits longer than a limit,
//! logs which lock and who holds it when it cannot have it, and turns on without it (issue 36:
//! the decoder's stats loop stopped in 2 of about 300 runs, the likely cause a lock held through
//! something that does not return). [`Heartbeat`] watches the loop itself: a turn that stops
//! anywhere else (a call that does not return without any lock of ours) is logged with the stage
//! it stopped in.

use std::ops::{Deref, DerefMut};
use std::panic::Location;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use tracing::warn;

/// Who holds a [`Watched`] lock: the thread, the line that took it, since when.
#[derive(Debug, Clone)]
pub struct Holder {
    /// The holding thread's name (or its id, for a thread without one).
    pub thread: String,
    /// Where it took the lock.
    pub site: &'static Location<'static>,
    /// Since when.
    pub since: Instant,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "thread {} at {} for {} ms", self.thread, self.site, self.since.elapsed().as_millis())
    }
}

/// A named mutex that records its holder.
#[derive(Debug)]
pub struct Watched<T> {
    name: &'static str,
    inner: Mutex<T>,
    holder: Mutex<Option<Holder>>,
}

/// The lock of a [`Watched`], held; forgets its holder when dropped.
#[derive(Debug)]
pub struct WatchedGuard<'a, T> {
    guard: MutexGuard<'a, T>,
    holder: &'a Mutex<Option<Holder>>,
}

impl<T> Deref for WatchedGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for WatchedGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

impl<T> Drop for WatchedGuard<'_, T> {
    fn drop(&mut self) {
        *self.holder.locked() = None;
    }
}

impl<T> Watched<T> {
    /// `value` behind a lock named `name` in what it logs.
    pub fn new(name: &'static str, value: T) -> Self {
        Self { name, inner: Mutex::new(value), holder: Mutex::new(None) }
    }

    fn held<'a>(&'a self, guard: MutexGuard<'a, T>, site: &'static Location<'static>) -> WatchedGuard<'a, T> {
        let t = std::thread::current();
        let thread = t.name().map_or_else(|| format!("{:?}", t.id()), str::to_string);
        *self.holder.locked() = Some(Holder { thread, site, since: Instant::now() });
        WatchedGuard { guard, holder: &self.holder }
    }

    /// Takes the lock, waiting as long as it takes (a thread whose work needs it).
    #[track_caller]
    pub fn lock(&self) -> WatchedGuard<'_, T> {
        let site = Location::caller();
        let guard = self.inner.locked();
        self.held(guard, site)
    }

    /// Takes the lock if it can within `limit`; if not, logs the lock's name and who holds it
    /// and gives `None` (the caller goes on without it).
    #[track_caller]
    pub fn lock_within(&self, limit: Duration) -> Option<WatchedGuard<'_, T>> {
        let site = Location::caller();
        let deadline = Instant::now() + limit;
        let mut pause = Duration::from_micros(50);
        loop {
            match self.inner.try_lock() {
                Ok(guard) => return Some(self.held(guard, site)),
                Err(TryLockError::Poisoned(p)) => return Some(self.held(p.into_inner(), site)),
                Err(TryLockError::WouldBlock) => {}
            }
            if Instant::now() >= deadline {
                let holder = self.holder();
                warn!(
                    lock = self.name,
                    waited_ms = limit.as_millis() as u64,
                    at = %site,
                    holder = %holder.map_or_else(|| "unknown (just let go)".to_string(), |h| h.to_string()),
                    "a lock was not free in time: going on without it"
                );
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// Who holds the lock now, if anyone.
    pub fn holder(&self) -> Option<Holder> {
        self.holder.locked().clone()
    }
}

/// What a loop's watcher decides at a look: the pure half of [`Heartbeat`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pulse {
    /// The loop turns.
    Alive,
    /// No beat for `for_ms`; the loop was last seen at `stage` (said once a stall).
    Stalled { stage: &'static str, for_ms: u64 },
    /// A stalled loop turned again after `for_ms`.
    Resumed { for_ms: u64 },
}

/// The last beat of a loop and whether its stall was said.
#[derive(Debug, Clone)]
pub struct Beats {
    last: Instant,
    stage: &'static str,
    stalled: bool,
}

impl Beats {
    /// A loop that has just begun at `stage`.
    pub fn new(stage: &'static str, now: Instant) -> Self {
        Self { last: now, stage, stalled: false }
    }

    /// The loop reached `stage` at `now`.
    pub fn beat(&mut self, stage: &'static str, now: Instant) -> Pulse {
        let gap = now.saturating_duration_since(self.last);
        self.last = now;
        self.stage = stage;
        if std::mem::take(&mut self.stalled) {
            return Pulse::Resumed { for_ms: gap.as_millis() as u64 };
        }
        Pulse::Alive
    }

    /// A look at `now`: stalled once no beat came for `limit`.
    pub fn look(&mut self, now: Instant, limit: Duration) -> Pulse {
        let gap = now.saturating_duration_since(self.last);
        if gap < limit || self.stalled {
            return Pulse::Alive;
        }
        self.stalled = true;
        Pulse::Stalled { stage: self.stage, for_ms: gap.as_millis() as u64 }
    }
}

/// A loop's sign of life, watched from a thread of its own: a loop that has not beaten for the
/// limit is logged once with the stage it was last in, and again when it turns.
#[derive(Debug)]
pub struct Heartbeat {
    name: &'static str,
    beats: Arc<Mutex<Beats>>,
    stop: Option<mpsc::Sender<()>>,
    watcher: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Watches a loop named `name` in the log, looking every quarter of `limit`.
    pub fn watch(name: &'static str, limit: Duration) -> Self {
        let beats = Arc::new(Mutex::new(Beats::new("starting", Instant::now())));
        let (stop, stopped) = mpsc::channel::<()>();
        let b = beats.clone();
        let watcher = std::thread::Builder::new()
            .name("heartbeat".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(limit / 4) {
                    let pulse = b.locked().look(Instant::now(), limit);
                    if let Pulse::Stalled { stage, for_ms } = pulse {
                        warn!(r#loop = name, stage, for_ms, "a loop stopped turning");
                    }
                }
            })
            .ok();
        Self { name, beats, stop: Some(stop), watcher }
    }

    /// The loop reached `stage`.
    pub fn beat(&self, stage: &'static str) {
        let pulse = self.beats.locked().beat(stage, Instant::now());
        if let Pulse::Resumed { for_ms } = pulse {
            warn!(r#loop = self.name, stage, for_ms, "a stopped loop turns again");
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_held_elsewhere_is_named_with_its_holder_and_not_waited_for_past_the_limit() {
        let w = std::sync::Arc::new(Watched::new("decoding", 7u32));
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let w2 = w.clone();
        let t = std::thread::Builder::new()
            .name("srt-input".into())
            .spawn(move || {
                let _g = w2.lock();
                held_tx.send(()).unwrap();
                let _ = release_rx.recv();
            })
            .unwrap();
        held_rx.recv().unwrap();
        let holder = w.holder().expect("held");
        assert_eq!(holder.thread, "srt-input");
        assert!(holder.site.file().ends_with("watched.rs"), "{}", holder.site);
        let asked = Instant::now();
        assert!(w.lock_within(Duration::from_millis(30)).is_none());
        assert!(asked.elapsed() < Duration::from_secs(1), "waited {:?}", asked.elapsed());
        release_tx.send(()).unwrap();
        t.join().unwrap();
        assert!(w.holder().is_none(), "let go");
        let mut g = w.lock_within(Duration::from_millis(30)).expect("free now");
        *g += 1;
        drop(g);
        assert_eq!(*w.lock(), 8);
    }

    #[test]
    fn a_loop_that_stops_beating_is_said_once_with_its_stage_and_again_when_it_turns() {
        let t0 = Instant::now();
        let limit = Duration::from_secs(3);
        let mut b = Beats::new("starting", t0);
        assert_eq!(b.beat("waiting for the tick", t0 + Duration::from_millis(250)), Pulse::Alive);
        assert_eq!(b.beat("the input's status", t0 + Duration::from_millis(260)), Pulse::Alive);
        assert_eq!(b.look(t0 + Duration::from_secs(3), limit), Pulse::Alive, "2.74 s since the beat");
        assert_eq!(
            b.look(t0 + Duration::from_millis(3260), limit),
            Pulse::Stalled { stage: "the input's status", for_ms: 3000 }
        );
        assert_eq!(b.look(t0 + Duration::from_secs(60), limit), Pulse::Alive, "said once a stall");
        assert_eq!(
            b.beat("waiting for the tick", t0 + Duration::from_millis(61_260)),
            Pulse::Resumed { for_ms: 61_000 }
        );
        assert_eq!(b.look(t0 + Duration::from_secs(62), limit), Pulse::Alive);
        assert_eq!(
            b.look(t0 + Duration::from_millis(64_260), limit),
            Pulse::Stalled { stage: "waiting for the tick", for_ms: 3000 },
            "a second stall is said again"
        );
    }

    #[test]
    fn a_heartbeat_lets_its_watcher_go_when_dropped() {
        let h = Heartbeat::watch("test loop", Duration::from_secs(3600));
        h.beat("turning");
        let asked = Instant::now();
        drop(h);
        assert!(asked.elapsed() < Duration::from_secs(60), "the watcher waits for its stop, not its limit");
    }
}
