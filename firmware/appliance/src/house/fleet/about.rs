//! What the box tells its fleet server of itself: the version it runs and its attributes.

use telebridge_fleet::ddi::Attributes;

/// RAUC's compatible string of the image's bundles: what a server matches them with.
pub const BOARD_NAME: &str = "telebridge-arm64";
/// The version the box runs: its image's (`IMAGE_VERSION` in os-release, the version its bundle
/// was built as), else the daemon's own. `TELEBRIDGE_OS_RELEASE` names another os-release file
/// (a simulated slot, `scripts/test-fleet`).
pub fn box_version() -> String {
    let path = std::env::var_os("TELEBRIDGE_OS_RELEASE").unwrap_or_else(|| "/etc/os-release".into());
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| telebridge_fleet::check::image_version(&t))
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_string())
}

/// What the server is told of the box.
pub(super) fn attributes(name: &str, role: &str, version: &str) -> Attributes {
    let model = std::fs::read_to_string("/proc/device-tree/model")
        .map(|m| m.trim_end_matches('\0').trim().to_string())
        .unwrap_or_default();
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let slot = cmdline.split_whitespace().find_map(|w| w.strip_prefix("rauc.slot=")).unwrap_or("none");
    let mut a = Attributes::default();
    for (k, v) in [
        ("hw_boardname", BOARD_NAME),
        // One bundle fits every board: gooseBit's word for any revision.
        ("hw_revision", "default"),
        ("sw_version", version),
        ("name", name),
        ("role", role),
        ("board", if model.is_empty() { "unknown" } else { &model }),
        ("slot", slot),
        ("daemon", env!("CARGO_PKG_VERSION")),
    ] {
        a.0.insert(k.to_string(), v.to_string());
    }
    a
}
