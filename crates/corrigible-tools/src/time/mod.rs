//! The `time` tool: an IANA time zone or a city in, the current local time out.

mod cities;
mod zones;

use async_trait::async_trait;
use chrono::{DateTime, Offset, SecondsFormat, Utc};
use corrigible::{GroundedArgument, ToolContext, ToolOutcome, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use zones::{UnknownZone, resolve, suggest};

/// The time tool's name.
pub const TIME: &str = "time";

/// Input of the `time` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeInput {
    /// A city such as `Mumbai` or `New York`, or an IANA time zone name such as `Asia/Kolkata`
    /// or `UTC`.
    pub city: String,
}

/// Output of the `time` tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeOutput {
    /// The canonical zone name.
    pub timezone: String,
    /// The local wall-clock time, `HH:MM` on a 24-hour clock.
    pub time: String,
    /// The local time, ISO 8601 with its offset, e.g. `2026-11-29T22:08:41+05:30`.
    pub local_time: String,
    /// The zone's offset from UTC at that instant, e.g. `+05:30`.
    pub utc_offset: String,
}

/// Where the tool reads "now".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Clock {
    #[default]
    System,
    Fixed(DateTime<Utc>),
}

/// Tells the current local time in an IANA time zone or a city.
///
/// An unknown zone is a [`ToolOutcome::Retry`] listing up to three close matches; a UTC offset
/// (`UTC+08:00`) is one too, asking for the place instead, since an offset ignores daylight
/// saving time.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeTool {
    clock: Clock,
}

impl TimeTool {
    /// A time tool reading the system clock.
    pub fn new() -> Self {
        Self::default()
    }

    /// A time tool whose "now" is always `instant` (for tests and reproducible runs).
    pub fn fixed(instant: DateTime<Utc>) -> Self {
        Self {
            clock: Clock::Fixed(instant),
        }
    }

    /// The local time in `timezone` at the tool's "now".
    pub fn local_time(&self, timezone: &str) -> Result<TimeOutput, UnknownZone> {
        let tz = resolve(timezone)?;
        let now = match self.clock {
            Clock::System => Utc::now(),
            Clock::Fixed(instant) => instant,
        };
        let local = now.with_timezone(&tz);
        Ok(TimeOutput {
            timezone: tz.name().to_string(),
            time: local.format("%H:%M").to_string(),
            local_time: local.to_rfc3339_opts(SecondsFormat::Secs, false),
            utc_offset: local.offset().fix().to_string(),
        })
    }
}

#[async_trait]
impl TypedTool for TimeTool {
    type Input = TimeInput;

    fn name(&self) -> &str {
        TIME
    }

    fn read_only(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "Returns the current local time in a city or an IANA time zone (e.g. Mumbai, \
         New York, Europe/London, UTC) as ISO 8601 with the UTC offset."
    }

    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        vec![GroundedArgument::copied("city")]
    }

    async fn call(&self, input: TimeInput, _ctx: &ToolContext) -> ToolOutcome {
        match self.local_time(&input.city) {
            Ok(output) => ToolOutcome::ok(output),
            Err(e) => ToolOutcome::Retry(e.to_string()),
        }
    }
}
