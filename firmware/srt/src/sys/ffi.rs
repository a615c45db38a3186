//! The part of libsrt's C API Telebridge uses, declared by hand from `srt/srt.h` (libsrt 1.5).
//! Layouts are checked against the header by `ffi_layout` below (sizes and offsets printed by
//! a C compiler from the same header); the only struct whose layout matters for memory safety
//! is [`SRT_TRACEBSTATS`], which libsrt writes into.
#![allow(non_camel_case_types, non_snake_case, missing_docs, dead_code, clippy::upper_case_acronyms)]

use libc::{c_char, c_int, c_void, sockaddr};

pub type SRTSOCKET = i32;
pub const SRT_INVALID_SOCK: SRTSOCKET = -1;
pub const SRT_ERROR: c_int = -1;

// SRT_SOCKOPT
pub const SRTO_SNDSYN: c_int = 1;
pub const SRTO_RCVSYN: c_int = 2;
pub const SRTO_FC: c_int = 4;
pub const SRTO_SNDBUF: c_int = 5;
pub const SRTO_RCVBUF: c_int = 6;
pub const SRTO_LINGER: c_int = 7;
pub const SRTO_UDP_RCVBUF: c_int = 9;
pub const SRTO_RENDEZVOUS: c_int = 12;
pub const SRTO_REUSEADDR: c_int = 15;
pub const SRTO_MAXBW: c_int = 16;
pub const SRTO_SENDER: c_int = 21;
pub const SRTO_LATENCY: c_int = 23;
pub const SRTO_INPUTBW: c_int = 24;
pub const SRTO_OHEADBW: c_int = 25;
pub const SRTO_MININPUTBW: c_int = 38;
pub const SRTO_PASSPHRASE: c_int = 26;
pub const SRTO_PBKEYLEN: c_int = 27;
pub const SRTO_CONNTIMEO: c_int = 36;
pub const SRTO_RCVLATENCY: c_int = 43;
pub const SRTO_PEERLATENCY: c_int = 44;
pub const SRTO_STREAMID: c_int = 46;
pub const SRTO_PAYLOADSIZE: c_int = 49;
pub const SRTO_TRANSTYPE: c_int = 50;
pub const SRTO_ENFORCEDENCRYPTION: c_int = 53;
pub const SRTO_IPV6ONLY: c_int = 54;
pub const SRTO_PEERIDLETIMEO: c_int = 55;

/// SRTT_LIVE in SRT_TRANSTYPE.
pub const SRTT_LIVE: c_int = 0;

// SRT_SOCKSTATUS
pub const SRTS_INIT: c_int = 1;
pub const SRTS_OPENED: c_int = 2;
pub const SRTS_LISTENING: c_int = 3;
pub const SRTS_CONNECTING: c_int = 4;
pub const SRTS_CONNECTED: c_int = 5;
pub const SRTS_BROKEN: c_int = 6;
pub const SRTS_CLOSING: c_int = 7;
pub const SRTS_CLOSED: c_int = 8;
pub const SRTS_NONEXIST: c_int = 9;

// SRT_EPOLL_OPT
pub const SRT_EPOLL_IN: c_int = 0x1;
pub const SRT_EPOLL_OUT: c_int = 0x4;
pub const SRT_EPOLL_ERR: c_int = 0x8;
/// srt_epoll_set: an empty epoll waits instead of failing.
pub const SRT_EPOLL_ENABLE_EMPTY: i32 = 1;

// Error codes (SRT_ERRNO)
pub const SRT_ECONNSETUP: c_int = 1000;
pub const SRT_ECONNREJ: c_int = 1002;
pub const SRT_ECONNLOST: c_int = 2001;
pub const SRT_ENOCONN: c_int = 2002;
pub const SRT_EINVSOCK: c_int = 5004;
pub const SRT_EASYNCSND: c_int = 6001;
pub const SRT_EASYNCRCV: c_int = 6002;
pub const SRT_ETIMEOUT: c_int = 6003;

// Reject codes a listen callback may set (access_control.h).
pub const SRT_REJX_BAD_REQUEST: c_int = 1400;
pub const SRT_REJX_UNAUTHORIZED: c_int = 1401;
pub const SRT_REJX_OVERLOAD: c_int = 1402;
pub const SRT_REJX_NOTFOUND: c_int = 1404;
pub const SRT_REJX_CONFLICT: c_int = 1409;

/// `LOG_NOTICE` from syslog.h: libsrt's log level for connection events and rejections.
pub const LOG_NOTICE: c_int = 5;

/// `SRT_MSGCTRL`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SRT_MSGCTRL {
    pub flags: c_int,
    pub msgttl: c_int,
    pub inorder: c_int,
    pub boundary: c_int,
    pub srctime: i64,
    pub pktseq: i32,
    pub msgno: i32,
    pub grpdata: *mut c_void,
    pub grpdata_size: usize,
}

impl Default for SRT_MSGCTRL {
    /// `srt_msgctrl_default`: no TTL, not in order, whole message, libsrt's own time.
    fn default() -> Self {
        Self {
            flags: 0,
            msgttl: -1,
            inorder: 0,
            boundary: 0,
            srctime: 0,
            pktseq: -1,
            msgno: -1,
            grpdata: std::ptr::null_mut(),
            grpdata_size: 0,
        }
    }
}

