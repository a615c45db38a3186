//! Talkback's decisions (issue 39): who may speak, and the voice's packets on the pair's SRT
//! connection. Push to talk, first come first served: a box talks only while the channel is
//! free, and the far talker keeps it [`LOCK_MS`] after its last packet (Makito X's rule); when
//! both press at once, the earlier press wins (the side that showed the pairing code on a tie)
//! and the other waits. Pure: fed presses, heard packets and the wall clock (ms), so both boxes
//! compare the same kind of time.
//!
//! The voice travels as messages beside the stream on the pair's connection (the one path known
//! to exist between the boxes, NAT or not; encrypted with the pair's AES key): a message starts
//! with [`MAGIC`] (never an MPEG-TS sync byte, never the control messages' magic) and carries the
//! burst's start, a sequence number and one Opus packet, then a tag: HMAC-SHA256 under a key
//! derived from the connection's passphrase ([`TalkKey`]). SRT's AES-CTR encrypts without
//! authenticating, so without the tag bits flipped on the way would be played (issue 57,
//! finding 10: the control messages had a tag, the voice had none). It never enters the
//! programme.

/// How a talkback message starts.
pub const MAGIC: &[u8] = b"\0telebridge-talk\0";

/// The far talker keeps the channel this long after its last packet.
pub const LOCK_MS: u64 = 500;

/// A press through the API lasts this long unless renewed (the panel renews it every 500 ms
/// while the button is held, so a closed browser cannot leave the microphone open).
pub const PRESS_HOLD_MS: u64 = 1_500;

/// How often a held talk button renews its press (well inside [`PRESS_HOLD_MS`]).
pub const RENEW_MS: u64 = 250;
const _: () = assert!(RENEW_MS * 2 < PRESS_HOLD_MS, "a held button must renew before the lock lets go");

/// The talk button on a GPIO pin as the daemon tells the lock: pressed when it goes down,
/// renewed every [`RENEW_MS`] while held, released when it comes up.
#[derive(Debug, Default)]
pub struct TalkButton {
    /// When the press was last told, while held.
    said_at: Option<u64>,
}

impl TalkButton {
    /// The button's debounced level at `now` (`None`: not fitted): a press (`true`) or a
    /// release (`false`) to tell the lock, if one is due.
    pub fn update(&mut self, held: Option<bool>, now: u64) -> Option<bool> {
        match (held, self.said_at) {
            (Some(true), Some(at)) if now.saturating_sub(at) < RENEW_MS => None,
            (Some(true), _) => {
                self.said_at = Some(now);
                Some(true)
            }
            (Some(false), Some(_)) => {
                self.said_at = None;
                Some(false)
            }
            _ => None,
        }
    }
}

/// The key talkback messages are tagged under: derived from the connection's SRT passphrase,
/// which both ends of a pair (or of a link made by hand) hold and nobody else does.
#[derive(Clone)]
pub struct TalkKey([u8; 32]);

impl std::fmt::Debug for TalkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TalkKey(****)")
    }
}

/// A tag's length on the wire (HMAC-SHA256's first 16 bytes).
pub const TAG_LEN: usize = 16;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

impl TalkKey {
    /// The key of a connection with this passphrase (none: a link without encryption, whose
    /// voice is as open as its picture).
    pub fn from_passphrase(passphrase: Option<&str>) -> Self {
        use hmac::Mac;
        let mut m = <HmacSha256 as Mac>::new_from_slice(passphrase.unwrap_or("").as_bytes()).expect("any key");
        m.update(b"telebridge talkback\0");
        Self(m.finalize().into_bytes().into())
    }

    fn mac(&self, body: &[u8]) -> HmacSha256 {
        use hmac::Mac;
        let mut m = <HmacSha256 as Mac>::new_from_slice(&self.0).expect("any key");
        m.update(body);
        m
    }
}

/// One Opus packet of a burst, as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TalkPacket<'a> {
    /// When (wall clock, ms since the epoch) the talker's burst began: the earlier burst wins.
    pub burst: u64,
    /// The packet's number in its burst.
    pub seq: u32,
    /// One Opus packet (10 ms of voice).
    pub opus: &'a [u8],
}

impl<'a> TalkPacket<'a> {
    /// The message on the wire, tagged under `key`.
    pub fn encode(&self, key: &TalkKey) -> Vec<u8> {
        use hmac::Mac;
        let mut out = Vec::with_capacity(MAGIC.len() + 12 + self.opus.len() + TAG_LEN);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.burst.to_be_bytes());
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(self.opus);
        let tag = key.mac(&out).finalize().into_bytes();
        out.extend_from_slice(&tag[..TAG_LEN]);
        out
    }

    /// The packet `data` carries, if it is a talkback message whose tag under `key` holds.
    pub fn decode(data: &'a [u8], key: &TalkKey) -> Option<Self> {
        use hmac::Mac;
        let (body, tag) = data.split_at_checked(data.len().checked_sub(TAG_LEN)?)?;
        key.mac(body).verify_truncated_left(tag).ok()?;
        let rest = body.strip_prefix(MAGIC)?;
        let (burst, rest) = rest.split_first_chunk::<8>()?;
        let (seq, opus) = rest.split_first_chunk::<4>()?;
        (!opus.is_empty()).then(|| TalkPacket {
            burst: u64::from_be_bytes(*burst),
            seq: u32::from_be_bytes(*seq),
            opus,
        })
    }
}

