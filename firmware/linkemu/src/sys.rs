//! Every unsafe line of the crate: the TUN device's setup for the IP mode (`crate::ip_mode`).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use tokio::io::unix::AsyncFd;

/// Names the TUN device `file` opened `name`, layer 3 with no packet information header.
pub(crate) fn tun_set_iff(file: &File, name: &str) -> io::Result<()> {
    const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    let mut req = IfReq { name: [0; 16], flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short, _pad: [0; 22] };
    req.name[..name.len().min(15)].copy_from_slice(&name.as_bytes()[..name.len().min(15)]);
    // SAFETY: TUNSETIFF reads and writes a struct ifreq; `req` has its layout (16-byte name,
    // short flags, padding to 40 bytes) and lives across the call.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF, &mut req as *mut IfReq) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `file` non-blocking.
pub(crate) fn set_nonblocking(file: &File) -> io::Result<()> {
    // SAFETY: fcntl on a file descriptor we own; F_SETFL with O_NONBLOCK changes no memory.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Registers the TUN device with the runtime's reactor.
pub(crate) fn register(file: File) -> io::Result<AsyncFd<File>> {
    // SAFETY: the AsyncFd owns the File, so the descriptor stays open for as long as it is
    // registered and is closed only after deregistration (AsyncFd's Drop).
    let fd = unsafe { AsyncFd::register(file) };
    fd.map_err(|e| e.into_parts().1)
}
