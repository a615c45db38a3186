//! The boxes found, kept from the browse's events: bounded, without this box itself, one entry
//! per box.

use std::collections::HashMap;
use std::time::Instant;

use crate::announce::BoxId;
use crate::found::{Found, Record};

/// Boxes listed at most (a stranger announcing thousands of instances fills the list, not the
/// memory; the ones heard longest ago go first).
pub const MAX_BOXES: usize = 64;

/// The boxes found on the network.
#[derive(Debug)]
pub struct Neighbours {
    me: Option<BoxId>,
    /// By instance full name: the box, and when it was last heard.
    boxes: HashMap<String, (Found, Instant)>,
}

impl Neighbours {
    /// An empty list that will never hold `me` (this box's own announcement, heard back).
    pub fn new(me: Option<BoxId>) -> Self {
        Self { me, boxes: HashMap::new() }
    }

    /// A record was resolved (or resolved again): list the box it describes, if its claims hold.
    /// Returns what was refused, for the log.
    pub fn resolved(&mut self, record: &Record, now: Instant) -> Result<(), crate::Refused> {
        let found = Found::from_record(record)?;
        if Some(&found.id) == self.me.as_ref() {
            return Ok(());
        }
        // A box that renamed itself is a new instance with the same id: one entry per box.
        self.boxes.retain(|name, (f, _)| f.id != found.id || *name == record.fullname);
        if !self.boxes.contains_key(&record.fullname) && self.boxes.len() >= MAX_BOXES {
            let oldest = self.boxes.iter().min_by_key(|(_, (_, seen))| *seen).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.boxes.remove(&k);
            }
        }
        self.boxes.insert(record.fullname.clone(), (found, now));
        Ok(())
    }

    /// An instance said goodbye (or its records expired).
    pub fn removed(&mut self, fullname: &str) {
        self.boxes.remove(fullname);
    }

    /// The boxes, by name (then id).
    pub fn list(&self) -> Vec<Found> {
        let mut v: Vec<Found> = self.boxes.values().map(|(f, _)| f.clone()).collect();
        v.sort_by(|a, b| (&a.name, &a.id).cmp(&(&b.name, &b.id)));
        v
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
    fn a_renamed_box_is_one_entry_and_a_flood_keeps_the_newest() {
        let mut n = Neighbours::new(None);
        let t = Instant::now();
        n.resolved(&record("old-name", "bbbbbbbbbbbb", "10.0.0.3"), t).expect("old");
        n.resolved(&record("new-name", "bbbbbbbbbbbb", "10.0.0.3"), t).expect("new");
        let names: Vec<String> = n.list().into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["new-name"]);
        for i in 0..(MAX_BOXES as u64 * 3) {
            let id = format!("{:012x}", 0x100000 + i);
            n.resolved(&record(&format!("flood{i}"), &id, "10.0.1.1"), t + Duration::from_millis(i + 1))
                .expect("flood");
        }
        let list = n.list();
        assert_eq!(list.len(), MAX_BOXES);
        assert!(list.iter().any(|f| f.name == format!("flood{}", MAX_BOXES * 3 - 1)), "the newest is kept");
        assert!(!list.iter().any(|f| f.name == "new-name"), "the oldest went first");
    }
}