/// Whether `data` is a talkback message (else: the stream, or a control message).
pub fn is_talk(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

pub use telebridge_contract::daemon::TalkState;

/// The push-to-talk lock of one box.
#[derive(Debug, Clone, Default)]
pub struct TalkLock {
    /// Wins a tie (two bursts begun in the same millisecond): the side that showed the code.
    wins_ties: bool,
    /// The last press (renewed while held), until released.
    pressed_at: Option<u64>,
    /// This box's burst while it talks: its start, and the next packet's number.
    burst: Option<(u64, u32)>,
    /// The far talker's burst and when its last packet was heard.
    far: Option<(u64, u64)>,
}

impl TalkLock {
    /// A lock; `wins_ties`: this box's burst wins one begun in the same millisecond.
    pub fn new(wins_ties: bool) -> Self {
        Self { wins_ties, ..Self::default() }
    }

    /// Which side wins a tie (set when the connection to a paired box starts).
    pub fn set_wins_ties(&mut self, wins_ties: bool) {
        self.wins_ties = wins_ties;
    }

    /// The talk button is down at `now` (a press, or a held button read again).
    pub fn press(&mut self, now: u64) {
        self.pressed_at = Some(now);
    }

    /// The talk button is up.
    pub fn release(&mut self) {
        self.pressed_at = None;
    }

    fn pressed(&self, now: u64) -> bool {
        self.pressed_at.is_some_and(|t| now.saturating_sub(t) <= PRESS_HOLD_MS)
    }

    fn far_holds(&self, now: u64) -> bool {
        self.far.is_some_and(|(_, at)| now.saturating_sub(at) <= LOCK_MS)
    }

    /// A packet of the far talker's burst `far_burst` arrived at `now`: whether to play it.
    /// While this box talks, the earlier burst wins: the later one stops (this box, now) or is
    /// not played (the far box stops when it hears this one).
    pub fn heard(&mut self, far_burst: u64, now: u64) -> bool {
        self.far = Some((far_burst, now));
        match self.burst {
            Some((mine, _)) if self.pressed(now) => {
                let they_first = far_burst < mine || (far_burst == mine && !self.wins_ties);
                if they_first {
                    self.burst = None;
                }
                they_first
            }
            _ => true,
        }
    }

    /// A packet of this box's voice is ready at `now`: its burst and number when it is to be
    /// sent, `None` when this box does not talk (not pressed, or waiting for the channel).
    pub fn next_send(&mut self, now: u64) -> Option<(u64, u32)> {
        if !self.pressed(now) {
            self.burst = None;
            return None;
        }
        if self.burst.is_none() && !self.far_holds(now) {
            self.burst = Some((now, 0));
        }
        let (start, seq) = self.burst.as_mut()?;
        let out = (*start, *seq);
        *seq = seq.wrapping_add(1);
        Some(out)
    }

    /// Where this box stands at `now`.
    pub fn state(&self, now: u64) -> TalkState {
        match (self.pressed(now), self.burst.is_some(), self.far_holds(now)) {
            (true, true, _) => TalkState::Talking,
            (true, false, true) => TalkState::Waiting,
            (true, false, false) => TalkState::Talking,
            (false, _, true) => TalkState::Listening,
            (false, _, false) => TalkState::Idle,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_reads_back_and_nothing_else_is_one() {
        let key = TalkKey::from_passphrase(Some("the pair's passphrase"));
        let p = TalkPacket { burst: 1_764_000_000_123, seq: 7, opus: &[1, 2, 3] };
        let wire = p.encode(&key);
        assert!(is_talk(&wire));
        assert_eq!(TalkPacket::decode(&wire, &key), Some(p));
        let untagged = |body: &[u8]| {
            let mut w = body.to_vec();
            use hmac::Mac;
            let tag = key.mac(&w).finalize().into_bytes();
            w.extend_from_slice(&tag[..TAG_LEN]);
            w
        };
        assert_eq!(TalkPacket::decode(&untagged(&wire[..MAGIC.len() + 12]), &key), None, "no voice");
        assert_eq!(TalkPacket::decode(&untagged(&wire[..MAGIC.len() + 5]), &key), None, "cut short");
        assert_eq!(TalkPacket::decode(&[0x47; 188], &key), None, "MPEG-TS");
        assert!(!is_talk(telebridge_pairing::control::MAGIC));
    }

    #[test]
    fn a_voice_altered_on_the_way_or_under_another_key_is_not_played() {
        // Issue 57, finding 10: SRT's AES-CTR lets bits be flipped unnoticed.
        let key = TalkKey::from_passphrase(Some("the pair's passphrase"));
        let wire = TalkPacket { burst: 1_764_000_000_123, seq: 7, opus: &[1, 2, 3, 4] }.encode(&key);
        for i in 0..wire.len() {
            let mut flipped = wire.clone();
            flipped[i] ^= 0x10;
            assert_eq!(TalkPacket::decode(&flipped, &key), None, "byte {i} flipped");
        }
        assert_eq!(TalkPacket::decode(&wire, &TalkKey::from_passphrase(Some("another"))), None);
        assert_eq!(TalkPacket::decode(&wire[..wire.len() - 1], &key), None, "tag cut");
        assert_eq!(format!("{key:?}"), "TalkKey(****)");
    }

    #[test]
    fn a_held_talk_button_presses_renews_and_releases() {
        let mut b = TalkButton::default();
        assert_eq!(b.update(None, 0), None, "not fitted");
        assert_eq!(b.update(Some(false), 0), None, "up, and never down");
        assert_eq!(b.update(Some(true), 100), Some(true));
        assert_eq!(b.update(Some(true), 100 + RENEW_MS - 1), None);
        assert_eq!(b.update(Some(true), 100 + RENEW_MS), Some(true), "renewed");
        assert_eq!(b.update(Some(false), 400), Some(false));
        assert_eq!(b.update(Some(false), 410), None, "released once");
    }

    #[test]
    fn a_press_talks_at_once_on_a_free_channel_and_stops_on_release() {
        let mut l = TalkLock::new(true);
        assert_eq!(l.next_send(0), None);
        l.press(1_000);
        assert_eq!(l.next_send(1_000), Some((1_000, 0)));
        assert_eq!(l.next_send(1_010), Some((1_000, 1)));
        assert_eq!(l.state(1_010), TalkState::Talking);
        l.release();
        assert_eq!(l.next_send(1_020), None);
        assert_eq!(l.state(1_020), TalkState::Idle);
        // A new press is a new burst.
        l.press(5_000);
        assert_eq!(l.next_send(5_000), Some((5_000, 0)));
    }

    #[test]
    fn an_api_press_not_renewed_lets_go_by_itself() {
        let mut l = TalkLock::new(true);
        l.press(0);
        assert!(l.next_send(PRESS_HOLD_MS).is_some());
        assert_eq!(l.next_send(PRESS_HOLD_MS + 1), None);
        assert_eq!(l.state(PRESS_HOLD_MS + 1), TalkState::Idle);
    }

    #[test]
    fn the_far_talker_holds_the_channel_until_half_a_second_after_its_last_packet() {
        let mut l = TalkLock::new(true);
        assert!(l.heard(900, 1_000), "heard and played");
        assert_eq!(l.state(1_000), TalkState::Listening);
        l.press(1_100);
        assert_eq!(l.next_send(1_100), None, "a second talker waits");
        assert_eq!(l.state(1_100), TalkState::Waiting);
        assert!(l.heard(900, 1_200));
        assert_eq!(l.next_send(1_200 + LOCK_MS), None);
        l.press(1_200 + LOCK_MS);
        assert_eq!(l.next_send(1_201 + LOCK_MS), Some((1_201 + LOCK_MS, 0)), "free 500 ms after the last packet");
        assert_eq!(l.state(1_201 + LOCK_MS), TalkState::Talking);
    }

    #[test]
    fn two_presses_at_once_the_earlier_burst_wins_and_a_tie_goes_to_the_code_side() {
        // This box pressed at 1000; the far box at 1005: its packets are not played, this box
        // goes on.
        let mut l = TalkLock::new(false);
        l.press(1_000);
        assert_eq!(l.next_send(1_000), Some((1_000, 0)));
        assert!(!l.heard(1_005, 1_040), "the later burst is not played");
        assert_eq!(l.next_send(1_050), Some((1_000, 1)));
        // The far box pressed first (990): this box stops and plays it.
        let mut l = TalkLock::new(true);
        l.press(1_000);
        assert_eq!(l.next_send(1_000), Some((1_000, 0)));
        assert!(l.heard(990, 1_040));
        assert_eq!(l.next_send(1_050), None);
        assert_eq!(l.state(1_050), TalkState::Waiting);
        // A tie: the side that wins ties goes on, the other yields.
        for (wins, plays) in [(true, false), (false, true)] {
            let mut l = TalkLock::new(wins);
            l.press(1_000);
            l.next_send(1_000);
            assert_eq!(l.heard(1_000, 1_030), plays);
            assert_eq!(l.next_send(1_040).is_some(), wins);
        }
    }
}
