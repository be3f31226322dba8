//! Executing runs: a slot first (admission), then, as one unit no client can cut short, the
//! run row, the agent loop with the server's sink and the ending; and the shutdown that waits
//! for runs and interrupts the rest.

mod admission;
mod gate;
mod inflight;
pub(crate) mod live;
mod sink;
mod writer;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use corrigible::{Agent, Model, RunError, RunOptions, RunReport, TraceEvent};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::Instrument;

pub(crate) use self::admission::AdmissionLimits;
use self::admission::{Admission, Slot};
use self::gate::GatedModel;
use self::inflight::InFlight;
use self::live::{LiveRun, LiveRuns};
use self::sink::ServerSink;
use self::writer::{QueuedEvent, StoreWriter};
use crate::errors::{ApiError, BadGateway, BadRequest, InternalError, ServiceUnavailable};
use crate::metrics::{Metrics, RunOutcome};
use crate::models::{LimitedModel, ModelFactory};
use crate::request::{RunPlan, protocol_name};
use crate::scheduler::CallScheduler;
use crate::store::{NewRun, RunEnd, RunStore, StoredEvent, now_ms};

/// A run that has started.
pub(crate) struct Started {
    /// Its id.
    pub(crate) run_id: String,
    task: JoinHandle<Result<RunReport, ApiError>>,
}

impl Started {
    /// Waits for the run's end: its report, or the API error it ended with. Dropping the
    /// future leaves the run going on, detached.
    pub(crate) async fn report(self) -> Result<RunReport, ApiError> {
        let run_id = self.run_id;
        match self.task.await {
            Ok(result) => result,
            Err(join) if join.is_cancelled() => Err(ServiceUnavailable::Interrupted(run_id).into()),
            Err(join) => Err(InternalError::new(format!("run {run_id} crashed: {join}")).into()),
        }
    }
}

/// Runs agent loops for the server.
pub(crate) struct Runner {
    agent: Arc<Agent>,
    models: ModelFactory,
    admission: Admission,
    calls: CallScheduler,
    admitted: AtomicU64,
    store: Arc<dyn RunStore>,
    writer: StoreWriter,
    live: LiveRuns,
    inflight: InFlight,
    metrics: Metrics,
    instance: RwLock<Arc<str>>,
}

impl Runner {
    pub(crate) fn new(
        agent: Arc<Agent>,
        models: ModelFactory,
        store: Arc<dyn RunStore>,
        limits: RunnerLimits,
        metrics: Metrics,
        instance: &str,
    ) -> Self {
        Self {
            agent,
            models,
            admission: Admission::new(limits.admission),
            calls: CallScheduler::new(limits.max_concurrent_model_calls),
            admitted: AtomicU64::new(0),
            writer: StoreWriter::spawn(store.clone(), limits.event_queue),
            store,
            live: LiveRuns::default(),
            inflight: InFlight::default(),
            metrics,
            instance: RwLock::new(instance.into()),
        }
    }

