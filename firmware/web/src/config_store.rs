//! The configuration as the user edits it: the file's form (without the command line's
//! overrides), saved atomically, then applied to the running daemon. A configuration that does
//! not validate is refused with every problem and changes nothing, on disk or in the box.

use std::path::PathBuf;
use std::sync::Mutex;
use telebridge_sync::Locked;

use telebridge_config::{Config, ValidConfig, ValidationErrors};
use tokio::sync::mpsc;

use telebridge_config::Overrides;
use telebridge_contract::daemon::DaemonCommand;

/// Why a configuration was not taken.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// It does not validate.
    #[error("{0}")]
    Invalid(ValidationErrors),
    /// It could not be written (the running configuration is unchanged).
    #[error("cannot save {path}: {message}")]
    Save {
        /// The file.
        path: String,
        /// The system's words.
        message: String,
    },
    /// The daemon is stopping.
    #[error("the daemon is stopping")]
    Stopped,
}

/// The editable configuration of a running box.
pub struct ConfigStore {
    path: Option<PathBuf>,
    file: Mutex<Config>,
    overrides: Overrides,
    commands: mpsc::Sender<DaemonCommand>,
}

impl std::fmt::Debug for ConfigStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl ConfigStore {
    /// A store for the configuration `file` (read from `path`, if any) of a daemon that applies
    /// `overrides` to it and takes commands on `commands`.
    pub fn new(
        path: Option<PathBuf>,
        file: Config,
        overrides: Overrides,
        commands: mpsc::Sender<DaemonCommand>,
    ) -> Self {
        Self { path, file: Mutex::new(file), overrides, commands }
    }

    /// The configuration as saved (secrets included: callers redact).
    pub fn file(&self) -> Config {
        self.file.locked().clone()
    }

    /// The configuration as the daemon runs it (the file with the command line's overrides).
    pub fn running(&self) -> Option<ValidConfig> {
        (self.overrides)(self.file()).validate().ok()
    }

    /// Where the configuration is saved, if anywhere: files that belong with it (the pairing)
    /// go beside it.
    pub fn path(&self) -> Option<&std::path::Path> {
        self.path.as_deref()
    }

    /// Validates `new` as it will be saved and as the daemon runs it (with the overrides), saves
    /// it, then applies it to the daemon, which restarts only what changed.
    ///
    /// What is saved must validate on its own: `telebridge config check` and the next start
    /// read the file without the command line's overrides. A `--sim` box lays test sources and
    /// sinks over the file; validating only with them, it saved a video source `hdmi` that the
    /// box then refused at its next boot (issue 58).
    pub async fn replace(&self, new: Config) -> Result<ValidConfig, StoreError> {
        new.validate().map_err(StoreError::Invalid)?;
        let valid = (self.overrides)(new.clone()).validate().map_err(StoreError::Invalid)?;
        if let Some(path) = &self.path {
            let (path, c) = (path.clone(), new.clone());
            let saved = tokio::task::spawn_blocking(move || telebridge_config::save_atomic(&path, &c)).await;
            let message = match saved {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.to_string()),
                Err(e) => Some(e.to_string()),
            };
            if let Some(message) = message {
                return Err(StoreError::Save { path: self.path_display(), message });
            }
        }
        *self.file.locked() = new;
        self.commands.send(DaemonCommand::Apply(Box::new(valid.clone()))).await.map_err(|_| StoreError::Stopped)?;
        Ok(valid)
    }

    /// Reads the file again (SIGHUP) and applies it; a file that cannot be read or does not
    /// validate is logged problem by problem and changes nothing.
    pub async fn reload(&self) {
        let Some(path) = &self.path else {
            tracing::warn!("reload: no configuration file (started without one)");
            return;
        };
        let file = match telebridge_config::load(path) {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "reload: cannot read the configuration; keeping the running one");
                return;
            }
        };
        match file.validate().and_then(|_| (self.overrides)(file.clone()).validate()) {
            Ok(valid) => {
                *self.file.locked() = file;
                tracing::info!(file = %path.display(), "reload: configuration read");
                let _ = self.commands.send(DaemonCommand::Apply(Box::new(valid))).await;
            }
            Err(errs) => {
                for e in &errs.0 {
                    tracing::error!(problem = %e, "reload: configuration rejected; keeping the running one");
                }
            }
        }
    }

    fn path_display(&self) -> String {
        self.path.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_is_saved_validates_without_the_overrides_and_nothing_else_is_kept() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("telebridge.toml");
        let file = Config::default();
        telebridge_config::save_atomic(&path, &file).expect("saved");
        let before = std::fs::read_to_string(&path).expect("read");
        let (tx, mut rx) = mpsc::channel(4);
        // As `--sim` does: test sources and sinks laid over the file.
        let sim: Overrides = std::sync::Arc::new(|mut c: Config| {
            c.video.source = "test".into();
            c.audio.source = "test".into();
            c.decoder.sink = "fake".into();
            c
        });
        let store = ConfigStore::new(Some(path.clone()), file.clone(), sim, tx);
        // What the simulation would run, but the box itself would refuse at its next start.
        let mut bad = file.clone();
        bad.video.source = "hdmi".into();
        bad.audio.source = "mic".into();
        bad.decoder.sink = "hdmi".into();
        let Err(StoreError::Invalid(errs)) = store.replace(bad).await else {
            panic!("saved what config check refuses")
        };
        let named: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(named, ["video.source", "audio.source", "decoder.sink"], "{errs}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), before, "the file is unchanged");
        assert_eq!(store.file(), file);
        assert!(rx.try_recv().is_err(), "nothing applied");
        // A good change is saved and applied.
        let mut good = file.clone();
        good.video.bitrate_kbps = 2500;
        store.replace(good.clone()).await.expect("saved");
        assert_eq!(telebridge_config::load(&path).expect("load"), good);
        assert!(matches!(rx.try_recv(), Ok(DaemonCommand::Apply(_))));
    }
}
