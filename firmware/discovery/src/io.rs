//! The thin part: mdns-sd's thread announcing this box and browsing for the others, feeding
//! [`Neighbours`].

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use mdns_sd::{IfKind, ServiceDaemon, ServiceEvent, ServiceInfo};
use tracing::{debug, info, warn};

use crate::announce::{Announcement, BoxId};
use crate::found::{Found, Record};
use crate::neighbours::Neighbours;
use crate::SERVICE_TYPE;

/// How long a goodbye may take when the box stops announcing.
const GOODBYE: Duration = Duration::from_millis(500);

/// mDNS could not be started or told something.
#[derive(Debug, thiserror::Error)]
#[error("mDNS: {what}: {detail}")]
pub struct DiscoveryError {
    what: &'static str,
    detail: String,
}

fn err(what: &'static str) -> impl FnOnce(mdns_sd::Error) -> DiscoveryError {
    move |e| DiscoveryError { what, detail: e.to_string() }
}

/// What is announced now, on which address, and under which full name.
type Announced = Option<(Announcement, Option<IpAddr>, String)>;

/// This box on the network: what it announces, and the boxes it has found.
pub struct Discovery {
    /// The responder; replaced by a new one when a flood of records fills its cache
    /// ([`Neighbours::flooded`]).
    daemon: Arc<Mutex<ServiceDaemon>>,
    neighbours: Arc<Mutex<Neighbours>>,
    announced: Arc<Mutex<Announced>>,
}

impl std::fmt::Debug for Discovery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Discovery")
            .field("announced", &lock(&self.announced).as_ref().map(|a| &a.2))
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.locked()
}

impl Discovery {
    /// Starts browsing for boxes (never listing `me`) on the interface that holds `on`, or on
    /// every interface but loopback (`None`); nothing is announced until
    /// [`Discovery::announce`].
    pub fn start(me: Option<BoxId>, on: Option<IpAddr>) -> Result<Self, DiscoveryError> {
        let daemon = responder(on)?;
        let events = daemon.browse(SERVICE_TYPE).map_err(err("cannot browse"))?;
        let daemon = Arc::new(Mutex::new(daemon));
        let neighbours = Arc::new(Mutex::new(Neighbours::new(me)));
        let announced: Arc<Mutex<Announced>> = Arc::new(Mutex::new(None));
        let (list, d, said) = (neighbours.clone(), daemon.clone(), announced.clone());
        std::thread::Builder::new()
            .name("discovery".into())
            .spawn(move || browse(&list, &d, &said, events, on))
            .map_err(|e| DiscoveryError { what: "cannot start the browsing thread", detail: e.to_string() })?;
        Ok(Self { daemon, neighbours, announced })
    }

    /// Announces `what` on `address` (`None`: every address of every interface, following
    /// their changes), or stops announcing (`what` `None`, a goodbye). Does nothing when it is
    /// already what is announced.
    pub fn announce(&self, what: Option<&Announcement>, address: Option<IpAddr>) -> Result<(), DiscoveryError> {
        let mut announced = lock(&self.announced);
        let daemon = lock(&self.daemon);
        let now = announced.as_ref().map(|(a, ip, _)| (a, *ip));
        if now == what.map(|a| (a, address)) {
            return Ok(());
        }
        if let Some((_, _, fullname)) = announced.take() {
            goodbye(&daemon, &fullname);
        }
        let Some(a) = what else { return Ok(()) };
        let info = service_info(a, address)?;
        let fullname = info.get_fullname().to_string();
        daemon.register(info).map_err(err("cannot announce this box"))?;
        info!(instance = %fullname, role = a.role.name(), pairing = a.pairing.name(), port = a.panel_port, "announced on the local network");
        *announced = Some((a.clone(), address, fullname));
        Ok(())
    }

    /// The boxes found, by name.
    pub fn list(&self) -> Vec<Found> {
        lock(&self.neighbours).list()
    }
}

impl Drop for Discovery {
    fn drop(&mut self) {
        let daemon = lock(&self.daemon);
        if let Some((_, _, fullname)) = lock(&self.announced).take() {
            goodbye(&daemon, &fullname);
        }
        let _ = daemon.shutdown();
    }
}

fn goodbye(daemon: &ServiceDaemon, fullname: &str) {
    match daemon.unregister(fullname) {
        Ok(done) => {
            let _ = done.recv_timeout(GOODBYE);
        }
        Err(e) => warn!(error = %e, "mDNS: cannot say goodbye"),
    }
}

/// What mdns-sd announces for `a`, on `address` (`None`: every address, following changes).
fn service_info(a: &Announcement, address: Option<IpAddr>) -> Result<ServiceInfo, DiscoveryError> {
    let txt = a.txt();
    match address {
        Some(ip) => ServiceInfo::new(SERVICE_TYPE, &a.instance(), &a.host(), ip, a.panel_port, &txt[..]),
        None => ServiceInfo::new(SERVICE_TYPE, &a.instance(), &a.host(), (), a.panel_port, &txt[..])
            .map(ServiceInfo::enable_addr_auto),
    }
    .map_err(err("cannot describe this box"))
}

