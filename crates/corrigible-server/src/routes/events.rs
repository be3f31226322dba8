//! `GET /v1/runs/{id}/events`: Server-Sent Events, one per trace event as it happens. A run
//! in progress sends its events so far, then each new one; a finished run replays its
//! events. Either way the stream ends with an `end` event `{"status": …}` and closes.
//! `Last-Event-ID` resumes after that sequence number.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use futures_util::Stream;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

use crate::errors::{ApiError, NotFound};
use crate::runner::live::{LiveEvent, LiveRun};
use crate::state::AppState;
use crate::store::RunStatus;

type EventStream =
    Sse<KeepAliveStream<std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>>>>;

/// `GET /v1/runs/{id}/events`.
pub(super) async fn stream(
    State(state): State<AppState>,
    Path(id): Path<String>,
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
            let events = state.store().events(&id, after).await?;
            tokio::spawn(async move {
                for e in events {
                    let event = sse(e.seq, &e.kind, &e.data);
                    if tx.send(event).await.is_err() {
                        return;
                    }
                }
                let _ = tx.send(end(record.summary.status)).await;
            });
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
