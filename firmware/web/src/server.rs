//! The panel's HTTP/1.1 server: hyper under the router, with the limits a box on an untrusted
//! network needs. A client has [`HEADER_TIMEOUT`] to send a request's headers, and the same
//! to send the next one on a kept-alive connection, after which the connection is closed (so
//! idle and half-sent connections do not pile up); there are at most [`MAX_CONNECTIONS`] at
//! once and [`MAX_PER_ADDRESS`] from one address (an IPv6 /64 is one address), past which a
//! new connection is closed at once (so one stranger cannot take every file the daemon may
//! open). The last [`RESERVED`] places are for addresses that hold few, and when every place
//! is taken a newcomer takes the place of an idle connection of the address that holds the
//! most (issue 36, finding 6: four addresses with 64 idle connections each locked everyone
//! out). Bodies have their own time and size limits in the handlers.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use telebridge_sync::Locked;

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tower::{Service, ServiceExt};
use tracing::{debug, warn};

use crate::auth::client_key;

/// How long a client may take to send a request's headers, or to start the next request on a
/// kept-alive connection.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections at once, in all.
pub const MAX_CONNECTIONS: usize = 256;
/// Connections at once from one address (a browser opens six and one for the events; a script
/// that closes and opens connections quickly leaves a few closing at any moment).
pub const MAX_PER_ADDRESS: usize = 64;
/// The last places, kept for addresses that hold fewer than [`LIGHT`] connections.
pub const RESERVED: usize = 32;
/// An address with fewer connections than this may take a reserved place (a browser's six and
/// its events).
pub const LIGHT: usize = 8;
/// What a connection turned away is told before it is closed.
const TURNED_AWAY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// How long open connections get to finish when the daemon stops.
const DRAIN: Duration = Duration::from_secs(2);

/// One connection's place in the table.
#[derive(Debug)]
struct Place {
    key: IpAddr,
    /// Requests being answered on it (an answer counts until its body is sent or dropped).
    busy: usize,
}

/// Who holds connections: a count per address (IPv6 per /64) and which are idle. Pure
/// bookkeeping, tested without a socket.
#[derive(Debug, Default)]
pub struct Connections {
    per_address: HashMap<IpAddr, usize>,
    places: HashMap<u64, Place>,
    next: u64,
}

/// Why a connection was closed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turned {
    /// [`MAX_CONNECTIONS`] are open, none idle of an address that holds more than this one.
    Full,
    /// The address holds [`MAX_PER_ADDRESS`].
    AddressFull,
}

/// A connection let in: its id, and the id of an idle connection to close to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    /// This connection's id in the table.
    pub id: u64,
    /// An idle connection of the heaviest address, to be closed now.
    pub shed: Option<u64>,
}

impl Connections {
    /// Admits one more connection from `ip`, or says why not.
    pub fn admit(&mut self, ip: IpAddr) -> Result<Admitted, Turned> {
        let key = client_key(ip);
        let mine = self.per_address.get(&key).copied().unwrap_or(0);
        if mine >= MAX_PER_ADDRESS {
            return Err(Turned::AddressFull);
        }
        let total = self.places.len();
        let shed = if total < MAX_CONNECTIONS - RESERVED || (total < MAX_CONNECTIONS && mine < LIGHT) {
            None
        } else {
            // Full for this address: the heaviest other address gives up an idle connection,
            // if it holds more than this one would.
            let (heavy, n) = self
                .per_address
                .iter()
                .filter(|(k, _)| **k != key)
                .max_by_key(|(_, n)| **n)
                .map(|(k, n)| (*k, *n))
                .ok_or(Turned::Full)?;
            if n <= mine + 1 {
                return Err(Turned::Full);
            }
            let victim = self
                .places
                .iter()
                .filter(|(_, p)| p.key == heavy && p.busy == 0)
                .map(|(id, _)| *id)
                .min()
                .ok_or(Turned::Full)?;
            self.release(victim);
            Some(victim)
        };
        let id = self.next;
        self.next += 1;
        self.places.insert(id, Place { key, busy: 0 });
        *self.per_address.entry(key).or_default() += 1;
        Ok(Admitted { id, shed })
    }

    /// Connection `id` closed (or was shed); a second call does nothing.
    pub fn release(&mut self, id: u64) {
        if let Some(p) = self.places.remove(&id) {
            if let Some(n) = self.per_address.get_mut(&p.key) {
                *n -= 1;
                if *n == 0 {
                    self.per_address.remove(&p.key);
                }
            }
        }
    }

    /// A request on connection `id` began (`true`) or its answer ended (`false`).
    pub fn busy(&mut self, id: u64, begun: bool) {
        if let Some(p) = self.places.get_mut(&id) {
            p.busy = if begun { p.busy + 1 } else { p.busy.saturating_sub(1) };
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.places.len()
    }
}

type Table = Arc<Mutex<Connections>>;

fn lock(table: &Table) -> std::sync::MutexGuard<'_, Connections> {
    table.locked()
}

/// Gives a connection's place back when its task ends, however it ends.
struct Held {
    table: Table,
    id: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        lock(&self.table).release(self.id);
    }
}

/// Marks a connection busy while an answer is under way: made when a request is dispatched,
/// dropped with the answer's body (sent, or dropped with the connection).
struct Busy {
    table: Table,
    id: u64,
}

