//! Asking the root helper (`telebridge-helper.path`, packaging/lib/helper): the daemon runs as
//! the `telebridge` user and may not reboot, install an update or write the boot partition, so it
//! leaves a request in its runtime directory (`/run/telebridge`, systemd's
//! `RuntimeDirectory=`) and the helper acts. The helper answers in a folder of root's beside it
//! (`/run/telebridge-helper`), never in the daemon's own, where a name could be swapped for a
//! link under it (issue 36, finding 7).
//!
//! Where no systemd started the daemon (a development machine, `--sim`, the tests) there is no
//! helper: updates and reboots are refused in words, and the setup code file is written by the
//! daemon itself at `web.setup_code_file`.

use std::path::{Path, PathBuf};

use tracing::{info, warn};

/// How the setup code file starts (and how a stale one is known before it is removed); the root
/// helper takes a request of exactly these words and a code.
const SETUP_FILE_HEAD: &str = "Telebridge setup code: ";

/// The boot partition's setup code file: the one place the helper writes it. A configuration
/// naming another file has it written by the daemon.
pub(crate) const BOOT_SETUP_FILE: &str = "/boot/firmware/telebridge-setup.txt";

/// Where requests go: systemd's runtime directory for the daemon.
pub(crate) fn requests_dir() -> Option<PathBuf> {
    std::env::var_os("RUNTIME_DIRECTORY").map(PathBuf::from).filter(|p| p.is_dir())
}

/// Where the helper's answers come from: its own runtime directory, beside the daemon's.
pub(crate) fn answers_dir() -> Option<PathBuf> {
    requests_dir().and_then(|d| d.parent().map(|p| p.join("telebridge-helper")))
}

/// Writes a request for the helper, atomically (it acts on the file's appearance).
pub(crate) fn request(dir: &Path, name: &str, body: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, body)?;
    std::fs::rename(tmp, dir.join(name))
}

/// Publishes the one-time setup code (`Some`) or removes the spent one (`None`) at `path`: through
/// the helper when the file is the boot partition's and a helper runs, else directly (only a
/// file that starts with our words is removed).
pub(crate) fn publish_setup_code(path: &str, code: Option<&str>) {
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
