//! A safe layer over [`crate::ffi`]: one [`Socket`] per libsrt socket (closed when dropped), an
//! [`Epoll`] to wait on many, the options an [`SrtUrl`] asks for, statistics, and the listen
//! hook that admits or refuses a caller by its stream id before the handshake completes.
//!
//! libsrt's calls are thread-safe on a socket id, so a connection can be sent to from the
//! encoder's thread while the output's own thread reads its statistics; a closed id just
//! answers "invalid socket".
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use libc::{c_char, c_int, c_void, sockaddr, sockaddr_in, sockaddr_in6, sockaddr_storage};
use telebridge_config::{SrtMode, SrtUrl};

use crate::ffi;

/// What libsrt said went wrong: its error code and its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct SrtError {
    /// libsrt's `SRT_ERRNO`.
    pub code: i32,
    /// libsrt's message, or ours when the call never reached libsrt.
    pub text: String,
}

impl SrtError {
    fn last() -> Self {
        // SAFETY: both read libsrt's thread-local last error; the string is libsrt's own,
        // valid until the next call on this thread, copied at once.
        unsafe {
            let code = ffi::srt_getlasterror(std::ptr::null_mut());
            let text = CStr::from_ptr(ffi::srt_getlasterror_str()).to_string_lossy().into_owned();
            ffi::srt_clearlasterror();
            Self { code, text }
        }
    }

    /// Whether the last call on this thread only had to wait (nothing to read, no room to
    /// write). Checked before [`SrtError::last`], whose words libsrt formats on every call:
    /// too dear for the path every packet takes.
    fn last_would_block() -> bool {
        // SAFETY: reads libsrt's thread-local error code.
        let code = unsafe { ffi::srt_getlasterror(std::ptr::null_mut()) };
        let wait = code == ffi::SRT_EASYNCSND || code == ffi::SRT_EASYNCRCV || code == ffi::SRT_ETIMEOUT;
        if wait {
            // SAFETY: plain call.
            unsafe { ffi::srt_clearlasterror() };
        }
        wait
    }

    fn ours(text: impl Into<String>) -> Self {
        Self { code: -1, text: text.into() }
    }

    /// A non-blocking call that would have had to wait.
    pub fn would_block(&self) -> bool {
        self.code == ffi::SRT_EASYNCSND || self.code == ffi::SRT_EASYNCRCV || self.code == ffi::SRT_ETIMEOUT
    }
}

fn check(rc: c_int) -> Result<c_int, SrtError> {
    if rc == ffi::SRT_ERROR {
        Err(SrtError::last())
    } else {
        Ok(rc)
    }
}

/// Starts libsrt once per process and routes its log through [`crate::reject`].
pub fn startup() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: srt_startup is idempotent and takes nothing.
        unsafe { ffi::srt_startup() };
    });
    crate::reject::route_libsrt_log();
}

/// Why a send did not go out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendError {
    /// The send buffer is full: the link cannot keep up.
    Full,
    /// The connection is broken or closed.
    Broken,
}

/// Where a socket is in its life (`SRT_SOCKSTATUS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockState {
    /// Created, bound or listening: not connected yet.
    Setup,
    /// Handshake under way.
    Connecting,
    /// Connected.
    Connected,
    /// Broken, closing, closed or gone.
    Broken,
}

/// Converts an address for libsrt.
fn to_raw(addr: &SocketAddr) -> (sockaddr_storage, c_int) {
    // SAFETY: sockaddr_storage is plain data; all zeroes is a valid value.
    let mut storage: sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast::<sockaddr_in>(), sin) };
            std::mem::size_of::<sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(storage).cast::<sockaddr_in6>(), sin6) };
            std::mem::size_of::<sockaddr_in6>()
        }
    };
    (storage, len as c_int)
}