impl Busy {
    fn new(table: &Table, id: u64) -> Self {
        lock(table).busy(id, true);
        Self { table: table.clone(), id }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        lock(&self.table).busy(self.id, false);
    }
}

/// Serves `router` on `listener` until `shutdown` completes, within the limits above.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut make = router.into_make_service_with_connect_info::<SocketAddr>();
    let table: Table = Arc::new(Mutex::new(Connections::default()));
    // Each open connection's switch: closed when it is shed.
    let switches: Arc<Mutex<HashMap<u64, tokio::sync::oneshot::Sender<()>>>> = Arc::default();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT).max_buf_size(64 << 10);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of files or memory: wait a little rather than spin on the error.
                    warn!(error = %e, "cannot accept an HTTP connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let admitted = lock(&table).admit(peer.ip());
        let id = match admitted {
            Ok(Admitted { id, shed }) => {
                if let Some(victim) = shed {
                    debug!(%peer, victim, "HTTP connections full: an idle one of the heaviest address closed");
                    if let Some(off) = switches.locked().remove(&victim) {
                        let _ = off.send(());
                    }
                }
                id
            }
            Err(why) => {
                debug!(%peer, ?why, "HTTP connection turned away: too many open");
                // One non-blocking write: a client that reads gets an answer, none can hold us.
                let _ = stream.try_write(TURNED_AWAY);
                drop(stream);
                continue;
            }
        };
        let (off_tx, off_rx) = tokio::sync::oneshot::channel::<()>();
        switches.locked().insert(id, off_tx);
        let held = Held { table: table.clone(), id };
        let Ok(app) = make.call(peer).await;
        let local = stream.local_addr().ok().map(crate::whep::LocalAddr);
        let busy_table = table.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            let busy = Busy::new(&busy_table, id);
            if let Some(local) = local {
                req.extensions_mut().insert(local);
            }
            let answer = app.clone().oneshot(req.map(Body::new));
            async move {
                let resp = answer.await?;
                Ok::<_, std::convert::Infallible>(resp.map(|body| {
                    Body::new(body.map_frame(move |frame| {
                        let _ = &busy;
                        frame
                    }))
                }))
            }
        });
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        let switches = switches.clone();
        tokio::spawn(async move {
            let _held = held;
            tokio::select! {
                ended = conn => if let Err(e) = ended {
                    debug!(%peer, error = %e, "HTTP connection ended");
                },
                _ = off_rx => debug!(%peer, "HTTP connection shed to make room"),
            }
            switches.locked().remove(&id);
        });
    }
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        debug!("HTTP connections still open at shutdown were dropped");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_capped_per_address_and_in_all() {
        let mut c = Connections::default();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let mut first = None;
        for _ in 0..MAX_PER_ADDRESS {
            first = first.or(Some(c.admit(a).unwrap().id));
        }
        assert_eq!(c.admit(a), Err(Turned::AddressFull));
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        let theirs = c.admit(other).expect("another address still gets in").id;
        c.release(first.unwrap());
        assert!(c.admit(a).is_ok());
        c.release(theirs);
        c.release(theirs);
        assert_eq!(c.open(), MAX_PER_ADDRESS, "a second release does nothing");
    }

    #[test]
    fn four_heavy_addresses_cannot_lock_the_owner_out() {
        let mut c = Connections::default();
        // Four strangers take every place they can: 64 each, as on c0d83c1 (256 in all).
        for k in 2..=5u8 {
            for _ in 0..MAX_PER_ADDRESS {
                let _ = c.admit(IpAddr::V4([192, 0, 2, k].into()));
            }
        }
        assert_eq!(c.open(), MAX_CONNECTIONS - RESERVED, "the reserve is not for heavy addresses");
        // The owner's browser: its six and its events, in the reserve.
        let owner: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..LIGHT {
            let a = c.admit(owner).expect("the owner gets in");
            assert_eq!(a.shed, None);
        }
        // More light addresses fill the reserve; then a newcomer sheds an idle connection of
        // the heaviest address.
        let mut k = 0u32;
        while c.open() < MAX_CONNECTIONS {
            k += 1;
            c.admit(IpAddr::V4((0x0a00_0000 + k).into())).unwrap();
        }
        let late: IpAddr = "198.51.100.7".parse().unwrap();
        let a = c.admit(late).expect("a place is made");
        let shed = a.shed.expect("an idle connection was shed");
        assert_eq!(c.open(), MAX_CONNECTIONS);
        assert!(!c.places.contains_key(&shed));
    }

    #[test]
    fn busy_connections_are_not_shed_and_ipv6_counts_per_64() {
        let mut c = Connections::default();
        let heavy: Vec<u64> = (0..MAX_PER_ADDRESS)
            .map(|k| {
                c.admit(IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, k as u16 + 1))).unwrap().id
            })
            .collect();
        assert_eq!(c.admit("2001:db8:0:1::ffff".parse().unwrap()), Err(Turned::AddressFull), "one /64 is one address");
        for id in &heavy {
            c.busy(*id, true);
        }
        let mut k = 0u32;
        while c.open() < MAX_CONNECTIONS {
            k += 1;
            c.admit(IpAddr::V4((0x0a00_0000 + k).into())).unwrap();
        }
        assert_eq!(c.admit("198.51.100.7".parse().unwrap()), Err(Turned::Full), "every heavy one is busy");
        c.busy(heavy[3], false);
        assert_eq!(c.admit("198.51.100.7".parse().unwrap()).unwrap().shed, Some(heavy[3]));
    }
}
