//! Every unsafe line of the crate: the V4L2 DV-timings ioctls the v4l crate does not wrap
//! (`VIDIOC_QUERY_DV_TIMINGS`, `VIDIOC_S_DV_TIMINGS`), for `crate::capture_device`.

use std::io;
use std::os::raw::c_void;

use v4l::v4l_sys::{v4l2_bt_timings, v4l2_dv_timings};

const DV_TIMINGS_SIZE: usize = std::mem::size_of::<v4l2_dv_timings>();
const IOC_READ: u64 = 2;
const IOC_WRITE: u64 = 1;
const fn ioc(dir: u64, nr: u64) -> u64 {
    (dir << 30) | ((DV_TIMINGS_SIZE as u64) << 16) | ((b'V' as u64) << 8) | nr
}
const VIDIOC_S_DV_TIMINGS: u64 = ioc(IOC_READ | IOC_WRITE, 87);
const VIDIOC_QUERY_DV_TIMINGS: u64 = ioc(IOC_READ, 99);

/// `VIDIOC_QUERY_DV_TIMINGS` on the device `fd`: what signal arrives, into `timings`.
pub(crate) fn query_dv_timings(fd: std::os::raw::c_int, timings: &mut v4l2_dv_timings) -> io::Result<()> {
    // SAFETY: `timings` is a properly sized and aligned v4l2_dv_timings that outlives the call;
    // the request code is computed from that same struct's size, so the kernel writes within it.
    unsafe { v4l::v4l2::ioctl(fd, VIDIOC_QUERY_DV_TIMINGS as _, timings as *mut _ as *mut c_void) }
}

/// `VIDIOC_S_DV_TIMINGS` on the device `fd`: apply `timings`.
pub(crate) fn set_dv_timings(fd: std::os::raw::c_int, timings: &mut v4l2_dv_timings) -> io::Result<()> {
    // SAFETY: as in `query_dv_timings`: a valid, correctly sized struct for the ioctl.
    unsafe { v4l::v4l2::ioctl(fd, VIDIOC_S_DV_TIMINGS as _, timings as *mut _ as *mut c_void) }
}

/// The BT.656/1120 timings of `timings` (the only type the kernel defines).
pub(crate) fn bt_timings(timings: &v4l2_dv_timings) -> v4l2_bt_timings {
    // SAFETY: type_ == V4L2_DV_BT_656_1120 (0) is the only type the kernel defines, for which
    // `bt` is the active member of the union.
    unsafe { timings.__bindgen_anon_1.bt }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dv_timings_struct_matches_the_kernel_abi() {
        // struct v4l2_dv_timings is packed: 4 bytes of type + a 128-byte union.
        assert_eq!(DV_TIMINGS_SIZE, 132);
        assert_eq!(VIDIOC_QUERY_DV_TIMINGS, 0x8084_5663);
        assert_eq!(VIDIOC_S_DV_TIMINGS, 0xc084_5657);
    }
}
