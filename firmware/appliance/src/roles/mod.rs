//! What the box does: encode and send, receive and show, both at once with a paired box, or
//! relay. One module per role; [`peer`] is what the bridge shares with the encoder and decoder
//! roles it runs (a leaf, so no role imports another's insides but the bridge its two halves).

pub mod bridge;
pub mod decoder;
mod decoder_stop;
pub mod encoder;
pub mod peer;
pub mod relay;
pub mod talkback;
