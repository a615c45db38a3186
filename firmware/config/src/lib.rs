//! The Telebridge configuration: one serde model with defaults ([`Config`]), a validator that
//! reports every problem at once ([`Config::validate`]) and turns the raw model into a
//! [`ValidConfig`] (the only thing the rest of the firmware applies), parsers for the `srt://`
//! URIs of the SRT ecosystem, and atomic load/save of the TOML file.
//!
//! This crate depends on serde only: no async runtime, no GStreamer.

mod bridge;
pub mod devices;
mod file;
mod fleet;
mod host;
mod latency;
mod model;
mod output_url;
mod overlay;
mod secret;
mod source;
mod srt_url;
mod talkback;
mod uplink;
mod valid;
mod validate;
mod whip_url;

pub use file::{load, parse, save_atomic, write_secret_file, LoadError, DEFAULT_PATH};
pub use fleet::{Fleet, FleetAuth, FleetConfig};
pub use host::check_host;
pub use latency::{Latency, LatencyError, AUTO_FLOOR, AUTO_START, LATENCY_RANGE_MS};
pub use model::{
    AudioConfig, BridgeConfig, Config, DecoderConfig, GpioConfig, OutputConfig, VideoConfig, WebConfig, HIDDEN,
};
pub use output_url::{FileSpec, OutputUrlError, RtmpUrl};
pub use overlay::overlay;
pub use secret::Secret;
pub use source::{AudioCodec, AudioOut, AudioSource, BitrateMode, DecoderSink, EncoderPreference, VideoSource};
pub use srt_url::{KeyLength, SrtMode, SrtUrl, SrtUrlError};
pub use talkback::{TalkOutput, Talkback, TalkbackConfig};
pub use uplink::{parse_uplinks, Uplink, UplinkError, MAX_UPLINKS};
pub use valid::{
    is_box_name, BridgeSettings, GpioBackend, GpioPins, OutputSpec, Picture, Role, ValidConfig, GPIO_LEDS,
};
pub use validate::{meet_slot, FieldError, MeetHello, MeetToken, RelaySpec, ValidationErrors, MEET_SLOT_SECS};
pub use whip_url::WhipUrl;

/// The example configuration shipped in the repository; it equals [`Config::default`].
pub const EXAMPLE_TOML: &str = include_str!("../telebridge.example.toml");

/// Turns the file's configuration into the running one (`--sim` and the command line's flags);
/// applied at start and again to every reload.
pub type Overrides = std::sync::Arc<dyn Fn(Config) -> Config + Send + Sync>;
