//! What the box does with the server's action, decided: a pure function of where it stands
//! ([`Stage`]), what just happened ([`Event`]) and what it knows of itself ([`Facts`]), giving
//! what to do ([`Do`]) and where it stands next. The client around it only fetches, sends,
//! downloads and asks the root helper.
//!
//! The rules: nothing is installed while the box is on air unless the operator allows it, nor
//! outside the server's maintenance window, nor when the server said to download only; each
//! wait is told to the server and shown. An installed bundle is reported a success only once
//! the box runs its version and has been healthy for [`CONFIRM_AFTER`]; a box that came back on
//! the old version (RAUC fell back) reports the failure with that reason.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ddi::{Assignment, Cancel, Execution, Finished, Handling, Window};

/// How long the box runs healthy on a new version before it says the update worked.
pub const CONFIRM_AFTER: Duration = Duration::from_secs(60);

/// What survives a reboot: the action that installed the bundle now booting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// The action's id.
    pub action: String,
    /// Its feedback URL.
    pub feedback: String,
    /// The version it installs.
    pub version: String,
    /// The version the box ran before.
    pub from: String,
}

/// An action the box works on, and where its feedback goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The action.
    pub assignment: Assignment,
    /// Its feedback URL (`.../deploymentBase/{id}/feedback`).
    pub feedback: String,
}

/// Where the box stands with the server's action.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Stage {
    /// Nothing assigned, or the last action reported.
    #[default]
    Idle,
    /// Fetching the bundle.
    Downloading(Job),
    /// Fetched and checked, waiting for its time (told why).
    Ready {
        /// The action.
        job: Job,
        /// What it waits for, as last told (said again only when it changes).
        waiting: Option<String>,
    },
    /// The root helper installs it.
    Installing(Job),
    /// Installed; the box reboots into it and, back, checks which version it runs.
    Booting(Pending),
    /// Back on the new version: healthy long enough, it says so.
    Confirming(Pending),
}

/// What the box knows of itself when deciding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Live (on air) now.
    pub live: bool,
    /// The operator allows an update while live (`fleet.update_on_air`).
    pub update_on_air: bool,
    /// The version the box runs.
    pub version: String,
    /// How long the daemon has been healthy (started, no fault), since its start.
    pub healthy_for: Duration,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A poll found this action assigned.
    Assigned(Job),
    /// The server asks to cancel; `feedback` is the cancel's feedback URL.
    Cancel {
        /// The cancel.
        cancel: Cancel,
        /// Where its feedback goes.
        feedback: String,
    },
    /// The download ended: checked, or why not.
    Downloaded(Result<(), String>),
    /// The root helper's install ended.
    Installed(Result<(), String>),
    /// The daemon started with this action pending from before its reboot.
    Started(Pending),
    /// Time passed (each turn of the client's loop): waits are looked at again.
    Tick,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Do {
    /// POST this feedback JSON to the URL.
    Feedback {
        /// The URL.
        url: String,
        /// How it stands.
        execution: Execution,
        /// How it ended.
        finished: Finished,
        /// In words.
        details: Vec<String>,
    },
    /// Fetch the action's bundle (resuming what is there) and check its digest.
    Download(Assignment),
    /// Stop a download under way and drop what it fetched.
    StopDownload,
    /// Ask the root helper to install the fetched bundle.
    Install,
    /// Keep `Pending` where a restart finds it (or clear it: `None`). Kept before the install
    /// starts: the root helper reboots into the new slot as soon as it is written.
    Remember(Option<Pending>),
}

fn say(url: &str, execution: Execution, finished: Finished, words: impl Into<String>) -> Do {
    Do::Feedback { url: url.to_string(), execution, finished, details: vec![words.into()] }
}

/// What the bundle waits for before it is installed, in words; `None`: nothing.
fn waits_for(a: &Assignment, facts: &Facts) -> Option<(Execution, String)> {
    if a.update == Handling::Skip {
        return Some((Execution::Downloaded, "downloaded; the server has not released the install".into()));
    }
    if a.window == Some(Window::Unavailable) {
        return Some((Execution::Scheduled, "downloaded; waiting for the maintenance window".into()));
    }
    if facts.live && !facts.update_on_air {
        return Some((
            Execution::Scheduled,
            "downloaded; waiting: the box is on air, it installs when it stops".into(),
        ));
    }
    None
}

