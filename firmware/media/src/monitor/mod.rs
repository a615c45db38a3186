//! The live monitor: each feed the box has (the programme it encodes, what it receives) offered
//! to browsers over WebRTC, as it is: the H.264 already encoded or received goes out in RTP
//! without a second encode (a Pi 4 has one hardware encoder), the sound as Opus.
//!
//! The roles publish a feed's MPEG-TS ([`Tap`]) while it runs; the panel's WHEP handler asks the
//! daemon, which asks this hub, for a viewer; each viewer takes the feed from the tap's fan-out
//! until it ends, is ended, or stops answering.

pub mod offer;
mod publish;
mod viewer;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use gst_webrtc::WebRTCPeerConnectionState;
use telebridge_contract::feed::Feed;
use telebridge_contract::monitor::{
    ViewerHealth, ViewerInfo, WatchAnswer, WatchRefusal, WatchRequest, DEFAULT_VIEWERS,
};
use telebridge_sync::Locked;
use tracing::{info, warn};

pub use publish::Publisher;
pub use viewer::Viewer;

use crate::encoder_pipeline::{TsConsumerId, TsFanout};
use crate::MediaError;

/// A running feed, as the monitor takes it.
#[derive(Clone)]
pub struct Tap {
    /// Its MPEG-TS.
    pub fanout: TsFanout,
    /// Asks its encoder for a keyframe, so that a new viewer's picture starts at once; `None`
    /// for a feed the box does not encode (the received one).
    pub keyframe: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for Tap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap").field("fanout", &self.fanout).finish_non_exhaustive()
    }
}

struct Entry {
    info: ViewerInfo,
    viewer: Arc<Viewer>,
    fanout: TsFanout,
    consumer: TsConsumerId,
}

impl Drop for Entry {
    fn drop(&mut self) {
        self.fanout.remove(self.consumer);
    }
}

/// The feeds running and their viewers.
#[derive(Default)]
pub struct MonitorHub {
    taps: Mutex<BTreeMap<Feed, Tap>>,
    viewers: Mutex<Vec<Entry>>,
    /// Viewers being set up (their answers take up to seconds): counted against the limit, so
    /// offers arriving at once cannot pass it together.
    pending: AtomicU32,
    next: AtomicU64,
    /// `monitor.viewers`; 0 before it is set is the default.
    limit: AtomicU32,
}

impl std::fmt::Debug for MonitorHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MonitorHub").field("viewers", &self.viewers.locked().len()).finish_non_exhaustive()
    }
}

fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn health(v: &Viewer) -> ViewerHealth {
    let ended = matches!(v.state(), WebRTCPeerConnectionState::Failed | WebRTCPeerConnectionState::Closed);
    ViewerHealth { ended, age: v.age(), silent_for: v.heard().then(|| v.silent_for()), report_every: v.report_every() }
}

impl MonitorHub {
    /// How many viewers at once (`monitor.viewers`; 0: none).
    pub fn set_limit(&self, viewers: u32) {
        // Stored one up, so that the default's 0 means "not set".
        self.limit.store(viewers + 1, Ordering::Relaxed);
    }

    fn limit(&self) -> u32 {
        match self.limit.load(Ordering::Relaxed) {
            0 => DEFAULT_VIEWERS,
            n => n - 1,
        }
    }

    /// `feed` runs: viewers may take it from `tap` until the publication is dropped.
    pub fn publish(self: &Arc<Self>, feed: Feed, tap: Tap) -> Publication {
        self.taps.locked().insert(feed, tap);
        Publication { hub: self.clone(), feed }
    }

    /// `feed` stopped: its viewers end.
    pub fn withdraw(&self, feed: Feed) {
        self.taps.locked().remove(&feed);
        let gone: Vec<Entry> = {
            let mut viewers = self.viewers.locked();
            let (gone, kept) = std::mem::take(&mut *viewers).into_iter().partition(|e| e.info.feed == feed);
            *viewers = kept;
            gone
        };
        end_all(gone);
    }

