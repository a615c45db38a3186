//! A bundle fetched for the fleet client: into `update.raucb.part` beside where the host keeps
//! bundles, resumed with a Range request after a broken connection (or a restart), redirects
//! followed, the server's token sent to the server alone, and the whole file hashed against the
//! digest the server gave before it takes the bundle's name.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use telebridge_fleet::check::Check;
use telebridge_fleet::ddi::Assignment;
use telebridge_http::{self as http, Head, Target};

/// The largest bundle taken (as a panel upload: a root file system, compressed).
pub const BUNDLE_LIMIT: u64 = 2 << 30;
/// How long the server may be silent in a download.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections a download may take (each broken one resumes where it stopped).
const ATTEMPTS: u32 = 6;
/// Redirects followed.
const REDIRECTS: u32 = 5;

/// Where a download stands, for the panel.
pub type Progress<'a> = &'a dyn Fn(u64, Option<u64>);

/// The `.part` file a download writes, resumed from its length.
struct PartFile {
    file: File,
    have: u64,
    limit: u64,
    progress_every: u64,
    told: u64,
}

/// The part file with the panel's progress.
struct Writer<'a> {
    part: &'a mut PartFile,
    progress: Progress<'a>,
    size: Option<u64>,
}

impl http::Sink for Writer<'_> {
    fn head(&mut self, head: &Head) -> Result<(), String> {
        let part = &mut *self.part;
        let start = match (head.status, head.range) {
            (206, Some((start, _))) if start == part.have => start,
            // The server sent the whole file (it ignored the range, or gave another start).
            _ => 0,
        };
        if start == 0 && part.have > 0 {
            part.file.set_len(0).map_err(|e| format!("cannot truncate the partial bundle: {e}"))?;
            part.have = 0;
        }
        Ok(())
    }

    fn body(&mut self, bytes: &[u8]) -> Result<(), String> {
        let part = &mut *self.part;
        part.have += bytes.len() as u64;
        if part.have > part.limit {
            return Err(format!("the bundle is larger than {} bytes", part.limit));
        }
        part.file.write_all(bytes).map_err(|e| format!("cannot store the bundle: {e}"))?;
        if part.have >= part.told + part.progress_every {
            part.told = part.have;
            (self.progress)(part.have, self.size);
        }
        Ok(())
    }
}

/// The partial file's name beside `bundle`.
pub fn part_path(bundle: &Path) -> PathBuf {
    bundle.with_file_name("update.raucb.part")
}

/// Fetches `a`'s bundle to `bundle` (from `server`, whose token goes to it alone), checked.
pub fn fetch(
    a: &Assignment,
    server: &Target,
    auth: Option<&str>,
    bundle: &Path,
    stop: &AtomicBool,
    progress: Progress<'_>,
) -> Result<(), String> {
    let size = a.artifact.size;
    if size.is_some_and(|s| s > BUNDLE_LIMIT) {
        return Err(format!("the bundle has {} bytes; at most {BUNDLE_LIMIT} are taken", size.unwrap_or(0)));
    }
    let part_path = part_path(bundle);
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&part_path)
        .map_err(|e| format!("cannot store the bundle at {}: {e}", part_path.display()))?;
    let have = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut part = PartFile { file, have, limit: size.unwrap_or(BUNDLE_LIMIT), progress_every: 1 << 20, told: 0 };
    if size.is_some_and(|s| part.have > s) {
        part.file.set_len(0).map_err(|e| format!("cannot truncate the partial bundle: {e}"))?;
        part.have = 0;
    }
    let mut to =
        server.resolve(&a.artifact.url).ok_or_else(|| format!("cannot read the download link {:?}", a.artifact.url))?;
    let (mut attempts, mut redirects) = (0, 0);
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err("stopped".into());
        }
        if size == Some(part.have) {
            break;
        }
        let range = format!("bytes={}-", part.have);
        let mut headers = vec![("Accept", "application/octet-stream")];
        if part.have > 0 {
            headers.push(("Range", range.as_str()));
        }
        // The token is the server's: a redirect to storage elsewhere does not get it.
        if let Some(auth) = auth.filter(|_| to.host == server.host && to.port == server.port) {
            headers.push(("Authorization", auth));
        }
        let request = http::request_bytes("GET", &to, &headers, b"");
        let stopped = || stop.load(Ordering::Relaxed);
        let mut writer = Writer { part: &mut part, progress, size };
        match http::download(&to, &request, READ_TIMEOUT, &stopped, &mut writer) {
            Ok(head) if (200..300).contains(&head.status) => break,
            Ok(head) if head.status == 416 && part.have > 0 => break,
            Ok(Head { status: 301 | 302 | 303 | 307 | 308, location: Some(l), .. }) if redirects < REDIRECTS => {
                redirects += 1;
                to = to.resolve(&l).ok_or_else(|| format!("cannot follow the redirect to {l:?}"))?;
            }
            Ok(Head { status: s @ (401 | 403), .. }) => {
                return Err(format!("the server refused the box's token ({s}): check fleet.target_token"))
            }
            Ok(head) => return Err(format!("the server answered the download with {}", head.status)),
            Err(e) if e == "stopped" => return Err(e),
            Err(e) if attempts + 1 < ATTEMPTS => {
                attempts += 1;
                tracing::warn!(error = %e, have = part.have, "bundle download broke off; resuming");
                std::thread::sleep(Duration::from_secs(2));
            }
            Err(e) => return Err(e),
        }
    }
    drop(part);
    verify(a, &part_path)?;
    std::fs::rename(&part_path, bundle).map_err(|e| format!("cannot move the checked bundle into place: {e}"))
}

/// Hashes the whole file against the server's digest; a bundle that differs is removed.
fn verify(a: &Assignment, path: &Path) -> Result<(), String> {
    let mut file = File::open(path).map_err(|e| format!("cannot read the bundle back: {e}"))?;
    let mut check = Check::new(&a.artifact.digest);
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| format!("cannot read the bundle back: {e}"))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        check.update(&buf[..n]);
    }
    if let Some(size) = a.artifact.size.filter(|s| *s != total) {
        let _ = std::fs::remove_file(path);
        return Err(format!("the bundle has {total} bytes, the server said {size}"));
    }
    check.verify().inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })
}
