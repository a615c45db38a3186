//! Who may use the panel: one password (an argon2 hash in the configuration, never the clear
//! text), a one-time setup code until it is set, HttpOnly SameSite=Strict session cookies, and
//! a limit of five wrong attempts a minute per address, after which that address waits.
//!
//! An attempt is counted before its password is checked, not after: an address may have at most
//! [`MAX_FAILURES`] attempts failed or in progress, so a burst of simultaneous guesses gets five
//! checks and 429 for the rest. The checks themselves run one at a time on one thread
//! ([`Checker`]), at most [`MAX_PENDING`] waiting, so argon2's 19 MiB per check is spent once
//! however many arrive, and the memory of a box under attack does not grow with the attack.
//!
//! A check is only begun once its request's body has arrived and parsed (a body that does not,
//! within its time, is a failure of its own: [`Auth::failed_unread`]), so a stranger who sends
//! half a body holds a connection, never a check. An address has at most [`MAX_IN_FLIGHT`]
//! checks waiting at once, and the last [`KEPT_FOR_KNOWN`] of the [`MAX_PENDING`] are kept for a
//! browser that logged in before (a signed cookie, [`crate::device::device_token`]): the owner's right
//! password is checked while strangers' are queued (issue 36, finding 3; issue 57, finding 9). IPv6 addresses are counted per /64 ([`client_key`]): one host has
//! a whole /64 to send from.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use telebridge_sync::Locked;

use argon2::password_hash::{PasswordHash, SaltString};
use argon2::Argon2;
use rand_core::{OsRng, RngCore};

/// The session cookie's name.
pub const COOKIE: &str = "telebridge_session";
/// How long a session lasts.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);
/// Wrong attempts allowed per address in [`FAILURE_WINDOW`].
pub const MAX_FAILURES: usize = 5;
/// The window the failures are counted in.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// How long an address that used them up waits.
pub const LOCKOUT: Duration = Duration::from_secs(300);
/// The shortest password accepted.
pub const MIN_PASSWORD: usize = 8;
/// The longest password (or setup code) looked at; longer ones are refused unread.
pub const MAX_PASSWORD: usize = 256;
/// Password checks waiting or running at once, from all addresses together; more are refused
/// at once (503), never queued without bound. The last [`KEPT_FOR_KNOWN`] are kept for a
/// browser that logged in before.
pub const MAX_PENDING: usize = 8;
/// Checks kept for a browser that shows the known-device cookie ([`crate::device`]): strangers,
/// however many addresses they have and however clean their record, cannot take them (issue
/// 57, finding 9: 60 addresses that never failed, two wrong logins in flight each, made the
/// owner's right password get 503 on 6 of 23 tries).
pub const KEPT_FOR_KNOWN: usize = 2;
/// Password checks waiting or running at once from one address (one IPv6 /64).
pub const MAX_IN_FLIGHT: usize = 2;
/// Addresses whose failures are remembered at once; past that, attempts from addresses not yet
/// known are refused until old records expire (so the tables cannot grow with an attack).
pub const MAX_TRACKED: usize = 4096;
/// Sessions at once; the oldest ends when a new one would pass it.
pub const MAX_SESSIONS: usize = 64;

/// The key an address is counted under: an IPv4 address itself (an IPv4-mapped IPv6 one as
/// IPv4), an IPv6 address by its /64, which one host or one customer line has whole.
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !((1u128 << 64) - 1))),
        },
    }
}

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, Instant>,
    failures: HashMap<IpAddr, VecDeque<Instant>>,
    locked_until: HashMap<IpAddr, Instant>,
    in_flight: HashMap<IpAddr, usize>,
    setup_code: Option<String>,
}

impl Inner {
    fn in_flight_total(&self) -> usize {
        self.in_flight.values().sum()
    }

