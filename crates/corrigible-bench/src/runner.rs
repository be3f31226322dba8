//! Runs every task under every policy and model variant, sequentially, and grades each run.

use std::sync::Arc;
use std::time::Instant;

use corrigible::{Agent, Model, ModelError, Protocol, RunError, RunOptions};
use futures_util::stream::{self, StreamExt};
use indicatif::ProgressBar;

use crate::error::BenchError;
use crate::faults::{FaultConfig, FaultyModel};
use crate::metrics::{BenchReport, ColumnReport, TaskResult};
use crate::policy::PolicyKind;
use crate::progress;
use crate::suite::{Suite, SuiteSpec, Task};

pub use corrigible::ModelFactory;

/// One model column group: the embedded model in one constraint mode, or any other model.
#[derive(Clone)]
pub struct Variant {
    /// The constraint mode (`off`, `envelope`, `schema`), or `None` where modes do not apply.
    pub mode: Option<String>,
    /// The model for each run.
    pub factory: ModelFactory,
    /// The model for `bare` runs when it differs (the embedded model decoding free text with
    /// no thought phase); `factory` otherwise.
    pub bare: Option<ModelFactory>,
}

impl Variant {
    /// A variant where constraint modes do not apply.
    pub fn single(factory: ModelFactory) -> Self {
        Self {
            mode: None,
            factory,
            bare: None,
        }
    }

    /// The same variant with its own model for `bare` runs.
    pub fn with_bare(self, bare: ModelFactory) -> Self {
        Self {
            bare: Some(bare),
            ..self
        }
    }

    /// The mode label a run of `policy` gets: `bare` runs once per task, on the first
    /// variant, under the label `-`.
    fn label_for(&self, policy: PolicyKind) -> &str {
        if policy.is_agent() {
            self.mode_label()
        } else {
            "-"
        }
    }

