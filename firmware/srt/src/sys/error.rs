//! What libsrt says went wrong ([`SrtError`]), read from its thread-local last error. A leaf:
//! every module that calls libsrt uses it.

use std::ffi::CStr;

use libc::c_int;

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
    pub(crate) fn last() -> Self {
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
    pub(crate) fn last_would_block() -> bool {
        // SAFETY: reads libsrt's thread-local error code.
        let code = unsafe { ffi::srt_getlasterror(std::ptr::null_mut()) };
        let wait = code == ffi::SRT_EASYNCSND || code == ffi::SRT_EASYNCRCV || code == ffi::SRT_ETIMEOUT;
        if wait {
            // SAFETY: plain call.
            unsafe { ffi::srt_clearlasterror() };
        }
        wait
    }

    pub(crate) fn ours(text: impl Into<String>) -> Self {
        Self { code: -1, text: text.into() }
    }

    /// A non-blocking call that would have had to wait.
    pub fn would_block(&self) -> bool {
        self.code == ffi::SRT_EASYNCSND || self.code == ffi::SRT_EASYNCRCV || self.code == ffi::SRT_ETIMEOUT
    }
}

pub(crate) fn check(rc: c_int) -> Result<c_int, SrtError> {
    if rc == ffi::SRT_ERROR {
        Err(SrtError::last())
    } else {
        Ok(rc)
    }
}
