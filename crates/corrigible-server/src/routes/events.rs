//! `GET /v1/runs/{id}/events`: Server-Sent Events, one per trace event as it happens. A run
//! in progress sends its events so far, then each new one; a finished run replays its
//! events. A run in progress on another instance sharing the store is followed by polling
//! the store. Either way the stream ends with an `end` event `{"status": …}` and closes.
//! `Last-Event-ID` resumes after that sequence number.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use super::run_path::RunPath;
use crate::errors::{ApiError, NotFound};
use crate::runner::live::{LiveEvent, LiveRun};
use crate::state::AppState;
use crate::store::RunStatus;

/// How often a run executing on another instance is polled in the store.
const POLL: Duration = Duration::from_millis(100);

type EventStream =
    Sse<KeepAliveStream<std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>>>>;

/// `GET /v1/runs/{id}/events`.
pub(super) async fn stream(
    State(state): State<AppState>,
    RunPath(id): RunPath,
    headers: HeaderMap,
) -> Result<EventStream, ApiError> {
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let (tx, rx) = mpsc::channel::<Event>(64);
    match state.runner.live(&id) {
        Some(live) => {
            tokio::spawn(follow_live(state, id, live, after, tx));
        }
        None => {
            let record = state
                .store()
                .get_run(&id)
                .await?
                .ok_or_else(|| NotFound::Run(id.clone()))?;
            tokio::spawn(follow_stored(state, id, record.summary.status, after, tx));
        }
    }
    let stream = ReceiverStream::new(rx).map(Ok::<_, Infallible>);
    Ok(Sse::new(Box::pin(stream) as _).keep_alive(KeepAlive::default()))
}

/// Sends a live run's events so far, then each new one, until it ends.
async fn follow_live(
    state: AppState,
    id: String,
    live: Arc<LiveRun>,
    after: u64,
    tx: mpsc::Sender<Event>,
) {
    let (past, receiver) = live.subscribe();
    let mut last = after;
    let mut status = None;
    for e in past.iter().filter(|e| e.seq > after) {
        if !send(&tx, e, &mut last, &mut status).await {
            return;
        }
    }
    // Follow until the run's entry is closed, which happens once the store holds its
    // ending: a client that reads the run after `end` sees it ended.
    if let Some(mut receiver) = receiver {
        loop {
            match receiver.recv().await {
                Ok(e) if e.seq <= last => {}
                Ok(e) => {
                    if !send(&tx, &e, &mut last, &mut status).await {
                        return;
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    for e in live.since(last) {
                        if !send(&tx, &e, &mut last, &mut status).await {
                            return;
                        }
                    }
                }
                Err(RecvError::Closed) => break,
            }
        }
    }
    let status = match state.store().get_run(&id).await {
        Ok(Some(record)) if record.summary.status != RunStatus::Running => record.summary.status,
        _ => status.unwrap_or(RunStatus::Interrupted),
    };
    let _ = tx.send(end(status)).await;
}

/// Sends a stored run's events; while it is `running` (on another instance), polls the store
/// for new ones until it ends. Events are stored before its ending, so none is missed.
async fn follow_stored(
    state: AppState,
    id: String,
    mut status: RunStatus,
    mut last: u64,
    tx: mpsc::Sender<Event>,
) {
    loop {
        let events = match state.store().events(&id, last).await {
            Ok(events) => events,
            Err(error) => {
                tracing::error!(%error, run_id = id, "could not read a run's events");
                return;
            }
        };
        for e in events {
            last = e.seq;
            if tx.send(sse(e.seq, &e.kind, &e.data)).await.is_err() {
                return;
            }
        }
        if status != RunStatus::Running {
            let _ = tx.send(end(status)).await;
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            () = tx.closed() => return,
        }
        status = match state.store().get_run(&id).await {
            Ok(Some(record)) => record.summary.status,
            Ok(None) => RunStatus::Interrupted,
            Err(error) => {
                tracing::error!(%error, run_id = id, "could not read a run");
                return;
            }
        };
    }
}

/// Sends one event; `false` when the client is gone.
async fn send(
    tx: &mpsc::Sender<Event>,
    e: &LiveEvent,
    last: &mut u64,
    status: &mut Option<RunStatus>,
) -> bool {
    *last = e.seq;
    if e.is_terminal() {
        *status = Some(if e.kind == "run_finished" {
            RunStatus::Finished
        } else {
            RunStatus::Failed
        });
    }
    tx.send(sse(e.seq, e.kind, &e.data)).await.is_ok()
}

fn sse(seq: u64, kind: &str, data: &str) -> Event {
    Event::default().id(seq.to_string()).event(kind).data(data)
}

fn end(status: RunStatus) -> Event {
    Event::default()
        .event("end")
        .data(json!({"status": status.as_str()}).to_string())
}
