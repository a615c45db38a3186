//! Eclipse hawkBit's Direct Device Integration API (DDI), as the box speaks it: what a poll of
//! the controller's resource says, what an assigned deployment names, and the JSON the box
//! sends back (its attributes, its feedback). Pure: bytes in, typed values out, and the other
//! way; nothing here reads a socket.
//!
//! ```text
//! GET  {server}/{tenant}/controller/v1/{id}                    -> Poll (sleep, links)
//! PUT  .../configData                  attributes              (when the server asks)
//! GET  .../deploymentBase/{action}                             -> Assignment
//! POST .../deploymentBase/{action}/feedback   Feedback
//! GET  .../cancelAction/{action}                               -> the action to stop
//! POST .../cancelAction/{action}/feedback     Feedback
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a server's answer could not be used, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DdiError {
    /// Not the JSON DDI defines.
    #[error("the server's {what} is not DDI's JSON: {detail}")]
    NotDdi {
        /// Which answer.
        what: &'static str,
        /// serde's words.
        detail: String,
    },
    /// A deployment the box cannot install.
    #[error("{0}")]
    Unusable(String),
}

#[derive(Deserialize)]
struct Href {
    href: String,
}

#[derive(Deserialize, Default)]
struct Links {
    #[serde(rename = "deploymentBase")]
    deployment_base: Option<Href>,
    #[serde(rename = "configData")]
    config_data: Option<Href>,
    #[serde(rename = "cancelAction")]
    cancel_action: Option<Href>,
}

#[derive(Deserialize)]
struct Polling {
    sleep: String,
}

#[derive(Deserialize)]
struct BaseConfig {
    polling: Polling,
}

#[derive(Deserialize)]
struct Base {
    config: Option<BaseConfig>,
    #[serde(rename = "_links", default)]
    links: Links,
}

/// What one poll of the controller's resource says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poll {
    /// When to poll again (the server's `config.polling.sleep`).
    pub sleep: Duration,
    /// An action assigned to the box: its deployment's URL.
    pub deployment: Option<String>,
    /// The server asks for the box's attributes at this URL.
    pub config_data: Option<String>,
    /// The server asks the box to cancel an action: the cancel's URL.
    pub cancel: Option<String>,
}

/// The poll interval when a server names none, or one out of bounds is clamped to.
pub const SLEEP_DEFAULT: Duration = Duration::from_secs(300);
/// The shortest poll interval taken (a server asking for less is polled this often).
pub const SLEEP_MIN: Duration = Duration::from_secs(1);
/// The longest (a day).
pub const SLEEP_MAX: Duration = Duration::from_secs(86_400);

/// `HH:MM:SS` as DDI writes a poll interval.
pub fn parse_sleep(text: &str) -> Option<Duration> {
    let mut parts = text.trim().split(':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let n = |p: &str| p.parse::<u64>().ok();
    let (h, m, s) = (n(h)?, n(m)?, n(s)?);
    (m < 60 && s < 60).then(|| Duration::from_secs(h.saturating_mul(3600).saturating_add(m * 60 + s)))
}

/// Reads a poll's answer.
pub fn read_poll(body: &[u8]) -> Result<Poll, DdiError> {
    let base: Base =
        serde_json::from_slice(body).map_err(|e| DdiError::NotDdi { what: "poll answer", detail: e.to_string() })?;
    let sleep = base
        .config
        .and_then(|c| parse_sleep(&c.polling.sleep))
        .map_or(SLEEP_DEFAULT, |d| d.clamp(SLEEP_MIN, SLEEP_MAX));
    Ok(Poll {
        sleep,
        deployment: base.links.deployment_base.map(|h| h.href),
        config_data: base.links.config_data.map(|h| h.href),
        cancel: base.links.cancel_action.map(|h| h.href),
    })
}

/// How the server wants a step done (`download`, `update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Handling {
    /// Do it now.
    Forced,
    /// Do it when the box sees fit.
    Attempt,
    /// Do not (yet): a download-only action, or an update outside its window.
    Skip,
}

/// Whether the server's maintenance window is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Window {
    /// The update may run now.
    Available,
    /// Download, but install only once the window opens.
    Unavailable,
}

#[derive(Deserialize, Default)]
struct Hashes {
    sha1: Option<String>,
    md5: Option<String>,
    sha256: Option<String>,
}

#[derive(Deserialize, Default)]
struct ArtifactLinks {
    download: Option<Href>,
    #[serde(rename = "download-http")]
    download_http: Option<Href>,
}

