//! Bonding for Telebridge: one SRT connection carried over several uplinks (Ethernet, Wi-Fi,
//! 4G modems) and put back together at the far end, speaking srtla's protocol (BELABOX) so that
//! srtla receivers take our sender and our receiver takes srtla senders. SRT itself is not
//! touched: libsrt calls a local port, the sender spreads its packets over the uplinks, the
//! receiver hands them to the SRT peer. The decisions are state machines without sockets
//! ([`receiver::Receiver`], [`sender::Sender`]); the threads around them only move datagrams.

pub mod heard;
pub mod link;
pub mod proto;
pub mod receiver;
pub mod receiver_io;
pub mod reorder;

pub use receiver_io::BondReceiver;
pub mod sender;
pub mod sender_io;

pub use sender_io::BondSender;
