//! Live runs: each run's events so far and a broadcast channel, for the events stream.
//!
//! A subscriber takes the events so far and a receiver under one lock, so it misses none and
//! sees none twice. When the run ends its entry is removed (after the store holds
//! everything), and later subscribers read the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

/// Events a slow subscriber may fall behind before it re-reads the run's buffer.
const CAPACITY: usize = 256;

/// One trace event on its way to subscribers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveEvent {
    /// Its position in the run, from 1.
    pub seq: u64,
    /// The event's `type`.
    pub kind: &'static str,
    /// The event as JSON.
    pub data: Arc<str>,
}

impl LiveEvent {
    /// Whether the run ends with this event.
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(self.kind, "run_finished" | "run_failed")
    }
}

struct Inner {
    events: Vec<LiveEvent>,
    channel: Channel,
}

/// A run's broadcast channel: made for its first subscriber, as most runs have none and a
/// channel holds [`CAPACITY`] slots; dropped when the run ends.
enum Channel {
    Unopened,
    Open(broadcast::Sender<LiveEvent>),
    Closed,
}

/// A run in progress.
pub(crate) struct LiveRun {
    inner: Mutex<Inner>,
}

impl LiveRun {
    fn new() -> Self {
        Self {
            inner: Mutex::new(Inner {
                events: Vec::new(),
                channel: Channel::Unopened,
            }),
        }
    }

    /// A run that no one follows live: one stored whole once it has ended.
    pub(crate) fn detached() -> Arc<Self> {
        Arc::new(Self::new())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `event` and sends it to the subscribers.
    pub(crate) fn publish(&self, event: LiveEvent) {
        let mut inner = self.lock();
        if let Channel::Open(tx) = &inner.channel {
            let _ = tx.send(event.clone());
        }
        inner.events.push(event);
    }

    /// The events so far and a receiver of the next ones (`None` once closed).
    pub(crate) fn subscribe(&self) -> (Vec<LiveEvent>, Option<broadcast::Receiver<LiveEvent>>) {
        let mut inner = self.lock();
        let receiver = match &inner.channel {
            Channel::Closed => None,
            Channel::Open(tx) => Some(tx.subscribe()),
            Channel::Unopened => {
                let (tx, receiver) = broadcast::channel(CAPACITY);
                inner.channel = Channel::Open(tx);
                Some(receiver)
            }
        };
        (inner.events.clone(), receiver)
    }

    /// The events after `seq` (for a subscriber that fell behind).
    pub(crate) fn since(&self, seq: u64) -> Vec<LiveEvent> {
        self.lock()
            .events
            .iter()
            .filter(|e| e.seq > seq)
            .cloned()
            .collect()
    }

    fn close(&self) {
        self.lock().channel = Channel::Closed;
    }
}

/// The runs in progress, by id.
#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<String, Arc<LiveRun>>>,
}

impl LiveRuns {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<LiveRun>>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the entry of a starting run.
    pub(crate) fn open(&self, run_id: &str) -> Arc<LiveRun> {
        let run = Arc::new(LiveRun::new());
        self.lock().insert(run_id.to_string(), run.clone());
        run
    }

    /// The entry of a run in progress.
    pub(crate) fn get(&self, run_id: &str) -> Option<Arc<LiveRun>> {
        self.lock().get(run_id).cloned()
    }

    /// Removes a run's entry; its subscribers see the channel close.
    pub(crate) fn close(&self, run_id: &str) {
        if let Some(run) = self.lock().remove(run_id) {
            run.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &'static str) -> LiveEvent {
        LiveEvent {
            seq,
            kind,
            data: "{}".into(),
        }
    }

    #[tokio::test]
    async fn a_subscriber_gets_the_events_so_far_then_each_new_one_then_the_close() {
        let runs = LiveRuns::default();
        let run = runs.open("r");
        run.publish(event(1, "run_started"));
        let (past, receiver) = run.subscribe();
        let mut receiver = receiver.expect("a run in progress has a receiver");
        assert_eq!(past, [event(1, "run_started")]);
        run.publish(event(2, "run_finished"));
        assert_eq!(receiver.recv().await.unwrap(), event(2, "run_finished"));
        runs.close("r");
        assert!(matches!(
            receiver.recv().await,
            Err(broadcast::error::RecvError::Closed)
        ));
        assert!(runs.get("r").is_none());
    }

    #[test]
    fn a_subscriber_after_the_close_gets_the_events_and_no_receiver() {
        let runs = LiveRuns::default();
        let run = runs.open("r");
        run.publish(event(1, "run_started"));
        runs.close("r");
        let (past, receiver) = run.subscribe();
        assert_eq!(past.len(), 1);
        assert!(receiver.is_none());
    }
}