#[derive(Deserialize)]
struct WireArtifact {
    filename: String,
    #[serde(default)]
    hashes: Hashes,
    size: Option<u64>,
    #[serde(rename = "_links", default)]
    links: ArtifactLinks,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    version: String,
    #[serde(default)]
    artifacts: Vec<WireArtifact>,
}

#[derive(Deserialize)]
struct WireDeployment {
    download: Handling,
    update: Handling,
    #[serde(rename = "maintenanceWindow")]
    maintenance_window: Option<Window>,
    #[serde(default)]
    chunks: Vec<Chunk>,
}

#[derive(Deserialize)]
struct WireAssignment {
    id: String,
    deployment: WireDeployment,
}

/// The digest an artifact is checked against: the strongest the server gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Digest {
    /// SHA-256 (hawkBit gives it).
    Sha256([u8; 32]),
    /// SHA-1 (all gooseBit gives).
    Sha1([u8; 20]),
}

impl Digest {
    /// The algorithm's name, as DDI writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Digest::Sha256(_) => "sha256",
            Digest::Sha1(_) => "sha1",
        }
    }
}

fn hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.trim();
    if text.len() != 2 * N || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// A bundle to fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// Its name (`*.raucb`).
    pub filename: String,
    /// Where to get it (HTTPS when the server gives it, else HTTP).
    pub url: String,
    /// Its size, when the server says.
    pub size: Option<u64>,
    /// What it must hash to.
    pub digest: Digest,
}

/// An action assigned to the box.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The action's id (feedback goes to `.../deploymentBase/{id}/feedback`).
    pub action: String,
    /// The software's version, as the server names it.
    pub version: String,
    /// The bundle.
    pub artifact: Artifact,
    /// Fetch it now, when fit, or not.
    pub download: Handling,
    /// Install it now, when fit, or not.
    pub update: Handling,
    /// The maintenance window, when the server has one for this action.
    pub window: Option<Window>,
}

/// Reads an assigned deployment: one RAUC bundle (a `.raucb` artifact) in its chunks, with a
/// digest the box can check.
pub fn read_assignment(body: &[u8]) -> Result<Assignment, DdiError> {
    let wire: WireAssignment =
        serde_json::from_slice(body).map_err(|e| DdiError::NotDdi { what: "deployment", detail: e.to_string() })?;
    let d = wire.deployment;
    let mut bundles = d
        .chunks
        .iter()
        .flat_map(|c| c.artifacts.iter().map(move |a| (c, a)))
        .filter(|(_, a)| a.filename.ends_with(".raucb"));
    let (chunk, a) = bundles.next().ok_or_else(|| {
        let names: Vec<&str> = d.chunks.iter().flat_map(|c| c.artifacts.iter().map(|a| a.filename.as_str())).collect();
        DdiError::Unusable(format!(
            "the action names no RAUC bundle (.raucb) among its artifacts ({})",
            if names.is_empty() { "none".to_string() } else { names.join(", ") }
        ))
    })?;
    if bundles.next().is_some() {
        return Err(DdiError::Unusable("the action names more than one RAUC bundle; the box installs one".into()));
    }
    let url = a
        .links
        .download
        .as_ref()
        .or(a.links.download_http.as_ref())
        .map(|h| h.href.clone())
        .ok_or_else(|| DdiError::Unusable(format!("{} has no download link", a.filename)))?;
    let digest = match (&a.hashes.sha256, &a.hashes.sha1) {
        (Some(h), _) => hex::<32>(h).map(Digest::Sha256),
        (None, Some(h)) => hex::<20>(h).map(Digest::Sha1),
        (None, None) => None,
    }
    .ok_or_else(|| {
        DdiError::Unusable(format!(
            "{} has no SHA-256 or SHA-1 the box can check{}",
            a.filename,
            if a.hashes.md5.is_some() { " (MD5 alone is not taken)" } else { "" }
        ))
    })?;
    Ok(Assignment {
        action: wire.id,
        version: chunk.version.clone(),
        artifact: Artifact { filename: a.filename.clone(), url, size: a.size, digest },
        download: d.download,
        update: d.update,
        window: d.maintenance_window,
    })
}

#[derive(Deserialize)]
struct CancelInner {
    #[serde(rename = "stopId")]
    stop_id: String,
}

#[derive(Deserialize)]
struct WireCancel {
    id: String,
    #[serde(rename = "cancelAction")]
    cancel_action: CancelInner,
}

/// A cancel the server asks for: its own id, and the action to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancel {
    /// The cancel's id (its feedback goes to `.../cancelAction/{id}/feedback`).
    pub id: String,
    /// The action to stop.
    pub stop: String,
}

