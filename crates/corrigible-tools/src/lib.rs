//! Built-in tools for corrigible: `calculator`, `time` and `weather`.
//!
//! Each tool is a [`corrigible::TypedTool`] with a typed input (serde + schemars, no
//! unknown fields): [`Calculator`], [`TimeTool`] and [`WeatherTool`]. Input the model can
//! fix (a malformed expression, an unknown time zone, an unknown city) comes back as
//! [`ToolOutcome::Retry`](corrigible::ToolOutcome::Retry) with a message saying what to
//! change; failures of the outside world (network, timeouts, 5xx) are
//! [`ToolOutcome::Failed`](corrigible::ToolOutcome::Failed), which the engine retries.
//!
//! [`builtin_registry`] and [`register_builtins`] put them in a
//! [`ToolRegistry`](corrigible::ToolRegistry). [`fake`] holds the cities of a fake of the
//! Open-Meteo APIs and, with the `fake-server` feature, an in-process server of them for tests
//! and benchmarks.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod calculator;
pub mod examples;
pub mod fake;
mod fold;
pub mod registry;
pub mod time;
pub mod weather;

pub use calculator::{CALCULATOR, Calculator, CalculatorInput};
pub use examples::builtin_examples;
pub use registry::{
    BUILTIN_TOOLS, BuiltinConfig, BuiltinError, builtin_registry, register_builtins,
};
pub use time::{TIME, TimeInput, TimeOutput, TimeTool, UnknownZone};
pub use weather::{
    FORECAST_URL_ENV, GEOCODING_URL_ENV, WEATHER, WeatherAnswer, WeatherConfig, WeatherConfigError,
    WeatherError, WeatherInput, WeatherReport, WeatherTool,
};
