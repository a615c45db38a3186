//! libsrt's log and its words for a reject code: the unsafe half of `crate::reject`.

use std::ffi::CStr;
use std::sync::OnceLock;

use super::ffi;

/// Sends libsrt's log (its notices and above) to the crate's `on_libsrt_line` (level, line),
/// from libsrt's own threads; once per process.
pub(crate) fn install() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: the handler is a plain function that outlives the process; libsrt calls it
        // from its own threads, and what it calls only touches a mutex-guarded list.
        unsafe {
            ffi::srt_setloghandler(std::ptr::null_mut(), libsrt_log);
            ffi::srt_setloglevel(ffi::LOG_NOTICE);
        }
    });
}

unsafe extern "C" fn libsrt_log(
    _opaque: *mut std::ffi::c_void,
    level: std::ffi::c_int,
    _file: *const std::ffi::c_char,
    _line: std::ffi::c_int,
    _area: *const std::ffi::c_char,
    message: *const std::ffi::c_char,
) {
    if message.is_null() {
        return;
    }
    // SAFETY: libsrt passes a NUL-terminated line valid for the call.
    let text = unsafe { CStr::from_ptr(message) }.to_string_lossy();
    crate::on_libsrt_line(level, &text);
}

/// libsrt's own words for a reject code (a generic phrase for one it does not know).
pub(crate) fn reject_reason(code: i32) -> Option<String> {
    // SAFETY: libsrt returns a static string for any id (a generic one when unknown).
    let s = unsafe { ffi::srt_rejectreason_str(code) };
    if s.is_null() {
        None
    } else {
        // SAFETY: NUL-terminated static string.
        Some(unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
    }
}
