//! The contract between the box's parts and its panel: the types one part reports and another
//! (the daemon, the API, the metrics, the history) reads. It depends on nothing of the box's
//! parts, only on the configuration (the vocabulary of a command) and the rate law (whose status
//! it carries), so that a transport (srt), the panel's side (web) and the daemon (appliance)
//! share a type without depending on the part that makes it (issue 62).
//!
//! - [`daemon`]: the daemon's status and commands, the tally, talkback, the bridge's route;
//! - [`machine`]: the box's state machine, whose states the panel shows;
//! - [`sample`]: the media's one-second sample, and the rules over it (how the links stand,
//!   what needs attention: [`advice`]);
//! - [`roles`]: what each role reports (the encoder's, the decoder's, the bridge's);
//! - [`srt`], [`uplink`]: an output's and an input's status, libsrt's counters, a bonded
//!   output's uplinks; [`measure`]: glass-to-glass latency and lip sync;
//! - [`monitor`]: the browsers watching a feed live (WHEP), and why one is refused;
//! - [`feed`]: what the box sends and what it receives, as the meters and the monitor name them;
//! - [`sound`]: the sound's meters (peak and RMS per channel of each stream) and its silence;
//! - [`gpio`]: the LEDs and the go-live button as the daemon and the panel see them;
//! - [`host`]: what the panel asks of the machine (reboot, update, the setup code file);
//! - [`fleet`]: where the box stands with its fleet server (hawkBit's device API);
//! - [`nearby`]: the boxes on the local network, as discovery finds them and the panel lists them.

pub mod advice;
pub mod daemon;
pub mod feed;
pub mod fleet;
pub mod gpio;
pub mod host;
pub mod machine;
pub mod measure;
pub mod monitor;
pub mod nearby;
pub mod roles;
pub mod sample;
pub mod sound;
pub mod srt;
pub mod uplink;
