//! An epoll over libsrt sockets: one thread waits on many.

use std::time::Duration;

use libc::c_int;

use crate::error::{check, SrtError};
use crate::ffi;
use crate::socket::{startup, Socket};

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
        check(unsafe { ffi::srt_epoll_add_usock(self.id, s.id(), &events) }).map(drop)
    }

    /// Stops watching `s`.
    pub fn remove(&self, s: &Socket) {
        self.remove_id(s.id());
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
