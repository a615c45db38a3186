//! V4L2 capture devices: what a device is (TC358743 HDMI bridge, USB capture, camera), which
//! format to ask of it, and the HDMI bridge's DV timings (queried and applied on every source
//! change, as `v4l2-ctl --set-dv-bt-timings query` does).
//!
//! [`plan_capture`] is pure and tested against fake device lists; [`probe`] and the timing
//! ioctls talk to the real device.

use std::io;
use std::path::{Path, PathBuf};

use v4l::video::Capture;

/// What kind of capture hardware a device node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureKind {
    /// TC358743 HDMI-to-CSI-2 bridge (behind the Pi's unicam receiver); needs DV timings.
    HdmiBridge,
    /// A USB (UVC) capture dongle or webcam: MJPEG and/or YUYV.
    Usb,
    /// Anything else that captures video.
    Other,
}

/// One pixel format with the sizes and frame rates it offers.
#[derive(Debug, Clone, PartialEq)]
pub struct FormatInfo {
    /// V4L2 FourCC: `MJPG`, `YUYV`, `UYVY`, `RGB3`, `NV12`, ...
    pub fourcc: String,
    /// (width, height, frame rates) it offers; empty if the driver does not enumerate.
    pub modes: Vec<(u32, u32, Vec<f64>)>,
}

/// What a device says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// The device node.
    pub path: PathBuf,
    /// Driver name (`unicam`, `uvcvideo`, `tc358743`, ...).
    pub driver: String,
    /// Card name.
    pub card: String,
    /// Whether it can capture video at all.
    pub can_capture: bool,
    /// Pixel formats offered.
    pub formats: Vec<FormatInfo>,
    /// Whether its input has DV timings (`VIDIOC_QUERY_DV_TIMINGS` is answered, signal or not):
    /// an HDMI input, whatever the driver (a TC358743 behind unicam, an HDMI capture card, vivid).
    pub dv_timings: bool,
}

/// HDMI input timings reported by the bridge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DvTimings {
    /// Active width.
    pub width: u32,
    /// Active height.
    pub height: u32,
    /// Frames per second times 1000 (e.g. 59940).
    pub fps_milli: u32,
    /// Interlaced signal.
    pub interlaced: bool,
}

/// What to ask of the device and how to turn it into raw video.
#[derive(Debug, Clone, PartialEq)]
pub struct CapturePlan {
    /// The caps to put after `v4l2src` (e.g. `video/x-raw,format=UYVY,width=1920,height=1080`).
    pub caps: String,
    /// Whether the frames are JPEG and need decoding.
    pub jpeg: bool,
    /// Kind of device.
    pub kind: CaptureKind,
}

/// Why a device cannot be used. Each names the device.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// No such node.
    #[error("{0}: no such device (is it plugged in? for the HDMI bridge: dtoverlay=tc358743 in config.txt)")]
    Missing(String),
    /// Node exists but cannot be opened.
    #[error("{0}: cannot open: {1}")]
    Open(String, String),
    /// Not a capture device.
    #[error("{0}: is not a video capture device (driver {1})")]
    NotCapture(String, String),
    /// HDMI bridge without a signal.
    #[error("{0}: no HDMI signal (check the cable and that the source is on)")]
    NoSignal(String),
    /// No usable format.
    #[error("{0}: offers no format Telebridge can use (found {1})")]
    NoFormat(String, String),
}

/// Classifies a device from its driver and card names.
pub fn classify(info: &DeviceInfo) -> CaptureKind {
    let driver = info.driver.to_ascii_lowercase();
    let card = info.card.to_ascii_lowercase();
    if driver == "unicam"
        || driver.contains("tc358743")
        || card.contains("tc358743")
        || driver == "rp1-cfe"
        || info.dv_timings
    {
        CaptureKind::HdmiBridge
    } else if driver == "uvcvideo" {
        CaptureKind::Usb
    } else {
        CaptureKind::Other
    }
}