/// One decision: where the box stands next, and what to do.
pub fn decide(stage: Stage, event: Event, facts: &Facts) -> (Stage, Vec<Do>) {
    match (stage, event) {
        (Stage::Idle, Event::Assigned(job)) => assigned(job, facts),
        // The same action seen again while it waits: its window or release may have changed.
        (Stage::Ready { job, waiting }, Event::Assigned(again)) if again.assignment.action == job.assignment.action => {
            ready(again, waiting, facts)
        }
        (Stage::Downloading(job), Event::Downloaded(Ok(()))) => ready(job, None, facts),
        (Stage::Downloading(job), Event::Downloaded(Err(why))) => (
            Stage::Idle,
            vec![say(&job.feedback, Execution::Closed, Finished::Failure, format!("download failed: {why}"))],
        ),
        (Stage::Ready { job, waiting }, Event::Tick) => ready(job, waiting, facts),
        (Stage::Installing(job), Event::Installed(Ok(()))) => {
            let pending = pending_of(&job, facts);
            let words = format!("installed {} into the other slot; rebooting into it", pending.version);
            let todo = vec![say(&pending.feedback, Execution::Proceeding, Finished::None, words)];
            (Stage::Booting(pending), todo)
        }
        (Stage::Installing(job), Event::Installed(Err(why))) => (
            Stage::Idle,
            vec![
                say(&job.feedback, Execution::Closed, Finished::Failure, format!("install failed: {why}")),
                Do::Remember(None),
            ],
        ),
        (_, Event::Started(p)) => {
            if facts.version == p.version {
                (Stage::Confirming(p), vec![])
            } else {
                let words = format!(
                    "{} did not start: the box came back on {} (RAUC fell back to the slot before)",
                    p.version, facts.version
                );
                (Stage::Idle, vec![say(&p.feedback, Execution::Closed, Finished::Failure, words), Do::Remember(None)])
            }
        }
        (Stage::Confirming(p), Event::Tick) if facts.healthy_for >= CONFIRM_AFTER => {
            let words =
                format!("running {} (from {}), healthy for {} s", p.version, p.from, facts.healthy_for.as_secs());
            (Stage::Idle, vec![say(&p.feedback, Execution::Closed, Finished::Success, words), Do::Remember(None)])
        }
        (stage, Event::Cancel { cancel, feedback }) => cancelled(stage, &cancel, &feedback),
        (stage, _) => (stage, vec![]),
    }
}

/// What a restart must know of the action being installed.
fn pending_of(job: &Job, facts: &Facts) -> Pending {
    Pending {
        action: job.assignment.action.clone(),
        feedback: job.feedback.clone(),
        version: job.assignment.version.clone(),
        from: facts.version.clone(),
    }
}

/// A new action: closed at once when the box runs its version already, held when the server
/// has not released the download, else fetched.
fn assigned(job: Job, facts: &Facts) -> (Stage, Vec<Do>) {
    let a = &job.assignment;
    if a.version == facts.version && !a.version.is_empty() {
        // A server that missed the last report: say so again.
        let words = format!("already running {}", facts.version);
        return (Stage::Idle, vec![say(&job.feedback, Execution::Closed, Finished::Success, words)]);
    }
    if a.download == Handling::Skip {
        let words = "assigned; the server has not released the download";
        return (Stage::Idle, vec![say(&job.feedback, Execution::Scheduled, Finished::None, words)]);
    }
    let words = format!("downloading {} ({})", a.artifact.filename, a.version);
    let todo = vec![say(&job.feedback, Execution::Proceeding, Finished::None, words), Do::Download(a.clone())];
    (Stage::Downloading(job), todo)
}

/// A fetched bundle: installed when nothing holds it, else the wait told (once per change).
fn ready(job: Job, waiting: Option<String>, facts: &Facts) -> (Stage, Vec<Do>) {
    match waits_for(&job.assignment, facts) {
        Some((execution, words)) => {
            let todo = if waiting.as_deref() == Some(words.as_str()) {
                vec![]
            } else {
                vec![say(&job.feedback, execution, Finished::None, words.clone())]
            };
            (Stage::Ready { job, waiting: Some(words) }, todo)
        }
        None => {
            let words = format!("installing {}", job.assignment.version);
            let todo = vec![
                say(&job.feedback, Execution::Proceeding, Finished::None, words),
                Do::Remember(Some(pending_of(&job, facts))),
                Do::Install,
            ];
            (Stage::Installing(job), todo)
        }
    }
}