    /// The id this instance's runs are stored under.
    pub(crate) fn instance(&self) -> Arc<str> {
        self.instance
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sets the id this instance's runs are stored under (before serving).
    pub(crate) fn set_instance(&self, id: &str) {
        *self.instance.write().unwrap_or_else(|p| p.into_inner()) = id.into();
    }

    /// Stores a run that ended before it was stored (a gateway request), through the same
    /// batching writer as the runs: its start, its trace events, then its end. It waits while
    /// the writer's queue is full, as a run does before its next model call.
    pub(crate) async fn store_finished(
        &self,
        run: NewRun,
        events: Vec<TraceEvent>,
        end: RunEnd,
    ) -> Result<(), String> {
        let run_id = run.id.clone();
        self.writer.room().await;
        self.writer.insert(run).await.map_err(|e| e.to_string())?;
        let live = LiveRun::detached();
        for (n, event) in events.iter().enumerate() {
            let data = serde_json::to_string(event).map_err(|e| e.to_string())?;
            let kind = sink::event_kind(event);
            self.writer.event(QueuedEvent {
                stored: StoredEvent {
                    run_id: run_id.clone(),
                    seq: n as u64 + 1,
                    kind: kind.to_string(),
                    at: now_ms(),
                    data,
                },
                kind,
                live: live.clone(),
            });
        }
        self.writer.end(&run_id, end).await
    }

    /// Trace events waiting to be written.
    pub(crate) fn events_queued(&self) -> usize {
        self.writer.queued()
    }

    /// The agent whose runs this is.
    pub(crate) fn agent(&self) -> &Arc<Agent> {
        &self.agent
    }

    /// The store.
    pub(crate) fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    /// The entry of a run in progress.
    pub(crate) fn live(&self, run_id: &str) -> Option<Arc<LiveRun>> {
        self.live.get(run_id)
    }

    /// Runs in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Requests waiting for a run slot.
    pub(crate) fn queued(&self) -> usize {
        self.admission.queued()
    }

    /// Model calls waiting for their turn.
    pub(crate) fn calls_waiting(&self) -> usize {
        self.calls.waiting()
    }

    /// Whether new runs are refused.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.inflight.is_closed()
    }