/// `SRT_EPOLL_EVENT`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SRT_EPOLL_EVENT {
    pub fd: SRTSOCKET,
    pub events: c_int,
}

/// `SRT_TRACEBSTATS` (`struct CBytePerfMon`), libsrt 1.5: 496 bytes on LP64.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct SRT_TRACEBSTATS {
    // global measurements
    pub msTimeStamp: i64,
    pub pktSentTotal: i64,
    pub pktRecvTotal: i64,
    pub pktSndLossTotal: c_int,
    pub pktRcvLossTotal: c_int,
    pub pktRetransTotal: c_int,
    pub pktSentACKTotal: c_int,
    pub pktRecvACKTotal: c_int,
    pub pktSentNAKTotal: c_int,
    pub pktRecvNAKTotal: c_int,
    pub usSndDurationTotal: i64,
    pub pktSndDropTotal: c_int,
    pub pktRcvDropTotal: c_int,
    pub pktRcvUndecryptTotal: c_int,
    pub byteSentTotal: u64,
    pub byteRecvTotal: u64,
    pub byteRcvLossTotal: u64,
    pub byteRetransTotal: u64,
    pub byteSndDropTotal: u64,
    pub byteRcvDropTotal: u64,
    pub byteRcvUndecryptTotal: u64,
    // local measurements
    pub pktSent: i64,
    pub pktRecv: i64,
    pub pktSndLoss: c_int,
    pub pktRcvLoss: c_int,
    pub pktRetrans: c_int,
    pub pktRcvRetrans: c_int,
    pub pktSentACK: c_int,
    pub pktRecvACK: c_int,
    pub pktSentNAK: c_int,
    pub pktRecvNAK: c_int,
    pub mbpsSendRate: f64,
    pub mbpsRecvRate: f64,
    pub usSndDuration: i64,
    pub pktReorderDistance: c_int,
    pub pktRcvAvgBelatedTime: f64,
    pub pktRcvBelated: i64,
    pub pktSndDrop: c_int,
    pub pktRcvDrop: c_int,
    pub pktRcvUndecrypt: c_int,
    pub byteSent: u64,
    pub byteRecv: u64,
    pub byteRcvLoss: u64,
    pub byteRetrans: u64,
    pub byteSndDrop: u64,
    pub byteRcvDrop: u64,
    pub byteRcvUndecrypt: u64,
    // instant measurements
    pub usPktSndPeriod: f64,
    pub pktFlowWindow: c_int,
    pub pktCongestionWindow: c_int,
    pub pktFlightSize: c_int,
    pub msRTT: f64,
    pub mbpsBandwidth: f64,
    pub byteAvailSndBuf: c_int,
    pub byteAvailRcvBuf: c_int,
    pub mbpsMaxBW: f64,
    pub byteMSS: c_int,
    pub pktSndBuf: c_int,
    pub byteSndBuf: c_int,
    pub msSndBuf: c_int,
    pub msSndTsbPdDelay: c_int,
    pub pktRcvBuf: c_int,
    pub byteRcvBuf: c_int,
    pub msRcvBuf: c_int,
    pub msRcvTsbPdDelay: c_int,
    pub pktSndFilterExtraTotal: c_int,
    pub pktRcvFilterExtraTotal: c_int,
    pub pktRcvFilterSupplyTotal: c_int,
    pub pktRcvFilterLossTotal: c_int,
    pub pktSndFilterExtra: c_int,
    pub pktRcvFilterExtra: c_int,
    pub pktRcvFilterSupply: c_int,
    pub pktRcvFilterLoss: c_int,
    pub pktReorderTolerance: c_int,
    // 1.5.0
    pub pktSentUniqueTotal: i64,
    pub pktRecvUniqueTotal: i64,
    pub byteSentUniqueTotal: u64,
    pub byteRecvUniqueTotal: u64,
    pub pktSentUnique: i64,
    pub pktRecvUnique: i64,
    pub byteSentUnique: u64,
    pub byteRecvUnique: u64,
}

pub type srt_listen_callback_fn = unsafe extern "C" fn(
    opaq: *mut c_void,
    ns: SRTSOCKET,
    hsversion: c_int,
    peeraddr: *const sockaddr,
    streamid: *const c_char,
) -> c_int;

pub type SRT_LOG_HANDLER_FN = unsafe extern "C" fn(
    opaque: *mut c_void,
    level: c_int,
    file: *const c_char,
    line: c_int,
    area: *const c_char,
    message: *const c_char,
);

