//! The boxes found, kept from the browse's events: bounded, without this box itself, one entry
//! per box.
//!
//! A record is a stranger's claim (issue 57, findings 2 and 5), so:
//! - the first record seen of a box (its id) is kept until its own goodbye or expiry; a record
//!   of the same id from other addresses does not replace it but is shown as a conflict, and so
//!   is a name announced by two boxes at different addresses;
//! - one announced address holds at most [`PER_ADDRESS`] boxes;
//! - a full list gives up a box whose panel did not answer first, the one heard longest ago.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

use crate::announce::BoxId;
use crate::found::{Found, Record, MAX_ADDRESSES};

/// Boxes listed at most (a stranger announcing thousands of instances fills the list, not the
/// memory).
pub const MAX_BOXES: usize = 64;

/// Boxes one announced panel address may hold in the list (several daemons on one machine, as
/// in a test; a host announcing a hundred is a stranger).
pub const PER_ADDRESS: usize = 4;

#[derive(Debug)]
struct Entry {
    /// The instance's full name, as first seen.
    fullname: String,
    found: Found,
    /// When it was last heard from its own addresses.
    seen: Instant,
}

/// Why a record was not listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotListed {
    /// What it claims does not hold.
    #[error(transparent)]
    Refused(#[from] crate::Refused),
    /// Its address already announced [`PER_ADDRESS`] boxes.
    #[error("{0} already announced {PER_ADDRESS} boxes")]
    AddressFull(IpAddr),
    /// Another record claims this box: kept as a conflict on the first.
    #[error("it claims to be {0}, first seen at other addresses: shown as a conflict")]
    Conflict(String),
}

/// Records not listed (refused, over an address's share, conflicts, or pushing another out)
/// within [`FLOOD_WINDOW`] that make a flood: the responder is renewed, dropping its cache
/// ([`Neighbours::flooded`]). A LAN of real boxes sends a few records a minute.
pub const FLOOD: usize = 256;
/// The window [`FLOOD`] is counted in.
pub const FLOOD_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

/// The boxes found on the network.
#[derive(Debug)]
pub struct Neighbours {
    me: Option<BoxId>,
    boxes: HashMap<BoxId, Entry>,
    /// Records not listed since `since`.
    turned_away: usize,
    since: Option<Instant>,
}

fn overlap(a: &[IpAddr], b: &[IpAddr]) -> bool {
    a.iter().any(|x| b.contains(x))
}

fn note_conflict(found: &mut Found, addresses: &[IpAddr]) {
    for ip in addresses {
        if !found.addresses.contains(ip) && !found.conflict.contains(ip) && found.conflict.len() < MAX_ADDRESSES {
            found.conflict.push(*ip);
        }
    }
}

impl Neighbours {
    /// An empty list that will never hold `me` (this box's own announcement, heard back).
    pub fn new(me: Option<BoxId>) -> Self {
        Self { me, boxes: HashMap::new(), turned_away: 0, since: None }
    }

    /// A record was resolved (or resolved again): list the box it describes, if its claims
    /// hold. `Ok(Some(panel))`: a box newly listed, whose panel the caller may check
    /// ([`Self::answered`]).
    pub fn resolved(&mut self, record: &Record, now: Instant) -> Result<Option<std::net::SocketAddr>, NotListed> {
        let got = self.resolve(record, now);
        let pushed_out = matches!(got, Ok(Some(_))) && self.boxes.len() >= MAX_BOXES;
        if got.is_err() || pushed_out {
            if self.since.is_none_or(|t| now.saturating_duration_since(t) > FLOOD_WINDOW) {
                (self.turned_away, self.since) = (0, Some(now));
            }
            self.turned_away += 1;
        }
        got
    }

    /// Whether so many records were turned away of late (`FLOOD` in `FLOOD_WINDOW`) that the
    /// responder's cache, which keeps them all for their TTL, should be dropped. Counting starts
    /// again once it says so.
    pub fn flooded(&mut self, now: Instant) -> bool {
        let recent = self.since.is_some_and(|t| now.saturating_duration_since(t) <= FLOOD_WINDOW);
        if recent && self.turned_away >= FLOOD {
            (self.turned_away, self.since) = (0, None);
            return true;
        }
        false
    }