    /// Drops the records that no longer matter at `now`.
    fn expire(&mut self, now: Instant) {
        self.locked_until.retain(|_, until| *until > now);
        self.failures.retain(|_, f| {
            while f.front().is_some_and(|t| now.duration_since(*t) > FAILURE_WINDOW) {
                f.pop_front();
            }
            !f.is_empty()
        });
    }
}

/// Why an attempt was refused before anything was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The address used up its attempts: wait this long.
    Locked(Duration),
    /// The address has its allowance of attempts failed or still being checked.
    TooMany,
    /// The box is checking as many passwords as it will at once.
    Busy,
}

/// One attempt to log in (or to give the setup code or the current password), counted from
/// the moment it is allowed. Say how it went with [`Attempt::failed`] or
/// [`Attempt::succeeded`]; dropped without either (the request went away), it counts for
/// nothing.
#[derive(Debug)]
pub struct Attempt {
    auth: Arc<Auth>,
    ip: IpAddr,
}

impl Attempt {
    /// The password was wrong: counts against the address (the fifth locks it out).
    pub fn failed(self, now: Instant) {
        self.auth.failed(self.ip, now);
    }

    /// The password was right: the address's failures are forgotten.
    pub fn succeeded(self) {
        self.auth.succeeded(self.ip);
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        let mut i = self.auth.lock();
        if let Some(n) = i.in_flight.get_mut(&self.ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                i.in_flight.remove(&self.ip);
            }
        }
    }
}

/// Sessions, attempts and the setup code.
#[derive(Default)]
pub struct Auth {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auth")
    }
}

