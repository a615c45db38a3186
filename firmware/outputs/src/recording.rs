//! Recording to MPEG-TS segments: a thread of its own writes what the encoder muxes, opening a
//! new file at the first keyframe after each segment length, each starting with the PAT and PMT
//! so it plays on its own. A full disk or a removed USB stick stops the recording with a clear
//! status and drops data from then on; it never blocks or stops the encoder or another output.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use telebridge_sync::Locked;

use telebridge_config::FileSpec;
use telebridge_srt::supervisor::{Attempt, Control, Job, Supervisor};
use telebridge_srt::{Backoff, OutputState, OutputStatus};
use tokio::sync::watch;
use tracing::{error, info};

use crate::ts;

enum Msg {
    Data(Vec<u8>),
    Stop,
}

/// How much is gathered before it goes to the writer's thread: 32 messages of seven TS packets.
pub const BATCH_BYTES: usize = 32 * 1316;
/// Batches the writer's queue holds (about two seconds of 8 Mbit/s) before dropping.
const QUEUE_BATCHES: usize = 48;

/// A running recording.
#[derive(Debug)]
pub struct Recording {
    tx: SyncSender<Msg>,
    pending: Mutex<Vec<u8>>,
    status: watch::Receiver<OutputStatus>,
    dropped: Arc<AtomicU64>,
    supervisor: Option<Supervisor>,
}

impl Recording {
    /// Starts recording to `spec`.
    pub fn start(name: String, spec: FileSpec) -> Self {
        // About two seconds of 8 Mbit/s, in batches.
        let (tx, rx) = mpsc::sync_channel(QUEUE_BATCHES);
        let mut initial = OutputStatus::new("file", name, spec.label(), OutputState::Connecting);
        initial.reason = Some("waiting for a keyframe".into());
        let (status_tx, status_rx) = watch::channel(initial);
        let dropped = Arc::new(AtomicU64::new(0));
        let d = dropped.clone();
        let writer = Writer::new(spec, status_tx, d, rx);
        let supervisor = Supervisor::spawn("recording".into(), Backoff::default(), writer)
            .map_err(|e| error!(error = %e, "cannot start the recording's thread"))
            .ok();
        Self { tx, pending: Mutex::new(Vec::with_capacity(BATCH_BYTES)), status: status_rx, dropped, supervisor }
    }

    /// Hands the recording TS bytes; never blocks. Gathered into
    /// batches of [`BATCH_BYTES`] before they go to the writer's thread: one hand-over (and one
    /// wake of that thread) per 32 messages, not per message.
    pub fn send(&self, data: &[u8]) {
        let full = {
            let mut pending = self.pending.locked();
            pending.extend_from_slice(data);
            (pending.len() >= BATCH_BYTES).then(|| std::mem::replace(&mut *pending, Vec::with_capacity(BATCH_BYTES)))
        };
        if let Some(batch) = full {
            self.hand_over(batch);
        }
    }

    fn hand_over(&self, batch: Vec<u8>) {
        let buffers = batch.len().div_ceil(1316) as u64;
        if let Err(TrySendError::Full(_)) = self.tx.try_send(Msg::Data(batch)) {
            // Counted in 1316-byte buffers, as the SRT and RTMP outputs count theirs.
            self.dropped.fetch_add(buffers, Ordering::Relaxed);
        }
    }

    /// The recording's status.
    pub fn status(&self) -> watch::Receiver<OutputStatus> {
        self.status.clone()
    }

    /// Closes the current segment and stops.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        // What is gathered, then the stop behind the data already queued: all of it is written.
        let rest = std::mem::take(&mut *self.pending.locked());
        if !rest.is_empty() {
            let _ = self.tx.send(Msg::Data(rest));
        }
        let _ = self.tx.send(Msg::Stop);
        if let Some(s) = self.supervisor.as_mut() {
            s.stop();
        }
    }
}

struct Segment {
    path: PathBuf,
    file: BufWriter<File>,
    opened: Instant,
}

struct Writer {
    spec: FileSpec,
    status: watch::Sender<OutputStatus>,
    dropped: Arc<AtomicU64>,
    segment: Option<Segment>,
    device: Option<u64>,
    pat: Option<Vec<u8>>,
    pmt_pid: Option<u16>,
    pmt: Option<Vec<u8>>,
    bytes: u64,
    failed: bool,
    last_flush: Instant,
    rx: Receiver<Msg>,
}

impl Writer {
    fn new(spec: FileSpec, status: watch::Sender<OutputStatus>, dropped: Arc<AtomicU64>, rx: Receiver<Msg>) -> Self {
        let device = spec.pattern.parent().and_then(|d| d.metadata().ok()).map(|m| m.dev());
        Self {
            spec,
            status,
            dropped,
            segment: None,
            device,
            pat: None,
            pmt_pid: None,
            pmt: None,
            bytes: 0,
            failed: false,
            last_flush: Instant::now(),
            rx,
        }
    }

