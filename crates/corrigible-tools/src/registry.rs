//! Registering the built-in tools, all of them or a named subset.

use corrigible::ToolRegistry;
use corrigible::tool::RegistryError;

use crate::calculator::{CALCULATOR, Calculator};
use crate::time::{TIME, TimeTool};
use crate::weather::{WEATHER, WeatherConfig, WeatherConfigError, WeatherTool};

/// The names of the built-in tools, in registration order.
pub const BUILTIN_TOOLS: [&str; 3] = [CALCULATOR, TIME, WEATHER];

/// Which built-in tools to register, and how the weather tool reaches its APIs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuiltinConfig {
    /// The tools to register; `None` registers all of [`BUILTIN_TOOLS`].
    pub tools: Option<Vec<String>>,
    /// The weather tool's URLs and timeout.
    pub weather: WeatherConfig,
}

impl BuiltinConfig {
    /// All built-in tools, with the weather configuration read from the environment.
    pub fn from_env() -> Self {
        Self {
            tools: None,
            weather: WeatherConfig::from_env(),
        }
    }
}

/// The built-in tools could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuiltinError {
    /// A requested tool is not built in.
    #[error("unknown built-in tool `{name}`: the built-in tools are calculator, time and weather")]
    UnknownTool {
        /// The name as requested.
        name: String,
    },
    /// The weather configuration is unusable.
    #[error(transparent)]
    Weather(#[from] WeatherConfigError),
    /// The registry refused a tool (e.g. one of that name is already registered).
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

/// A registry holding the built-in tools that `config` names.
pub fn builtin_registry(config: &BuiltinConfig) -> Result<ToolRegistry, BuiltinError> {
    let mut registry = ToolRegistry::new();
    let names: Option<Vec<&str>> = config
        .tools
        .as_ref()
        .map(|tools| tools.iter().map(String::as_str).collect());
    register_builtins(&mut registry, names.as_deref(), config.weather.clone())?;
    Ok(registry)
}

/// Adds the built-in tools named in `names` (all of them when `None`) to `registry`.
///
/// Every name is checked before anything is registered, so an unknown name leaves the
/// registry unchanged.
pub fn register_builtins(
    registry: &mut ToolRegistry,
    names: Option<&[&str]>,
    weather: WeatherConfig,
) -> Result<(), BuiltinError> {
    let names = names.unwrap_or(&BUILTIN_TOOLS);
    if let Some(unknown) = names.iter().find(|n| !BUILTIN_TOOLS.contains(&n.trim())) {
        return Err(BuiltinError::UnknownTool {
            name: unknown.to_string(),
        });
    }
    let wanted = |tool: &str| names.iter().any(|n| n.trim() == tool);
    let weather_tool = if wanted(WEATHER) {
        Some(WeatherTool::new(weather)?)
    } else {
        None
    };
    if wanted(CALCULATOR) {
        registry.register_typed(Calculator)?;
    }
    if wanted(TIME) {
        registry.register_typed(TimeTool::new())?;
    }
    if let Some(tool) = weather_tool {
        registry.register_typed(tool)?;
    }
    Ok(())
}
