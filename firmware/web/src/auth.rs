//! Who may use the panel: one password (an argon2 hash in the configuration, never the clear
//! text), a one-time setup code until it is set, HttpOnly SameSite=Strict session cookies, and
//! a limit of five wrong attempts a minute per address, after which that address waits.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
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

#[derive(Default)]
struct Inner {
    sessions: HashMap<String, Instant>,
    failures: HashMap<IpAddr, VecDeque<Instant>>,
    locked_until: HashMap<IpAddr, Instant>,
    setup_code: Option<String>,
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

/// A one-time setup code: eight digits, grouped for reading off a screen.
pub fn new_setup_code() -> String {
    let n = OsRng.next_u64() % 100_000_000;
    format!("{:04}-{:04}", n / 10_000, n % 10_000)
}

/// The argon2id hash of `password` (PHC string).
pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| e.to_string())
}

/// Whether `password` matches `hash`.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

impl Auth {
    /// With the setup code to ask for, while no password is set.
    pub fn new(setup_code: Option<String>) -> Self {
        Self { inner: Mutex::new(Inner { setup_code, ..Inner::default() }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The setup code, while setup is open.
    pub fn setup_code(&self) -> Option<String> {
        self.lock().setup_code.clone()
    }

    /// Closes setup (the password is set).
    pub fn finish_setup(&self) {
        self.lock().setup_code = None;
    }

    /// Starts a session; returns its token.
    pub fn new_session(&self, now: Instant) -> String {
        let token = random_hex(32);
        let mut i = self.lock();
        i.sessions.retain(|_, exp| *exp > now);
        i.sessions.insert(token.clone(), now + SESSION_TTL);
        token
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
    pub fn locked(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let i = self.lock();
        i.locked_until.get(&ip).filter(|until| **until > now).map(|until| *until - now)
    }

    /// Records a wrong attempt from `ip`; the fifth in a minute locks it out.
    pub fn failed(&self, ip: IpAddr, now: Instant) {
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
    pub fn succeeded(&self, ip: IpAddr) {
        self.lock().failures.remove(&ip);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(c.len(), 9);
        assert!(c.chars().enumerate().all(|(i, ch)| if i == 4 { ch == '-' } else { ch.is_ascii_digit() }), "{c}");
    }
}
