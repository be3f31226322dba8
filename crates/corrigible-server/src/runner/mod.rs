//! Executing runs: the run row first, then the agent loop in its own task with the server's
//! sink, then the ending; and the shutdown that waits for runs and interrupts the rest.

mod gate;
mod inflight;
pub(crate) mod live;
mod sink;
mod writer;

use std::sync::{Arc, RwLock};
use std::time::Duration;

use corrigible::{Agent, Model, RunError, RunOptions, RunReport};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use self::gate::GatedModel;
use self::inflight::InFlight;
use self::live::{LiveRun, LiveRuns};
use self::sink::ServerSink;
use self::writer::StoreWriter;
use crate::errors::{ApiError, BadGateway, BadRequest, InternalError, ServiceUnavailable};
use crate::metrics::{Metrics, RunOutcome};
use crate::models::{LimitedModel, ModelFactory};
use crate::request::{RunPlan, protocol_name};
use crate::store::{NewRun, RunEnd, RunStore, now_ms};

/// A run that has started.
pub(crate) struct Started {
    /// Its id.
    pub(crate) run_id: String,
    task: JoinHandle<Result<RunReport, RunError>>,
}

impl Started {
    /// Waits for the run's end: its report, or the API error it ended with.
    pub(crate) async fn report(self) -> Result<RunReport, ApiError> {
        let run_id = self.run_id;
        match self.task.await {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(error)) => Err(run_error(&run_id, error)),
            Err(join) if join.is_cancelled() => Err(ServiceUnavailable::Interrupted(run_id).into()),
            Err(join) => Err(InternalError::new(format!("run {run_id} crashed: {join}")).into()),
        }
    }
}

/// Runs agent loops for the server.
pub(crate) struct Runner {
    agent: Arc<Agent>,
    models: ModelFactory,
    permits: Arc<Semaphore>,
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
        limits: (usize, usize),
        metrics: Metrics,
        instance: &str,
    ) -> Self {
        let (max_concurrent_model_calls, event_queue) = limits;
        Self {
            agent,
            models,
            permits: Arc::new(Semaphore::new(max_concurrent_model_calls.max(1))),
            writer: StoreWriter::spawn(store.clone(), event_queue),
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

    /// Whether new runs are refused.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.inflight.is_closed()
    }

    /// Starts one run: stores it, then runs it in its own task (so it finishes even when the
    /// client goes away) that stores its ending.
    pub(crate) async fn start(self: &Arc<Self>, plan: RunPlan) -> Result<Started, ApiError> {
        let run_id = uuid::Uuid::now_v7().to_string();
        if !self.inflight.enter(&run_id) {
            return Err(ServiceUnavailable::ShuttingDown.into());
        }
        self.writer.room().await;
        let limited: Arc<dyn Model> =
            Arc::new(LimitedModel::new((self.models)(), self.permits.clone()));
        let model: Arc<dyn Model> = Arc::new(GatedModel::new(limited, self.writer.clone()));
        let new_run = NewRun {
            id: run_id.clone(),
            created_at: now_ms(),
            prompt: plan.prompt.clone(),
            model: model.name().to_string(),
            protocol: protocol_name(self.agent.protocol()).to_string(),
            owner: self.instance().to_string(),
        };
        if let Err(error) = self.writer.insert(new_run).await {
            self.inflight.leave(&run_id);
            return Err(error.into());
        }
        self.metrics.run_started();
        let live = self.live.open(&run_id);
        let sink = ServerSink::new(&run_id, self.writer.clone(), live, self.metrics.clone());
        let options = RunOptions {
            run_id: Some(run_id.clone()),
            sink: Some(Arc::new(sink)),
            tools: plan.tools,
            model: Some(model),
            policy: plan.policy,
        };
        let this = self.clone();
        let id = run_id.clone();
        let task = tokio::spawn(async move {
            let result = this.agent.run_with(&plan.prompt, options).await;
            this.end(&id, &result).await;
            result
        });
        self.inflight.attach(&run_id, task.abort_handle());
        Ok(Started { run_id, task })
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

/// The failure kind stored and sent for a run error.
fn error_kind(error: &RunError) -> &'static str {
    match error {
        RunError::Transport(_) => "transport",
        RunError::Model(_) => "model",
        RunError::InvalidRequest(_) => "invalid_request",
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
        RunError::InvalidRequest(detail) => {
            let (field, message) = detail.split_once(": ").unwrap_or(("body", &detail));
            BadRequest::new(field, message).into()
        }
        RunError::Template(_) => InternalError::new(message).into(),
    }
}
