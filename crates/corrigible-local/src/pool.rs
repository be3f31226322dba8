//! The runners of one model, one per sequence decoded at once, each lent to one model call at a
//! time: a call claims a runner for its thread, and every use of a runner on that thread until
//! the claim ends is of that one, so that a call's steps (a thought, then the decision) reuse
//! its own cache.

use std::cell::Cell;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::generate::Runner;

thread_local! {
    /// The runner this thread has claimed, if any.
    static CLAIMED: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runners lent one call at a time; a call finding none free waits for one.
pub struct Pool {
    runners: Vec<Mutex<Runner>>,
    free: Mutex<Vec<usize>>,
    returned: Condvar,
}

/// A runner claimed by this thread, returned to the pool when dropped.
pub struct Claim<'a> {
    pool: &'a Pool,
    index: Option<usize>,
}

impl Pool {
    /// A pool of `runners` (at least one).
    pub fn new(runners: Vec<Runner>) -> Self {
        let free = (0..runners.len()).rev().collect();
        Self {
            runners: runners.into_iter().map(Mutex::new).collect(),
            free: Mutex::new(free),
            returned: Condvar::new(),
        }
    }

    /// Claims a free runner for this thread until the claim drops, waiting for one when every
    /// runner is lent. A thread that already holds a claim keeps it (the new claim is empty).
    pub fn claim(&self) -> Claim<'_> {
        if CLAIMED.get().is_some() {
            return Claim {
                pool: self,
                index: None,
            };
        }
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        let index = loop {
            if let Some(index) = free.pop() {
                break index;
            }
            free = self.returned.wait(free).unwrap_or_else(|p| p.into_inner());
        };
        CLAIMED.set(Some(index));
        Claim {
            pool: self,
            index: Some(index),
        }
    }

    /// The runner this thread claimed, or the first one for a thread without a claim. A runner
    /// left poisoned by a panic is reset before it is lent again.
    pub fn lock(&self) -> MutexGuard<'_, Runner> {
        let index = CLAIMED
            .get()
            .filter(|&i| i < self.runners.len())
            .unwrap_or(0);
        lock(&self.runners[index])
    }

    /// Every runner, one after the other.
    pub fn each(&self, mut f: impl FnMut(&mut Runner)) {
        for runner in &self.runners {
            f(&mut lock(runner));
        }
    }
}

fn lock(runner: &Mutex<Runner>) -> MutexGuard<'_, Runner> {
    match runner.lock() {
        Ok(guard) => guard,
        Err(poisoned) => {
            let mut guard = poisoned.into_inner();
            guard.reset();
            runner.clear_poison();
            guard
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let Some(index) = self.index else {
            return;
        };
        CLAIMED.set(None);
        self.pool
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(index);
        self.pool.returned.notify_one();
    }
}
