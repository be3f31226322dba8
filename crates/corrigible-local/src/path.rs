//! Where the embedded model lives: `CORRIGIBLE_MODEL`, `CORRIGIBLE_MODEL_DIR` or the default.

use std::path::{Path, PathBuf};

use crate::error::LocalError;

/// The file name of the default model inside the model directory.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// SHA-256 of the default model file, as `scripts/fetch-model` verifies it.
pub const DEFAULT_MODEL_SHA256: &str =
    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// Environment variable naming a model file directly.
pub const MODEL_ENV: &str = "CORRIGIBLE_MODEL";

/// Environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "CORRIGIBLE_MODEL_DIR";

/// The model path the environment asks for, whether or not the file exists.
///
/// `CORRIGIBLE_MODEL` wins; otherwise `$CORRIGIBLE_MODEL_DIR/<default file>`; otherwise
/// `~/.cache/corrigible/models/<default file>`.
pub fn model_path_from_env() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(file) = var(MODEL_ENV) {
        return PathBuf::from(file);
    }
    let dir = match var(MODEL_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => default_model_dir(var("HOME").map(PathBuf::from).as_deref()),
    };
    dir.join(DEFAULT_MODEL_FILE)
}

fn default_model_dir(home: Option<&Path>) -> PathBuf {
    home.unwrap_or(Path::new("."))
        .join(".cache")
        .join("corrigible")
        .join("models")
}

/// The model file to load: [`model_path_from_env`], checked to exist.
///
/// A missing file is [`LocalError::ModelMissing`], whose message names the fetch command.
pub fn resolve_model_path() -> Result<PathBuf, LocalError> {
    let path = model_path_from_env();
    if path.is_file() {
        Ok(path)
    } else {
        Err(LocalError::ModelMissing { path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_dir_is_under_the_user_cache() {
        assert_eq!(
            default_model_dir(Some(Path::new("/home/ada"))),
            PathBuf::from("/home/ada/.cache/corrigible/models")
        );
    }

    #[test]
    fn missing_model_names_the_fetch_command() {
        let e = LocalError::ModelMissing {
            path: PathBuf::from("/nowhere/m.gguf"),
        };
        let text = e.to_string();
        assert!(text.contains("scripts/fetch-model"), "{text}");
        assert!(text.contains("/nowhere/m.gguf"), "{text}");
    }
}