/// A responder on the interface that holds `on`, or on every interface but loopback.
fn responder(on: Option<IpAddr>) -> Result<ServiceDaemon, DiscoveryError> {
    let daemon = ServiceDaemon::new().map_err(err("cannot start the responder"))?;
    match on {
        Some(ip) => {
            daemon.disable_interface(IfKind::All).map_err(err("cannot choose the interface"))?;
            daemon.enable_interface(IfKind::Addr(ip)).map_err(err("cannot choose the interface"))?;
        }
        None => daemon
            .disable_interface(vec![IfKind::LoopbackV4, IfKind::LoopbackV6])
            .map_err(err("cannot leave loopback out"))?,
    }
    Ok(daemon)
}

/// The browsing thread: the responder's events into the list; a flood of records refused
/// renews the responder, whose cache held every one of them for as long as their TTL said
/// (issue 57, finding 5: 20k-60k forged instances added 30 MB that stayed).
fn browse(
    list: &Arc<Mutex<Neighbours>>,
    daemon: &Arc<Mutex<ServiceDaemon>>,
    announced: &Arc<Mutex<Announced>>,
    mut events: mdns_sd::Receiver<ServiceEvent>,
    on: Option<IpAddr>,
) {
    let checking = Arc::new(AtomicUsize::new(0));
    loop {
        // Ends when the responder stops (the channel closes).
        let Ok(event) = events.recv() else { return };
        match event {
            ServiceEvent::ServiceResolved(r) => {
                let record = Record {
                    fullname: r.fullname.clone(),
                    port: r.port,
                    addresses: r.addresses.iter().map(|a| a.to_ip_addr()).collect(),
                    txt: r.txt_properties.iter().map(|p| (p.key().to_string(), p.val_str().to_string())).collect(),
                };
                let now = Instant::now();
                let listed = lock(list).resolved(&record, now);
                match listed {
                    Ok(Some(panel)) => check_panel(list, panel, &checking),
                    Ok(None) => {}
                    Err(e) => {
                        debug!(instance = %record.fullname.chars().take(80).collect::<String>(), reason = %e, "not listed")
                    }
                }
                if lock(list).flooded(now) {
                    match renew(daemon, announced, on) {
                        Ok(new_events) => events = new_events,
                        Err(e) => warn!(error = %e, "mDNS: cannot renew the responder after a flood"),
                    }
                }
            }
            ServiceEvent::ServiceRemoved(_, fullname) => lock(list).removed(&fullname),
            _ => {}
        }
    }
}

/// A new responder in place of the old, browsing and announcing what the old did; the old one's
/// cache goes with it.
fn renew(
    daemon: &Arc<Mutex<ServiceDaemon>>,
    announced: &Arc<Mutex<Announced>>,
    on: Option<IpAddr>,
) -> Result<mdns_sd::Receiver<ServiceEvent>, DiscoveryError> {
    let fresh = responder(on)?;
    let events = fresh.browse(SERVICE_TYPE).map_err(err("cannot browse"))?;
    let said = lock(announced).clone();
    if let Some((a, address, _)) = &said {
        fresh.register(service_info(a, *address)?).map_err(err("cannot announce this box"))?;
    }
    let old = std::mem::replace(&mut *lock(daemon), fresh);
    let _ = old.shutdown();
    warn!("mDNS: a flood of records no box of ours would send; the responder was renewed and its cache dropped");
    Ok(events)
}

/// Checks at most this many panels at once (a flood of records is not a flood of threads).
const CHECKS: usize = 8;
/// How long a panel has to accept a connection.
const CHECK_WAIT: Duration = Duration::from_secs(1);

/// Whether the panel a record announced accepts a connection, in a thread of its own; the
/// answer is kept on the box's entry ([`Neighbours::answered`]).
fn check_panel(list: &Arc<Mutex<Neighbours>>, panel: std::net::SocketAddr, checking: &Arc<AtomicUsize>) {
    if checking.fetch_add(1, Ordering::Relaxed) >= CHECKS {
        checking.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let (list, count) = (list.clone(), checking.clone());
    let spawned = std::thread::Builder::new().name("discovery-check".into()).spawn(move || {
        let answered = std::net::TcpStream::connect_timeout(&panel, CHECK_WAIT).is_ok();
        let mut l = lock(&list);
        if let Some(id) = l.id_at(panel) {
            l.answered(&id, panel, answered);
        }
        drop(l);
        count.fetch_sub(1, Ordering::Relaxed);
    });
    if spawned.is_err() {
        checking.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Browses for `wait` (on the interface holding `on`, or every one but loopback) and returns
/// the boxes found (`telebridge discover`).
pub fn browse_for(wait: Duration, on: Option<IpAddr>) -> Result<Vec<Found>, DiscoveryError> {
    let d = Discovery::start(None, on)?;
    std::thread::sleep(wait);
    Ok(d.list())
}
