//! Where the decoder's old pipelines are stopped: a thread of their own, so that starting the
//! next one never waits on a teardown.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use tracing::warn;

use crate::AppError;

/// Where old decode pipelines are stopped: on a thread of their own, one after another.
/// Stopping a pipeline waits for its streaming threads, and neither the SRT input's thread
/// (which starts the next decoder at once) nor the stats loop may wait on that; a teardown
/// that never ends costs one pipeline's memory and a warning, not the box's picture.
pub(crate) struct Retired<T: Send + 'static> {
    /// `Some`: one to stop; `None`: the end (senders may outlive the decoder: a bridge's feed
    /// keeps its consumer).
    tx: std::sync::mpsc::Sender<Option<T>>,
    /// Since when the thread has been stopping the pipeline it holds, if it holds one.
    busy_since: Arc<Mutex<Option<Instant>>>,
    thread: std::thread::JoinHandle<()>,
}

/// Hands pipelines to the stop thread.
pub(crate) type RetireTo<T> = std::sync::mpsc::Sender<Option<T>>;

impl<T: Send + 'static> Retired<T> {
    pub(crate) fn start() -> Result<Self, AppError> {
        let (tx, rx) = std::sync::mpsc::channel::<Option<T>>();
        let busy_since = Arc::new(Mutex::new(None));
        let busy = busy_since.clone();
        let thread = std::thread::Builder::new()
            .name("decoder-stop".into())
            .spawn(move || {
                while let Ok(Some(old)) = rx.recv() {
                    *busy.locked() = Some(Instant::now());
                    drop(old);
                    *busy.locked() = None;
                }
            })
            .map_err(|e| AppError::Runtime(format!("cannot start the decoder's stop thread: {e}")))?;
        Ok(Self { tx, busy_since, thread })
    }

    /// A handle that retires pipelines from any thread.
    pub(crate) fn sender(&self) -> RetireTo<T> {
        self.tx.clone()
    }

    /// How long the pipeline being stopped has taken so far.
    pub(crate) fn stuck_for(&self) -> Option<Duration> {
        self.busy_since.locked().map(|t| t.elapsed())
    }

    /// Stops what was handed over before, waiting at most `limit` for it. What is retired
    /// after is stopped where it is retired.
    pub(crate) fn finish(self, limit: Duration) {
        let _ = self.tx.send(None);
        let deadline = Instant::now() + limit;
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.thread.is_finished() {
            let _ = self.thread.join();
        } else {
            warn!(waited_ms = limit.as_millis() as u64, "an old decoder did not stop; leaving it");
        }
    }
}

/// Hands `pipeline` to the stop thread, or stops it here if that thread has ended.
pub(crate) fn retire<T: Send + 'static>(to: &RetireTo<T>, pipeline: Option<T>) {
    if let Some(p) = pipeline {
        // A send fails only when the thread has ended: the pipeline comes back in the error
        // and is dropped (stopped) here. After the end marker it is dropped unread when the
        // channel goes.
        let _ = to.send(Some(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Something whose stopping blocks until `release` is dropped or sent to (a pipeline whose
    /// streaming thread never lets go), and says when it was stopped.
    struct Stuck {
        release: std::sync::mpsc::Receiver<()>,
        stopped: std::sync::mpsc::Sender<&'static str>,
        name: &'static str,
    }

    impl Drop for Stuck {
        fn drop(&mut self) {
            let _ = self.release.recv();
            let _ = self.stopped.send(self.name);
        }
    }

    #[test]
    fn a_teardown_that_hangs_blocks_neither_the_caller_nor_later_stops_forever() {
        let retired = Retired::<Stuck>::start().expect("thread");
        let to = retired.sender();
        let (stopped_tx, stopped) = std::sync::mpsc::channel();
        let (hold, release) = std::sync::mpsc::channel();
        let (_, free) = std::sync::mpsc::channel::<()>();
        // Handing over returns at once although the first one's stop does not end.
        retire(&to, Some(Stuck { release, stopped: stopped_tx.clone(), name: "first" }));
        retire(&to, Some(Stuck { release: free, stopped: stopped_tx, name: "second" }));
        // (The stop thread is busy with the first.)
        let mut waited = 0;
        while retired.stuck_for().is_none() && waited < 500 {
            std::thread::sleep(Duration::from_millis(2));
            waited += 1;
        }
        assert!(retired.stuck_for().is_some(), "the stop thread says it is stopping one");
        assert!(stopped.try_recv().is_err(), "nothing stopped yet");
        // Once the first lets go, both are stopped, in order, and finish() joins.
        hold.send(()).expect("release");
        assert_eq!(stopped.recv_timeout(Duration::from_secs(5)), Ok("first"));
        assert_eq!(stopped.recv_timeout(Duration::from_secs(5)), Ok("second"));
        // A sender still held elsewhere (a bridge's feed keeps its consumer) does not keep
        // finish() waiting.
        let t = Instant::now();
        retired.finish(Duration::from_secs(5));
        assert!(t.elapsed() < Duration::from_secs(1), "finish waited {:?}", t.elapsed());
        drop(to);
    }

    #[test]
    fn finish_gives_up_on_a_teardown_that_never_ends() {
        let retired = Retired::<Stuck>::start().expect("thread");
        let to = retired.sender();
        let (stopped, _never_read) = std::sync::mpsc::channel();
        let (hold, release) = std::sync::mpsc::channel::<()>();
        retire(&to, Some(Stuck { release, stopped, name: "stuck" }));
        let t = Instant::now();
        retired.finish(Duration::from_millis(100));
        assert!(t.elapsed() < Duration::from_secs(2), "finish waited {:?}", t.elapsed());
        drop(hold); // lets the thread end
    }
}
