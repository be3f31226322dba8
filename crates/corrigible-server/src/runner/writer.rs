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
use crate::store::{Ending, NewRun, RunEnd, RunStore, StoreError, StoredEvent, now_ms};

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

/// Takes what is queued, up to [`BATCH`] operations at a time, and stores its new runs,
/// events and endings in one transaction; interruptions and flushes follow, in order. A
/// run's events are queued only after it is stored, and its ending after its events, so
/// that order holds for every run, and a batch of many runs costs one transaction.
async fn write_loop(
    store: Arc<dyn RunStore>,
    mut rx: mpsc::UnboundedReceiver<Op>,
    backlog: Arc<Backlog>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut pending = Pending::default();
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        for op in batch.drain(..) {
            pending.push(op);
        }
        pending.write(store.as_ref(), &backlog).await;
    }
}

/// The writes of one batch, apart by kind, in the order each kind arrived.
#[derive(Default)]
struct Pending {
    runs: Vec<NewRun>,
    inserted: Vec<oneshot::Sender<Result<(), StoreError>>>,
    rows: Vec<StoredEvent>,
    shown: Vec<(&'static str, Arc<LiveRun>)>,
    ends: Vec<Ending>,
    ended: Vec<oneshot::Sender<Result<(), String>>>,
    /// Interruptions (they count the run's stored events) and flushes, after the rest.
    after: Vec<Op>,
}

impl Pending {
    fn push(&mut self, op: Op) {
        match op {
            Op::Insert { run, done } => {
                self.runs.push(run);
                self.inserted.push(done);
            }
            Op::Event(event) => {
                self.rows.push(event.stored);
                self.shown.push((event.kind, event.live));
            }
            Op::End { run_id, end, done } if end != RunEnd::Interrupted => {
                self.ends.push(Ending {
                    run_id,
                    end,
                    at: now_ms(),
                });
                self.ended.push(done);
            }
            other => self.after.push(other),
        }
    }

    /// Writes the batch in one transaction; when that fails, writes each operation on its
    /// own, so that one bad row fails only its own operation. Events are shown to live
    /// subscribers only once stored; those the store refused are shown to no one.
    async fn write(&mut self, store: &dyn RunStore, backlog: &Backlog) {
        let count = self.rows.len();
        if !(self.runs.is_empty() && self.rows.is_empty() && self.ends.is_empty()) {
            match store.write_batch(&self.runs, &self.rows, &self.ends).await {
                Ok(()) => {
                    self.runs.clear();
                    for done in self.inserted.drain(..) {
                        let _ = done.send(Ok(()));
                    }
                    self.publish();
                    self.ends.clear();
                    for done in self.ended.drain(..) {
                        let _ = done.send(Ok(()));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "a batch of writes failed; writing them one by one");
                    self.write_each(store).await;
                }
            }
        }
        if count > 0 {
            backlog.queued.fetch_sub(count, Ordering::AcqRel);
            backlog.room.notify_waiters();
        }
        for op in self.after.drain(..) {
            match op {
                Op::End { run_id, end, done } => {
                    let _ = done.send(end_run(store, &run_id, &end).await);
                }
                Op::Flush(done) => {
                    let _ = done.send(());
                }
                Op::Insert { .. } | Op::Event(_) => {}
            }
        }
    }

    async fn write_each(&mut self, store: &dyn RunStore) {
        for (run, done) in self.runs.drain(..).zip(self.inserted.drain(..)) {
            let _ = done.send(store.insert_run(&run).await);
        }
        match store.append_events(&self.rows).await {
            Ok(()) => self.publish(),
            Err(error) => {
                tracing::error!(%error, count = self.rows.len(), "could not store trace events");
                self.rows.clear();
                self.shown.clear();
            }
        }
        for (ending, done) in self.ends.drain(..).zip(self.ended.drain(..)) {
            let _ = done.send(end_run(store, &ending.run_id, &ending.end).await);
        }
    }

    fn publish(&mut self) {
        for (row, (kind, live)) in self.rows.drain(..).zip(self.shown.drain(..)) {
            live.publish(LiveEvent {
                seq: row.seq,
                kind,
                data: row.data.into(),
            });
        }
    }
}

async fn end_run(store: &dyn RunStore, run_id: &str, end: &RunEnd) -> Result<(), String> {
    let result = store
        .end_run(run_id, end, now_ms())
        .await
        .map_err(|e| e.to_string());
    if let Err(error) = &result {
        tracing::error!(run_id, error, "could not store the end of a run");
    }
    result
}

#[cfg(test)]
pub(super) mod tests {
    use std::time::Duration;

