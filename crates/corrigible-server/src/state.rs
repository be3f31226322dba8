//! The state shared by every route.

use std::sync::Arc;

use corrigible::Agent;

use crate::config::ServerConfig;
use crate::gateway::Gateway;
use crate::metrics::Metrics;
use crate::models::ModelFactory;
use crate::runner::{AdmissionLimits, Runner, RunnerLimits};
use crate::store::RunStore;

/// Everything the routes share: the agent (tools, policy, protocol, shared breakers), the
/// model factory, the store, the metrics and the request settings. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub(crate) runner: Arc<Runner>,
    pub(crate) metrics: Metrics,
    pub(crate) api_key: Option<Arc<str>>,
    pub(crate) body_limit: usize,
    pub(crate) body_read_timeout: std::time::Duration,
    pub(crate) model_name: Arc<str>,
    pub(crate) gateway: Option<Arc<Gateway>>,
}

impl AppState {
    /// Builds the state. `models` is called once per run (so `replay:FILE` restarts for every
    /// run); `config` gives the API key, the body's limits, and the run and model-call limits.
    /// Starts the store writer task, so it must be called inside a Tokio runtime.
    pub fn new(
        agent: Arc<Agent>,
        models: ModelFactory,
        store: Arc<dyn RunStore>,
        config: &ServerConfig,
    ) -> Self {
        let metrics = Metrics::new();
        let model_name: Arc<str> = models().name().into();
        let instance = config
            .instance_id
            .clone()
            .unwrap_or_else(|| format!("unbound-{}", uuid::Uuid::now_v7()));
        let runner = Runner::new(
            agent,
            models,
            store,
            RunnerLimits {
                admission: AdmissionLimits {
                    max_runs: config.max_runs,
                    max_queued: config.max_queued_runs,
                    queue_timeout: config.queue_timeout,
                },
                max_concurrent_model_calls: config.max_concurrent_model_calls,
                event_queue: config.event_queue,
            },
            metrics.clone(),
            &instance,
        );
        Self {
            runner: Arc::new(runner),
            metrics,
            api_key: config
                .api_key
                .as_deref()
                .filter(|k| !k.is_empty())
                .map(Arc::from),
            body_limit: config.body_limit,
            body_read_timeout: config.body_read_timeout,
            model_name,
            gateway: None,
        }
    }

    /// The same state, its metrics also recorded as OpenTelemetry instruments on `meter`,
    /// which exports them as its provider is set up.
    pub fn with_meter(self, meter: opentelemetry::metrics::Meter) -> Self {
        self.metrics.export(meter);
        self
    }

    /// The same state that also answers `POST /v1/chat/completions` and `GET /v1/models`
    /// through `gateway`.
    pub fn with_gateway(mut self, gateway: Gateway) -> Self {
        self.gateway = Some(Arc::new(gateway));
        self
    }

    /// The agent.
    pub fn agent(&self) -> &Arc<Agent> {
        self.runner.agent()
    }

    /// The run store.
    pub fn store(&self) -> &Arc<dyn RunStore> {
        self.runner.store()
    }

    /// The id this instance's runs are stored under in a shared store.
    pub fn instance_id(&self) -> String {
        self.runner.instance().to_string()
    }

    /// Trace events waiting to be written to the store.
    pub fn events_queued(&self) -> usize {
        self.runner.events_queued()
    }

    /// Runs executing now.
    pub fn runs_in_flight(&self) -> usize {
        self.runner.in_flight()
    }

    /// Requests waiting for a run slot.
    pub fn runs_queued(&self) -> usize {
        self.runner.queued()
    }

    /// What the gauges of `/metrics` show, read from the runner at scrape time.
    pub(crate) fn load(&self) -> crate::metrics::Load {
        crate::metrics::Load {
            runs_in_flight: self.runner.in_flight(),
            runs_queued: self.runner.queued(),
            calls_waiting: self.runner.calls_waiting(),
            events_queued: self.runner.events_queued(),
        }
    }

    /// Whether the server is shutting down (new runs get 503).
    pub fn is_shutting_down(&self) -> bool {
        self.runner.is_shutting_down()
    }

    /// Stops accepting runs, lets those in flight finish up to `deadline`, then interrupts the
    /// rest (stored as `interrupted`). [`serve`](crate::serve) calls it on SIGTERM/SIGINT.
    pub async fn shutdown(&self, deadline: std::time::Duration) {
        self.runner.shutdown(deadline).await;
    }
}