    /// Writes what arrives until the stop, which comes down the same channel behind the data
    /// (so everything queued before it is written); a recording does not retry (a full disk or
    /// a removed stick is a state of its own), so its one attempt lasts until then.
    fn run(&mut self) {
        loop {
            match self.rx.recv_timeout(Duration::from_millis(500)) {
                Ok(Msg::Data(buffer)) => {
                    if !self.failed {
                        if let Err(e) = self.write(&buffer) {
                            self.fail(e);
                        }
                    }
                }
                Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if self.last_flush.elapsed() >= Duration::from_secs(1) {
                self.last_flush = Instant::now();
                if let Some(s) = self.segment.as_mut() {
                    // Flushing once a second bounds what a power cut loses and surfaces a full
                    // disk within a second.
                    if let Err(e) = s.file.flush() {
                        self.fail(e);
                    }
                }
                let (bytes, dropped) = (self.bytes, self.dropped.load(Ordering::Relaxed));
                self.status.send_modify(|s| {
                    s.bytes_written = bytes;
                    s.queue_dropped = dropped;
                });
            }
        }
    }
}

impl Job for Writer {
    fn attempt(&mut self, _stop_rides_with_the_data: &Control, _: &mut u32) -> Attempt {
        self.run();
        Attempt::Stopped
    }

    fn retrying(&mut self, _: String, _: u32, _: Duration) {}

    fn stopped(&mut self) {
        if let Some(mut s) = self.segment.take() {
            let _ = s.file.flush();
            let _ = s.file.get_ref().sync_data();
            info!(file = %s.path.display(), "recording closed");
        }
        self.status.send_modify(|s| {
            if s.state != OutputState::Failed {
                s.state = OutputState::Stopped;
            }
        });
    }
}

impl Writer {
    fn write(&mut self, data: &[u8]) -> io::Result<()> {
        let mut keyframe = false;
        for p in data.chunks_exact(188) {
            match ts::pid(p) {
                0 => {
                    self.pat = Some(p.to_vec());
                    self.pmt_pid = ts::pmt_pid_from_pat(p).or(self.pmt_pid);
                }
                pid if Some(pid) == self.pmt_pid && p[1] & 0x40 != 0 => self.pmt = Some(p.to_vec()),
                _ => {}
            }
            keyframe |= ts::is_random_access(p);
        }
        let due = self.segment.as_ref().is_none_or(|s| s.opened.elapsed() >= self.spec.segment);
        if due && keyframe && self.pat.is_some() && self.pmt.is_some() {
            self.rotate()?;
        }
        if let Some(s) = self.segment.as_mut() {
            s.file.write_all(data)?;
            self.bytes += data.len() as u64;
        }
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        if let Some(mut old) = self.segment.take() {
            old.file.flush()?;
            old.file.get_ref().sync_data()?;
            info!(file = %old.path.display(), "segment closed");
        }
        let dir = self.spec.pattern.parent().unwrap_or(Path::new("/"));
        let now_dev = dir.metadata().map(|m| m.dev())?;
        if self.device.is_some_and(|d| d != now_dev) {
            return Err(io::Error::new(io::ErrorKind::NotFound, "the recording device was removed"));
        }
        let path = PathBuf::from(format_utc(&self.spec.pattern.to_string_lossy(), SystemTime::now()));
        let file = OpenOptions::new().write(true).create(true).truncate(true).open(&path)?;
        let mut file = BufWriter::with_capacity(256 * 1024, file);
        for table in [&self.pat, &self.pmt].into_iter().flatten() {
            file.write_all(table)?;
        }
        info!(file = %path.display(), "recording segment opened");
        self.status.send_modify(|s| {
            s.state = OutputState::Live;
            s.reason = None;
        });
        self.segment = Some(Segment { path, file, opened: Instant::now() });
        Ok(())
    }

    fn fail(&mut self, e: io::Error) {
        let dir = self.spec.pattern.parent().unwrap_or(Path::new("/")).display().to_string();
        let reason = if e.raw_os_error() == Some(28) {
            format!("disk full: {dir}")
        } else {
            format!("recording stopped: {dir}: {e}")
        };
        error!(%reason, "recording failed; the streams go on");
        // Drop the segment without flushing again (that would fail the same way).
        if let Some(s) = self.segment.take() {
            let (_, _) = s.file.into_parts();
        }
        self.failed = true;
        self.status.send_modify(|s| {
            s.state = OutputState::Failed;
            s.reason = Some(reason);
        });
    }
}

/// Replaces `%Y %m %d %H %M %S` with the UTC date and time.
pub fn format_utc(pattern: &str, t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    pattern
        .replace("%Y", &format!("{y:04}"))
        .replace("%m", &format!("{m:02}"))
        .replace("%d", &format!("{d:02}"))
        .replace("%H", &format!("{:02}", rem / 3600))
        .replace("%M", &format!("{:02}", rem % 3600 / 60))
        .replace("%S", &format!("{:02}", rem % 60))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_names() {
        // 2026-11-30 06:08:45 UTC.
        let t = UNIX_EPOCH + Duration::from_secs(1_796_018_925);
        assert_eq!(format_utc("/r/show-%Y%m%d-%H%M%S.ts", t), "/r/show-20261130-060845.ts");
        assert_eq!(format_utc("%Y-%m-%d", UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29");
    }
}