/// Chooses the capture format for a wanted size and rate. For the HDMI bridge the format follows
/// the incoming signal's timings (`dv`); for USB devices it prefers raw YUYV when it reaches the
/// wanted rate at that size and MJPEG otherwise (USB 2 carries 1080p YUYV at only about 5 fps).
pub fn plan_capture(
    info: &DeviceInfo,
    want: (u32, u32, u32),
    dv: Option<DvTimings>,
) -> Result<CapturePlan, CaptureError> {
    let path = info.path.display().to_string();
    if !info.can_capture {
        return Err(CaptureError::NotCapture(path, info.driver.clone()));
    }
    let kind = classify(info);
    let has = |f: &str| info.formats.iter().any(|x| x.fourcc == f);
    let found = || info.formats.iter().map(|f| f.fourcc.as_str()).collect::<Vec<_>>().join(", ");
    if kind == CaptureKind::HdmiBridge {
        let dv = dv.ok_or_else(|| CaptureError::NoSignal(path.clone()))?;
        // UYVY fits 1080p50 in 2 CSI-2 lanes; RGB only 1080p30.
        let format = if has("UYVY") {
            "UYVY"
        } else if has("RGB3") {
            "RGB"
        } else {
            return Err(CaptureError::NoFormat(path, found()));
        };
        let fps = format!("{}/1000", dv.fps_milli);
        return Ok(CapturePlan {
            caps: format!("video/x-raw,format={format},width={},height={},framerate={fps}", dv.width, dv.height),
            jpeg: false,
            kind,
        });
    }
    let (w, h, fps) = want;
    let reaches = |fourcc: &str| {
        info.formats
            .iter()
            .filter(|f| f.fourcc == fourcc)
            .flat_map(|f| f.modes.iter())
            .any(|(mw, mh, rates)| *mw == w && *mh == h && rates.iter().any(|r| *r + 0.5 >= f64::from(fps)))
    };
    let (format, jpeg) = if reaches("YUYV") {
        ("video/x-raw,format=YUY2", false)
    } else if reaches("MJPG") {
        ("image/jpeg", true)
    } else if reaches("NV12") {
        ("video/x-raw,format=NV12", false)
    } else if has("MJPG") {
        ("image/jpeg", true)
    } else if has("YUYV") {
        ("video/x-raw,format=YUY2", false)
    } else if has("NV12") || has("YU12") {
        ("video/x-raw", false)
    } else {
        return Err(CaptureError::NoFormat(path, found()));
    };
    let exact = reaches(if jpeg { "MJPG" } else { "YUYV" }) || reaches("NV12");
    let caps = if exact { format!("{format},width={w},height={h},framerate={fps}/1") } else { format.to_string() };
    Ok(CapturePlan { caps, jpeg, kind })
}

/// The sizes of one `VIDIOC_ENUM_FRAMESIZES` answer worth asking frame rates for: a listed size.
/// A stepwise range (an HDMI input such as vivid's: 16x16 to 4096x2160 in steps of 2, millions
/// of sizes, an ioctl each) is not expanded; such a device takes the size it is given.
fn listed_sizes(size: &v4l::framesize::FrameSizeEnum) -> Vec<(u32, u32)> {
    match size {
        v4l::framesize::FrameSizeEnum::Discrete(d) => vec![(d.width, d.height)],
        v4l::framesize::FrameSizeEnum::Stepwise(_) => Vec::new(),
    }
}

/// Opens a device and asks it what it is and what it offers.
pub fn probe(path: &Path) -> Result<DeviceInfo, CaptureError> {
    let name = path.display().to_string();
    if !path.exists() {
        return Err(CaptureError::Missing(name));
    }
    let dev = v4l::Device::with_path(path).map_err(|e| CaptureError::Open(name.clone(), e.to_string()))?;
    let caps = dev.query_caps().map_err(|e| CaptureError::Open(name.clone(), e.to_string()))?;
    let can_capture = caps.capabilities.contains(v4l::capability::Flags::VIDEO_CAPTURE)
        || caps.capabilities.contains(v4l::capability::Flags::VIDEO_CAPTURE_MPLANE);
    let mut formats = Vec::new();
    for desc in dev.enum_formats().unwrap_or_default() {
        let fourcc = desc.fourcc.str().unwrap_or("????").to_string();
        let mut modes = Vec::new();
        for size in dev.enum_framesizes(desc.fourcc).unwrap_or_default() {
            for (width, height) in listed_sizes(&size.size) {
                let rates = dev
                    .enum_frameintervals(desc.fourcc, width, height)
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|i| match i.interval {
                        v4l::frameinterval::FrameIntervalEnum::Discrete(f) if f.numerator > 0 => {
                            Some(f64::from(f.denominator) / f64::from(f.numerator))
                        }
                        _ => None,
                    })
                    .collect();
                modes.push((width, height, rates));
            }
        }
        formats.push(FormatInfo { fourcc, modes });
    }
    drop(dev);
    let dv_timings = query_dv_timings(path).is_ok();
    Ok(DeviceInfo { path: path.to_path_buf(), driver: caps.driver, card: caps.card, can_capture, formats, dv_timings })
}