    /// A new viewer of `request.feed`, or why not. Blocks while webrtcbin answers (its ICE
    /// candidates gathered): call it off the async runtime.
    pub fn watch(&self, request: &WatchRequest) -> Result<WatchAnswer, WatchRefusal> {
        self.reap();
        let limit = self.limit();
        if limit == 0 {
            return Err(WatchRefusal::Off);
        }
        let tap = self.taps.locked().get(&request.feed).cloned().ok_or(WatchRefusal::NotRunning(request.feed))?;
        let _slot = {
            let viewers = self.viewers.locked();
            if viewers.len() + self.pending.load(Ordering::Relaxed) as usize >= limit as usize {
                return Err(WatchRefusal::Full { limit });
            }
            // Taken under the viewers' lock, given back when this ends (the viewer is in the
            // list by then, or refused).
            self.pending.fetch_add(1, Ordering::Relaxed);
            Pending(&self.pending)
        };
        let (viewer, sdp) = Viewer::answer(&request.offer, request.local).map_err(|e| match e {
            MediaError::Offer(why) => WatchRefusal::Offer(why),
            other => WatchRefusal::Failed(other.to_string()),
        })?;
        let viewer = Arc::new(viewer);
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let feeding = viewer.clone();
        let consumer = tap.fanout.add(move |data| feeding.push(data));
        if let Some(keyframe) = &tap.keyframe {
            keyframe();
        }
        info!(id, feed = request.feed.name(), from = %request.from, "a viewer watches");
        let info = ViewerInfo {
            id,
            feed: request.feed,
            address: request.from.to_string(),
            since_unix_ms: unix_ms(),
            state: "connecting",
        };
        self.viewers.locked().push(Entry { info, viewer, fanout: tap.fanout, consumer });
        Ok(WatchAnswer { id, sdp })
    }

    /// Ends viewer `id`: `false` if there is none.
    pub fn end(&self, id: u64) -> bool {
        let gone: Vec<Entry> = {
            let mut viewers = self.viewers.locked();
            let (gone, kept) = std::mem::take(&mut *viewers).into_iter().partition(|e| e.info.id == id);
            *viewers = kept;
            gone
        };
        let found = !gone.is_empty();
        end_all(gone);
        found
    }

    /// The viewers, those gone dropped first.
    pub fn viewers(&self) -> Vec<ViewerInfo> {
        self.reap();
        self.viewers
            .locked()
            .iter()
            .map(|e| ViewerInfo { state: if e.viewer.heard() { "watching" } else { "connecting" }, ..e.info.clone() })
            .collect()
    }

    /// Drops the viewers that ended or stopped answering ([`ViewerHealth::gone`]).
    fn reap(&self) {
        let gone: Vec<Entry> = {
            let mut viewers = self.viewers.locked();
            let (gone, kept) = std::mem::take(&mut *viewers).into_iter().partition(|e| health(&e.viewer).gone());
            *viewers = kept;
            gone
        };
        for e in &gone {
            warn!(id = e.info.id, from = %e.info.address, "a viewer stopped answering: dropped");
        }
        end_all(gone);
    }
}

/// A viewer slot being set up; given back when dropped.
struct Pending<'a>(&'a AtomicU32);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A feed offered to viewers while this lives: dropped, the feed is withdrawn and its viewers
/// end.
#[derive(Debug)]
pub struct Publication {
    hub: Arc<MonitorHub>,
    feed: Feed,
}

impl Drop for Publication {
    fn drop(&mut self) {
        self.hub.withdraw(self.feed);
    }
}

/// Stops viewers on a thread of their own (webrtcbin takes a moment to stop; no caller waits).
fn end_all(gone: Vec<Entry>) {
    if !gone.is_empty() {
        let started = Instant::now();
        std::thread::spawn(move || {
            drop(gone);
            tracing::debug!(ms = started.elapsed().as_millis() as u64, "viewers stopped");
        });
    }
}
