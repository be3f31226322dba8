//! Model calls in flight over all runs, handed out oldest run first: when a call ends, the
//! waiting call of the run that was admitted earliest goes next, so runs already in progress
//! finish before new runs take the model.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

#[derive(Debug)]
struct State {
    free: usize,
    next_ticket: u64,
    /// Waiting calls by (run priority, arrival): the first entry goes next.
    waiting: BTreeMap<(u64, u64), oneshot::Sender<CallPermit>>,
}

/// A bounded pool of model-call permits granted by run priority (lower first), then arrival.
#[derive(Debug, Clone)]
pub struct CallScheduler {
    state: Arc<Mutex<State>>,
}

impl CallScheduler {
    /// A scheduler with `permits` calls in flight at once (at least 1).
    pub fn new(permits: usize) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                free: permits.max(1),
                next_ticket: 0,
                waiting: BTreeMap::new(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a permit; among waiting calls, the lowest `priority` is served first, and
    /// calls of one priority in arrival order. Dropping the future gives up its place, or the
    /// permit it was just granted.
    pub async fn acquire(&self, priority: u64) -> CallPermit {
        let (key, granted) = {
            let mut state = self.lock();
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return CallPermit {
                    scheduler: Some(self.clone()),
                };
            }
            let key = (priority, state.next_ticket);
            state.next_ticket += 1;
            let (sender, granted) = oneshot::channel();
            state.waiting.insert(key, sender);
            (key, granted)
        };
        let place = Place {
            scheduler: self,
            key,
        };
        let permit = granted.await;
        drop(place);
        match permit {
            Ok(permit) => permit,
            // Unreachable while `place` keeps the entry: a sender is only dropped once removed,
            // and removal by `release` sends. Waiting again keeps the bound either way.
            Err(_) => Box::pin(self.acquire(priority)).await,
        }
    }

    /// Calls waiting for a permit now.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.len()
    }

    fn release(&self) {
        let mut state = self.lock();
        while let Some((_, sender)) = state.waiting.pop_first() {
            let permit = CallPermit {
                scheduler: Some(self.clone()),
            };
            match sender.send(permit) {
                Ok(()) => return,
                // Its waiter is gone: this permit goes to the next one instead.
                Err(mut unsent) => unsent.scheduler = None,
            }
        }
        state.free += 1;
    }
}

/// A waiting call's entry, removed when the waiter goes away.
struct Place<'a> {
    scheduler: &'a CallScheduler,
    key: (u64, u64),
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.scheduler.lock().waiting.remove(&self.key);
    }
}

/// One model call's right to run; the next waiting call gets it when this is dropped.
#[derive(Debug)]
pub struct CallPermit {
    scheduler: Option<CallScheduler>,
}

impl Drop for CallPermit {
    fn drop(&mut self) {
        if let Some(scheduler) = self.scheduler.take() {
            scheduler.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::time::Duration;

    use super::*;

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn the_oldest_run_goes_next_whatever_the_arrival() {
        let scheduler = CallScheduler::new(1);
        let held = scheduler.acquire(0).await;
        let (order_tx, mut order) = tokio::sync::mpsc::unbounded_channel();
        for priority in [9, 3, 7, 1] {
            let scheduler = scheduler.clone();
            let order_tx = order_tx.clone();
            tokio::spawn(async move {
                let _permit = scheduler.acquire(priority).await;
                order_tx.send(priority).unwrap();
                settle().await;
            });
            settle().await;
        }
        assert_eq!(scheduler.waiting(), 4);
        drop(held);
        let mut served = Vec::new();
        for _ in 0..4 {
            served.push(order.recv().await.unwrap());
        }
        assert_eq!(served, [1, 3, 7, 9]);
    }

    #[tokio::test]
    async fn a_waiter_that_goes_away_loses_nothing() {
        let scheduler = CallScheduler::new(1);
        let held = scheduler.acquire(0).await;
        let gone = tokio::spawn({
            let scheduler = scheduler.clone();
            async move { scheduler.acquire(1).await }
        });
        settle().await;
        gone.abort();
        let _ = gone.await;
        assert_eq!(scheduler.waiting(), 0);
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(1), scheduler.acquire(5)).await;
        assert!(again.is_ok(), "the permit was lost with the waiter");
    }

    #[tokio::test]
    async fn a_permit_granted_to_a_dropped_waiter_goes_back() {
        let scheduler = CallScheduler::new(1);
        let held = scheduler.acquire(0).await;
        let mut waiter = Box::pin(scheduler.acquire(1));
        let pending = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(waiter.as_mut().poll(cx).is_pending())
        })
        .await;
        assert!(pending);
        drop(held);
        drop(waiter);
        let again = tokio::time::timeout(Duration::from_secs(1), scheduler.acquire(2)).await;
        assert!(again.is_ok(), "a granted but unclaimed permit was lost");
    }

    #[tokio::test]
    async fn never_more_than_the_bound() {
        let scheduler = CallScheduler::new(3);
        let now = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let calls: Vec<_> = (0..40u64)
            .map(|i| {
                let (scheduler, now, peak) = (scheduler.clone(), now.clone(), peak.clone());
                tokio::spawn(async move {
                    let _permit = scheduler.acquire(i % 5).await;
                    let n = now.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    peak.fetch_max(n, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
            })
            .collect();
        for call in calls {
            call.await.unwrap();
        }
        assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 3);
    }
}