// --- DV timings (VIDIOC_QUERY_DV_TIMINGS / VIDIOC_S_DV_TIMINGS); the v4l crate has no wrapper.

/// Asks the bridge what signal arrives. `Ok(None)` means no signal (or no stable lock).
pub fn query_dv_timings(path: &Path) -> io::Result<Option<DvTimings>> {
    let dev = v4l::Device::with_path(path)?;
    let fd = dev.handle().fd();
    let mut timings: v4l::v4l_sys::v4l2_dv_timings = zeroed_dv_timings();
    match crate::sys::query_dv_timings(fd, &mut timings) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc_errno::ENOLINK) | Some(libc_errno::ENOLCK) | Some(libc_errno::ERANGE)
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    }
    let bt = crate::sys::bt_timings(&timings);
    let total = |active: u32, a: u32, b: u32, c: u32| u64::from(active + a + b + c);
    let htotal = total(bt.width, bt.hfrontporch, bt.hsync, bt.hbackporch);
    let vtotal = total(bt.height, bt.vfrontporch, bt.vsync, bt.vbackporch);
    let pixelclock = bt.pixelclock;
    let fps_milli = (pixelclock * 1000).checked_div(htotal * vtotal).unwrap_or(0) as u32;
    Ok(Some(DvTimings { width: bt.width, height: bt.height, fps_milli, interlaced: bt.interlaced != 0 }))
}

/// Queries the incoming timings and applies them (`v4l2-ctl --set-dv-bt-timings query`).
pub fn apply_queried_dv_timings(path: &Path) -> io::Result<Option<DvTimings>> {
    let dev = v4l::Device::with_path(path)?;
    let fd = dev.handle().fd();
    let mut raw: v4l::v4l_sys::v4l2_dv_timings = zeroed_dv_timings();
    if crate::sys::query_dv_timings(fd, &mut raw).is_err() {
        return Ok(None);
    }
    crate::sys::set_dv_timings(fd, &mut raw)?;
    drop(dev);
    query_dv_timings(path)
}

/// An all-zero `v4l2_dv_timings` for the kernel to fill.
fn zeroed_dv_timings() -> v4l::v4l_sys::v4l2_dv_timings {
    v4l::v4l_sys::v4l2_dv_timings {
        type_: 0,
        __bindgen_anon_1: v4l::v4l_sys::v4l2_dv_timings__bindgen_ty_1 { reserved: [0; 32] },
    }
}

mod libc_errno {
    pub const ERANGE: i32 = 34;
    pub const ENOLCK: i32 = 37;
    pub const ENOLINK: i32 = 67;
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_stepwise_range_of_sizes_is_not_expanded() {
        use v4l::framesize::{Discrete, FrameSizeEnum, Stepwise};
        let hdmi = FrameSizeEnum::Stepwise(Stepwise {
            min_width: 16,
            max_width: 4096,
            step_width: 2,
            min_height: 16,
            max_height: 2160,
            step_height: 2,
        });
        assert!(listed_sizes(&hdmi).is_empty());
        assert_eq!(listed_sizes(&FrameSizeEnum::Discrete(Discrete { width: 1920, height: 1080 })), [(1920, 1080)]);
    }

    use super::*;

