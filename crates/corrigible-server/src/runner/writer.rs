//! The store writer: one task that writes events and run endings in the order they happen,
//! batching events into transactions, and shows each event to live subscribers only once
//! the store holds it.
//!
//! `TraceSink::event` is synchronous, so it only queues. The queue is bounded by
//! backpressure: a run waits before each model call (and a new run before it starts) while
//! more than `capacity` events wait to be written, so at most `capacity` plus one step's
//! events per run in flight are ever queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::{Notify, mpsc, oneshot};

use super::live::{LiveEvent, LiveRun};
use crate::store::{NewRun, RunEnd, RunStore, StoreError, StoredEvent, now_ms};

/// Most operations written in one go.
const BATCH: usize = 512;

/// One event on its way to the store, then to its run's live subscribers.
pub(crate) struct QueuedEvent {
    pub(crate) stored: StoredEvent,
    pub(crate) kind: &'static str,
    pub(crate) live: Arc<LiveRun>,
}

enum Op {
    Insert {
        run: NewRun,
        done: oneshot::Sender<Result<(), StoreError>>,
    },
    Event(QueuedEvent),
    End {
        run_id: String,
        end: RunEnd,
        done: oneshot::Sender<Result<(), String>>,
    },
    Flush(oneshot::Sender<()>),
}

/// Events queued and not yet written, and a signal when they drop under the bound.
struct Backlog {
    queued: AtomicUsize,
    capacity: usize,
    room: Notify,
}

/// A handle to the writer task.
#[derive(Clone)]
pub(crate) struct StoreWriter {
    tx: mpsc::UnboundedSender<Op>,
    backlog: Arc<Backlog>,
}

impl StoreWriter {
    /// Starts the writer task (needs a Tokio runtime); runs wait while more than `capacity`
    /// events are queued.
    pub(crate) fn spawn(store: Arc<dyn RunStore>, capacity: usize) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(Backlog {
            queued: AtomicUsize::new(0),
            capacity: capacity.max(1),
            room: Notify::new(),
        });
        tokio::spawn(write_loop(store, rx, backlog.clone()));
        Self { tx, backlog }
    }

    /// Queues one event.
    pub(crate) fn event(&self, event: QueuedEvent) {
        self.backlog.queued.fetch_add(1, Ordering::AcqRel);
        if self.tx.send(Op::Event(event)).is_err() {
            self.backlog.queued.fetch_sub(1, Ordering::AcqRel);
            tracing::error!("run store writer is gone; an event was not stored");
        }
    }

    /// Events queued and not yet written.
    pub(crate) fn queued(&self) -> usize {
        self.backlog.queued.load(Ordering::Acquire)
    }

    /// Waits until the queue is under its bound.
    pub(crate) async fn room(&self) {
        loop {
            let room = self.backlog.room.notified();
            if self.queued() < self.backlog.capacity || self.tx.is_closed() {
                return;
            }
            room.await;
        }
    }

    /// Records a run that is starting; waits until it is written. Every write goes through
    /// this one task, so that the process never contends with itself for SQLite's write lock.
    pub(crate) async fn insert(&self, run: NewRun) -> Result<(), StoreError> {
        let (done, wait) = oneshot::channel();
        self.tx
            .send(Op::Insert { run, done })
            .map_err(|_| StoreError::WriterStopped)?;
        wait.await.map_err(|_| StoreError::WriterStopped)?
    }

    /// Records how a run ended, after every event queued before; waits until it is written.
    pub(crate) async fn end(&self, run_id: &str, end: RunEnd) -> Result<(), String> {
        let (done, wait) = oneshot::channel();
        self.tx
            .send(Op::End {
                run_id: run_id.to_string(),
                end,
                done,
            })
            .map_err(|_| "run store writer is gone".to_string())?;
        wait.await
            .map_err(|_| "run store writer stopped".to_string())?
    }

    /// Waits until everything queued so far is written.
    pub(crate) async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Op::Flush(done)).is_ok() {
            let _ = wait.await;
        }
    }
}

/// Takes what is queued, up to [`BATCH`] operations at a time: first stores the batch's new
/// runs, then all its events in one transaction, then its run endings and flushes in order.
/// A run's events are queued only after it is stored, and before its ending, so that order
/// holds for every run, and a batch of many runs costs one event transaction, not one per
/// ending.
async fn write_loop(
    store: Arc<dyn RunStore>,
    mut rx: mpsc::UnboundedReceiver<Op>,
    backlog: Arc<Backlog>,
) {
    let mut events = Vec::new();
    let mut after = Vec::new();
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        for op in batch.drain(..) {
            match op {
                Op::Insert { run, done } => {
                    let _ = done.send(store.insert_run(&run).await);
                }
                Op::Event(event) => events.push(event),
                other => after.push(other),
            }
        }
        write_events(store.as_ref(), &mut events, &backlog).await;
        for op in after.drain(..) {
            match op {
                Op::End { run_id, end, done } => {
                    let result = store
                        .end_run(&run_id, &end, now_ms())
                        .await
                        .map_err(|e| e.to_string());
                    if let Err(error) = &result {
                        tracing::error!(run_id, error, "could not store the end of a run");
                    }
                    let _ = done.send(result);
                }
                Op::Flush(done) => {
                    let _ = done.send(());
                }
                Op::Insert { .. } | Op::Event(_) => {}
            }
        }
    }
}

