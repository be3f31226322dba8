//! Where the embedded model lives: `CORRIGIBLE_MODEL`, `CORRIGIBLE_MODEL_DIR`, or `models/` in
//! the cache directory (`CORRIGIBLE_CACHE_DIR`, else the platform's), and the models
//! `scripts/fetch-model` knows by name.

use std::path::{Path, PathBuf};

use crate::error::{FETCH_COMMAND, LocalError};

/// The file name of the default model inside the model directory: Qwen2.5-Coder-1.5B-Instruct.
pub const DEFAULT_MODEL_FILE: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// SHA-256 of the default model file, as `scripts/fetch-model` verifies it.
pub const DEFAULT_MODEL_SHA256: &str =
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046";

/// The name of the small model (SmolLM2-135M-Instruct): for small machines, and for the tests
/// that need a real model but not a capable one.
pub const SMALL_MODEL: &str = "smollm2-135m";

/// A model that `scripts/fetch-model NAME` fetches into the model directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// The name given to `scripts/fetch-model` and to `--model local:NAME`.
    pub name: &'static str,
    /// The file name inside the model directory.
    pub file: &'static str,
    /// SHA-256 of the file, as `scripts/fetch-model` verifies it.
    pub sha256: &'static str,
}

/// Every model `scripts/fetch-model` fetches; the first is the default.
pub const KNOWN_MODELS: [KnownModel; 2] = [
    KnownModel {
        name: "qwen2.5-coder-1.5b",
        file: DEFAULT_MODEL_FILE,
        sha256: DEFAULT_MODEL_SHA256,
    },
    KnownModel {
        name: SMALL_MODEL,
        file: "SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    },
];

/// Environment variable naming a model file directly.
pub const MODEL_ENV: &str = "CORRIGIBLE_MODEL";

/// Environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "CORRIGIBLE_MODEL_DIR";

/// Environment variable that moves everything corrigible caches: the models (`models/`) and
/// the prefix store (`prefixes/`).
pub const CACHE_DIR_ENV: &str = "CORRIGIBLE_CACHE_DIR";

/// The model path the environment asks for, whether or not the file exists.
///
/// `CORRIGIBLE_MODEL` wins; otherwise `<model dir>/<default file>` ([`model_dir`]).
pub fn model_path_from_env() -> PathBuf {
    if let Some(file) = var(MODEL_ENV) {
        return PathBuf::from(file);
    }
    model_dir().join(DEFAULT_MODEL_FILE)
}

/// The environment variable `name`, if set and not empty.
fn var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// Where models live: `$CORRIGIBLE_MODEL_DIR`, else `models/` in the [`cache_dir`].
pub fn model_dir() -> PathBuf {
    match var(MODEL_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => cache_dir().join("models"),
    }
}

/// Where corrigible caches files: `$CORRIGIBLE_CACHE_DIR`, else `corrigible` in the platform's
/// cache directory (`$XDG_CACHE_HOME` or `~/.cache` on Linux, `~/Library/Caches` on macOS,
/// the local app data folder on Windows).
pub fn cache_dir() -> PathBuf {
    cache_dir_from(
        var(CACHE_DIR_ENV).map(PathBuf::from),
        directories::BaseDirs::new().map(|dirs| dirs.cache_dir().to_path_buf()),
    )
}

fn cache_dir_from(configured: Option<PathBuf>, platform: Option<PathBuf>) -> PathBuf {
    configured.unwrap_or_else(|| {
        platform
            .unwrap_or_else(|| Path::new(".").join(".cache"))
            .join("corrigible")
    })
}

/// Where the command line keeps pre-filled prompt prefixes: `prefixes/` in the [`cache_dir`].
pub fn default_prefix_cache_dir() -> PathBuf {
    cache_dir().join("prefixes")
}

/// The model file to load: [`model_path_from_env`], checked to exist.
///
/// A missing file is [`LocalError::ModelMissing`], whose message names the fetch command.
pub fn resolve_model_path() -> Result<PathBuf, LocalError> {
    let path = model_path_from_env();
    if path.is_file() {
        Ok(path)
    } else {
        Err(LocalError::ModelMissing {
            path,
            fetch: FETCH_COMMAND.to_string(),
        })
    }
}

/// The file of `--model local:ARG`: a [`KnownModel`]'s name means its file in the model
/// directory (which must exist), anything else is a path.
pub fn local_model_path(arg: &str) -> Result<PathBuf, LocalError> {
    let Some(known) = KNOWN_MODELS.iter().find(|m| m.name == arg) else {
        let path = PathBuf::from(arg);
        let looks_like_a_path = path.is_file()
            || arg.contains(std::path::MAIN_SEPARATOR)
            || path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("gguf"));
        if looks_like_a_path {
            return Ok(path);
        }
        let known = KNOWN_MODELS
            .iter()
            .map(|m| format!("`{}`", m.name))
            .collect::<Vec<_>>()
            .join(" or ");
        return Err(LocalError::UnknownModel {
            name: arg.to_string(),
            known,
        });
    };
    let path = model_dir().join(known.file);
    if path.is_file() {
        Ok(path)
    } else {
        Err(LocalError::ModelMissing {
            path,
            fetch: format!("{FETCH_COMMAND} {}", known.name),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_is_the_configured_dir_else_corrigible_in_the_platform_cache() {
        assert_eq!(
            cache_dir_from(None, Some(PathBuf::from("/home/ada/.cache"))),
            PathBuf::from("/home/ada/.cache/corrigible")
        );
        assert_eq!(
            cache_dir_from(
                Some(PathBuf::from("/data/corrigible")),
                Some(PathBuf::from("/home/ada/.cache"))
            ),
            PathBuf::from("/data/corrigible")
        );
        assert_eq!(
            cache_dir_from(None, None),
            PathBuf::from("./.cache/corrigible")
        );
    }

    #[test]
    fn missing_model_names_the_fetch_command() {
        let e = LocalError::ModelMissing {
            path: PathBuf::from("/nowhere/m.gguf"),
            fetch: FETCH_COMMAND.to_string(),
        };
        let text = e.to_string();
        assert!(text.contains("scripts/fetch-model"), "{text}");
        assert!(text.contains("/nowhere/m.gguf"), "{text}");
    }

    #[test]
    fn a_path_that_names_no_known_model_is_a_path() {
        assert_eq!(
            local_model_path("models/mine.gguf").ok(),
            Some(PathBuf::from("models/mine.gguf"))
        );
    }

    #[test]
    fn a_name_that_is_neither_known_nor_a_file_lists_the_known_names() {
        let text = local_model_path("nonexistent").unwrap_err().to_string();
        assert!(
            text.contains("unknown embedded model `nonexistent`"),
            "{text}"
        );
        for m in KNOWN_MODELS {
            assert!(text.contains(m.name), "{text}");
        }
    }

    #[test]
    fn a_missing_known_model_names_its_own_fetch_command() {
        let missing = KNOWN_MODELS
            .iter()
            .find(|m| !model_dir().join(m.file).is_file());
        let Some(m) = missing else {
            return;
        };
        let text = local_model_path(m.name).unwrap_err().to_string();
        assert!(
            text.contains(&format!("scripts/fetch-model {}", m.name)),
            "{text}"
        );
        assert!(text.contains(m.file), "{text}");
    }

    /// `scripts/fetch-model` is the repository's, not this crate's: read when the test runs.
    #[test]
    fn the_fetch_script_and_the_table_agree() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-model");
        let script =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for m in KNOWN_MODELS {
            assert!(script.contains(m.name), "{}", m.name);
            assert!(script.contains(m.file), "{}", m.file);
            assert!(script.contains(m.sha256), "{}", m.sha256);
        }
        let default = format!("model=\"${{1:-{}}}\"", KNOWN_MODELS[0].name);
        assert!(
            script.contains(&default),
            "the script's default is {default}"
        );
        assert_eq!(KNOWN_MODELS[0].file, DEFAULT_MODEL_FILE);
        assert!(KNOWN_MODELS.iter().any(|m| m.name == SMALL_MODEL));
    }
}
