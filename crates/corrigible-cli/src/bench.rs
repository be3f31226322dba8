//! `corrigible bench`: parses the flags into a [`corrigible_bench::BenchConfig`] and the model
//! variants, runs the bench and prints its outputs. All logic lives in `corrigible-bench`.

use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use corrigible::{Model, Protocol};
use corrigible_bench::correct::{Trajectory, trajectory};
use corrigible_bench::{
    BenchConfig, Examples, FaultConfig, ModelFactory, PolicyKind, SuiteSpec, Variant,
};
use corrigible_local::{Constrain, LocalConfig, LocalModel};
use corrigible_models::ModelSpec;

use crate::args::{BenchArgs, BenchCommand, BenchModelArgs, ModelArgs};
use crate::setup;

/// Runs `corrigible bench` or `corrigible bench model`.
pub async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(BenchCommand::Model(model)) = args.command {
        return bench_model(model).await;
    }
    if let Some(corpus) = correct_corpus(&args.suite)? {
        let verifier = verifier(&args, true).await?;
        return bench_corpus(&corpus, verifier, args.json).await;
    }
    let suite: SuiteSpec = args.suite.parse().context("--suite")?;
    let policies = args
        .policies
        .iter()
        .map(|p| {
            p.parse::<PolicyKind>()
                .map_err(|e| anyhow!("--policies: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if policies.is_empty() {
        bail!("--policies: name at least one policy");
    }
    let faults = args
        .faults
        .map(|rate| FaultConfig::new(rate, args.seed).map_err(|e| anyhow!(e)))
        .transpose()?;
    if args.limit == Some(0) {
        bail!("--limit: must be at least 1");
    }
    if !(1..=corrigible_local::MAX_SEQUENCES).contains(&args.concurrency) {
        bail!(
            "--concurrency: from 1 to {}, got {}",
            corrigible_local::MAX_SEQUENCES,
            args.concurrency
        );
    }
    let examples = match &args.examples {
        _ if args.no_examples => Examples::None,
        Some(path) => Examples::Given(setup::examples_file(path)?),
        None => Examples::Builtin,
    };
    if args.verifier.is_some() && !policies.iter().any(|p| p.verifies()) {
        bail!("--verifier: add `verify` to --policies");
    }
    let verifier = verifier(&args, false).await?;
    let (variants, protocol, model_name) = variants(&args.model, args.concurrency).await?;
    let config = BenchConfig {
        suite,
        skip: args.skip,
        limit: args.limit,
        policies,
        protocol,
        faults,
        progress: !args.json,
        model_name,
        examples,
        verifier,
        concurrency: args.concurrency,
    };
    let report = corrigible_bench::run_bench(&config, &variants).await?;
    if args.json {
        println!("{}", corrigible_bench::output::to_json(&report)?);
    } else {
        print!("{}", corrigible_bench::output::table(&report));
    }
    if let Some(dir) = &args.out {
        corrigible_bench::output::write_all(&report, dir)?;
        if !args.json {
            println!(
                "\nwrote {0}/table.txt, {0}/report.json, {0}/chart.svg",
                dir.display()
            );
        }
    }
    Ok(())
}

/// The trajectories of `--suite correct` (the built-in corpus) or `--suite correct:FILE`;
/// `None` for a model suite.
fn correct_corpus(suite: &str) -> anyhow::Result<Option<Vec<Trajectory>>> {
    let suite = suite.trim();
    if suite == "correct" {
        return Ok(Some(trajectory::builtin()?));
    }
    let Some(path) = suite.strip_prefix("correct:") else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path).with_context(|| format!("--suite: {path}"))?;
    Ok(Some(trajectory::parse(path, &text)?))
}

/// The verifier `--verifier` names, set up as `run --verifier` sets it up; with the corpus
/// (`corpus`) the run's model is a script, so it must be named.
async fn verifier(args: &BenchArgs, corpus: bool) -> anyhow::Result<Option<corrigible::Verifier>> {
    let Some(spec) = &args.verifier else {
        return Ok(None);
    };
    let bounds = crate::args::BoundArgs {
        verifier: Some(spec.clone()),
        ..Default::default()
    };
    let own = ModelArgs {
        model: if corpus {
            Some("replay:".into())
        } else {
            args.model.model.clone()
        },
        ..args.model.clone()
    };
    crate::verifier::verifier(&bounds, &Default::default(), &own).await
}

/// `corrigible bench --suite correct`: every rule's false rejections and catches, or with a
/// verifier, what verification alone sends back and catches.
async fn bench_corpus(
    trajectories: &[Trajectory],
    verifier: Option<corrigible::Verifier>,
    json: bool,
) -> anyhow::Result<()> {
    let report = match verifier {
        Some(verifier) => {
            corrigible_bench::correct::run_corpus_with(
                trajectories,
                &[corrigible_bench::correct::RuleSet::verifier(verifier)],
            )
            .await?
        }
        None => corrigible_bench::correct::run_corpus(trajectories).await?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", corrigible_bench::correct::table(&report));
    }
    Ok(())
}

/// The model variants: the embedded model once per constraint mode (one load, shared
/// weights), or any other model as a single variant.
async fn variants(
    args: &ModelArgs,
    concurrency: usize,
) -> anyhow::Result<(Vec<Variant>, Protocol, String)> {
    let spec: ModelSpec = args
        .model
        .as_deref()
        .unwrap_or("local")
        .parse()
        .map_err(|e| anyhow!("--model: {e}"))?;
    if let ModelSpec::Local { arg } = &spec {
        if matches!(args.protocol.as_deref(), Some(p) if p != "json") {
            bail!("--protocol: the embedded model speaks the json protocol only");
        }
        let modes = args
            .constrain
            .as_deref()
            .unwrap_or("off,envelope,schema")
            .split(',')
            .map(|m| {
                m.trim()
                    .parse::<Constrain>()
                    .map_err(|e| anyhow!("--constrain: {e}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let path = setup::local_path(args.model_path.as_deref(), arg.as_deref())?;
        let mut config = LocalConfig::new(path);
        setup::thinking(&mut config, args)?;
        config.thought_calculator = !args.no_thought_calculator;
        config.prefix_cache =
            (!args.no_prefix_cache).then(corrigible_local::default_prefix_cache_dir);
        config.sequences = setup::sequences(args.max_sequences.unwrap_or(concurrency))?;
        let local = LocalModel::load(config)?;
        let name = local.name().to_string();
        // `bare` decodes free text, no thought phase, within a suggested thought's and a
        // decision's budget, whatever `--think-tokens` gives the agent, so its result is one
        // baseline for every thought bound.
        let bare: Arc<dyn Model> = Arc::new(
            local
                .with_constrain(Constrain::Off)
                .with_think_tokens(0)
                .with_max_tokens(
                    corrigible_local::SUGGESTED_THINK_TOKENS + local.config().max_tokens,
                ),
        );
        let bare: ModelFactory = Arc::new(move || bare.clone());
        let variants = modes
            .into_iter()
            .map(|mode| {
                let handle: Arc<dyn Model> = Arc::new(local.with_constrain(mode));
                let factory: ModelFactory = Arc::new(move || handle.clone());
                Variant {
                    mode: Some(mode.as_str().to_string()),
                    factory,
                    bare: Some(bare.clone()),
                }
            })
            .collect();
        return Ok((variants, Protocol::Json, name));
    }
    if args.constrain.is_some() {
        eprintln!("note: --constrain applies to the embedded model only; ignored");
    }
    let mut setup = setup::model(args)?;
    setup::probe(&mut setup)
        .await
        .map_err(|e| anyhow!(setup::probe_failure_message(e)))?;
    if let corrigible::ProtocolReason::Probe { .. } = setup.protocol_reason {
        eprintln!("protocol: {:?} ({})", setup.protocol, setup.protocol_reason);
    }
    let name = setup.model.name().to_string();
    Ok((vec![Variant::single(setup.factory)], setup.protocol, name))
}

/// `corrigible bench model`: the embedded model's prefill and decode speed.
async fn bench_model(args: BenchModelArgs) -> anyhow::Result<()> {
    if args.prompt_tokens.is_empty() || args.prompt_tokens.contains(&0) {
        bail!("--prompt-tokens: give one or more lengths above 0");
    }
    if args.decode_tokens == 0 {
        bail!("--decode-tokens: must be at least 1");
    }
    let arg = match args.model.as_deref().map(str::parse::<ModelSpec>) {
        None => None,
        Some(Ok(ModelSpec::Local { arg })) => arg,
        Some(_) => {
            bail!("--model: `bench model` measures the embedded model: `local` or `local:NAME`")
        }
    };
    let config = LocalConfig::new(setup::local_path(
        args.model_path.as_deref(),
        arg.as_deref(),
    )?);
    if args.sequences.contains(&0) {
        bail!("--sequences: give one or more counts above 0");
    }
    if !args.sequences.is_empty() {
        let report = tokio::task::spawn_blocking(move || {
            corrigible_local::bench::bench_sequences(
                config,
                args.prompt_tokens[0],
                args.decode_tokens,
                &args.sequences,
            )
        })
        .await
        .context("the benchmark thread failed")??;
        println!("{report}");
        return Ok(());
    }
    let report = tokio::task::spawn_blocking(move || {
        corrigible_local::bench::bench_model(config, &args.prompt_tokens, args.decode_tokens)
    })
    .await
    .context("the benchmark thread failed")??;
    println!("{report}");
    Ok(())
}