/// Reads a cancel.
pub fn read_cancel(body: &[u8]) -> Result<Cancel, DdiError> {
    let w: WireCancel =
        serde_json::from_slice(body).map_err(|e| DdiError::NotDdi { what: "cancel", detail: e.to_string() })?;
    Ok(Cancel { id: w.id, stop: w.cancel_action.stop_id })
}

/// DDI's execution states the box reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Execution {
    /// Working on it (downloading, installing, waiting to be off air).
    Proceeding,
    /// Waiting for its time (the maintenance window, the end of a programme).
    Scheduled,
    /// Downloaded, not installed (a download-only action).
    Downloaded,
    /// Done: `finished` says how.
    Closed,
    /// Refused (a cancel the box cannot honour any more).
    Rejected,
    /// Stopped at the server's request.
    Canceled,
}

/// How a closed action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Finished {
    /// It worked.
    Success,
    /// It did not; the details say why.
    Failure,
    /// Not finished yet.
    None,
}

#[derive(Serialize)]
struct Progress {
    cnt: u32,
    of: u32,
}

#[derive(Serialize)]
struct FeedbackResult {
    finished: Finished,
    #[serde(skip_serializing_if = "Option::is_none")]
    progress: Option<Progress>,
}

#[derive(Serialize)]
struct FeedbackStatus {
    execution: Execution,
    result: FeedbackResult,
    details: Vec<String>,
}

#[derive(Serialize)]
struct WireFeedback<'a> {
    id: &'a str,
    status: FeedbackStatus,
}

/// A feedback's JSON for action `action`: how it stands, how far (`cnt` of `of`), in words.
pub fn feedback(
    action: &str,
    execution: Execution,
    finished: Finished,
    progress: Option<(u32, u32)>,
    details: &[String],
) -> String {
    let status = FeedbackStatus {
        execution,
        result: FeedbackResult { finished, progress: progress.map(|(cnt, of)| Progress { cnt, of }) },
        details: details.to_vec(),
    };
    serde_json::to_string(&WireFeedback { id: action, status }).unwrap_or_default()
}

/// The box's attributes, as a server matches bundles with them (`hw_boardname` is RAUC's
/// compatible string, `sw_version` the running version) and shows them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attributes(pub BTreeMap<String, String>);

#[derive(Serialize)]
struct WireConfigData<'a> {
    mode: &'static str,
    data: &'a BTreeMap<String, String>,
}