fn random_hex(bytes: usize) -> String {
    let mut b = vec![0u8; bytes];
    OsRng.fill_bytes(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether `typed` is the setup code `code`, as a person types it: with or without its dash,
/// with spaces (the pairing code is read the same way). Compared in constant time.
pub fn setup_code_matches(typed: &str, code: &str) -> bool {
    let digits = |s: &str| -> Vec<u8> { s.bytes().filter(|b| !matches!(b, b'-' | b' ' | b'\t')).collect() };
    let (t, c) = (digits(typed), digits(code));
    t.len() == c.len() && t.iter().zip(&c).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A one-time setup code: eight digits, grouped for reading off a screen.
pub fn new_setup_code() -> String {
    let n = OsRng.next_u64() % 100_000_000;
    format!("{:04}-{:04}", n / 10_000, n % 10_000)
}

impl Auth {
    /// With the setup code to ask for, while no password is set.
    pub fn new(setup_code: Option<String>) -> Self {
        Self { inner: Mutex::new(Inner { setup_code, ..Inner::default() }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.locked()
    }

    /// The setup code, while setup is open.
    pub fn setup_code(&self) -> Option<String> {
        self.lock().setup_code.clone()
    }

    /// Closes setup (the password is set).
    pub fn finish_setup(&self) {
        self.lock().setup_code = None;
    }

    /// Starts a session; returns its token. At most [`MAX_SESSIONS`] live at once: the one that
    /// ends soonest makes room.
    pub fn new_session(&self, now: Instant) -> String {
        let token = random_hex(32);
        let mut i = self.lock();
        i.sessions.retain(|_, exp| *exp > now);
        while i.sessions.len() >= MAX_SESSIONS {
            let Some(oldest) = i.sessions.iter().min_by_key(|(_, exp)| **exp).map(|(t, _)| t.clone()) else { break };
            i.sessions.remove(&oldest);
        }
        i.sessions.insert(token.clone(), now + SESSION_TTL);
        token
    }

    /// Whether `ip` may try at all at `now`, asked before its body is read: refused while it is
    /// locked out or has its allowance of attempts failed or in progress. Takes nothing.
    pub fn admit(&self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        let ip = client_key(ip);
        let mut i = self.lock();
        i.expire(now);
        if let Some(until) = i.locked_until.get(&ip) {
            return Err(Refusal::Locked(*until - now));
        }
        let failed = i.failures.get(&ip).map_or(0, VecDeque::len);
        let running = i.in_flight.get(&ip).copied().unwrap_or(0);
        if failed + running >= MAX_FAILURES {
            return Err(Refusal::TooMany);
        }
        Ok(())
    }

    /// Allows one check from `ip` at `now`, its body read, or refuses it before anything is
    /// checked: the address is locked out, has [`MAX_FAILURES`] attempts failed in the last
    /// minute or still in progress, or [`MAX_IN_FLIGHT`] checks waiting; or the box has
    /// [`MAX_PENDING`] checks on hand (the last [`KEPT_FOR_KNOWN`] of them only for a browser
    /// that logged in before: `known_device`).
    pub fn begin(self: &Arc<Self>, ip: IpAddr, now: Instant, known_device: bool) -> Result<Attempt, Refusal> {
        self.admit(ip, now)?;
        let ip = client_key(ip);
        let mut i = self.lock();
        let running = i.in_flight.get(&ip).copied().unwrap_or(0);
        let known = i.failures.contains_key(&ip) || running > 0;
        let total = i.in_flight_total();
        let room = if known_device { MAX_PENDING } else { MAX_PENDING - KEPT_FOR_KNOWN };
        if running >= MAX_IN_FLIGHT
            || total >= room
            || (!known && i.failures.len() + i.locked_until.len() >= MAX_TRACKED)
        {
            return Err(Refusal::Busy);
        }
        *i.in_flight.entry(ip).or_default() += 1;
        Ok(Attempt { auth: self.clone(), ip })
    }

    /// A request to log in (or give the setup code or the current password) whose body did not
    /// arrive in time or does not parse: counted as a wrong attempt from `ip`, so that half-sent
    /// bodies cost their sender its allowance like wrong passwords do.
    pub fn failed_unread(&self, ip: IpAddr, now: Instant) {
        self.failed(client_key(ip), now);
    }

    /// Whether `token` is a live session.
    pub fn valid(&self, token: &str, now: Instant) -> bool {
        self.lock().sessions.get(token).is_some_and(|exp| *exp > now)
    }

    /// Ends the session `token`.
    pub fn end(&self, token: &str) {
        self.lock().sessions.remove(token);
    }

    /// Ends every session (the password changed).
    pub fn end_all(&self) {
        self.lock().sessions.clear();
    }

    /// When `ip` is locked out: how long it must still wait.
    #[cfg(test)]
    fn locked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let ip = client_key(ip);
        let i = self.lock();
        i.locked_until.get(&ip).filter(|until| **until > now).map(|until| *until - now)
    }

    /// Records a wrong attempt from `ip`; the fifth in a minute locks it out.
    fn failed(&self, ip: IpAddr, now: Instant) {
        let mut i = self.lock();
        let f = i.failures.entry(ip).or_default();
        f.push_back(now);
        while f.front().is_some_and(|t| now.duration_since(*t) > FAILURE_WINDOW) {
            f.pop_front();
        }
        if f.len() >= MAX_FAILURES {
            f.clear();
            i.locked_until.insert(ip, now + LOCKOUT);
        }
    }

    /// Forgets `ip`'s wrong attempts (it got in).
    fn succeeded(&self, ip: IpAddr) {
        self.lock().failures.remove(&ip);
    }
}

enum Job {
    Verify { password: String, hash: String, reply: tokio::sync::oneshot::Sender<bool> },
    Hash { password: String, reply: tokio::sync::oneshot::Sender<Result<String, String>> },
}

/// The most memory a stored hash may ask argon2 for, in 1 KiB blocks (64 MiB; the default
/// parameters take 19 MiB). A hash that asks for more is refused, not computed.
pub const MAX_BLOCKS: usize = 64 * 1024;
/// How long the checker keeps its memory after the last check, before it gives it back.
const KEEP_MEMORY: Duration = Duration::from_secs(30);

/// Argon2 with one block buffer, reused from check to check: the allocator is asked for the
/// memory once, so a thousand checks take what one does (argon2's own functions allocate a new
/// buffer each time, and the C allocator kept each: +19 MiB per check, measured).
#[derive(Default)]
struct Hasher {
    blocks: Vec<argon2::Block>,
}

impl Hasher {
    fn run(&mut self, argon: &Argon2<'_>, password: &str, salt: &[u8], out: &mut [u8]) -> Result<(), String> {
        let need = argon.params().block_count();
        if need > MAX_BLOCKS {
            return Err(format!("the stored hash asks for {need} KiB, over the {MAX_BLOCKS} KiB allowed"));
        }
        if self.blocks.len() < need {
            self.blocks.resize(need, argon2::Block::default());
        }
        argon
            .hash_password_into_with_memory(password.as_bytes(), salt, out, &mut self.blocks[..need])
            .map_err(|e| e.to_string())
    }

    /// Whether `password` matches the PHC string `hash` (argon2 only).
    fn verify(&mut self, password: &str, hash: &str) -> bool {
        let mut check = || -> Result<bool, String> {
            let parsed = PasswordHash::new(hash).map_err(|e| e.to_string())?;
            let algorithm = argon2::Algorithm::try_from(parsed.algorithm).map_err(|e| e.to_string())?;
            let version = parsed.version.map(argon2::Version::try_from).transpose().map_err(|e| e.to_string())?;
            let params = argon2::Params::try_from(&parsed).map_err(|e| e.to_string())?;
            let expected = parsed.hash.ok_or("the stored hash has no output")?;
            let mut salt = [0u8; 64];
            let salt =
                parsed.salt.ok_or("the stored hash has no salt")?.decode_b64(&mut salt).map_err(|e| e.to_string())?;
            let argon = Argon2::new(algorithm, version.unwrap_or_default(), params);
            let mut out = vec![0u8; expected.len()];
            self.run(&argon, password, salt, &mut out)?;
            // Constant time: every byte is compared whatever the first difference.
            Ok(out.iter().zip(expected.as_bytes()).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0)
        };
        check().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot check a password against the stored hash");
            false
        })
    }

    /// The argon2id PHC string of `password` with a new salt and the default parameters.
    fn hash(&mut self, password: &str) -> Result<String, String> {
        let salt = SaltString::generate(&mut OsRng);
        let argon = Argon2::default();
        let mut raw = [0u8; 64];
        let salt_bytes = salt.decode_b64(&mut raw).map_err(|e| e.to_string())?;
        let mut out = [0u8; argon2::Params::DEFAULT_OUTPUT_LEN];
        self.run(&argon, password, salt_bytes, &mut out)?;
        let phc = PasswordHash {
            algorithm: argon2::Algorithm::Argon2id.ident(),
            version: Some(argon2::Version::default().into()),
            params: argon2::password_hash::ParamsString::try_from(argon.params()).map_err(|e| e.to_string())?,
            salt: Some(salt.as_salt()),
            hash: Some(argon2::password_hash::Output::new(&out).map_err(|e| e.to_string())?),
        };
        Ok(phc.to_string())
    }
}

/// The one thread that runs argon2 for the panel: password checks and new hashes, one at a
/// time, with one buffer, so the memory argon2 takes (19 MiB a check with the default
/// parameters) is taken once however many checks come; it is given back after
/// `KEEP_MEMORY` without checks.
#[derive(Clone)]
pub struct Checker {
    jobs: std_mpsc::SyncSender<Job>,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Checker")
    }
}

impl Default for Checker {
    fn default() -> Self {
        Self::start()
    }
}

impl Checker {
    /// Starts the checking thread; it ends when the last `Checker` is dropped.
    pub fn start() -> Self {
        let (jobs, rx) = std_mpsc::sync_channel::<Job>(MAX_PENDING);
        let spawned = std::thread::Builder::new().name("password-check".into()).spawn(move || {
            let mut hasher = Hasher::default();
            loop {
                let job = match rx.recv_timeout(KEEP_MEMORY) {
                    Ok(job) => job,
                    Err(std_mpsc::RecvTimeoutError::Timeout) => {
                        hasher = Hasher::default();
                        continue;
                    }
                    Err(std_mpsc::RecvTimeoutError::Disconnected) => break,
                };
                match job {
                    Job::Verify { password, hash, reply } => {
                        let _ = reply.send(hasher.verify(&password, &hash));
                    }
                    Job::Hash { password, reply } => {
                        let _ = reply.send(hasher.hash(&password));
                    }
                }
            }
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the password-check thread: every login will be refused");
        }
        Self { jobs }
    }

    /// Whether `password` matches `hash`; `None` when the checker could not take the job (as
    /// many checks as it keeps are waiting), which is no answer, not a wrong password.
    pub async fn verify(&self, password: String, hash: String) -> Option<bool> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs.try_send(Job::Verify { password, hash, reply }).ok()?;
        answer.await.ok()
    }

    /// The argon2id hash of `password`.
    pub async fn hash(&self, password: String) -> Result<String, String> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.jobs.try_send(Job::Hash { password, reply }).map_err(|_| "the password checker is busy".to_string())?;
        answer.await.map_err(|_| "the password checker stopped".to_string())?
    }
}