    fn resolve(&mut self, record: &Record, now: Instant) -> Result<Option<std::net::SocketAddr>, NotListed> {
        let found = record.found()?;
        if Some(&found.id) == self.me.as_ref() {
            return Ok(None);
        }
        if let Some(e) = self.boxes.get_mut(&found.id) {
            // The same box again (renamed, new pairing state, another address beside its old
            // ones) updates it; from other addresses only, it is someone else's claim.
            if overlap(&e.found.addresses, &found.addresses) {
                let (conflict, answered) = (std::mem::take(&mut e.found.conflict), e.found.answered);
                e.found = Found { conflict, answered: answered && e.found.panel == found.panel, ..found };
                e.fullname = record.fullname.clone();
                e.seen = now;
                return Ok(None);
            }
            note_conflict(&mut e.found, &found.addresses);
            return Err(NotListed::Conflict(e.found.name.clone()));
        }
        let ip = found.panel.ip();
        if self.boxes.values().filter(|e| e.found.panel.ip() == ip).count() >= PER_ADDRESS {
            return Err(NotListed::AddressFull(ip));
        }
        let mut found = found;
        // A name announced by another box at other addresses: both are shown as a conflict.
        for e in self.boxes.values_mut() {
            if e.found.name == found.name && !overlap(&e.found.addresses, &found.addresses) {
                note_conflict(&mut e.found, &found.addresses);
                let theirs = e.found.addresses.clone();
                note_conflict(&mut found, &theirs);
            }
        }
        if self.boxes.len() >= MAX_BOXES {
            // A box whose panel did not answer first, then the one heard longest ago.
            let victim = self.boxes.iter().min_by_key(|(_, e)| (e.found.answered, e.seen)).map(|(k, _)| k.clone());
            if let Some(k) = victim {
                self.boxes.remove(&k);
            }
        }
        let panel = found.panel;
        self.boxes.insert(found.id.clone(), Entry { fullname: record.fullname.clone(), found, seen: now });
        Ok(Some(panel))
    }

    /// The panel of box `id` answered at `panel` (or did not).
    pub fn answered(&mut self, id: &BoxId, panel: std::net::SocketAddr, answered: bool) {
        if let Some(e) = self.boxes.get_mut(id).filter(|e| e.found.panel == panel) {
            e.found.answered = answered;
        }
    }

    /// An instance said goodbye (or its records expired): the box first seen under that name
    /// leaves; a goodbye of a conflicting record changes nothing.
    pub fn removed(&mut self, fullname: &str) {
        self.boxes.retain(|_, e| e.fullname != fullname);
    }

    /// The boxes, by name (then id).
    pub fn list(&self) -> Vec<Found> {
        let mut v: Vec<Found> = self.boxes.values().map(|e| e.found.clone()).collect();
        v.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        v
    }