    use async_trait::async_trait;
    use tokio::sync::Semaphore;

    use super::*;
    use crate::store::{NewRun, RunFilter, RunRecord, RunSummary, SqliteStore, StoreError};

    /// A store whose event writes wait for a permit, to hold the writer mid-write.
    pub(in crate::runner) struct Held {
        inner: SqliteStore,
        permits: Semaphore,
    }

    impl Held {
        /// A held store in memory with the run `r`.
        pub(in crate::runner) async fn with_run() -> Arc<Self> {
            let inner = SqliteStore::open("sqlite::memory:")
                .await
                .expect("store opens");
            inner.insert_run(&new_run("r")).await.expect("run inserted");
            Arc::new(Held {
                inner,
                permits: Semaphore::new(0),
            })
        }

        /// Lets the writer go on.
        pub(in crate::runner) fn release(&self) {
            self.permits.add_permits(1000);
        }
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
        async fn write_batch(
            &self,
            runs: &[NewRun],
            events: &[StoredEvent],
            ends: &[Ending],
        ) -> Result<(), StoreError> {
            if !events.is_empty()
                && let Ok(permit) = self.permits.acquire().await
            {
                permit.forget();
            }
            self.inner.write_batch(runs, events, ends).await
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
            filter: &RunFilter,
        ) -> Result<Vec<RunSummary>, StoreError> {
            self.inner.list_runs(limit, before, filter).await
        }
        async fn corrections_over_time(
            &self,
            window: &crate::store::Window,
        ) -> Result<Vec<crate::store::CorrectionCount>, StoreError> {
            self.inner.corrections_over_time(window).await
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

    pub(in crate::runner) fn queued(live: &Arc<LiveRun>, seq: u64) -> QueuedEvent {
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

    fn new_run(id: &str) -> NewRun {
        NewRun {
            id: id.into(),
            created_at: now_ms(),
            prompt: "p".into(),
            model: "m".into(),
            protocol: "json".into(),
            owner: "me".into(),
        }
    }

    #[tokio::test]
    async fn events_are_shown_only_once_stored_and_a_full_queue_holds_runs_back() {
        let store = Held::with_run().await;
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
        store.release();
        tokio::time::timeout(Duration::from_secs(5), writer.room())
            .await
            .expect("room once the store writes");
        writer.flush().await;
        let shown: Vec<u64> = live.subscribe().0.iter().map(|e| e.seq).collect();
        assert_eq!(shown, [1, 2, 3, 4, 5, 6]);
        assert_eq!(store.events("r", 0).await.expect("events").len(), 6);
        assert_eq!(writer.queued(), 0);
    }

    #[tokio::test]
    async fn a_failing_batch_is_written_op_by_op_so_one_bad_row_fails_only_itself() {
        let store = Held::with_run().await;
        let writer = StoreWriter::spawn(store.clone(), 64);
        let lives = super::super::live::LiveRuns::default();
        let live = lives.open("r");
        // The first event holds the writer, so that what follows is queued as one batch.
        writer.event(queued(&live, 1));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let duplicate = tokio::spawn({
            let writer = writer.clone();
            async move { writer.insert(new_run("r")).await }
        });
        let fresh = tokio::spawn({
            let writer = writer.clone();
            async move { writer.insert(new_run("s")).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        writer.event(queued(&live, 2));
        let failed = RunEnd::Failed {
            kind: "transport".into(),
            error: "refused".into(),
        };
        let ended = tokio::spawn({
            let writer = writer.clone();
            async move { writer.end("r", failed).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        store.release();
        assert!(duplicate.await.expect("joins").is_err());
        assert!(fresh.await.expect("joins").is_ok());
        assert_eq!(ended.await.expect("joins"), Ok(()));
        writer.flush().await;
        let shown: Vec<u64> = live.subscribe().0.iter().map(|e| e.seq).collect();
        assert_eq!(shown, [1, 2]);
        assert_eq!(store.events("r", 0).await.expect("events").len(), 2);
        let run = store.get_run("r").await.expect("read").expect("stored");
        assert_eq!(run.summary.error.as_deref(), Some("refused"));
        assert!(store.get_run("s").await.expect("read").is_some());
        assert_eq!(writer.queued(), 0);
    }
}
