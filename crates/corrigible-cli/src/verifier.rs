//! `--verify`, `--verifier` and `[verify]`: which model checks satisfied answers, if any.

use anyhow::bail;
use corrigible::Verifier;

use crate::args::{BoundArgs, ModelArgs};
use crate::config::VerifyConfig;
use crate::setup::{self, ModelSetup};

/// The verifier the flags and the file ask for, or `None` when verification is off. A
/// verifying model other than the run's own is set up like `--model`, with its provider's key
/// and base URL from the environment and the run's constraint mode; one that names the run's
/// own model is that model, not a second copy.
pub async fn verifier(
    bounds: &BoundArgs,
    file: &VerifyConfig,
    run_model: &ModelArgs,
) -> anyhow::Result<Option<Verifier>> {
    let spec = bounds.verifier.clone().or_else(|| file.model.clone());
    let on = bounds.verify || spec.is_some() || file.enabled == Some(true);
    if !on {
        if bounds.max_verifications.is_some() {
            bail!("--max-verifications: verification is off; add --verify");
        }
        return Ok(None);
    }
    let max = bounds
        .max_verifications
        .or(file.max_per_run)
        .unwrap_or(corrigible::verify::DEFAULT_MAX_PER_RUN);
    if max == 0 {
        bail!("--max-verifications: must be at least 1 (leave out --verify for none)");
    }
    let mut verifier = Verifier::new().max_per_run(max);
    let own = run_model.model.as_deref().unwrap_or("local");
    if let Some(spec) = spec.filter(|s| s.trim() != own) {
        let args = ModelArgs {
            model: Some(spec),
            base_url: None,
            provider_key: None,
            protocol: None,
            constrain: run_model.constrain.clone(),
            model_path: None,
            temperature: None,
            think: None,
            think_tokens: None,
            no_thought_calculator: run_model.no_thought_calculator,
            no_prefix_cache: run_model.no_prefix_cache,
            max_sequences: run_model.max_sequences,
        };
        let mut setup: ModelSetup = setup::model(&args).map_err(|e| {
            anyhow::anyhow!("{}", e.to_string().replacen("--model", "--verifier", 1))
        })?;
        setup::probe(&mut setup)
            .await
            .map_err(|e| anyhow::anyhow!("--verifier: {}", setup::probe_failure_message(e)))?;
        verifier = verifier.with_model(setup.model, setup.protocol);
    }
    Ok(Some(verifier))
}
