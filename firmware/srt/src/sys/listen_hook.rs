//! The listen hook: a Rust closure libsrt asks about each caller before the handshake completes,
//! with the stream id the caller sent. It admits the caller (optionally with that stream's own
//! passphrase) or refuses it with a code the caller receives; [`crate::reject::reject_words`] words the codes.

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

/// A listening socket with its hook: the only way to hold a hooked listener, so that the hook
/// is freed after libsrt has let the socket go, never before. Rust drops a struct's fields in
/// the order they are declared: `socket` is closed first (`srt_close` takes the listener out of
/// libsrt's receive queue under the lock its handshake processing holds, so no call into the
/// hook is running or can start once it returns), then `hook` is freed. Two names bound by one
/// pattern (`let (listener, _hook) = ...`) are dropped in reverse order, which freed the hook
/// while libsrt could still call it: issue 36's second finding.
#[derive(Debug)]
pub struct Listener {
    socket: Socket,
    _hook: HookBox,
}

impl Listener {
    /// `socket` (not yet bound) made a listener with `hook` as its admission check: it runs for
    /// every caller before the handshake completes, may set the new socket's passphrase, or
    /// refuse it with a code.
    pub fn new(socket: Socket, hook: Arc<ListenHook>) -> Result<Self, crate::error::SrtError> {
        let hook = HookBox(Box::into_raw(Box::new(hook)));
        // SAFETY: the pointer stays valid until `hook` is dropped, which the field order puts
        // after `socket`'s close (see the type's words).
        let rc = unsafe { ffi::srt_listen_callback(socket.id(), listen_trampoline, hook.0.cast::<c_void>()) };
        if rc == ffi::SRT_ERROR {
            // `hook` frees the box when it goes: libsrt did not take the pointer.
            return Err(crate::error::SrtError::last());
        }
        Ok(Self { socket, _hook: hook })
    }

    /// The hook's address, for the test of the drop order.
    #[cfg(test)]
    fn hook_ptr(&self) -> *mut Arc<ListenHook> {
        self._hook.0
    }
}

impl std::ops::Deref for Listener {
    type Target = Socket;

    fn deref(&self) -> &Socket {
        &self.socket
    }
}

/// The boxed hook libsrt holds a pointer to; freed when dropped.
#[derive(Debug)]
struct HookBox(*mut Arc<ListenHook>);

// SAFETY: the hook it points to is Send + Sync; the box only frees it.
unsafe impl Send for HookBox {}

impl Drop for HookBox {
    fn drop(&mut self) {
        // SAFETY: made by Box::into_raw in Listener::new, dropped once here.
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
    // SAFETY: `opaq` is the hook installed by Listener::new, alive until the listener is closed.
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Dropped with the hook: records the listener's state in libsrt at that moment.
    struct Witness {
        id: ffi::SRTSOCKET,
        seen: Arc<Mutex<Option<c_int>>>,
    }

    impl Drop for Witness {
        fn drop(&mut self) {
            // SAFETY: a plain query on an id; a closed or gone id answers so.
            let state = unsafe { ffi::srt_getsockstate(self.id) };
            *self.seen.lock().unwrap() = Some(state);
        }
    }

    #[test]
    fn the_hook_is_freed_only_after_the_listener_is_closed() {
        let socket = Socket::new().expect("socket");
        let id = socket.id();
        let seen = Arc::new(Mutex::new(None));
        let witness = Witness { id, seen: seen.clone() };
        let listener = Listener::new(
            socket,
            Arc::new(move |_: &str, _| {
                let _ = &witness;
                Admit::Accept(None)
            }),
        )
        .expect("hook");
        listener.bind_listener(&"127.0.0.1:0".parse().unwrap()).expect("bind");
        listener.listen(4).expect("listen");
        assert!(!listener.hook_ptr().is_null());
        // SAFETY: a plain query.
        assert_eq!(unsafe { ffi::srt_getsockstate(id) }, ffi::SRTS_LISTENING);
        drop(listener);
        let state = seen.lock().unwrap().expect("the hook was freed with the listener");
        assert!(
            state != ffi::SRTS_LISTENING && state != ffi::SRTS_OPENED,
            "the hook was freed while libsrt still had the socket listening (state {state})"
        );
    }
}