    fn usb_dongle() -> DeviceInfo {
        // A typical MS2109 USB 2 HDMI dongle: MJPEG up to 1080p30, YUYV 1080p only at 5 fps.
        DeviceInfo {
            path: "/dev/video0".into(),
            driver: "uvcvideo".into(),
            card: "USB Video: USB Video".into(),
            can_capture: true,
            formats: vec![
                FormatInfo {
                    fourcc: "MJPG".into(),
                    modes: vec![(1920, 1080, vec![30.0]), (1280, 720, vec![60.0, 30.0])],
                },
                FormatInfo {
                    fourcc: "YUYV".into(),
                    modes: vec![(1920, 1080, vec![5.0]), (1280, 720, vec![10.0]), (640, 480, vec![30.0])],
                },
            ],
            dv_timings: false,
        }
    }

    fn tc358743() -> DeviceInfo {
        DeviceInfo {
            path: "/dev/video0".into(),
            driver: "unicam".into(),
            card: "unicam".into(),
            can_capture: true,
            formats: vec![
                FormatInfo { fourcc: "RGB3".into(), modes: vec![] },
                FormatInfo { fourcc: "UYVY".into(), modes: vec![] },
            ],
            dv_timings: true,
        }
    }

    #[test]
    fn an_input_with_dv_timings_is_an_hdmi_input_whatever_its_driver() {
        // vivid's HDMI input (Debian's kernel, the image's boot test): its timings rule the capture.
        let vivid = DeviceInfo {
            driver: "vivid".into(),
            card: "vivid".into(),
            formats: vec![
                FormatInfo { fourcc: "YUYV".into(), modes: vec![] },
                FormatInfo { fourcc: "UYVY".into(), modes: vec![] },
            ],
            ..tc358743()
        };
        assert_eq!(classify(&vivid), CaptureKind::HdmiBridge);
        let dv = DvTimings { width: 1920, height: 1080, fps_milli: 25_000, interlaced: false };
        let plan = plan_capture(&vivid, (640, 360, 15), Some(dv)).unwrap();
        assert_eq!(plan.caps, "video/x-raw,format=UYVY,width=1920,height=1080,framerate=25000/1000");
        assert_eq!(classify(&DeviceInfo { dv_timings: false, ..vivid }), CaptureKind::Other);
    }

    #[test]
    fn usb_dongle_uses_mjpeg_at_1080p30() {
        let plan = plan_capture(&usb_dongle(), (1920, 1080, 30), None).unwrap();
        assert_eq!(plan.kind, CaptureKind::Usb);
        assert!(plan.jpeg);
        assert_eq!(plan.caps, "image/jpeg,width=1920,height=1080,framerate=30/1");
    }

    #[test]
    fn usb_dongle_uses_raw_yuyv_when_it_is_fast_enough() {
        let plan = plan_capture(&usb_dongle(), (640, 480, 30), None).unwrap();
        assert!(!plan.jpeg);
        assert_eq!(plan.caps, "video/x-raw,format=YUY2,width=640,height=480,framerate=30/1");
    }

    #[test]
    fn hdmi_bridge_follows_the_signal() {
        let dv = DvTimings { width: 1920, height: 1080, fps_milli: 50_000, interlaced: false };
        let plan = plan_capture(&tc358743(), (1280, 720, 30), Some(dv)).unwrap();
        assert_eq!(plan.kind, CaptureKind::HdmiBridge);
        assert_eq!(plan.caps, "video/x-raw,format=UYVY,width=1920,height=1080,framerate=50000/1000");
    }

    #[test]
    fn hdmi_bridge_without_signal_says_so() {
        let err = plan_capture(&tc358743(), (1280, 720, 30), None).unwrap_err();
        assert_eq!(err.to_string(), "/dev/video0: no HDMI signal (check the cable and that the source is on)");
    }

    #[test]
    fn output_only_device_is_refused() {
        let mut dev = usb_dongle();
        dev.can_capture = false;
        dev.driver = "bcm2835-codec".into();
        let err = plan_capture(&dev, (1280, 720, 30), None).unwrap_err();
        assert_eq!(err.to_string(), "/dev/video0: is not a video capture device (driver bcm2835-codec)");
    }

    #[test]
    fn missing_device_names_it() {
        let err = probe(Path::new("/dev/video-telebridge-missing")).unwrap_err();
        assert!(err.to_string().starts_with("/dev/video-telebridge-missing: no such device"), "{err}");
    }
}