#[cfg(test)]
mod tests {
    use argon2::password_hash::{PasswordHasher, PasswordVerifier};

    use super::*;

    /// argon2's own functions: the reference the reused-buffer checker must agree with.
    fn hash_password(password: &str) -> Result<String, String> {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| e.to_string())
    }

    fn verify_password(password: &str, hash: &str) -> bool {
        PasswordHash::new(hash).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
    }

    #[test]
    fn passwords_hash_and_verify() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2id$"), "{h}");
        assert!(!h.contains("correct horse"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
        assert!(!verify_password("correct horse", "not a hash"));
    }

    #[test]
    fn attempts_are_counted_before_they_are_checked() {
        let a = Arc::new(Auth::new(None));
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        let t = Instant::now();
        // A burst: two at once are checked, the third is refused while they are in progress.
        let burst: Vec<Attempt> = (0..MAX_IN_FLIGHT).map(|_| a.begin(ip, t, false).unwrap()).collect();
        assert_eq!(a.begin(ip, t, false).unwrap_err(), Refusal::Busy);
        for attempt in burst {
            attempt.failed(t);
        }
        // Three more fail: the address is locked, even for the right password.
        let burst: Vec<Attempt> = (0..MAX_IN_FLIGHT).map(|_| a.begin(ip, t, false).unwrap()).collect();
        let last = a.begin(ip, t, false);
        assert_eq!(last.as_ref().unwrap_err(), &Refusal::Busy);
        for attempt in burst {
            attempt.failed(t);
        }
        let fifth = a.begin(ip, t, false).unwrap();
        assert_eq!(a.begin(ip, t, false).unwrap_err(), Refusal::TooMany, "four failed and one in progress");
        fifth.failed(t);
        assert!(matches!(a.begin(ip, t, false), Err(Refusal::Locked(w)) if w == LOCKOUT));
        assert!(matches!(a.admit(ip, t), Err(Refusal::Locked(_))), "refused before its body is read");
        assert!(a.begin(other, t, false).is_ok(), "another address is not locked");
        assert!(a.begin(ip, t + LOCKOUT, false).is_ok(), "for a while, not for ever");
    }

    #[test]
    fn bodies_that_never_arrive_count_as_wrong_passwords() {
        let a = Arc::new(Auth::new(None));
        let ip: IpAddr = "192.0.2.9".parse().unwrap();
        let t = Instant::now();
        for _ in 0..MAX_FAILURES {
            assert!(a.admit(ip, t).is_ok());
            a.failed_unread(ip, t);
        }
        assert!(matches!(a.admit(ip, t), Err(Refusal::Locked(_))));
    }

    #[test]
    fn the_last_checks_are_kept_for_a_browser_that_logged_in_before() {
        // Issue 57, finding 9: addresses that never failed, two wrong logins in flight each,
        // took the slot kept for "never failed", and the owner's right password got 503.
        let a = Arc::new(Auth::new(None));
        let t = Instant::now();
        let strangers: Vec<IpAddr> = (0..60u32).map(|k| IpAddr::V4((0x0a00_0000 + k).into())).collect();
        let mut held = Vec::new();
        for ip in &strangers {
            for _ in 0..MAX_IN_FLIGHT {
                if let Ok(attempt) = a.begin(*ip, t, false) {
                    held.push(attempt);
                }
            }
        }
        assert_eq!(held.len(), MAX_PENDING - KEPT_FOR_KNOWN);
        // A new address with a clean record is no better than they are...
        let owner: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(a.begin(owner, t, false).unwrap_err(), Refusal::Busy);
        // ...the owner's browser, known, gets a kept one, as many as are kept.
        let kept: Vec<Attempt> = (0..KEPT_FOR_KNOWN)
            .map(|k| a.begin(IpAddr::V4((0xc000_0201 + k as u32).into()), t, true).expect("kept"))
            .collect();
        assert_eq!(a.begin("192.0.2.9".parse().unwrap(), t, true).unwrap_err(), Refusal::Busy, "and no more");
        drop(kept);
        a.begin(owner, t, true).expect("kept").succeeded();
    }

    #[test]
    fn an_ipv6_host_is_one_address_per_64() {
        let a = Arc::new(Auth::new(None));
        let t = Instant::now();
        for k in 0..MAX_FAILURES as u16 {
            let ip = IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 1, 2, k, k, k, k + 1));
            a.begin(ip, t, false).unwrap().failed(t);
        }
        let same_64: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let next_64: IpAddr = "2001:db8:1:3::9".parse().unwrap();
        assert!(matches!(a.begin(same_64, t, false), Err(Refusal::Locked(_))));
        assert!(a.begin(next_64, t, false).is_ok());
        assert_eq!(client_key("::ffff:192.0.2.4".parse().unwrap()), "192.0.2.4".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn an_attempt_that_goes_away_counts_for_nothing_and_a_success_forgets() {
        let a = Arc::new(Auth::new(None));
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let t = Instant::now();
        for _ in 0..20 {
            drop(a.begin(ip, t, false).unwrap());
        }
        for _ in 0..MAX_FAILURES - 1 {
            a.begin(ip, t, false).unwrap().failed(t);
        }
        a.begin(ip, t, false).unwrap().succeeded();
        for _ in 0..MAX_FAILURES - 1 {
            a.begin(ip, t, false).unwrap().failed(t);
        }
        assert!(a.begin(ip, t, false).is_ok(), "the success forgot the earlier failures");
    }

    #[test]
    fn the_box_checks_a_bounded_number_at_once_and_tracks_a_bounded_number_of_addresses() {
        let a = Arc::new(Auth::new(None));
        let t = Instant::now();
        let ips: Vec<IpAddr> = (0..=MAX_PENDING as u32).map(|k| IpAddr::V4(k.into())).collect();
        let held: Vec<Attempt> = ips[..MAX_PENDING]
            .iter()
            .enumerate()
            .map(|(k, ip)| a.begin(*ip, t, k >= MAX_PENDING - KEPT_FOR_KNOWN).unwrap())
            .collect();
        assert_eq!(a.begin(ips[MAX_PENDING], t, true).unwrap_err(), Refusal::Busy);
        drop(held);
        assert!(a.begin(ips[MAX_PENDING], t, false).is_ok());
        // Many addresses, each failing once: the table stops at MAX_TRACKED, then expires.
        for k in 0..MAX_TRACKED as u32 + 10 {
            if let Ok(attempt) = a.begin(IpAddr::V4((1_000_000 + k).into()), t, false) {
                attempt.failed(t);
            }
        }
        assert_eq!(a.lock().failures.len(), MAX_TRACKED);
        assert_eq!(a.begin(IpAddr::V4(7_000_000.into()), t, false).unwrap_err(), Refusal::Busy);
        let later = t + FAILURE_WINDOW + Duration::from_secs(1);
        assert!(a.begin(IpAddr::V4(7_000_000.into()), later, false).is_ok(), "old records expire");
        assert!(a.lock().failures.is_empty());
    }

    #[test]
    fn sessions_are_bounded() {
        let a = Auth::new(None);
        let t = Instant::now();
        let first = a.new_session(t);
        for k in 0..MAX_SESSIONS as u64 {
            a.new_session(t + Duration::from_secs(k + 1));
        }
        assert_eq!(a.lock().sessions.len(), MAX_SESSIONS);
        assert!(!a.valid(&first, t), "the oldest made room");
    }

    #[tokio::test]
    async fn the_checker_hashes_and_verifies() {
        let c = Checker::start();
        let h = c.hash("correct horse".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{h}");
        assert_eq!(c.verify("correct horse".into(), h.clone()).await, Some(true));
        assert_eq!(c.verify("wrong horse".into(), h.clone()).await, Some(false));
        // The reused buffer gives the same answers as argon2's own functions.
        assert!(verify_password("correct horse", &h));
        let theirs = hash_password("battery staple").unwrap();
        assert_eq!(c.verify("battery staple".into(), theirs).await, Some(true));
        assert_eq!(c.verify("x".into(), "not a hash".into()).await, Some(false));
        // A hash asking for more memory than allowed is refused, not computed.
        let greedy = "$argon2id$v=19$m=1048576,t=1,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA";
        assert_eq!(c.verify("x".into(), greedy.into()).await, Some(false));
    }

    #[test]
    fn the_fifth_failure_in_a_minute_locks_the_address_out() {
        let a = Auth::new(None);
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        let t = Instant::now();
        for k in 0..4 {
            a.failed(ip, t + Duration::from_secs(k));
            assert_eq!(a.locked(ip, t + Duration::from_secs(k)), None);
        }
        a.failed(ip, t + Duration::from_secs(10));
        assert!(a.locked(ip, t + Duration::from_secs(11)).is_some());
        assert_eq!(a.locked(other, t + Duration::from_secs(11)), None, "only that address");
        assert_eq!(a.locked(ip, t + Duration::from_secs(10) + LOCKOUT), None, "for a while, not for ever");
        // Spread over more than a minute: no lockout.
        let b = Auth::new(None);
        for k in 0..10 {
            b.failed(ip, t + Duration::from_secs(k * 20));
        }
        assert_eq!(b.locked(ip, t + Duration::from_secs(200)), None);
    }

    #[test]
    fn sessions_expire_and_end() {
        let a = Auth::new(None);
        let t = Instant::now();
        let s = a.new_session(t);
        assert_eq!(s.len(), 64);
        assert!(a.valid(&s, t));
        assert!(!a.valid(&s, t + SESSION_TTL));
        assert!(!a.valid("forged", t));
        a.end(&s);
        assert!(!a.valid(&s, t));
    }

    #[test]
    fn setup_codes_are_eight_digits() {
        let c = new_setup_code();
        assert!(setup_code_matches(&c, &c) && setup_code_matches(&c.replace('-', ""), &c));
        assert!(setup_code_matches(&format!(" {} ", c.replace('-', " ")), &c));
        assert!(!setup_code_matches(&c[..c.len() - 1], &c) && !setup_code_matches("", &c));
        assert_eq!(c.len(), 9);
        assert!(c.chars().enumerate().all(|(i, ch)| if i == 4 { ch == '-' } else { ch.is_ascii_digit() }), "{c}");
    }
}