extern "C" {
    pub fn srt_startup() -> c_int;
    pub fn srt_create_socket() -> SRTSOCKET;
    pub fn srt_bind(u: SRTSOCKET, name: *const sockaddr, namelen: c_int) -> c_int;
    pub fn srt_listen(u: SRTSOCKET, backlog: c_int) -> c_int;
    pub fn srt_accept(u: SRTSOCKET, addr: *mut sockaddr, addrlen: *mut c_int) -> SRTSOCKET;
    pub fn srt_listen_callback(lsn: SRTSOCKET, hook_fn: srt_listen_callback_fn, hook_opaque: *mut c_void) -> c_int;
    pub fn srt_connect(u: SRTSOCKET, name: *const sockaddr, namelen: c_int) -> c_int;
    pub fn srt_rendezvous(
        u: SRTSOCKET,
        local_name: *const sockaddr,
        local_namelen: c_int,
        remote_name: *const sockaddr,
        remote_namelen: c_int,
    ) -> c_int;
    pub fn srt_close(u: SRTSOCKET) -> c_int;
    pub fn srt_getpeername(u: SRTSOCKET, name: *mut sockaddr, namelen: *mut c_int) -> c_int;
    pub fn srt_getsockname(u: SRTSOCKET, name: *mut sockaddr, namelen: *mut c_int) -> c_int;
    pub fn srt_getsockflag(u: SRTSOCKET, opt: c_int, optval: *mut c_void, optlen: *mut c_int) -> c_int;
    pub fn srt_setsockflag(u: SRTSOCKET, opt: c_int, optval: *const c_void, optlen: c_int) -> c_int;
    pub fn srt_sendmsg2(u: SRTSOCKET, buf: *const c_char, len: c_int, mctrl: *mut SRT_MSGCTRL) -> c_int;
    pub fn srt_recvmsg2(u: SRTSOCKET, buf: *mut c_char, len: c_int, mctrl: *mut SRT_MSGCTRL) -> c_int;
    pub fn srt_getlasterror(errno_loc: *mut c_int) -> c_int;
    pub fn srt_getlasterror_str() -> *const c_char;
    pub fn srt_clearlasterror();
    pub fn srt_bstats(u: SRTSOCKET, perf: *mut SRT_TRACEBSTATS, clear: c_int) -> c_int;
    pub fn srt_bistats(u: SRTSOCKET, perf: *mut SRT_TRACEBSTATS, clear: c_int, instantaneous: c_int) -> c_int;
    pub fn srt_getsockstate(u: SRTSOCKET) -> c_int;
    pub fn srt_epoll_create() -> c_int;
    pub fn srt_epoll_add_usock(eid: c_int, u: SRTSOCKET, events: *const c_int) -> c_int;
    pub fn srt_epoll_remove_usock(eid: c_int, u: SRTSOCKET) -> c_int;
    pub fn srt_epoll_uwait(eid: c_int, fds_set: *mut SRT_EPOLL_EVENT, fds_size: c_int, ms_timeout: i64) -> c_int;
    pub fn srt_epoll_set(eid: c_int, flags: i32) -> i32;
    pub fn srt_epoll_release(eid: c_int) -> c_int;
    pub fn srt_getrejectreason(sock: SRTSOCKET) -> c_int;
    pub fn srt_setrejectreason(sock: SRTSOCKET, value: c_int) -> c_int;
    pub fn srt_rejectreason_str(id: c_int) -> *const c_char;
    pub fn srt_setloglevel(ll: c_int);
    pub fn srt_setloghandler(opaque: *mut c_void, handler: SRT_LOG_HANDLER_FN);
    pub fn srt_getversion() -> u32;
}

/// The libsrt whose `srt.h` the structures above were laid out from (1.5.x): the version a
/// running libsrt must have, as `srt_getversion` gives it (major, minor).
pub const LAYOUT_VERSION: (u32, u32) = (1, 5);

/// libsrt's version as (major, minor, patch).
pub fn library_version() -> (u32, u32, u32) {
    // SAFETY: srt_getversion takes nothing and returns a number.
    let v = unsafe { srt_getversion() };
    (v >> 16, (v >> 8) & 0xff, v & 0xff)
}

/// Refuses a libsrt whose statistics structure may be laid out otherwise than the one this
/// binding reads (a different major or minor version), in words.
pub fn check_library() -> Result<(), String> {
    let (major, minor, patch) = library_version();
    if (major, minor) == LAYOUT_VERSION {
        Ok(())
    } else {
        Err(format!(
            "libsrt {major}.{minor}.{patch} is installed; this telebridge reads libsrt {}.{}'s structures: install libsrt {}.{} (Debian's libsrt1.5-gnutls)",
            LAYOUT_VERSION.0, LAYOUT_VERSION.1, LAYOUT_VERSION.0, LAYOUT_VERSION.1
        ))
    }
}

#[cfg(test)]
mod ffi_layout {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// Figures printed by gcc from libsrt 1.5.1's srt.h (x86_64 and aarch64 agree: both LP64).
    #[test]
    fn matches_the_header() {
        assert_eq!(size_of::<SRT_TRACEBSTATS>(), 496);
        assert_eq!(offset_of!(SRT_TRACEBSTATS, msRTT), 328);
        assert_eq!(offset_of!(SRT_TRACEBSTATS, msRcvBuf), 388);
        assert_eq!(offset_of!(SRT_TRACEBSTATS, byteRecvUnique), 488);
        assert_eq!(size_of::<SRT_MSGCTRL>(), 48);
        assert_eq!(check_library(), Ok(()), "the libsrt linked here is the one laid out");
    }
}
