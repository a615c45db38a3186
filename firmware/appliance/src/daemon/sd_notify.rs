//! systemd's notification protocol (sd_notify(3)): `READY=1` once serving, `WATCHDOG=1` while
//! the main loop is healthy, `STOPPING=1` on the way out. A datagram to `$NOTIFY_SOCKET` (a
//! path, or `@name` for the abstract namespace); nothing happens when it is not set.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sends `state` (e.g. `READY=1`) to systemd; `Ok(false)` when not run by systemd.
pub fn notify(state: &str) -> io::Result<bool> {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else { return Ok(false) };
    let sock = UnixDatagram::unbound()?;
    let path = path.to_string_lossy().into_owned();
    if let Some(name) = path.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
        sock.send_to_addr(state.as_bytes(), &addr)?;
    } else {
        sock.send_to(state.as_bytes(), &path)?;
    }
    Ok(true)
}

/// The watchdog interval systemd asked for (`WATCHDOG_USEC`, for this process).
pub fn watchdog_interval() -> Option<Duration> {
    if let Some(pid) = std::env::var("WATCHDOG_PID").ok().and_then(|p| p.parse::<u32>().ok()) {
        if pid != std::process::id() {
            return None;
        }
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec))
}

/// The main loop's heartbeat: it beats on every turn; the watchdog thread pets systemd only
/// while the last beat is recent.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    start: Instant,
    last_ms: Arc<AtomicU64>,
}

impl Default for Heartbeat {
    fn default() -> Self {
        Self { start: Instant::now(), last_ms: Arc::new(AtomicU64::new(0)) }
    }
}

impl Heartbeat {
    /// Records a healthy turn of the main loop.
    pub fn beat(&self) {
        self.last_ms.store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Time since the last beat.
    pub fn age(&self) -> Duration {
        let now = self.start.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// Pets systemd's watchdog every half interval, from a thread of its own, while `heartbeat` is
/// younger than half the interval; a stuck main loop therefore stops the petting and systemd
/// restarts the daemon.
pub fn spawn_watchdog(interval: Duration, heartbeat: Heartbeat) -> io::Result<()> {
    let half = interval / 2;
    std::thread::Builder::new().name("watchdog".into()).spawn(move || loop {
        std::thread::sleep(half);
        if heartbeat.age() < half {
            if let Err(e) = notify("WATCHDOG=1") {
                tracing::warn!(error = %e, "cannot notify systemd's watchdog");
            }
        } else {
            tracing::warn!(
                stalled_ms = heartbeat.age().as_millis() as u64,
                "main loop stalled: not petting the watchdog"
            );
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeat_ages() {
        let h = Heartbeat::default();
        h.beat();
        assert!(h.age() < Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(60));
        assert!(h.age() >= Duration::from_millis(60));
    }
}
