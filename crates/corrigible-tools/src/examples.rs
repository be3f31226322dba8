//! Default worked examples for the built-in tools: one episode that uses a tool, one that
//! answers directly. Their values are chosen not to overlap the questions people usually ask.

use corrigible::{ExampleStep, WorkedExample};
use serde_json::json;

use crate::{CALCULATOR, TIME, WEATHER};

fn calculator() -> WorkedExample {
    WorkedExample {
        request: "How much is 1234 divided by 8?".into(),
        steps: vec![ExampleStep {
            reason: "Division is arithmetic.".into(),
            tool: CALCULATOR.into(),
            input: json!({"expression": "1234 / 8"}),
            result: "154.25".into(),
        }],
        answer: "1234 divided by 8 is 154.25.".into(),
    }
}

fn time() -> WorkedExample {
    WorkedExample {
        request: "What time is it in Reykjavik?".into(),
        steps: vec![ExampleStep {
            reason: "The time tool knows the current time in a zone.".into(),
            tool: TIME.into(),
            input: json!({"timezone": "Atlantic/Reykjavik"}),
            result: r#"{"timezone":"Atlantic/Reykjavik","local_time":"2026-02-03T08:15:00+00:00","utc_offset":"+00:00"}"#.into(),
        }],
        answer: "It is 08:15 in Reykjavik (Atlantic/Reykjavik, UTC+00:00).".into(),
    }
}

fn weather() -> WorkedExample {
    WorkedExample {
        request: "How is the weather in Valparaiso?".into(),
        steps: vec![ExampleStep {
            reason: "The weather tool reports current conditions.".into(),
            tool: WEATHER.into(),
            input: json!({"city": "Valparaiso"}),
            result: r#"{"city":"Valparaíso","country":"Chile","temperature_c":17.2,"wind_speed_kmh":21.0,"conditions":"partly cloudy"}"#.into(),
        }],
        answer: "In Valparaíso it is 17.2 °C and partly cloudy, with wind at 21 km/h.".into(),
    }
}

fn direct() -> WorkedExample {
    WorkedExample {
        request: "Say thank you in Portuguese.".into(),
        steps: Vec::new(),
        answer: "Obrigado (or Obrigada).".into(),
    }
}

/// The default worked examples for an agent with the tools named `tools`: one that uses the
/// first of calculator, time and weather among them, and one answered directly.
pub fn builtin_examples<S: AsRef<str>>(tools: &[S]) -> Vec<WorkedExample> {
    let has = |name: &str| tools.iter().any(|t| t.as_ref() == name);
    let mut examples = Vec::new();
    if has(CALCULATOR) {
        examples.push(calculator());
    } else if has(TIME) {
        examples.push(time());
    } else if has(WEATHER) {
        examples.push(weather());
    }
    examples.push(direct());
    examples
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuiltinConfig, builtin_registry};

    #[test]
    fn one_tool_example_and_one_direct_answer() {
        let all = builtin_examples(&[CALCULATOR, TIME, WEATHER]);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].tools().collect::<Vec<_>>(), [CALCULATOR]);
        assert!(all[1].steps.is_empty());
        let weather_only = builtin_examples(&[WEATHER]);
        assert_eq!(weather_only[0].tools().collect::<Vec<_>>(), [WEATHER]);
        assert_eq!(builtin_examples::<&str>(&[]).len(), 1);
    }

    #[test]
    fn example_inputs_are_valid_for_the_real_tools() {
        let registry = builtin_registry(&BuiltinConfig::default()).expect("registry");
        for example in [calculator(), time(), weather()] {
            for step in &example.steps {
                let verdict = registry.validate(&step.tool, &step.input);
                assert_eq!(verdict, Some(Ok(())), "{}", step.tool);
            }
        }
    }
}
