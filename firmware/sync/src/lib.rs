//! Locks that outlive a panic. A thread that panics while holding a lock poisons it; every lock
//! in Telebridge guards plain state (counters, the latest sample, a slot for a picture) that is
//! whole between two statements, so the daemon takes the data back and goes on rather than
//! failing every later caller. This is the one place that says so.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex::lock`], a poisoned lock's data taken back.
pub trait Locked<T: ?Sized> {
    /// The guard, poisoned or not.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// [`RwLock::read`] and [`RwLock::write`], a poisoned lock's data taken back.
pub trait RwLocked<T: ?Sized> {
    /// A reading guard, poisoned or not.
    fn reading(&self) -> RwLockReadGuard<'_, T>;
    /// A writing guard, poisoned or not.
    fn writing(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> RwLocked<T> for RwLock<T> {
    fn reading(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|p| p.into_inner())
    }

    fn writing(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn a_lock_poisoned_by_a_panic_still_gives_its_data() {
        let m = Arc::new(Mutex::new(1));
        let r = Arc::new(RwLock::new(2));
        let (m2, r2) = (m.clone(), r.clone());
        let _ = std::thread::spawn(move || {
            let _g = m2.lock();
            let _w = r2.write();
            panic!("poison both");
        })
        .join();
        assert!(m.is_poisoned() && r.is_poisoned());
        *m.locked() += 1;
        assert_eq!(*m.locked(), 2);
        *r.writing() += 1;
        assert_eq!(*r.reading(), 3);
    }
}
