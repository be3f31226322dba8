//! A run's totals counted from its stored events, for runs that end without a report (an
//! interruption or a crash keeps the model calls and tool calls that happened).

use serde_json::Value;

use super::StoredEvent;

/// What a run used, as its events show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// `model_call` events.
    pub model_calls: u32,
    /// `tool_call` events.
    pub tool_calls: u32,
    /// `rejection` events (corrections sent back to the model).
    pub corrections: u32,
    /// Prompt tokens over the model calls.
    pub input_tokens: u64,
    /// Generated tokens over the model calls.
    pub output_tokens: u64,
}

impl Totals {
    /// Counts `events` (of one run).
    pub fn from_events(events: &[StoredEvent]) -> Self {
        let mut totals = Self::default();
        for event in events {
            match event.kind.as_str() {
                "model_call" => {
                    totals.model_calls = totals.model_calls.saturating_add(1);
                    let record = serde_json::from_str::<Value>(&event.data)
                        .ok()
                        .and_then(|v| v.get("record").cloned());
                    let tokens = |name: &str| {
                        record
                            .as_ref()
                            .and_then(|r| r.get(name))
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    };
                    totals.input_tokens =
                        totals.input_tokens.saturating_add(tokens("input_tokens"));
                    totals.output_tokens =
                        totals.output_tokens.saturating_add(tokens("output_tokens"));
                }
                "tool_call" => totals.tool_calls = totals.tool_calls.saturating_add(1),
                "rejection" => totals.corrections = totals.corrections.saturating_add(1),
                _ => {}
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, data: &str) -> StoredEvent {
        StoredEvent {
            run_id: "r".into(),
            seq: 1,
            kind: kind.into(),
            at: 0,
            data: data.into(),
        }
    }

    #[test]
    fn counts_calls_corrections_and_tokens() {
        let events = [
            event("run_started", "{}"),
            event(
                "model_call",
                r#"{"type":"model_call","record":{"input_tokens":100,"output_tokens":8}}"#,
            ),
            event("rejection", "{}"),
            event(
                "model_call",
                r#"{"type":"model_call","record":{"input_tokens":120}}"#,
            ),
            event("tool_call", "{}"),
            event("model_call", "not json"),
        ];
        assert_eq!(
            Totals::from_events(&events),
            Totals {
                model_calls: 3,
                tool_calls: 1,
                corrections: 1,
                input_tokens: 220,
                output_tokens: 8,
            }
        );
    }
}
