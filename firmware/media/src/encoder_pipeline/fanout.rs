//! The TS fan-out: the bytes of every buffer the muxer makes, mapped once and handed to each
//! output.

use std::sync::{Arc, Mutex};
use telebridge_sync::Locked;

/// Identifies a consumer registered with [`TsFanout::add`].
pub type TsConsumerId = u64;
type TsConsumer = Box<dyn Fn(&[u8]) + Send + Sync>;

/// Hands the bytes of each MPEG-TS buffer to every registered consumer. Consumers must not block: outputs
/// push into their own bounded leaky queue. Survives pipeline rebuilds (source changes).
#[derive(Clone, Default)]
pub struct TsFanout {
    inner: Arc<Mutex<Consumers>>,
}

/// The last id handed out, and the consumers.
type Consumers = (TsConsumerId, Vec<(TsConsumerId, TsConsumer)>);

impl std::fmt::Debug for TsFanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.inner.lock().map(|g| g.1.len()).unwrap_or(0);
        write!(f, "TsFanout({n} consumers)")
    }
}

impl TsFanout {
    /// Registers a consumer; returns its id for [`TsFanout::remove`].
    pub fn add(&self, consumer: impl Fn(&[u8]) + Send + Sync + 'static) -> TsConsumerId {
        let mut g = self.inner.locked();
        g.0 += 1;
        let id = g.0;
        g.1.push((id, Box::new(consumer)));
        id
    }

    /// Unregisters a consumer.
    pub fn remove(&self, id: TsConsumerId) {
        self.inner.locked().1.retain(|(i, _)| *i != id);
    }

    /// Hands `data` to every consumer.
    pub fn push(&self, data: &[u8]) {
        let g = self.inner.locked();
        for (_, consumer) in g.1.iter() {
            consumer(data);
        }
    }
}