    fn mode_label(&self) -> &str {
        self.mode.as_deref().unwrap_or("-")
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The suite.
    pub suite: SuiteSpec,
    /// Leave out the first N tasks (per BFCL category), before `limit` applies.
    pub skip: usize,
    /// Keep the first N tasks (per BFCL category).
    pub limit: Option<usize>,
    /// The policies compared, in column order.
    pub policies: Vec<PolicyKind>,
    /// The decision protocol.
    pub protocol: Protocol,
    /// Fault injection, if any.
    pub faults: Option<FaultConfig>,
    /// Whether to draw a progress bar on stderr (when it is a terminal).
    pub progress: bool,
    /// The model's name for the report.
    pub model_name: String,
    /// The worked examples the agent is shown.
    pub examples: Examples,
    /// The verifier of the `verify` policy (default: the run's own model).
    pub verifier: Option<corrigible::Verifier>,
    /// Tasks run at once (at least one); results are reported in task order.
    pub concurrency: usize,
}

/// Which worked examples a bench shows the agent.
#[derive(Debug, Clone, Default)]
pub enum Examples {
    /// The built-in ones for the task's tools, as `corrigible run` shows them (none for BFCL).
    #[default]
    Builtin,
    /// None.
    None,
    /// These, for every task.
    Given(Vec<corrigible::WorkedExample>),
}

impl Examples {
    fn for_tools(&self, names: &[&str]) -> Vec<corrigible::WorkedExample> {
        match self {
            Examples::Builtin => corrigible_tools::builtin_examples(names),
            Examples::None => Vec::new(),
            Examples::Given(examples) => examples.clone(),
        }
    }
}

/// Loads the suite and runs it.
pub async fn run_bench(
    config: &BenchConfig,
    variants: &[Variant],
) -> Result<BenchReport, BenchError> {
    let suite = Suite::load(&config.suite, config.skip, config.limit)?;
    run_suite(&suite, config, variants).await
}

/// Runs a loaded suite: for each task, each variant, each policy, one run.
pub async fn run_suite(
    suite: &Suite,
    config: &BenchConfig,
    variants: &[Variant],
) -> Result<BenchReport, BenchError> {
    if variants.is_empty() || config.policies.is_empty() {
        return Err(BenchError::Usage(
            "nothing to compare: give at least one policy and one model".into(),
        ));
    }
    let agent_policies = config.policies.iter().filter(|p| p.is_agent()).count();
    let bare_runs = config.policies.len() - agent_policies;
    let total = (suite.tasks.len() * (variants.len() * agent_policies + bare_runs)) as u64;
    let bar = progress::bar(total, config.progress);
    let mut results = Vec::new();
    let mut runs = stream::iter(suite.tasks.iter().enumerate())
        .map(|(index, task)| run_task(suite, config, variants, index, task, &bar))
        .buffered(config.concurrency.max(1));
    while let Some(task_results) = runs.next().await {
        match task_results {
            Ok(task_results) => results.extend(task_results),
            Err(e) => {
                bar.finish_and_clear();
                return Err(e);
            }
        }
    }
    bar.finish_and_clear();
    let mut columns = Vec::new();
    for (nth, variant) in variants.iter().enumerate() {
        for &policy in &config.policies {
            if !policy.is_agent() && nth > 0 {
                continue;
            }
            let mode = variant.label_for(policy);
            let of_column: Vec<&TaskResult> = results
                .iter()
                .filter(|r| r.policy == policy && r.mode == mode)
                .collect();
            columns.push(ColumnReport::aggregate(
                policy,
                mode,
                &of_column,
                config.faults.is_some(),
            ));
        }
    }
    Ok(BenchReport {
        suite: suite.name.clone(),
        model: config.model_name.clone(),
        protocol: config.protocol,
        tasks: suite.tasks.len() as u32,
        faults: config.faults,
        columns,
        results,
    })
}

/// One task's runs: each variant, each policy, one after the other.
async fn run_task(
    suite: &Suite,
    config: &BenchConfig,
    variants: &[Variant],
    index: usize,
    task: &Task,
    bar: &ProgressBar,
) -> Result<Vec<TaskResult>, BenchError> {
    let mut results = Vec::new();
    let registry = suite.registry(task)?;
    let examples = config.examples.for_tools(&registry.names());
    let build = |verifier: Option<corrigible::Verifier>| {
        let mut builder = Agent::builder_shared((variants[0].factory)())
            .tools(registry.clone())
            .worked_examples(examples.clone())
            .protocol(config.protocol);
        if let Some(verifier) = verifier {
            builder = builder.verifier(verifier);
        }
        builder.build().map_err(|e| BenchError::Agent {
            task: task.id.clone(),
            message: e.to_string(),
        })
    };
    let agent = build(None)?;
    let verified = if config.policies.iter().any(|p| p.verifies()) {
        Some(build(Some(config.verifier.clone().unwrap_or_default()))?)
    } else {
        None
    };
    for (nth, variant) in variants.iter().enumerate() {
        for &policy in &config.policies {
            if !policy.is_agent() && nth > 0 {
                continue;
            }
            bar.set_message(format!(
                "{} {} {}",
                task.id,
                policy,
                variant.label_for(policy)
            ));
            let model = (variant.factory)();
            let faulty = config
                .faults
                .map(|f| Arc::new(FaultyModel::new(model.clone(), f.rate, f.task_seed(index))));
            let run_model: Arc<dyn Model> = match &faulty {
                Some(f) => f.clone(),
                None => model,
            };
            let options = RunOptions {
                model: Some(run_model.clone()),
                policy: Some(policy.policy(task.max_actions)),
                ..Default::default()
            };
            let started = Instant::now();
            let outcome = if policy.is_agent() {
                let agent = match &verified {
                    Some(verified) if policy.verifies() => verified,
                    _ => &agent,
                };
                agent.run_with(&task.prompt, options).await
            } else {
                let bare = variant.bare.as_ref().map(|f| f()).unwrap_or(run_model);
                crate::bare::run(bare.as_ref(), &format!("bare-{}", task.id), &task.prompt)
                    .await
                    .map_err(RunError::Model)
            };
            let injected = faulty.map(|f| f.injected()).unwrap_or_default();
            let mode = variant.label_for(policy);
            let result = match outcome {
                Ok(report) => {
                    let grade = task.grade(&report);
                    TaskResult::from_report(&task.id, policy, mode, &report, grade, &injected)
                }
                Err(RunError::Transport(message))
                | Err(RunError::Model(ModelError::Transport(message)))
                | Err(RunError::Model(ModelError::Other(message))) => TaskResult::from_error(
                    &task.id,
                    policy,
                    mode,
                    message,
                    started.elapsed().as_secs_f64() * 1000.0,
                    &injected,
                ),
                Err(other) => {
                    return Err(BenchError::Run {
                        task: task.id.clone(),
                        message: other.to_string(),
                    });
                }
            };
            results.push(result);
            bar.inc(1);
        }
    }
    Ok(results)
}
