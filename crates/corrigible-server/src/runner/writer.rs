//! The store writer: one task that writes events and run endings in the order they happen,
//! batching events into transactions. `TraceSink::event` is synchronous; it only queues.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::store::{RunEnd, RunStore, StoredEvent, now_ms};

/// Most operations written in one go.
const BATCH: usize = 512;

enum Op {
    Event(StoredEvent),
    End {
        run_id: String,
        end: RunEnd,
        done: oneshot::Sender<Result<(), String>>,
    },
    Flush(oneshot::Sender<()>),
}

/// A handle to the writer task.
#[derive(Clone)]
pub(crate) struct StoreWriter {
    tx: mpsc::UnboundedSender<Op>,
}

impl StoreWriter {
    /// Starts the writer task (needs a Tokio runtime).
    pub(crate) fn spawn(store: Arc<dyn RunStore>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(store, rx));
        Self { tx }
    }

    /// Queues one event.
    pub(crate) fn event(&self, event: StoredEvent) {
        if self.tx.send(Op::Event(event)).is_err() {
            tracing::error!("run store writer is gone; an event was not stored");
        }
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

async fn write_loop(store: Arc<dyn RunStore>, mut rx: mpsc::UnboundedReceiver<Op>) {
    let mut events = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        for op in batch {
            match op {
                Op::Event(event) => events.push(event),
                Op::End { run_id, end, done } => {
                    write_events(store.as_ref(), &mut events).await;
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
                    write_events(store.as_ref(), &mut events).await;
                    let _ = done.send(());
                }
            }
        }
        write_events(store.as_ref(), &mut events).await;
    }
}

async fn write_events(store: &dyn RunStore, events: &mut Vec<StoredEvent>) {
    if events.is_empty() {
        return;
    }
    if let Err(error) = store.append_events(events).await {
        tracing::error!(%error, count = events.len(), "could not store trace events");
    }
    events.clear();
}