    /// Starts one run. It first waits for a slot ([`Admission`]): a client that goes away
    /// meanwhile leaves nothing behind. From then on the run is one unit in its own task that
    /// no client can cut short: it is stored, runs and stores its ending; a client that goes
    /// away leaves it running detached, as an asynchronous run does.
    /// `trace` is the span the run's spans continue (a client's `traceparent`), if any.
    pub(crate) async fn start(
        self: &Arc<Self>,
        plan: RunPlan,
        trace: Option<tracing::Span>,
    ) -> Result<Started, ApiError> {
        if self.is_shutting_down() {
            return Err(ServiceUnavailable::ShuttingDown.into());
        }
        let slot = match self.admission.admit().await {
            Ok(slot) => slot,
            Err(refused) => {
                self.metrics.run_refused(&refused);
                return Err(refused.into());
            }
        };
        let run_id = uuid::Uuid::now_v7().to_string();
        if !self.inflight.enter(&run_id) {
            return Err(ServiceUnavailable::ShuttingDown.into());
        }
        let (stored_tx, stored) = oneshot::channel();
        let this = self.clone();
        let id = run_id.clone();
        let task =
            tokio::spawn(async move { this.execute(&id, plan, trace, slot, stored_tx).await });
        self.inflight.attach(&run_id, task.abort_handle());
        match stored.await {
            Ok(Ok(())) => Ok(Started { run_id, task }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(ServiceUnavailable::Interrupted(run_id).into()),
        }
    }

    /// The run as one unit: its row, the agent loop, its ending; `stored` hears once the row
    /// is written (or why it could not be).
    async fn execute(
        self: Arc<Self>,
        run_id: &str,
        plan: RunPlan,
        trace: Option<tracing::Span>,
        _slot: Slot,
        stored: oneshot::Sender<Result<(), ApiError>>,
    ) -> Result<RunReport, ApiError> {
        self.writer.room().await;
        let priority = self.admitted.fetch_add(1, Ordering::Relaxed);
        let limited: Arc<dyn Model> = Arc::new(LimitedModel::new(
            (self.models)(),
            self.calls.clone(),
            priority,
        ));
        let model: Arc<dyn Model> = Arc::new(GatedModel::new(limited, self.writer.clone()));
        let new_run = NewRun {
            id: run_id.to_string(),
            created_at: now_ms(),
            prompt: plan.prompt.clone(),
            model: model.name().to_string(),
            protocol: protocol_name(self.agent.protocol()).to_string(),
            owner: self.instance().to_string(),
        };
        if let Err(error) = self.writer.insert(new_run).await {
            self.inflight.leave(run_id);
            let error = InternalError::new(format!("run {run_id} could not be stored: {error}"));
            let _ = stored.send(Err(error.clone().into()));
            return Err(error.into());
        }
        let _ = stored.send(Ok(()));
        let live = self.live.open(run_id);
        let sink = ServerSink::new(run_id, self.writer.clone(), live, self.metrics.clone());
        let options = RunOptions {
            run_id: Some(run_id.to_string()),
            sink: Some(Arc::new(sink)),
            tools: plan.tools,
            model: Some(model),
            policy: plan.policy,
        };
        let result = self
            .agent
            .run_with(&plan.prompt, options)
            .instrument(trace.unwrap_or_else(tracing::Span::none))
            .await;
        self.end(run_id, &result).await;
        result.map_err(|error| run_error(run_id, error))
    }

    /// Stores how a run ended, then lets its subscribers go.
    async fn end(&self, run_id: &str, result: &Result<RunReport, RunError>) {
        let (end, outcome) = match result {
            Ok(report) => {
                let reason = report.stop_reason.as_str();
                let outcome = if report.satisfied {
                    RunOutcome::Satisfied(reason)
                } else {
                    RunOutcome::Unsatisfied(reason)
                };
                (RunEnd::Finished(Box::new(report.clone())), outcome)
            }
            Err(error) => {
                let kind = error_kind(error);
                let end = RunEnd::Failed {
                    kind: kind.to_string(),
                    error: error.to_string(),
                };
                (end, RunOutcome::Failed(kind))
            }
        };
        if let Err(error) = self.writer.end(run_id, end).await {
            tracing::error!(run_id, error, "run ended but its ending was not stored");
        }
        self.metrics.run_ended(outcome);
        self.live.close(run_id);
        self.inflight.leave(run_id);
    }

    /// Refuses new runs, lets the runs in flight finish up to `deadline`, then interrupts the
    /// rest and stores them as `interrupted`.
    pub(crate) async fn shutdown(&self, deadline: Duration) {
        self.inflight.close();
        self.admission.close();
        let waiting = self.inflight.len();
        if waiting > 0 {
            tracing::info!(runs = waiting, ?deadline, "waiting for runs in flight");
        }
        if !self.inflight.wait_idle(deadline).await {
            let interrupted = self.inflight.abort_all();
            tracing::warn!(
                runs = interrupted.len(),
                "shutdown deadline reached: interrupting runs"
            );
            for run_id in interrupted {
                if let Err(error) = self.writer.end(&run_id, RunEnd::Interrupted).await {
                    tracing::error!(run_id, error, "could not mark a run interrupted");
                }
                self.metrics.run_ended(RunOutcome::Interrupted);
                self.live.close(&run_id);
            }
        }
        self.writer.flush().await;
    }
}

/// The bounds of a [`Runner`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunnerLimits {
    /// Runs in flight and waiting.
    pub(crate) admission: AdmissionLimits,
    /// Model calls in flight over all runs.
    pub(crate) max_concurrent_model_calls: usize,
    /// Trace events waiting to be written before runs wait.
    pub(crate) event_queue: usize,
}

/// The failure kind stored and sent for a run error.
fn error_kind(error: &RunError) -> &'static str {
    match error {
        RunError::Transport(_) => "transport",
        RunError::Model(_) => "model",
        RunError::InvalidRequest { .. } => "invalid_request",
        RunError::Template(_) => "internal",
    }
}

/// The API error for a run that could not complete.
fn run_error(run_id: &str, error: RunError) -> ApiError {
    let message = error.to_string();
    match error {
        RunError::Transport(_) | RunError::Model(_) => BadGateway {
            kind: error_kind(&error),
            message,
            run_id: run_id.to_string(),
        }
        .into(),
        RunError::InvalidRequest { field, reason } => BadRequest::new(field, reason).into(),
        RunError::Template(_) => InternalError::new(message).into(),
    }
}
