//! The listen hook: a Rust closure libsrt asks about each caller before the handshake completes,
//! with the stream id the caller sent. It admits the caller (optionally with that stream's own
//! passphrase) or refuses it with a code the caller receives; [`reject_words`] words the codes.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::net::SocketAddr;
use std::sync::Arc;

use libc::{c_char, c_int, c_void, sockaddr};

use crate::addr::from_raw;
use crate::ffi;
use crate::socket::Socket;

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
pub struct ListenHookGuard(pub(crate) *mut Arc<ListenHook>);

// SAFETY: the hook it points to is Send + Sync; the guard only frees it.
unsafe impl Send for ListenHookGuard {}

impl Drop for ListenHookGuard {
    fn drop(&mut self) {
        // SAFETY: made by Box::into_raw in set_listen_hook, dropped once here.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

pub(crate) unsafe extern "C" fn listen_trampoline(
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