/// The JSON a `configData` PUT carries.
pub fn config_data(attributes: &Attributes) -> String {
    serde_json::to_string(&WireConfigData { mode: "merge", data: &attributes.0 }).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_with_its_links_and_sleep() {
        let p = read_poll(
            br#"{"config":{"polling":{"sleep":"00:00:10"}},"_links":{"configData":{"href":"http://s/t/controller/v1/b/configData"},
               "deploymentBase":{"href":"http://s/t/controller/v1/b/deploymentBase/3?c=-2129030598"}}}"#,
        )
        .unwrap();
        assert_eq!(p.sleep, Duration::from_secs(10));
        assert_eq!(p.deployment.as_deref(), Some("http://s/t/controller/v1/b/deploymentBase/3?c=-2129030598"));
        assert!(p.config_data.is_some() && p.cancel.is_none());
        let bare = read_poll(br#"{"config":{"polling":{"sleep":"99:99:99"}},"_links":{}}"#).unwrap();
        assert_eq!((bare.sleep, bare.deployment), (SLEEP_DEFAULT, None));
        assert_eq!(read_poll(br#"{"config":{"polling":{"sleep":"00:00:00"}}}"#).unwrap().sleep, SLEEP_MIN);
        assert_eq!(read_poll(br#"{"config":{"polling":{"sleep":"48:00:00"}}}"#).unwrap().sleep, SLEEP_MAX);
        let e = read_poll(b"<html>").unwrap_err().to_string();
        assert!(e.starts_with("the server's poll answer is not DDI's JSON"), "{e}");
    }

    #[test]
    fn sleeps_as_ddi_writes_them() {
        assert_eq!(parse_sleep("00:05:00"), Some(Duration::from_secs(300)));
        assert_eq!(parse_sleep("12:00:01"), Some(Duration::from_secs(43_201)));
        for bad in ["5", "00:60:00", "00:00", "a:b:c", "00:00:00:00", "-1:00:00"] {
            assert_eq!(parse_sleep(bad), None, "{bad}");
        }
    }

    /// What gooseBit 0.2 sends: SHA-1 only, `download` and `update` forced.
    #[test]
    fn a_goosebit_deployment() {
        let a = read_assignment(
            br#"{"id":"2","deployment":{"download":"forced","update":"forced","chunks":[{"part":"os","version":"0.1.1",
               "name":"telebridge-0.1.1.raucb","artifacts":[{"filename":"telebridge-0.1.1.raucb",
               "hashes":{"sha1":"a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"},"size":4096,
               "_links":{"download":{"href":"http://s/t/controller/v1/b/download"}}}]}]}}"#,
        )
        .unwrap();
        assert_eq!((a.action.as_str(), a.version.as_str()), ("2", "0.1.1"));
        assert_eq!(a.artifact.digest.name(), "sha1");
        assert_eq!(
            (a.artifact.size, a.download, a.update, a.window),
            (Some(4096), Handling::Forced, Handling::Forced, None)
        );
    }

    /// What hawkBit sends: three hashes (SHA-256 taken), HTTPS and HTTP links (HTTPS taken), a
    /// maintenance window.
    #[test]
    fn a_hawkbit_deployment_takes_the_strongest_hash_and_https() {
        let a = read_assignment(
            br#"{"id":"8","deployment":{"download":"forced","update":"attempt","maintenanceWindow":"unavailable",
               "chunks":[{"part":"os","version":"1.0","name":"x","artifacts":[{"filename":"b.raucb",
               "hashes":{"sha1":"a94a8fe5ccb19ba61c4c0873d391e987982fbbd3","md5":"098f6bcd4621d373cade4e832627b4f6",
               "sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},"size":1,
               "_links":{"download":{"href":"https://s/b"},"download-http":{"href":"http://s/b"}}}]}]}}"#,
        )
        .unwrap();
        assert_eq!((a.artifact.digest.name(), a.artifact.url.as_str()), ("sha256", "https://s/b"));
        assert_eq!((a.update, a.window), (Handling::Attempt, Some(Window::Unavailable)));
    }

    #[test]
    fn deployments_the_box_cannot_install_are_told_in_words() {
        let with = |artifacts: &str| {
            read_assignment(
                format!(r#"{{"id":"1","deployment":{{"download":"forced","update":"forced","chunks":[{{"version":"1","artifacts":[{artifacts}]}}]}}}}"#)
                    .as_bytes(),
            )
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            with(r#"{"filename":"a.swu","hashes":{},"_links":{}}"#),
            "the action names no RAUC bundle (.raucb) among its artifacts (a.swu)"
        );
        assert_eq!(
            with(
                r#"{"filename":"a.raucb","hashes":{"md5":"098f6bcd4621d373cade4e832627b4f6"},"_links":{"download":{"href":"http://s/a"}}}"#
            ),
            "a.raucb has no SHA-256 or SHA-1 the box can check (MD5 alone is not taken)"
        );
        assert_eq!(
            with(r#"{"filename":"a.raucb","hashes":{"sha1":"zz"},"_links":{"download":{"href":"http://s/a"}}}"#),
            "a.raucb has no SHA-256 or SHA-1 the box can check"
        );
        assert_eq!(
            with(r#"{"filename":"a.raucb","hashes":{"sha1":"a94a8fe5ccb19ba61c4c0873d391e987982fbbd3"},"_links":{}}"#),
            "a.raucb has no download link"
        );
        let two = r#"{"filename":"a.raucb","hashes":{},"_links":{}},{"filename":"b.raucb","hashes":{},"_links":{}}"#;
        assert!(with(two).contains("more than one RAUC bundle"));
    }

    #[test]
    fn feedback_and_attributes_as_ddi_reads_them() {
        let f =
            feedback("8", Execution::Proceeding, Finished::None, Some((2, 5)), &["waiting: the box is on air".into()]);
        let v: serde_json::Value = serde_json::from_str(&f).unwrap();
        assert_eq!(v["id"], "8");
        assert_eq!(v["status"]["execution"], "proceeding");
        assert_eq!(v["status"]["result"]["finished"], "none");
        assert_eq!(v["status"]["result"]["progress"]["of"], 5);
        assert_eq!(v["status"]["details"][0], "waiting: the box is on air");
        let closed: serde_json::Value =
            serde_json::from_str(&feedback("8", Execution::Closed, Finished::Failure, None, &[])).unwrap();
        assert!(closed["status"]["result"].get("progress").is_none());
        let mut a = Attributes::default();
        a.0.insert("hw_boardname".into(), "telebridge-arm64".into());
        a.0.insert("sw_version".into(), "0.1.0".into());
        assert_eq!(
            config_data(&a),
            r#"{"mode":"merge","data":{"hw_boardname":"telebridge-arm64","sw_version":"0.1.0"}}"#
        );
        assert_eq!(
            read_cancel(br#"{"id":"5","cancelAction":{"stopId":"8"}}"#).unwrap(),
            Cancel { id: "5".into(), stop: "8".into() }
        );
    }
}
