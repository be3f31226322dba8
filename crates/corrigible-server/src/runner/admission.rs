//! Admission control: at most `max_runs` runs in flight, at most `max_queued` requests waiting
//! for one of their slots, each for at most `queue_timeout`; past that, a clear 503.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::errors::ServiceUnavailable;

/// How many runs may execute and wait, and for how long a request waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AdmissionLimits {
    /// Runs in flight at once.
    pub(crate) max_runs: usize,
    /// Requests waiting for a run slot.
    pub(crate) max_queued: usize,
    /// How long a request may wait for a slot.
    pub(crate) queue_timeout: Duration,
}

/// Run slots, handed out in arrival order.
pub(crate) struct Admission {
    slots: Arc<Semaphore>,
    queued: AtomicUsize,
    limits: AdmissionLimits,
}

/// A run's slot: the next queued request gets it when this is dropped.
pub(crate) type Slot = OwnedSemaphorePermit;

impl Admission {
    pub(crate) fn new(limits: AdmissionLimits) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(
                limits.max_runs.clamp(1, Semaphore::MAX_PERMITS),
            )),
            queued: AtomicUsize::new(0),
            limits,
        }
    }

    /// A slot for a new run, waiting in line if all are taken. Dropping the future leaves the
    /// line with nothing taken.
    pub(crate) async fn admit(&self) -> Result<Slot, ServiceUnavailable> {
        if let Ok(slot) = self.slots.clone().try_acquire_owned() {
            return Ok(slot);
        }
        let place = Queued::enter(&self.queued, self.limits.max_queued).ok_or(
            ServiceUnavailable::AtCapacity {
                why: "the run queue is full",
            },
        )?;
        let waited = tokio::time::timeout(
            self.limits.queue_timeout,
            self.slots.clone().acquire_owned(),
        )
        .await;
        drop(place);
        match waited {
            Ok(Ok(slot)) => Ok(slot),
            Ok(Err(_)) => Err(ServiceUnavailable::ShuttingDown),
            Err(_) => Err(ServiceUnavailable::AtCapacity {
                why: "no run slot came free in time",
            }),
        }
    }

    /// Requests waiting for a slot now.
    pub(crate) fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Refuses every waiting and later request.
    pub(crate) fn close(&self) {
        self.slots.close();
    }
}

/// One request's place in the line, given back when it is dropped.
struct Queued<'a>(&'a AtomicUsize);

impl<'a> Queued<'a> {
    fn enter(count: &'a AtomicUsize, max: usize) -> Option<Self> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Self(count))
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_runs: usize, max_queued: usize, queue_ms: u64) -> AdmissionLimits {
        AdmissionLimits {
            max_runs,
            max_queued,
            queue_timeout: Duration::from_millis(queue_ms),
        }
    }

    #[tokio::test]
    async fn runs_past_the_slots_wait_and_past_the_queue_are_refused() {
        let admission = Arc::new(Admission::new(limits(1, 1, 5_000)));
        let first = admission.admit().await.expect("a free slot");
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit().await.map(drop) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(admission.queued(), 1);
        let refused = admission.admit().await.map(drop);
        assert!(matches!(
            refused,
            Err(ServiceUnavailable::AtCapacity { .. })
        ));
        drop(first);
        waiting
            .await
            .unwrap()
            .expect("the queued run gets the slot");
        assert_eq!(admission.queued(), 0);
    }

    #[tokio::test]
    async fn a_queued_request_times_out_and_leaves_the_line() {
        let admission = Admission::new(limits(1, 4, 50));
        let _first = admission.admit().await.unwrap();
        let late = admission.admit().await.map(drop);
        assert!(matches!(late, Err(ServiceUnavailable::AtCapacity { .. })));
        assert_eq!(admission.queued(), 0);
    }

    #[tokio::test]
    async fn a_request_that_goes_away_leaves_the_line() {
        let admission = Arc::new(Admission::new(limits(1, 4, 5_000)));
        let first = admission.admit().await.unwrap();
        let gone = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit().await.map(drop) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        gone.abort();
        let _ = gone.await;
        assert_eq!(admission.queued(), 0);
        drop(first);
        assert!(admission.admit().await.is_ok(), "the slot was lost");
    }

    #[tokio::test]
    async fn closing_refuses_the_waiting() {
        let admission = Arc::new(Admission::new(limits(1, 4, 5_000)));
        let _first = admission.admit().await.unwrap();
        let waiting = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit().await.map(drop) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        admission.close();
        assert_eq!(
            waiting.await.unwrap(),
            Err(ServiceUnavailable::ShuttingDown)
        );
    }
}
