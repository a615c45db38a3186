//! Talkback in the bridge role (issue 39): this box's microphone to the paired box while its
//! talk button is down and the channel is free, and the paired box's voice to this box's
//! headphones, on the pair's connection beside the stream (see [`crate::roles::talk`]). The daemon and
//! the API press and read it through [`TalkShared`]; the bridge runs the sound ([`TalkRun`]).

use std::sync::{Arc, Mutex, MutexGuard};
use telebridge_sync::Locked;

use telebridge_config::Talkback;
use telebridge_media::talk::{TalkReceiver, TalkSender};
use tracing::warn;

use super::peer::PeerFeed;
use crate::roles::talk::{TalkKey, TalkLock, TalkPacket};

/// The wall clock both boxes' bursts are compared on, ms.
fn unix_ms() -> u64 {
    telebridge_media::timecode::now_us() / 1_000
}

pub use telebridge_contract::daemon::TalkStatus;

/// Talkback shared by the daemon (the talk button) and the bridge (the sound).
#[derive(Debug, Default)]
pub struct TalkShared {
    inner: Mutex<(TalkLock, TalkStatus)>,
}

impl TalkShared {
    fn lock(&self) -> MutexGuard<'_, (TalkLock, TalkStatus)> {
        self.inner.locked()
    }

    /// The talk button is down at `now` (unix ms; a held button or the panel's press renewed).
    pub fn press(&self, now: u64) {
        self.lock().0.press(now);
    }

    /// The talk button is up.
    pub fn release(&self) {
        self.lock().0.release();
    }

    /// Talkback now.
    pub fn status(&self, now: u64) -> TalkStatus {
        let g = self.lock();
        TalkStatus { state: g.0.state(now), ..g.1.clone() }
    }

    fn with<R>(&self, f: impl FnOnce(&mut TalkLock, &mut TalkStatus) -> R) -> R {
        let mut g = self.lock();
        let (lock, status) = &mut *g;
        f(lock, status)
    }
}

/// The bridge's talkback sound: the microphone (when configured) and the far voice's decoder
/// (started at the first packet to play).
pub struct TalkRun {
    sender: Option<TalkSender>,
    receiver: Arc<Mutex<Option<TalkReceiver>>>,
    shared: Arc<TalkShared>,
}

impl std::fmt::Debug for TalkRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TalkRun").field("microphone", &self.sender.is_some()).finish_non_exhaustive()
    }
}

impl TalkRun {
    /// Starts talkback on the connection `feed`, its messages tagged under `key`; `wins_ties`:
    /// this box showed the pairing code.
    pub fn start(
        config: &Talkback,
        shared: Arc<TalkShared>,
        feed: &Arc<PeerFeed>,
        key: TalkKey,
        wins_ties: bool,
    ) -> Self {
        shared.with(|lock, status| {
            lock.set_wins_ties(wins_ties);
            *status = TalkStatus { output: Some(config.output.to_string()), ..TalkStatus::default() };
        });
        let receiver: Arc<Mutex<Option<TalkReceiver>>> = Arc::default();
        let (rx, sh, output, k) = (receiver.clone(), shared.clone(), config.output.clone(), key.clone());
        feed.on_talk(Arc::new(move |data: &[u8]| {
            let Some(packet) = TalkPacket::decode(data, &k) else {
                sh.with(|_, status| status.packets_refused += 1);
                return;
            };
            let play = sh.with(|lock, status| {
                let play = lock.heard(packet.burst, unix_ms());
                if play {
                    status.packets_heard += 1;
                } else {
                    status.packets_not_played += 1;
                }
                play && status.error.is_none()
            });
            if !play {
                return;
            }
            let mut r = rx.locked();
            if r.is_none() {
                match TalkReceiver::start(&output) {
                    Ok(started) => *r = Some(started),
                    Err(e) => {
                        warn!(error = %e, "talkback: the far voice cannot be played");
                        sh.with(|_, status| status.error = Some(format!("talkback output {output}: {e}")));
                        return;
                    }
                }
            }
            if let Some(r) = r.as_ref() {
                r.push(packet.opus);
                let lag = r.beep_lag_ms();
                sh.with(|_, status| status.beep_lag_ms = lag.or(status.beep_lag_ms));
            }
        }));
        let sender = config.source.as_ref().and_then(|source| {
            let (sh, feed) = (shared.clone(), feed.clone());
            let on_packet = Arc::new(move |opus: &[u8]| {
                let Some((burst, seq)) = sh.with(|lock, _| lock.next_send(unix_ms())) else { return };
                if feed.send(&TalkPacket { burst, seq, opus }.encode(&key)) {
                    sh.with(|_, status| status.packets_sent += 1);
                }
            });
            match TalkSender::start(source, on_packet) {
                Ok(s) => {
                    shared.with(|_, status| status.microphone = Some(source.to_string()));
                    Some(s)
                }
                Err(e) => {
                    warn!(error = %e, "talkback: no microphone");
                    shared.with(|_, status| status.error = Some(format!("talkback source {source}: {e}")));
                    None
                }
            }
        });
        Self { sender, receiver, shared }
    }

    /// Stops the microphone and the far voice (a WAV file gets its sizes).
    pub fn stop(mut self) {
        if let Some(s) = self.sender.take() {
            s.stop();
        }
        if let Some(r) = self.receiver.locked().take() {
            r.stop();
        }
        self.shared.with(|_, status| status.microphone = None);
    }
}