/// Writes the events in one transaction, then publishes them to their live subscribers.
/// Events the store refused are not shown to anyone.
async fn write_events(store: &dyn RunStore, events: &mut Vec<QueuedEvent>, backlog: &Backlog) {
    if events.is_empty() {
        return;
    }
    let rows: Vec<StoredEvent> = events.iter().map(|e| e.stored.clone()).collect();
    let written = match store.append_events(&rows).await {
        Ok(()) => true,
        Err(error) => {
            tracing::error!(%error, count = rows.len(), "could not store trace events");
            false
        }
    };
    let count = events.len();
    for (event, row) in events.drain(..).zip(rows) {
        if written {
            event.live.publish(LiveEvent {
                seq: row.seq,
                kind: event.kind,
                data: row.data.into(),
            });
        }
    }
    backlog.queued.fetch_sub(count, Ordering::AcqRel);
    backlog.room.notify_waiters();
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use async_trait::async_trait;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::store::{NewRun, RunRecord, RunSummary, SqliteStore, StoreError};

    /// A store whose event writes wait for a permit, to hold the writer mid-write.
    struct Held {
        inner: SqliteStore,
        permits: Semaphore,
    }

    #[async_trait]
    impl RunStore for Held {
        async fn insert_run(&self, run: &NewRun) -> Result<(), StoreError> {
            self.inner.insert_run(run).await
        }
        async fn append_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
            if let Ok(permit) = self.permits.acquire().await {
                permit.forget();
            }
            self.inner.append_events(events).await
        }
        async fn end_run(&self, id: &str, end: &RunEnd, at: i64) -> Result<(), StoreError> {
            self.inner.end_run(id, end, at).await
        }
        async fn heartbeat(&self, instance: &str) -> Result<(), StoreError> {
            self.inner.heartbeat(instance).await
        }
        async fn interrupt_orphans(&self, me: &str, lease_ms: i64) -> Result<u64, StoreError> {
            self.inner.interrupt_orphans(me, lease_ms).await
        }
        async fn interrupt_owned(&self, me: &str) -> Result<u64, StoreError> {
            self.inner.interrupt_owned(me).await
        }
        async fn list_runs(
            &self,
            limit: u32,
            before: Option<&str>,
        ) -> Result<Vec<RunSummary>, StoreError> {
            self.inner.list_runs(limit, before).await
        }
        async fn get_run(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
            self.inner.get_run(id).await
        }
        async fn events(&self, id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
            self.inner.events(id, after).await
        }
        fn breakers(&self) -> Arc<dyn corrigible::policy::BreakerStore> {
            self.inner.breakers()
        }
    }

    fn queued(live: &Arc<LiveRun>, seq: u64) -> QueuedEvent {
        QueuedEvent {
            stored: StoredEvent {
                run_id: "r".into(),
                seq,
                kind: "decision".into(),
                at: now_ms(),
                data: format!("{{\"seq\":{seq}}}"),
            },
            kind: "decision",
            live: live.clone(),
        }
    }

    #[tokio::test]
    async fn events_are_shown_only_once_stored_and_a_full_queue_holds_runs_back() {
        let inner = SqliteStore::open("sqlite::memory:")
            .await
            .expect("store opens");
        let run = NewRun {
            id: "r".into(),
            created_at: now_ms(),
            prompt: "p".into(),
            model: "m".into(),
            protocol: "json".into(),
            owner: "me".into(),
        };
        inner.insert_run(&run).await.expect("run inserted");
        let store = Arc::new(Held {
            inner,
            permits: Semaphore::new(0),
        });
        let writer = StoreWriter::spawn(store.clone(), 4);
        let lives = super::super::live::LiveRuns::default();
        let live = lives.open("r");
        for seq in 1..=6 {
            writer.event(queued(&live, seq));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        // The store has not written anything: no subscriber sees an event, and the queue,
        // above its bound, holds runs back.
        assert!(live.subscribe().0.is_empty());
        assert_eq!(writer.queued(), 6);
        let waiting = tokio::time::timeout(Duration::from_millis(100), writer.room()).await;
        assert!(waiting.is_err(), "a run went on past a full queue");
        store.permits.add_permits(100);
        tokio::time::timeout(Duration::from_secs(5), writer.room())
            .await
            .expect("room once the store writes");
        writer.flush().await;
        let shown: Vec<u64> = live.subscribe().0.iter().map(|e| e.seq).collect();
        assert_eq!(shown, [1, 2, 3, 4, 5, 6]);
        assert_eq!(store.events("r", 0).await.expect("events").len(), 6);
        assert_eq!(writer.queued(), 0);
    }
}
