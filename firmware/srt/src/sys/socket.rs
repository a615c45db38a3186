//! A safe layer over the FFI declarations (`ffi.rs`): one [`Socket`] per libsrt socket (closed when dropped), the
//! options an [`SrtUrl`] asks for, statistics, sending and receiving. Addresses are in
//! [`crate::addr`], waiting on many sockets in [`crate::epoll`], a listener with its admission
//! check in [`crate::listen_hook`], libsrt's errors in [`crate::error`].
//!
//! libsrt's calls are thread-safe on a socket id, so a connection can be sent to from the
//! encoder's thread while the output's own thread reads its statistics; a closed id just
//! answers "invalid socket".

use std::net::SocketAddr;
use std::sync::OnceLock;

use libc::{c_char, c_int, c_void, sockaddr_storage};
use telebridge_config::{SrtMode, SrtUrl};

use crate::addr::{from_raw, to_raw};
use crate::error::check;
pub use crate::error::SrtError;
use crate::ffi;

/// Starts libsrt once per process and routes its log to the crate (`crate::reject` reads it).
pub fn startup() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: srt_startup is idempotent and takes nothing.
        unsafe { ffi::srt_startup() };
    });
    super::log::install();
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

    pub(crate) fn from_id(id: ffi::SRTSOCKET) -> Self {
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

    /// Paces the connection by what comes in: libsrt measures the input rate and sends new
    /// packets and retransmissions together at most `overhead_pct` over it, and never takes the
    /// input for less than `min_bytes_per_s` (`SRTO_MAXBW` 0, `SRTO_INPUTBW` 0, `SRTO_OHEADBW`,
    /// `SRTO_MININPUTBW`: libsrt's "estimated" mode). Works on a connected socket: an adaptive
    /// bitrate keeps the floor at the rate it chose, and an encoder slower to follow a cut than
    /// the floor is still paced at what it really makes.
    pub fn pace_by_input(&self, min_bytes_per_s: i64, overhead_pct: i32) -> Result<(), SrtError> {
        self.set_i64(ffi::SRTO_INPUTBW, 0)?;
        self.set_int(ffi::SRTO_OHEADBW, overhead_pct.clamp(5, 100))?;
        self.set_i64(ffi::SRTO_MININPUTBW, min_bytes_per_s.max(0))?;
        self.set_i64(ffi::SRTO_MAXBW, 0)
    }

    /// Paces the connection at `bytes_per_s` at most, new packets and retransmissions together
    /// (`SRTO_MAXBW`, libsrt's absolute mode), whatever comes in: what the sender holds back
    /// waits in its send buffer instead of a congested bottleneck's queue.
    pub fn pace_at_most(&self, bytes_per_s: i64) -> Result<(), SrtError> {
        self.set_i64(ffi::SRTO_MAXBW, bytes_per_s.max(1))
    }

    /// The SRT latency this end asks for (`SRTO_LATENCY`, both directions), before it connects.
    fn set_latency(&self, latency: std::time::Duration) -> Result<(), SrtError> {
        let ms = i32::try_from(latency.as_millis()).unwrap_or(i32::MAX);
        self.set_int(ffi::SRTO_LATENCY, ms).map_err(|e| SrtError { code: e.code, text: format!("latency: {}", e.text) })
    }

    /// What an output chose for this connection, before it connects: the SRT latency this end
    /// asks for (`SRTO_LATENCY`, both directions), over what [`Socket::configure`] read in the URL.
    pub fn tune(&self, choice: &crate::latency::LatencyChoice) -> Result<(), SrtError> {
        self.set_latency(std::time::Duration::from_millis(choice.latency_ms))
    }

    /// Applies what `url` asks for: latency, encryption, stream id, bandwidth, timeouts.
    pub fn configure(&self, url: &SrtUrl) -> Result<(), SrtError> {
        let named =
            |what: &'static str| move |e: SrtError| SrtError { code: e.code, text: format!("{what}: {}", e.text) };
        if let Some(l) = url.latency {
            // `auto`: where nothing chose (an input); an output sets its choice after this
            // ([`Socket::set_latency`]).
            self.set_int(ffi::SRTO_LATENCY, l.initial().as_millis() as i32).map_err(named("latency"))?;
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

    /// The latency the peer holds this side's packets for, ms (`SRTO_PEERLATENCY`: on a
    /// connected socket the one agreed, before it the one asked for).
    pub fn peer_latency_ms(&self) -> Option<i32> {
        self.get_int(ffi::SRTO_PEERLATENCY)
    }

    /// An `int` option's value.
    pub(crate) fn get_int(&self, opt: c_int) -> Option<i32> {
        let mut v: i32 = 0;
        let mut len = std::mem::size_of::<i32>() as c_int;
        // SAFETY: `v` is an i32 and `len` says so; libsrt writes at most `len` bytes.
        let rc = unsafe { ffi::srt_getsockflag(self.id, opt, std::ptr::addr_of_mut!(v).cast(), &mut len) };
        (rc == 0).then_some(v)
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
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: closing an id twice or a gone id is harmless in libsrt.
        unsafe { ffi::srt_close(self.id) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get_i64(s: &Socket, opt: c_int) -> i64 {
        let mut v: i64 = -7;
        let mut len = std::mem::size_of::<i64>() as c_int;
        // SAFETY: `v` is an i64 and `len` says so; libsrt writes at most `len` bytes.
        let r = unsafe { ffi::srt_getsockflag(s.id(), opt, std::ptr::addr_of_mut!(v).cast(), &mut len) };
        assert_eq!(r, 0, "srt_getsockflag({opt})");
        v
    }

    #[test]
    fn pacing_by_input_sets_libsrt_s_estimated_mode_with_the_floor() {
        let s = Socket::new().expect("a socket");
        s.pace_by_input(250_000, 25).expect("libsrt takes the options");
        assert_eq!(get_i64(&s, ffi::SRTO_MAXBW), 0, "relative to the input");
        assert_eq!(get_i64(&s, ffi::SRTO_INPUTBW), 0, "the input rate measured");
        assert_eq!(get_i64(&s, ffi::SRTO_MININPUTBW), 250_000);
        s.pace_by_input(90_000, 25).expect("and again, lower");
        assert_eq!(get_i64(&s, ffi::SRTO_MININPUTBW), 90_000);
        s.pace_at_most(200_000).expect("an absolute ceiling");
        assert_eq!(get_i64(&s, ffi::SRTO_MAXBW), 200_000);
        s.pace_by_input(90_000, 25).expect("and by the input again");
        assert_eq!(get_i64(&s, ffi::SRTO_MAXBW), 0, "relative to the input again");
    }
}
