//! One worker model for every output and input (SRT out and in, RTMP, recording): a thread of
//! its own runs a [`Job`]'s attempts until it is told to stop, and waits between failed
//! attempts by the [`Backoff`] schedule; a stop ends the wait at once. The owner holds a
//! [`Supervisor`]: stopping it (or dropping it) stops the job and joins its thread.
//!
//! The retry loop ([`supervise`]) is a function of the job's answers and a `wait`, so its
//! decisions (the schedule, a stop during a wait, a success that starts the count again) are
//! tested with a recorded wait instead of a clock.

use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::Backoff;

/// How a job's attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// It was told to stop (or has nothing more to do).
    Stopped,
    /// It failed, for this reason (in words, for the status).
    Failed(String),
}

/// What a job's attempt asks of its supervisor: whether to stop.
#[derive(Debug)]
pub struct Control {
    stop: mpsc::Receiver<()>,
}

impl Control {
    /// Waits up to `d` for a stop; `true` when the job must stop (asked to, or its owner is
    /// gone).
    pub fn stop_within(&self, d: Duration) -> bool {
        !matches!(self.stop.recv_timeout(d), Err(mpsc::RecvTimeoutError::Timeout))
    }
}

/// The work of one output or input.
pub trait Job: Send + 'static {
    /// One attempt: connect (or open) and carry the stream until it fails or `control` says
    /// stop (checked every few hundred ms). `attempts` counts the failures in a row; a job sets
    /// it to 0 when it gets through, so the next failure waits the shortest delay again.
    fn attempt(&mut self, control: &Control, attempts: &mut u32) -> Attempt;
    /// An attempt failed: say so; the next one starts after `delay` (unless stopped).
    fn retrying(&mut self, reason: String, attempts: u32, delay: Duration);
    /// Stopped for good: release what is held, say so.
    fn stopped(&mut self);
}

/// The retry loop: attempts until one is stopped, waiting `backoff.delay(n)` after the n-th
/// failure in a row; `wait(d)` returns `true` when a stop came during the wait.
pub fn supervise(job: &mut impl Job, control: &Control, backoff: Backoff, mut wait: impl FnMut(Duration) -> bool) {
    let mut attempts: u32 = 0;
    loop {
        match job.attempt(control, &mut attempts) {
            Attempt::Stopped => break,
            Attempt::Failed(reason) => {
                attempts += 1;
                let delay = backoff.delay(attempts);
                job.retrying(reason, attempts, delay);
                if wait(delay) {
                    break;
                }
            }
        }
    }
    job.stopped();
}

/// The owner's side of a running job.
#[derive(Debug)]
pub struct Supervisor {
    stop: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

impl Supervisor {
    /// Runs `job` on a thread named `name`, retrying by `backoff`.
    pub fn spawn(name: String, backoff: Backoff, mut job: impl Job) -> std::io::Result<Self> {
        let (stop, rx) = mpsc::channel();
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            let control = Control { stop: rx };
            supervise(&mut job, &control, backoff, |d| control.stop_within(d));
        })?;
        Ok(Self { stop, thread: Some(thread) })
    }

    /// Stops the job and waits for its thread; doing it twice does nothing more.
    pub fn stop(&mut self) {
        let _ = self.stop.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job that answers from a script and records what it was told.
    #[derive(Default)]
    struct Scripted {
        answers: Vec<Attempt>,
        /// Attempt numbers at which the job "gets through" (sets the count back to 0).
        through_at: Vec<usize>,
        calls: usize,
        retries: Vec<(u32, Duration)>,
        stopped: bool,
    }

    impl Job for Scripted {
        fn attempt(&mut self, _: &Control, attempts: &mut u32) -> Attempt {
            if self.through_at.contains(&self.calls) {
                *attempts = 0;
            }
            self.calls += 1;
            if self.answers.is_empty() {
                Attempt::Stopped
            } else {
                self.answers.remove(0)
            }
        }
        fn retrying(&mut self, _: String, attempts: u32, delay: Duration) {
            self.retries.push((attempts, delay));
        }
        fn stopped(&mut self) {
            self.stopped = true;
        }
    }

    fn control() -> (mpsc::Sender<()>, Control) {
        let (tx, rx) = mpsc::channel();
        (tx, Control { stop: rx })
    }

    fn failed(n: usize) -> Vec<Attempt> {
        (0..n).map(|i| Attempt::Failed(format!("no answer {i}"))).collect()
    }

    #[test]
    fn failures_wait_by_the_schedule_and_a_success_starts_it_again() {
        let (_tx, c) = control();
        let mut job = Scripted { answers: failed(6), through_at: vec![4], ..Scripted::default() };
        let mut waited = Vec::new();
        supervise(&mut job, &c, Backoff::default(), |d| {
            waited.push(d.as_millis());
            false
        });
        assert_eq!(waited, [200, 400, 800, 1500, 200, 400], "the fifth attempt got through, then failed");
        assert_eq!(job.retries.iter().map(|r| r.0).collect::<Vec<_>>(), [1, 2, 3, 4, 1, 2]);
        assert!(job.stopped);
    }

    #[test]
    fn a_stop_during_a_retry_wait_ends_the_job_at_once() {
        let (_tx, c) = control();
        let mut job = Scripted { answers: failed(10), ..Scripted::default() };
        let mut waits = 0;
        supervise(&mut job, &c, Backoff::default(), |_| {
            waits += 1;
            waits == 2 // the stop arrives during the second wait
        });
        assert_eq!((job.calls, job.retries.len(), job.stopped), (2, 2, true), "no third attempt");
    }

    #[test]
    fn a_stopped_attempt_ends_without_a_wait() {
        let (_tx, c) = control();
        let mut job = Scripted::default();
        supervise(&mut job, &c, Backoff::default(), |_| panic!("no wait after a stop"));
        assert_eq!((job.calls, job.stopped), (1, true));
    }

    #[test]
    fn the_control_says_stop_when_asked_or_when_the_owner_is_gone() {
        let (tx, c) = control();
        assert!(!c.stop_within(Duration::ZERO));
        let _ = tx.send(());
        assert!(c.stop_within(Duration::ZERO));
        drop(tx);
        assert!(c.stop_within(Duration::ZERO), "the owner went away");
    }

    #[test]
    fn a_supervisor_stops_its_thread() {
        struct UntilStopped(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Job for UntilStopped {
            fn attempt(&mut self, control: &Control, _: &mut u32) -> Attempt {
                while !control.stop_within(Duration::from_millis(10)) {}
                Attempt::Stopped
            }
            fn retrying(&mut self, _: String, _: u32, _: Duration) {}
            fn stopped(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut s = Supervisor::spawn("test".into(), Backoff::default(), UntilStopped(done.clone())).unwrap();
        s.stop();
        s.stop();
        assert!(done.load(std::sync::atomic::Ordering::SeqCst));
    }
}
