//! The Yocto image's RAUC boot loader backend for the Pi's firmware A/B (`rauc-tryboot`, in
//! yocto/meta-telebridge), run against a boot partition, a data partition, a kernel command line
//! and the firmware's tryboot flag made up in a folder: each path RAUC and boot-ok take through
//! it (the real firmware is the Pi's; this checks the logic around it).

#![allow(clippy::unwrap_used)] // test helpers: a failed system call should fail the test

use std::path::PathBuf;
use std::process::Command;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../yocto/meta-telebridge/recipes-telebridge/telebridge-image-files/files/rauc-tryboot"
);

struct Pi {
    dir: PathBuf,
}

impl Pi {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("telebridge-tryboot-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("boot")).unwrap();
        std::fs::write(dir.join("boot/config.txt"), "[all]\narm_64bit=1\ninclude slot.txt\n").unwrap();
        std::fs::write(dir.join("boot/slot.txt"), "os_prefix=slot-a/\n").unwrap();
        let pi = Pi { dir };
        pi.start("A", false);
        pi
    }

    /// The firmware starts a slot, with or without the tryboot flag.
    fn start(&self, slot: &str, tryboot: bool) {
        std::fs::write(
            self.dir.join("cmdline"),
            format!("console=tty1 root=PARTUUID=7e1eb1d9-02 ro rauc.slot={slot}\n"),
        )
        .unwrap();
        // The device tree's property: a big-endian 32-bit 1 or 0.
        std::fs::write(self.dir.join("tryboot"), [0, 0, 0, u8::from(tryboot)]).unwrap();
        let _ = std::fs::remove_file(self.dir.join("run/reboot-arg"));
    }

    fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new("sh")
            .arg(SCRIPT)
            .args(args)
            .env("TRYBOOT_BOOT", self.dir.join("boot"))
            .env("TRYBOOT_STATE", self.dir.join("data"))
            .env("TRYBOOT_RUN", self.dir.join("run"))
            .env("TRYBOOT_FLAG", self.dir.join("tryboot"))
            .env("TRYBOOT_CMDLINE", self.dir.join("cmdline"))
            .output()
            .expect("sh runs the backend");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "{args:?} failed: {err}");
        out
    }

    fn file(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.join(path)).ok().map(|s| s.trim().to_string())
    }
}

impl Drop for Pi {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn prefix_of(text: &str) -> &str {
    text.lines().filter_map(|l| l.strip_prefix("os_prefix=")).next_back().unwrap_or("")
}

#[test]
fn an_update_is_tried_once_and_committed_when_it_reaches_ready() {
    let pi = Pi::new("good");
    assert_eq!(pi.ok(&["get-current"]), "A");
    assert_eq!(pi.ok(&["get-primary"]), "A");
    // RAUC installed into B and makes it primary: tried at the next start, with the flag.
    pi.ok(&["set-primary", "B"]);
    assert_eq!(pi.ok(&["get-primary"]), "B");
    let tryboot = pi.file("boot/tryboot.txt").unwrap();
    assert!(tryboot.starts_with("include config.txt"), "{tryboot}");
    assert_eq!(prefix_of(&tryboot), "slot-b/");
    assert_eq!(pi.file("run/reboot-arg").as_deref(), Some("0 tryboot"));
    assert_eq!(prefix_of(&pi.file("boot/slot.txt").unwrap()), "slot-a/", "not committed before it works");
    // The firmware tries B; its daemon gets ready; boot-ok marks it good: committed.
    pi.start("B", true);
    pi.ok(&["set-state", "B", "good"]);
    assert_eq!(prefix_of(&pi.file("boot/slot.txt").unwrap()), "slot-b/");
    assert_eq!(pi.ok(&["get-primary"]), "B");
    assert!(pi.file("data/try").is_none());
}

#[test]
fn a_try_that_fails_leaves_the_old_slot_for_every_later_start() {
    let pi = Pi::new("bad");
    pi.ok(&["set-primary", "B"]);
    pi.start("B", true);
    // boot-ok gave up on B's daemon: marked bad, the box reboots normally, which is A.
    pi.ok(&["set-state", "B", "bad"]);
    assert_eq!(pi.ok(&["get-state", "B"]), "bad");
    assert_eq!(pi.ok(&["get-primary"]), "A");
    assert_eq!(prefix_of(&pi.file("boot/slot.txt").unwrap()), "slot-a/");
    assert!(pi.file("run/reboot-arg").is_none(), "no tryboot for the way back");
}

#[test]
fn a_slot_marked_good_in_a_normal_start_is_not_committed_by_accident() {
    // B was to be tried, the power went before it was, the next (normal) start is A and A is
    // marked good: A stays, and the try of B is over.
    let pi = Pi::new("power");
    pi.ok(&["set-primary", "B"]);
    pi.start("A", false);
    pi.ok(&["set-state", "A", "good"]);
    assert_eq!(prefix_of(&pi.file("boot/slot.txt").unwrap()), "slot-a/");
    assert_eq!(pi.ok(&["get-primary"]), "A");
    // And B marked good without having been started by the tryboot flag commits nothing either.
    pi.start("A", false);
    pi.ok(&["set-state", "B", "good"]);
    assert_eq!(prefix_of(&pi.file("boot/slot.txt").unwrap()), "slot-a/");
}

#[test]
fn making_the_running_slot_primary_cancels_a_try() {
    let pi = Pi::new("cancel");
    pi.ok(&["set-primary", "B"]);
    pi.ok(&["set-primary", "A"]);
    assert_eq!(pi.ok(&["get-primary"]), "A");
    assert!(pi.file("run/reboot-arg").is_none());
}

#[test]
fn wrong_input_is_refused_in_words() {
    let pi = Pi::new("words");
    let (ok, _, err) = pi.run(&["set-primary", "C"]);
    assert!(!ok);
    assert_eq!(err, "rauc-tryboot: no slot C (A or B)");
    let (ok, _, err) = pi.run(&["set-state", "A", "maybe"]);
    assert!(!ok);
    assert_eq!(err, "rauc-tryboot: set-state A maybe: good or bad");
    let (ok, _, err) = pi.run(&["reboot"]);
    assert!(!ok);
    assert!(err.contains("unknown command 'reboot'"), "{err}");
    std::fs::write(pi.dir.join("boot/slot.txt"), "os_prefix=elsewhere/\n").unwrap();
    let (ok, _, err) = pi.run(&["get-primary"]);
    assert!(!ok);
    assert!(err.ends_with("names elsewhere/, not slot-a/ or slot-b/"), "{err}");
}
