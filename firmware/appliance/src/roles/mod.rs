//! What the box does: encode and send, receive and show, both at once with a paired box, or
//! relay. One module per role; [`peer`] is what the bridge shares with the encoder and decoder
//! roles it runs (a leaf, so no role imports another's insides but the bridge its two halves).
//! Beside them, what the roles use and nothing above them does: their statistics (`stats`,
//! `decoder_stats`), the outputs behind one trait (`outputs`), the input signal's watch
//! (`signal`), the slate's words (`slate`), talkback's lock (`talk`), and `measure`, which runs
//! an encoder into a decoder.

pub mod bridge;
pub mod decoder;
pub mod decoder_stats;
mod decoder_stop;
pub mod encoder;
pub mod measure;
pub mod outputs;
pub mod peer;
pub mod relay;
pub(crate) mod signal;
pub(crate) mod slate;
pub mod stats;
pub mod talk;
pub mod talkback;