/// Reads an address libsrt wrote; `None` for a family other than IPv4/IPv6.
///
/// # Safety
/// `raw` must point at a valid `sockaddr` of its family's size.
unsafe fn from_raw(raw: *const sockaddr) -> Option<SocketAddr> {
    if raw.is_null() {
        return None;
    }
    match c_int::from((*raw).sa_family) {
        libc::AF_INET => {
            let a = &*raw.cast::<sockaddr_in>();
            let ip = std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddr::from((ip, u16::from_be(a.sin_port))))
        }
        libc::AF_INET6 => {
            let a = &*raw.cast::<sockaddr_in6>();
            let ip = std::net::Ipv6Addr::from(a.sin6_addr.s6_addr);
            if let Some(v4) = ip.to_ipv4_mapped() {
                // A dual-stack listener's IPv4 caller: show it as the IPv4 address it is.
                return Some(SocketAddr::from((v4, u16::from_be(a.sin6_port))));
            }
            Some(SocketAddr::V6(std::net::SocketAddrV6::new(
                ip,
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Resolves `host:port` (a name, an IPv4 or an IPv6 address).
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, SrtError> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map_err(|e| SrtError::ours(format!("cannot resolve {host}: {e}")))?
        .next()
        .ok_or_else(|| SrtError::ours(format!("{host} has no address")))
}

/// The most packets in flight per connection (`SRTO_FC`). libsrt sizes each connection's loss
/// lists by it whether they are used or not (its default, 25600, cost a listener about 0.75 MB
/// per caller); 8192 packets in flight still carry 86 Mbit/s over a 1 s round trip, more than
/// any stream a Pi sends.
pub const FLIGHT_WINDOW: i32 = 8192;

/// The receive window of a connection that only sends (see [`Socket::set_send_only`]).
pub const SEND_ONLY_WINDOW: i32 = 64;

/// One libsrt socket, closed when dropped.
#[derive(Debug)]
pub struct Socket {
    id: ffi::SRTSOCKET,
}

impl Socket {
    /// A new live-mode socket, non-blocking for sending, receiving and connecting.
    pub fn new() -> Result<Self, SrtError> {
        startup();
        // SAFETY: no arguments; the id is checked.
        let id = unsafe { ffi::srt_create_socket() };
        if id == ffi::SRT_INVALID_SOCK {
            return Err(SrtError::last());
        }
        let s = Self { id };
        s.set_int(ffi::SRTO_TRANSTYPE, ffi::SRTT_LIVE)?;
        s.set_int(ffi::SRTO_FC, FLIGHT_WINDOW)?;
        s.set_bool(ffi::SRTO_SNDSYN, false)?;
        s.set_bool(ffi::SRTO_RCVSYN, false)?;
        Ok(s)
    }

    fn from_id(id: ffi::SRTSOCKET) -> Self {
        Self { id }
    }

    /// libsrt's id for this socket.
    pub fn id(&self) -> i32 {
        self.id
    }

    fn set_raw(&self, opt: c_int, val: *const c_void, len: usize) -> Result<(), SrtError> {
        // SAFETY: `val` points at `len` readable bytes for the duration of the call.
        check(unsafe { ffi::srt_setsockflag(self.id, opt, val, len as c_int) }).map(drop)
    }

    fn set_int(&self, opt: c_int, v: i32) -> Result<(), SrtError> {
        self.set_raw(opt, std::ptr::addr_of!(v).cast(), std::mem::size_of::<i32>())
    }

    fn set_i64(&self, opt: c_int, v: i64) -> Result<(), SrtError> {
        self.set_raw(opt, std::ptr::addr_of!(v).cast(), std::mem::size_of::<i64>())
    }

    fn set_bool(&self, opt: c_int, v: bool) -> Result<(), SrtError> {
        // libsrt's boolean options are C++ bools, one byte; it also takes an int.
        self.set_int(opt, i32::from(v))
    }

    fn set_str(&self, opt: c_int, v: &str) -> Result<(), SrtError> {
        self.set_raw(opt, v.as_ptr().cast(), v.len())
    }

    /// For a connection that only sends: the smallest receive side libsrt allows. What a peer
    /// may send us is bounded by our `SRTO_FC`, and libsrt sizes our receive buffer and loss
    /// list by it and `SRTO_RCVBUF` up front; a sender needs neither (its own flight window is
    /// the peer's). About 0.3 MB less per caller of a listener. Set before connecting.
    pub fn set_send_only(&self) -> Result<(), SrtError> {
        self.set_int(ffi::SRTO_FC, SEND_ONLY_WINDOW)?;
        self.set_int(ffi::SRTO_RCVBUF, SEND_ONLY_WINDOW * 1472)
    }

    /// Sets the AES passphrase (10-79 characters; libsrt refuses others with its reason).
    pub fn set_passphrase(&self, pass: &str) -> Result<(), SrtError> {
        self.set_str(ffi::SRTO_PASSPHRASE, pass)
            .map_err(|_| SrtError::ours("the passphrase must be 10 to 79 characters long"))
    }

    /// Applies what `url` asks for: latency, encryption, stream id, bandwidth, timeouts.
    pub fn configure(&self, url: &SrtUrl) -> Result<(), SrtError> {
        let named =
            |what: &'static str| move |e: SrtError| SrtError { code: e.code, text: format!("{what}: {}", e.text) };
        if let Some(l) = url.latency {
            self.set_int(ffi::SRTO_LATENCY, l.as_millis() as i32).map_err(named("latency"))?;
        }
        if let Some(p) = &url.passphrase {
            self.set_passphrase(p.expose())?;
        }
        if let Some(k) = url.key_length {
            self.set_int(ffi::SRTO_PBKEYLEN, k.bytes() as i32).map_err(named("pbkeylen"))?;
        }
        if let Some(id) = &url.stream_id {
            if url.mode != SrtMode::Listener {
                self.set_str(ffi::SRTO_STREAMID, id).map_err(named("streamid"))?;
            }
        }
        if let Some(b) = url.max_bw_bytes_per_s {
            self.set_i64(ffi::SRTO_MAXBW, b).map_err(named("maxbw"))?;
        }
        if let Some(b) = url.input_bw_bytes_per_s {
            self.set_i64(ffi::SRTO_INPUTBW, b).map_err(named("inputbw"))?;
        }
        if let Some(p) = url.overhead_bw_pct {
            self.set_int(ffi::SRTO_OHEADBW, p as i32).map_err(named("oheadbw"))?;
        }
        if let Some(t) = url.connect_timeout {
            self.set_int(ffi::SRTO_CONNTIMEO, t.as_millis() as i32).map_err(named("conntimeo"))?;
        }
        if let Some(t) = url.peer_idle_timeout {
            self.set_int(ffi::SRTO_PEERIDLETIMEO, t.as_millis() as i32).map_err(named("peeridletimeo"))?;
        }
        if url.mode == SrtMode::Rendezvous {
            self.set_bool(ffi::SRTO_RENDEZVOUS, true)?;
        }
        Ok(())
    }

    /// Binds to `addr`.
    pub fn bind(&self, addr: &SocketAddr) -> Result<(), SrtError> {
        let (raw, len) = to_raw(addr);
        // SAFETY: `raw` holds a valid address of `len` bytes.
        check(unsafe { ffi::srt_bind(self.id, std::ptr::addr_of!(raw).cast(), len) })
            .map(drop)
            .map_err(|e| SrtError { code: e.code, text: format!("cannot use port {}: {}", addr.port(), e.text) })
    }

    /// Binds a listener: to `addr`, or when it is the IPv6 wildcard to both IPv6 and IPv4
    /// (IPv4 alone where the machine has no IPv6).
    pub fn bind_listener(&self, addr: &SocketAddr) -> Result<(), SrtError> {
        if addr.ip() == std::net::Ipv6Addr::UNSPECIFIED {
            self.set_int(ffi::SRTO_IPV6ONLY, 0)?;
            if self.bind(addr).is_ok() {
                return Ok(());
            }
            return self.bind(&SocketAddr::from(([0, 0, 0, 0], addr.port())));
        }
        self.bind(addr)
    }

    /// Listens with room for `backlog` callers whose handshakes arrive at the same moment.
    pub fn listen(&self, backlog: i32) -> Result<(), SrtError> {
        // SAFETY: plain call on our socket.
        check(unsafe { ffi::srt_listen(self.id, backlog) }).map(drop)
    }

    /// Calls `addr` (non-blocking: follow with [`Socket::state`]).
    pub fn connect(&self, addr: &SocketAddr) -> Result<(), SrtError> {
        let (raw, len) = to_raw(addr);
        // SAFETY: `raw` holds a valid address of `len` bytes.
        check(unsafe { ffi::srt_connect(self.id, std::ptr::addr_of!(raw).cast(), len) }).map(drop)
    }

    /// Rendezvous from `local` with `remote` (non-blocking).
    pub fn rendezvous(&self, local: &SocketAddr, remote: &SocketAddr) -> Result<(), SrtError> {
        let (l, llen) = to_raw(local);
        let (r, rlen) = to_raw(remote);
        // SAFETY: both hold valid addresses of their lengths.
        check(unsafe {
            ffi::srt_rendezvous(self.id, std::ptr::addr_of!(l).cast(), llen, std::ptr::addr_of!(r).cast(), rlen)
        })
        .map(drop)
    }

    /// Accepts one waiting caller; `Ok(None)` when none is waiting.
    pub fn accept(&self) -> Result<Option<(Socket, Option<SocketAddr>)>, SrtError> {
        // SAFETY: as in to_raw, zeroed storage is valid; libsrt writes at most `len` bytes.
        let mut raw: sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<sockaddr_storage>() as c_int;
        // SAFETY: `raw` and `len` are valid for writing.
        let id = unsafe { ffi::srt_accept(self.id, std::ptr::addr_of_mut!(raw).cast(), &mut len) };
        if id == ffi::SRT_INVALID_SOCK {
            return if SrtError::last_would_block() { Ok(None) } else { Err(SrtError::last()) };
        }
        // SAFETY: libsrt wrote a valid address into `raw`.
        let addr = unsafe { from_raw(std::ptr::addr_of!(raw).cast()) };
        Ok(Some((Socket::from_id(id), addr)))
    }

    /// Where the socket is.
    pub fn state(&self) -> SockState {
        // SAFETY: plain call; any id is accepted.
        match unsafe { ffi::srt_getsockstate(self.id) } {
            ffi::SRTS_INIT | ffi::SRTS_OPENED | ffi::SRTS_LISTENING => SockState::Setup,
            ffi::SRTS_CONNECTING => SockState::Connecting,
            ffi::SRTS_CONNECTED => SockState::Connected,
            _ => SockState::Broken,
        }
    }

    /// Why libsrt refused the connection (`SRT_REJECT_REASON` or a listener's code).
    pub fn reject_reason(&self) -> i32 {
        // SAFETY: plain call.
        unsafe { ffi::srt_getrejectreason(self.id) }
    }

    /// The local address (after bind or connect).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        // SAFETY: as in accept.
        let mut raw: sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<sockaddr_storage>() as c_int;
        // SAFETY: `raw` and `len` are valid for writing.
        let rc = unsafe { ffi::srt_getsockname(self.id, std::ptr::addr_of_mut!(raw).cast(), &mut len) };
        // SAFETY: on success libsrt wrote a valid address.
        (rc == 0).then(|| unsafe { from_raw(std::ptr::addr_of!(raw).cast()) }).flatten()
    }

    /// The stream id the peer sent (on an accepted socket).
    pub fn stream_id(&self) -> Option<String> {
        let mut buf = [0u8; 513];
        let mut len = buf.len() as c_int;
        // SAFETY: `buf` has `len` writable bytes.
        let rc = unsafe { ffi::srt_getsockflag(self.id, ffi::SRTO_STREAMID, buf.as_mut_ptr().cast(), &mut len) };
        (rc == 0 && len > 0).then(|| String::from_utf8_lossy(&buf[..len as usize]).into_owned())
    }

    /// Sends one message (at most 1456 bytes; Telebridge sends 1316: seven TS packets).
    /// `Err` with [`SrtError::would_block`] when the send buffer is full.
    pub fn send(&self, data: &[u8]) -> Result<(), SendError> {
        let mut ctrl = ffi::SRT_MSGCTRL::default();
        // SAFETY: `data` is readable for its length; `ctrl` is a valid SRT_MSGCTRL.
        let rc = unsafe { ffi::srt_sendmsg2(self.id, data.as_ptr().cast::<c_char>(), data.len() as c_int, &mut ctrl) };
        if rc != ffi::SRT_ERROR {
            Ok(())
        } else if SrtError::last_would_block() {
            Err(SendError::Full)
        } else {
            // SAFETY: plain call; the words are not needed on this path.
            unsafe { ffi::srt_clearlasterror() };
            Err(SendError::Broken)
        }
    }

    /// Receives one message into `buf`; `Ok(None)` when nothing is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> Result<Option<usize>, SrtError> {
        let mut ctrl = ffi::SRT_MSGCTRL::default();
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { ffi::srt_recvmsg2(self.id, buf.as_mut_ptr().cast::<c_char>(), buf.len() as c_int, &mut ctrl) };
        if n == ffi::SRT_ERROR {
            return if SrtError::last_would_block() { Ok(None) } else { Err(SrtError::last()) };
        }
        Ok(Some(n as usize))
    }

    /// libsrt's counters for this connection (totals since it opened, rates of the last
    /// interval); `None` when the socket is gone.
    pub fn stats(&self) -> Option<ffi::SRT_TRACEBSTATS> {
        let mut perf = ffi::SRT_TRACEBSTATS::default();
        // SAFETY: `perf` is a correctly laid out SRT_TRACEBSTATS (checked in ffi's tests).
        let rc = unsafe { ffi::srt_bistats(self.id, &mut perf, 0, 1) };
        (rc == 0).then_some(perf)
    }

    /// Installs `hook` as the listener's admission check: it runs for every caller before the
    /// handshake completes, may set the new socket's passphrase, or refuse it with a code.
    pub fn set_listen_hook(&self, hook: Arc<ListenHook>) -> Result<ListenHookGuard, SrtError> {
        let raw = Box::into_raw(Box::new(hook));
        // SAFETY: the pointer stays valid until the guard drops it, after the socket is closed
        // (the guard is held next to the socket and dropped after it).
        let rc = unsafe { ffi::srt_listen_callback(self.id, listen_trampoline, raw as *mut c_void) };
        if rc == ffi::SRT_ERROR {
            // SAFETY: libsrt did not take the pointer; reclaim it.
            drop(unsafe { Box::from_raw(raw) });
            return Err(SrtError::last());
        }
        Ok(ListenHookGuard(raw))
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: closing an id twice or a gone id is harmless in libsrt.
        unsafe { ffi::srt_close(self.id) };
    }
}

/// What a listen hook decides for one caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// Let it in; with this passphrase (`None`: the listener's own).
    Accept(Option<String>),
    /// Refuse it with this code (`SRT_REJX_*`, 1400-1499), which the caller sees.
    Reject(i32),
}

/// A listener's admission check: (the caller's stream id, its address) -> decision.
pub type ListenHook = dyn Fn(&str, Option<SocketAddr>) -> Admit + Send + Sync;

/// Keeps a listen hook alive while its listener lives; drop it after the listener.
#[derive(Debug)]
pub struct ListenHookGuard(*mut Arc<ListenHook>);

// SAFETY: the hook it points to is Send + Sync; the guard only frees it.
unsafe impl Send for ListenHookGuard {}

impl Drop for ListenHookGuard {
    fn drop(&mut self) {
        // SAFETY: made by Box::into_raw in set_listen_hook, dropped once here.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

unsafe extern "C" fn listen_trampoline(
    opaq: *mut c_void,
    ns: ffi::SRTSOCKET,
    _hsversion: c_int,
    peeraddr: *const sockaddr,
    streamid: *const c_char,
) -> c_int {
    // SAFETY: `opaq` is the hook installed by set_listen_hook, alive while the listener is.
    let hook = unsafe { &*(opaq as *const Arc<ListenHook>) };
    let sid = if streamid.is_null() {
        String::new()
    } else {
        // SAFETY: libsrt passes a NUL-terminated string valid for the call.
        unsafe { CStr::from_ptr(streamid) }.to_string_lossy().into_owned()
    };
    // SAFETY: libsrt passes a valid address for the call.
    let addr = unsafe { from_raw(peeraddr) };
    let decision = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&sid, addr)))
        .unwrap_or(Admit::Reject(ffi::SRT_REJX_OVERLOAD));
    let new = std::mem::ManuallyDrop::new(Socket::from_id(ns));
    match decision {
        Admit::Accept(None) => 0,
        Admit::Accept(Some(pass)) => match new.set_passphrase(&pass) {
            Ok(()) => 0,
            Err(_) => {
                // SAFETY: plain call on the socket being accepted.
                unsafe { ffi::srt_setrejectreason(ns, ffi::SRT_REJX_UNAUTHORIZED) };
                -1
            }
        },
        Admit::Reject(code) => {
            // SAFETY: plain call on the socket being accepted.
            unsafe { ffi::srt_setrejectreason(ns, code) };
            -1
        }
    }
}