/// A cancel: honoured before the install starts, refused after.
fn cancelled(stage: Stage, cancel: &Cancel, url: &str) -> (Stage, Vec<Do>) {
    let action = match &stage {
        Stage::Downloading(j) | Stage::Ready { job: j, .. } | Stage::Installing(j) => {
            Some(j.assignment.action.as_str())
        }
        Stage::Booting(p) | Stage::Confirming(p) => Some(p.action.as_str()),
        Stage::Idle => None,
    };
    if action != Some(cancel.stop.as_str()) {
        return (stage, vec![say(url, Execution::Closed, Finished::Success, "nothing of that action is running")]);
    }
    match stage {
        Stage::Downloading(j) | Stage::Ready { job: j, .. } => {
            let words = format!("cancelled before the install of {}", j.assignment.version);
            let todo = vec![
                Do::StopDownload,
                say(&j.feedback, Execution::Canceled, Finished::Success, words.clone()),
                say(url, Execution::Closed, Finished::Success, words),
            ];
            (Stage::Idle, todo)
        }
        stage => {
            let words = "the bundle is being installed or booted: too late to cancel";
            (stage, vec![say(url, Execution::Rejected, Finished::None, words)])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ddi::{Artifact, Digest};

    fn assignment(window: Option<Window>, update: Handling) -> Assignment {
        Assignment {
            action: "8".into(),
            version: "0.1.1".into(),
            artifact: Artifact {
                filename: "b.raucb".into(),
                url: "http://s/b".into(),
                size: Some(10),
                digest: Digest::Sha1([0; 20]),
            },
            download: Handling::Forced,
            update,
            window,
        }
    }

    fn facts(live: bool) -> Facts {
        Facts { live, update_on_air: false, version: "0.1.0".into(), healthy_for: Duration::ZERO }
    }

    const FB: &str = "http://s/t/controller/v1/b/deploymentBase/8/feedback";

    fn job(a: &Assignment) -> Job {
        Job { assignment: a.clone(), feedback: FB.into() }
    }

    fn words(todo: &[Do]) -> Vec<String> {
        todo.iter()
            .filter_map(|d| match d {
                Do::Feedback { details, .. } => details.first().cloned(),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn off_air_an_assignment_is_fetched_installed_rebooted_and_confirmed() {
        let a = assignment(None, Handling::Forced);
        let (s, todo) = decide(Stage::Idle, Event::Assigned(job(&a)), &facts(false));
        assert_eq!(todo[1], Do::Download(a.clone()));
        assert_eq!(words(&todo), ["downloading b.raucb (0.1.1)"]);
        let (s, todo) = decide(s, Event::Downloaded(Ok(())), &facts(false));
        assert_eq!((words(&todo), todo.last()), (vec!["installing 0.1.1".to_string()], Some(&Do::Install)));
        // Remembered before the install: the helper reboots as soon as the slot is written.
        let Some(Do::Remember(Some(remembered))) = todo.get(1).cloned() else { panic!("{todo:?}") };
        let (s, todo) = decide(s, Event::Installed(Ok(())), &facts(false));
        let Stage::Booting(p) = &s else { panic!("{s:?}") };
        assert_eq!(p, &remembered);
        assert_eq!(words(&todo), ["installed 0.1.1 into the other slot; rebooting into it"]);
        // After the reboot: the new version runs; success only once healthy for a minute.
        let mut now = facts(false);
        now.version = "0.1.1".into();
        let (s, todo) = decide(Stage::Idle, Event::Started(p.clone()), &now);
        assert!(todo.is_empty() && matches!(s, Stage::Confirming(_)));
        now.healthy_for = Duration::from_secs(59);
        let (s, todo) = decide(s, Event::Tick, &now);
        assert!(todo.is_empty());
        now.healthy_for = CONFIRM_AFTER;
        let (s, todo) = decide(s, Event::Tick, &now);
        assert_eq!(s, Stage::Idle);
        assert_eq!(words(&todo), ["running 0.1.1 (from 0.1.0), healthy for 60 s"]);
        assert!(matches!(&todo[0], Do::Feedback { execution: Execution::Closed, finished: Finished::Success, .. }));
    }

    #[test]
    fn on_air_it_waits_says_so_once_and_installs_when_the_programme_ends() {
        let a = assignment(None, Handling::Forced);
        let (s, _) = decide(Stage::Downloading(job(&a)), Event::Downloaded(Ok(())), &facts(true));
        let (s, todo) = (s.clone(), decide(s, Event::Tick, &facts(true)).1);
        assert!(todo.is_empty(), "told once: {todo:?}");
        assert!(matches!(&s, Stage::Ready { waiting: Some(w), .. } if w.contains("on air")));
        let mut allowed = facts(true);
        allowed.update_on_air = true;
        assert_eq!(decide(s.clone(), Event::Tick, &allowed).1.last(), Some(&Do::Install));
        let (s, todo) = decide(s, Event::Tick, &facts(false));
        assert!(matches!(s, Stage::Installing(_)) && todo.last() == Some(&Do::Install));
    }

    #[test]
    fn the_window_and_a_download_only_action_hold_the_install() {
        let shut = assignment(Some(Window::Unavailable), Handling::Forced);
        let (s, todo) = decide(Stage::Downloading(job(&shut)), Event::Downloaded(Ok(())), &facts(false));
        assert_eq!(words(&todo), ["downloaded; waiting for the maintenance window"]);
        let mut open = shut.clone();
        open.window = Some(Window::Available);
        let (_, todo) = decide(s, Event::Assigned(job(&open)), &facts(false));
        assert_eq!(todo.last(), Some(&Do::Install));
        let only = assignment(None, Handling::Skip);
        let (_, todo) = decide(Stage::Downloading(job(&only)), Event::Downloaded(Ok(())), &facts(false));
        assert!(matches!(&todo[0], Do::Feedback { execution: Execution::Downloaded, .. }));
    }

    #[test]
    fn a_box_back_on_its_old_version_reports_the_fallback() {
        let p = Pending { action: "8".into(), feedback: FB.into(), version: "0.1.1".into(), from: "0.1.0".into() };
        let (s, todo) = decide(Stage::Idle, Event::Started(p), &facts(false));
        assert_eq!(s, Stage::Idle);
        assert_eq!(
            words(&todo),
            ["0.1.1 did not start: the box came back on 0.1.0 (RAUC fell back to the slot before)"]
        );
        assert!(todo.contains(&Do::Remember(None)));
    }

    #[test]
    fn failures_are_reported_closed_with_their_reason() {
        let a = assignment(None, Handling::Forced);
        let (s, todo) =
            decide(Stage::Downloading(job(&a)), Event::Downloaded(Err("sha1 differs".into())), &facts(false));
        assert_eq!((s, words(&todo)), (Stage::Idle, vec!["download failed: sha1 differs".to_string()]));
        let (_, todo) =
            decide(Stage::Installing(job(&a)), Event::Installed(Err("signature not trusted".into())), &facts(false));
        assert!(
            matches!(&todo[0], Do::Feedback { finished: Finished::Failure, details, .. } if details[0] == "install failed: signature not trusted")
        );
        assert_eq!(todo[1], Do::Remember(None), "nothing pending after a refused install");
    }

    #[test]
    fn a_cancel_stops_a_download_but_not_an_install() {
        let a = assignment(None, Handling::Forced);
        let cancel = Event::Cancel {
            cancel: Cancel { id: "5".into(), stop: "8".into() },
            feedback: "http://s/c/5/feedback".into(),
        };
        let (s, todo) = decide(Stage::Downloading(job(&a)), cancel.clone(), &facts(false));
        assert_eq!(s, Stage::Idle);
        assert_eq!(todo[0], Do::StopDownload);
        let (s, todo) = decide(Stage::Installing(job(&a)), cancel.clone(), &facts(false));
        assert!(matches!(s, Stage::Installing(_)));
        assert!(matches!(&todo[0], Do::Feedback { execution: Execution::Rejected, .. }));
        let (_, todo) = decide(Stage::Idle, cancel, &facts(false));
        assert_eq!(words(&todo), ["nothing of that action is running"]);
    }

    #[test]
    fn an_action_for_the_running_version_is_closed_at_once() {
        let mut a = assignment(None, Handling::Forced);
        a.version = "0.1.0".into();
        let (s, todo) = decide(Stage::Idle, Event::Assigned(job(&a)), &facts(false));
        assert_eq!((s, words(&todo)), (Stage::Idle, vec!["already running 0.1.0".to_string()]));
    }
}
