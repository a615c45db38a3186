//! Outputs besides SRT, fed from the same MPEG-TS fan-out and reporting the same
//! [`telebridge_srt::OutputStatus`]: RTMP/RTMPS to YouTube, Twitch or any server, WHIP (WebRTC)
//! to a service that takes it, and recording to MPEG-TS segments on the SD card or a USB stick.

pub mod recording;
pub mod rtmp;
mod ts;
pub mod whip;

pub use recording::Recording;
pub use rtmp::RtmpOutput;
pub use whip::WhipOutput;
