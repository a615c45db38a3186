//! Asking the root helper (`telebridge-helper.path`, packaging/lib/helper): the daemon runs as
//! the `telebridge` user and may not reboot, install an update or write the boot partition, so it
//! leaves a request in its runtime directory (`/run/telebridge`, systemd's
//! `RuntimeDirectory=`) and the helper acts. The helper answers in a folder of root's beside it
//! (`/run/telebridge-helper`), never in the daemon's own, where a name could be swapped for a
//! link under it (issue 36, finding 7).
//!
//! An update is a signed RAUC bundle (uploaded through the panel, stored in the state directory
//! `/var/lib/telebridge` on the data partition); the helper runs `rauc install`, which checks
//! the signature against the image's keyring and writes the root slot that is not running, and
//! reboots into it; a slot whose daemon is not ready within minutes sends the box back to the
//! one before (docs/image.md). The helper says how it went in `update-status` (state, message).
//!
//! Where no systemd started the daemon (a development machine, `--sim`, the tests) there is no
//! helper: updates and reboots are refused in words, and the setup code file is written by the
//! daemon itself at `web.setup_code_file`.

use std::path::{Path, PathBuf};

use telebridge_contract::host::{Host, HostError, UpdateState, UpdateStatus};
use tracing::{info, warn};

/// The bundle's name in the state directory.
const BUNDLE: &str = "update.raucb";

/// The machine as the root helper acts on it: [`Host`] for the panel.
#[derive(Debug, Default, Clone, Copy)]
pub struct RootHelper;

impl Host for RootHelper {
    fn reboot(&self) -> Result<(), HostError> {
        let dir = requests_dir().ok_or(HostError::NoHelper("rebooting"))?;
        warn!("reboot requested from the panel");
        request(&dir, "reboot-request", "reboot\n")
            .map_err(|e| HostError::Request { what: "cannot ask for a reboot", detail: e.to_string() })
    }

    fn update_status(&self) -> UpdateStatus {
        current_status()
    }

    fn bundle_path(&self) -> Result<PathBuf, HostError> {
        requests_dir().ok_or(HostError::NoHelper("updating"))?;
        let state = std::env::var_os("STATE_DIRECTORY").ok_or(HostError::NoHelper("updating"))?;
        Ok(PathBuf::from(state).join(BUNDLE))
    }

    fn install(&self, path: &Path) -> Result<(), HostError> {
        let dir = requests_dir().ok_or(HostError::NoHelper("updating"))?;
        info!(bundle = %path.display(), "asking the helper to install the update");
        request(&dir, "update-request", &format!("{}\n", path.display()))
            .map_err(|e| HostError::Request { what: "cannot ask for the update", detail: e.to_string() })
    }

    fn publish_setup_code(&self, file: &str, code: Option<&str>) {
        publish_setup_code(file, code);
    }
}

/// How the setup code file starts (and how a stale one is known before it is removed); the root
/// helper takes a request of exactly these words and a code.
const SETUP_FILE_HEAD: &str = "Telebridge setup code: ";

/// The boot partition's setup code file: the one place the helper writes it. A configuration
/// naming another file has it written by the daemon.
const BOOT_SETUP_FILE: &str = "/boot/firmware/telebridge-setup.txt";

/// Where requests go: systemd's runtime directory for the daemon.
fn requests_dir() -> Option<PathBuf> {
    std::env::var_os("RUNTIME_DIRECTORY").map(PathBuf::from).filter(|p| p.is_dir())
}

/// Where the helper's answers come from: its own runtime directory, beside the daemon's.
fn answers_dir() -> Option<PathBuf> {
    requests_dir().and_then(|d| d.parent().map(|p| p.join("telebridge-helper")))
}

/// Writes a request for the helper, atomically (it acts on the file's appearance).
fn request(dir: &Path, name: &str, body: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, body)?;
    std::fs::rename(tmp, dir.join(name))
}

/// Publishes the one-time setup code (`Some`) or removes the spent one (`None`) at `path`: through
/// the helper when the file is the boot partition's and a helper runs, else directly (only a
/// file that starts with our words is removed).
fn publish_setup_code(path: &str, code: Option<&str>) {
    let line = code.map(|c| format!("{SETUP_FILE_HEAD}{c}\n"));
    let via_helper = if path == BOOT_SETUP_FILE { requests_dir() } else { None };
    if let Some(dir) = via_helper {
        match request(&dir, "setup-code-request", line.as_deref().unwrap_or("remove\n")) {
            Ok(()) => {
                info!(file = %path, "asked the helper to {} the setup code file", if code.is_some() { "write" } else { "remove" })
            }
            Err(e) => warn!(error = %e, "cannot ask the helper for the setup code file"),
        }
        return;
    }
    let file = Path::new(path);
    match line {
        Some(line) => match std::fs::write(file, line) {
            Ok(()) => info!(file = %file.display(), "setup code written"),
            Err(e) => warn!(file = %file.display(), error = %e, "cannot write the setup code file"),
        },
        None if std::fs::read_to_string(file).is_ok_and(|t| t.starts_with(SETUP_FILE_HEAD)) => {
            match std::fs::remove_file(file) {
                Ok(()) => info!(file = %file.display(), "setup code file removed (the password is set)"),
                Err(e) => warn!(file = %file.display(), error = %e, "cannot remove the spent setup code file"),
            }
        }
        None => {}
    }
}

/// Reads the helper's `update-status` (first line the state, the rest the message).
fn read_status(text: Option<&str>) -> UpdateStatus {
    let Some(text) = text else { return UpdateStatus { state: UpdateState::Idle, message: String::new() } };
    let (state, message) = text.split_once('\n').unwrap_or((text, ""));
    let state = match state.trim() {
        "installing" => UpdateState::Installing,
        "installed" => UpdateState::Installed,
        "failed" => UpdateState::Failed,
        other => {
            return UpdateStatus { state: UpdateState::Failed, message: format!("unreadable helper status: {other}") };
        }
    };
    UpdateStatus { state, message: message.trim().to_string() }
}

/// The last update's state: installing while the request waits for the helper, else what the
/// helper last said in its own folder.
fn current_status() -> UpdateStatus {
    if requests_dir().is_some_and(|d| d.join("update-request").exists()) {
        return UpdateStatus { state: UpdateState::Installing, message: "handing the bundle to the helper".into() };
    }
    let text = answers_dir().and_then(|d| std::fs::read_to_string(d.join("update-status")).ok());
    read_status(text.as_deref())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_helpers_words_are_read_and_nothing_else_is_believed() {
        assert_eq!(read_status(None).state, UpdateState::Idle);
        let s = read_status(Some("installing\nchecking the bundle's signature (12 bytes)\n"));
        assert_eq!(
            (s.state, s.message.as_str()),
            (UpdateState::Installing, "checking the bundle's signature (12 bytes)")
        );
        let s = read_status(Some("failed\nrauc: signature verification failed\n"));
        assert_eq!(s.state, UpdateState::Failed);
        assert!(s.message.contains("signature"));
        assert_eq!(read_status(Some("installed")).message, "");
        let s = read_status(Some("exploded\nwhatever"));
        assert_eq!(s.state, UpdateState::Failed);
        assert!(s.message.contains("exploded"), "{}", s.message);
    }
}