    /// The id of the box listed at `panel`, for [`Self::answered`].
    pub fn id_at(&self, panel: std::net::SocketAddr) -> Option<BoxId> {
        self.boxes.values().find(|e| e.found.panel == panel).map(|e| e.found.id.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn record(name: &str, id: &str, ip: &str) -> Record {
        Record {
            fullname: format!("{name} {}._telebridge._udp.local.", &id[..4]),
            port: 80,
            addresses: vec![ip.parse().expect("ip")],
            txt: [("v", "1"), ("id", id), ("name", name), ("role", "bridge"), ("pairing", "unpaired")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn boxes_are_listed_by_name_without_this_box_and_leave_on_goodbye() {
        let me = BoxId::parse("aaaaaaaaaaaa").expect("id");
        let mut n = Neighbours::new(Some(me));
        let t = Instant::now();
        n.resolved(&record("studio-b", "bbbbbbbbbbbb", "10.0.0.3"), t).expect("b");
        n.resolved(&record("studio-a", "cccccccccccc", "10.0.0.2"), t).expect("a");
        n.resolved(&record("studio-me", "aaaaaaaaaaaa", "10.0.0.1"), t).expect("me");
        let names: Vec<String> = n.list().into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["studio-a", "studio-b"]);
        n.removed(&record("studio-a", "cccccccccccc", "10.0.0.2").fullname);
        assert_eq!(n.list().len(), 1);
        assert!(n.resolved(&Record { port: 0, ..record("x", "dddddddddddd", "10.0.0.9") }, t).is_err());
        assert_eq!(n.list().len(), 1, "a refused record is not listed");
    }

    #[test]
    fn a_renamed_box_is_one_entry() {
        let mut n = Neighbours::new(None);
        let t = Instant::now();
        n.resolved(&record("old-name", "bbbbbbbbbbbb", "10.0.0.3"), t).expect("old");
        n.resolved(&record("new-name", "bbbbbbbbbbbb", "10.0.0.3"), t).expect("new");
        let names: Vec<String> = n.list().into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["new-name"]);
    }

    #[test]
    fn a_forged_record_does_not_replace_the_first_but_shows_as_a_conflict() {
        // Issue 57, finding 2: three packets with A's id and name and the stranger's address
        // replaced A in B's list.
        let mut n = Neighbours::new(None);
        let t = Instant::now();
        n.resolved(&record("studio-a", "cccccccccccc", "10.0.0.2"), t).expect("a");
        for k in 0..3 {
            let forged = n.resolved(&record("studio-a", "cccccccccccc", "10.0.0.66"), t + Duration::from_secs(k));
            assert_eq!(forged, Err(NotListed::Conflict("studio-a".into())));
        }
        let list = n.list();
        assert_eq!(list.len(), 1);
        assert_eq!((list[0].panel.ip(), list[0].conflict.clone()), (ip("10.0.0.2"), vec![ip("10.0.0.66")]));
        // Another id, the same name, another address: listed, both marked.
        n.resolved(&record("studio-a", "dddddddddddd", "10.0.0.77"), t).expect("listed");
        let list = n.list();
        assert_eq!(list.len(), 2);
        assert!(list.iter().all(|f| !f.conflict.is_empty()), "{list:?}");
        // The forger's goodbye for another instance name leaves A where it is; A's own goodbye
        // removes it.
        n.removed("studio-a ffff._telebridge._udp.local.");
        assert_eq!(n.list().len(), 2);
        n.removed(&record("studio-a", "cccccccccccc", "10.0.0.2").fullname);
        assert_eq!(n.list().len(), 1);
    }

    #[test]
    fn a_flood_of_instances_keeps_the_real_box_whose_panel_answered() {
        // Issue 57, finding 5: 100 forged instances pushed the real box out (64 kept, newest
        // first).
        let mut n = Neighbours::new(None);
        let t = Instant::now();
        let real = record("studio-a", "cccccccccccc", "10.0.0.2");
        let panel = n.resolved(&real, t).expect("a").expect("new");
        let id = n.id_at(panel).expect("listed");
        n.answered(&id, panel, true);
        // From one address: four at most.
        let mut refused = 0;
        for i in 0..100u64 {
            let r = record(&format!("flood{i}"), &format!("{:012x}", 0x100000 + i), "10.0.1.1");
            refused += usize::from(n.resolved(&r, t + Duration::from_millis(i + 1)).is_err());
        }
        assert_eq!((n.list().len(), refused), (1 + PER_ADDRESS, 100 - PER_ADDRESS));
        // From many addresses whose panels never answer: they give way to each other.
        for i in 0..(MAX_BOXES as u64 * 4) {
            let r = record(
                &format!("many{i}"),
                &format!("{:012x}", 0x200000 + i),
                &format!("10.1.{}.{}", i / 200, i % 200 + 1),
            );
            n.resolved(&r, t + Duration::from_millis(200 + i)).expect("listed");
        }
        let list = n.list();
        assert_eq!(list.len(), MAX_BOXES);
        assert!(list.iter().any(|f| f.name == "studio-a" && f.answered), "the box that answered is kept");
        // That many turned away within a minute is a flood (once), and the count starts again.
        assert!(n.flooded(t + Duration::from_secs(1)));
        assert!(!n.flooded(t + Duration::from_secs(1)));
    }

    #[test]
    fn a_few_records_turned_away_are_no_flood() {
        let mut n = Neighbours::new(None);
        let t = Instant::now();
        for i in 0..(FLOOD as u64 - 1) {
            let _ = n
                .resolved(&Record { port: 0, ..record("x", "dddddddddddd", "10.0.0.9") }, t + Duration::from_millis(i));
        }
        assert!(!n.flooded(t + Duration::from_secs(1)));
        // Spread over more than the window, they never make one.
        let later = t + FLOOD_WINDOW + Duration::from_secs(1);
        let _ = n.resolved(&Record { port: 0, ..record("x", "dddddddddddd", "10.0.0.9") }, later);
        assert!(!n.flooded(later));
    }
}