/// libsrt's words for a reject code.
pub fn reject_words(code: i32) -> String {
    match code {
        ffi::SRT_REJX_BAD_REQUEST => "the listener does not know this stream id".into(),
        ffi::SRT_REJX_UNAUTHORIZED => "the listener refused the credentials".into(),
        ffi::SRT_REJX_OVERLOAD => "the listener is full".into(),
        ffi::SRT_REJX_NOTFOUND => "no such stream at the listener".into(),
        ffi::SRT_REJX_CONFLICT => "the listener's stream is taken (another sender is connected)".into(),
        c => {
            // SAFETY: libsrt returns a static string for any id (a generic one when unknown).
            let s = unsafe { ffi::srt_rejectreason_str(c) };
            if s.is_null() {
                format!("code {c}")
            } else {
                // SAFETY: NUL-terminated static string.
                unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
            }
        }
    }
}

/// An epoll over libsrt sockets: one thread waits on all of them.
#[derive(Debug)]
pub struct Epoll {
    id: c_int,
}

/// What [`Epoll::wait`] saw on one socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    /// The socket's id.
    pub socket: i32,
    /// Data (or a caller) waiting.
    pub readable: bool,
    /// Broken or closed.
    pub error: bool,
}

impl Epoll {
    /// A new epoll that waits even when empty.
    pub fn new() -> Result<Self, SrtError> {
        startup();
        // SAFETY: plain call.
        let id = check(unsafe { ffi::srt_epoll_create() })?;
        // SAFETY: plain call on our epoll.
        unsafe { ffi::srt_epoll_set(id, ffi::SRT_EPOLL_ENABLE_EMPTY) };
        Ok(Self { id })
    }

