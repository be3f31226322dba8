//! The runners of one model, one per sequence decoded at once, each lent to one model call at a
//! time: a call claims a runner for its thread, and every use of a runner of that pool on that
//! thread until the claim ends is of that one, so that a call's steps (a thought, then the
//! decision) reuse its own cache.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::generate::Runner;

thread_local! {
    /// The runner this thread has claimed in each pool, as `(pool, index)`.
    static CLAIMED: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// What a pool lends: something that can be set back to a clean state after a panic.
pub trait Lent {
    /// Drops whatever state a panic may have left half-made.
    fn reset(&mut self);
}

impl Lent for Runner {
    fn reset(&mut self) {
        Runner::reset(self);
    }
}

/// Runners lent one call at a time; a call finding none free waits for one.
pub struct Pool<T = Runner> {
    runners: Vec<Mutex<T>>,
    free: Mutex<Vec<usize>>,
    returned: Condvar,
}

/// A runner claimed by this thread, returned to the pool when dropped.
pub struct Claim<'a, T: Lent = Runner> {
    pool: &'a Pool<T>,
    index: Option<usize>,
}

impl<T: Lent> Pool<T> {
    /// A pool of `runners` (at least one).
    pub fn new(runners: Vec<T>) -> Self {
        let free = (0..runners.len()).rev().collect();
        Self {
            runners: runners.into_iter().map(Mutex::new).collect(),
            free: Mutex::new(free),
            returned: Condvar::new(),
        }
    }

    fn id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn claimed(&self) -> Option<usize> {
        let id = self.id();
        CLAIMED.with_borrow(|c| c.iter().find(|(pool, _)| *pool == id).map(|(_, i)| *i))
    }

    /// Claims a free runner for this thread until the claim drops, waiting for one when every
    /// runner is lent. A thread that already holds a claim in this pool keeps it (the new
    /// claim is empty).
    pub fn claim(&self) -> Claim<'_, T> {
        if self.claimed().is_some() {
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
        CLAIMED.with_borrow_mut(|c| c.push((self.id(), index)));
        Claim {
            pool: self,
            index: Some(index),
        }
    }

    /// The runner this thread claimed, or the first one for a thread without a claim here. A
    /// runner left poisoned by a panic is reset before it is lent again.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        let index = self
            .claimed()
            .filter(|&i| i < self.runners.len())
            .unwrap_or(0);
        lock(&self.runners[index])
    }

    /// Every runner, one after the other.
    pub fn each(&self, mut f: impl FnMut(&mut T)) {
        for runner in &self.runners {
            f(&mut lock(runner));
        }
    }
}

fn lock<T: Lent>(runner: &Mutex<T>) -> MutexGuard<'_, T> {
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

impl<T: Lent> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        let Some(index) = self.index else {
            return;
        };
        let id = self.pool.id();
        CLAIMED.with_borrow_mut(|c| c.retain(|entry| *entry != (id, index)));
        self.pool
            .free
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(index);
        self.pool.returned.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[derive(Debug, Default)]
    struct Counter {
        uses: u32,
        resets: u32,
    }

    impl Lent for Counter {
        fn reset(&mut self) {
            self.resets += 1;
        }
    }

    fn pool(n: usize) -> Pool<Counter> {
        Pool::new((0..n).map(|_| Counter::default()).collect())
    }

    #[test]
    fn a_claim_holds_one_runner_for_every_use_on_its_thread() {
        let pool = pool(3);
        let claim = pool.claim();
        for _ in 0..3 {
            pool.lock().uses += 1;
        }
        let again = pool.claim();
        pool.lock().uses += 1;
        drop(again);
        pool.lock().uses += 1;
        drop(claim);
        let mut uses = Vec::new();
        pool.each(|c| uses.push(c.uses));
        assert_eq!(uses.iter().filter(|&&u| u == 5).count(), 1, "{uses:?}");
        assert_eq!(uses.iter().sum::<u32>(), 5);
    }

    #[test]
    fn claims_in_two_pools_on_one_thread_are_apart() {
        let (a, b) = (pool(2), pool(2));
        let (held, release) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                let _first = a.claim();
                held.wait();
                release.wait();
            });
            held.wait();
            let _second = a.claim();
            let _in_b = b.claim();
            b.lock().uses += 1;
            a.lock().uses += 10;
            release.wait();
        });
        let (mut in_a, mut in_b) = (Vec::new(), Vec::new());
        a.each(|c| in_a.push(c.uses));
        b.each(|c| in_b.push(c.uses));
        assert_eq!(in_a, [0, 10], "the second claim in a is runner 1");
        assert_eq!(in_b, [1, 0], "the claim in b is b's first free runner, 0");
    }

    #[test]
    fn a_call_waits_for_a_free_runner_and_gets_it() {
        let pool = Arc::new(pool(1));
        let claim = pool.claim();
        let waiting = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let _claim = pool.claim();
                pool.lock().uses += 1;
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiting.is_finished(), "a second call took a lent runner");
        drop(claim);
        waiting.join().expect("the waiting call ends");
        assert_eq!(pool.lock().uses, 1);
    }

    #[test]
    fn a_runner_poisoned_by_a_panic_is_reset_before_it_is_lent_again() {
        let pool = Arc::new(pool(1));
        let panicked = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let _claim = pool.claim();
                let _guard = pool.lock();
                panic!("a panic mid-call");
            })
            .join()
        };
        assert!(panicked.is_err());
        let _claim = pool.claim();
        assert_eq!(pool.lock().resets, 1);
        assert_eq!(pool.lock().resets, 1, "reset once, not on every lock");
    }
}
