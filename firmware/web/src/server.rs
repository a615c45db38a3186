//! The panel's HTTP/1.1 server: hyper under the router, with the limits a box on an untrusted
//! network needs. A client has [`HEADER_TIMEOUT`] to send a request's headers, and the same
//! to send the next one on a kept-alive connection, after which the connection is closed (so
//! idle and half-sent connections do not pile up); there are at most [`MAX_CONNECTIONS`] at
//! once and [`MAX_PER_ADDRESS`] from one address, past which a new connection is closed at once
//! (so one stranger cannot take every file the daemon may open, and the owner still gets in).
//! Bodies have their own time and size limits in the handlers.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tower::{Service, ServiceExt};
use tracing::{debug, warn};

/// How long a client may take to send a request's headers, or to start the next request on a
/// kept-alive connection.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections at once, in all.
pub const MAX_CONNECTIONS: usize = 256;
/// Connections at once from one address (a browser opens six and one for the events; a script
/// that closes and opens connections quickly leaves a few closing at any moment).
pub const MAX_PER_ADDRESS: usize = 64;
/// What a connection turned away is told before it is closed.
const TURNED_AWAY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
/// How long open connections get to finish when the daemon stops.
const DRAIN: Duration = Duration::from_secs(2);

/// Who holds connections: a count per address. Pure bookkeeping, tested without a socket.
#[derive(Debug, Default)]
pub struct Connections {
    per_address: HashMap<IpAddr, usize>,
    total: usize,
}

/// Why a connection was closed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turned {
    /// [`MAX_CONNECTIONS`] are open.
    Full,
    /// The address holds [`MAX_PER_ADDRESS`].
    AddressFull,
}

impl Connections {
    /// Admits one more connection from `ip`, or says why not.
    pub fn admit(&mut self, ip: IpAddr) -> Result<(), Turned> {
        if self.total >= MAX_CONNECTIONS {
            return Err(Turned::Full);
        }
        let n = self.per_address.entry(ip).or_default();
        if *n >= MAX_PER_ADDRESS {
            return Err(Turned::AddressFull);
        }
        *n += 1;
        self.total += 1;
        Ok(())
    }

    /// A connection from `ip` closed.
    pub fn release(&mut self, ip: IpAddr) {
        if let Some(n) = self.per_address.get_mut(&ip) {
            *n -= 1;
            self.total -= 1;
            if *n == 0 {
                self.per_address.remove(&ip);
            }
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.total
    }
}

/// Gives a connection's place back when its task ends, however it ends.
struct Held {
    table: Arc<Mutex<Connections>>,
    ip: IpAddr,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).release(self.ip);
    }
}

/// Serves `router` on `listener` until `shutdown` completes, within the limits above.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut make = router.into_make_service_with_connect_info::<SocketAddr>();
    let table = Arc::new(Mutex::new(Connections::default()));
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
        let admitted = table.lock().unwrap_or_else(|p| p.into_inner()).admit(peer.ip());
        if let Err(why) = admitted {
            debug!(%peer, ?why, "HTTP connection turned away: too many open");
            // One non-blocking write: a client that reads gets an answer, none can hold us.
            let _ = stream.try_write(TURNED_AWAY);
            drop(stream);
            continue;
        }
        let held = Held { table: table.clone(), ip: peer.ip() };
        let Ok(app) = make.call(peer).await;
        let service =
            hyper::service::service_fn(move |req: hyper::Request<Incoming>| app.clone().oneshot(req.map(Body::new)));
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _held = held;
            if let Err(e) = conn.await {
                debug!(%peer, error = %e, "HTTP connection ended");
            }
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
        for _ in 0..MAX_PER_ADDRESS {
            c.admit(a).unwrap();
        }
        assert_eq!(c.admit(a), Err(Turned::AddressFull));
        let other: IpAddr = "192.0.2.2".parse().unwrap();
        assert_eq!(c.admit(other), Ok(()), "another address still gets in");
        c.release(a);
        assert_eq!(c.admit(a), Ok(()));
        let mut k = 0u32;
        while c.open() < MAX_CONNECTIONS {
            k += 1;
            c.admit(IpAddr::V4((0x0a00_0000 + k).into())).unwrap();
        }
        assert_eq!(c.admit("192.0.2.9".parse().unwrap()), Err(Turned::Full));
        c.release(other);
        assert_eq!(c.admit("192.0.2.9".parse().unwrap()), Ok(()));
        c.release("203.0.113.1".parse().unwrap()); // never admitted: no effect
        assert_eq!(c.open(), MAX_CONNECTIONS);
    }
}