    /// Watches `s` for data (or callers) and errors.
    pub fn add(&self, s: &Socket) -> Result<(), SrtError> {
        let events = ffi::SRT_EPOLL_IN | ffi::SRT_EPOLL_ERR;
        // SAFETY: `events` is valid for the call.
        check(unsafe { ffi::srt_epoll_add_usock(self.id, s.id, &events) }).map(drop)
    }

    /// Stops watching `s`.
    pub fn remove(&self, s: &Socket) {
        self.remove_id(s.id);
    }

    /// Stops watching the socket with this id.
    pub fn remove_id(&self, socket: i32) {
        // SAFETY: plain call; an unknown id is an error we do not need.
        unsafe { ffi::srt_epoll_remove_usock(self.id, socket) };
    }

    /// Waits up to `timeout` for any watched socket; fills `ready` with what is ready (empty on
    /// timeout). `ready` is the caller's, kept between calls: nothing is allocated per wait.
    pub fn wait(&self, timeout: Duration, ready: &mut Vec<Ready>) {
        ready.clear();
        let mut events = [ffi::SRT_EPOLL_EVENT::default(); 16];
        // SAFETY: `events` has room for 16 entries.
        let n = unsafe {
            ffi::srt_epoll_uwait(self.id, events.as_mut_ptr(), events.len() as c_int, timeout.as_millis() as i64)
        };
        if n <= 0 {
            if n < 0 {
                // An epoll error (nothing watched on an old libsrt): still wait, never spin.
                std::thread::sleep(timeout);
            }
            return;
        }
        ready.extend(events[..(n as usize).min(events.len())].iter().map(|e| Ready {
            socket: e.fd,
            readable: e.events & ffi::SRT_EPOLL_IN != 0,
            error: e.events & ffi::SRT_EPOLL_ERR != 0,
        }));
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: releases our epoll once.
        unsafe { ffi::srt_epoll_release(self.id) };
    }
}

/// The local address a socket for `url` binds to: the listener's port (and adapter), a
/// rendezvous' own port (the peer's when not given), a caller's fixed port if asked.
pub fn local_bind(url: &SrtUrl, remote: Option<&SocketAddr>) -> Result<Option<SocketAddr>, SrtError> {
    let v6 = remote.is_some_and(|r| r.is_ipv6());
    let any = if v6 { "::" } else { "0.0.0.0" };
    let adapter = url.local_address.as_deref();
    match url.mode {
        SrtMode::Listener => {
            let host = adapter.or(url.host.as_deref()).unwrap_or("::");
            Ok(Some(resolve(host, url.port)?))
        }
        SrtMode::Rendezvous => Ok(Some(resolve(adapter.unwrap_or(any), url.local_port.unwrap_or(url.port))?)),
        SrtMode::Caller => match (adapter, url.local_port) {
            (None, None) => Ok(None),
            (a, p) => Ok(Some(resolve(a.unwrap_or(any), p.unwrap_or(0))?)),
        },
    }
}
