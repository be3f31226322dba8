//! Default worked examples for the built-in tools: one episode answered directly, one request
//! declined because no tool can carry it out, one question answered from knowledge, then one
//! per registered tool. Their values are chosen not to overlap the questions people usually
//! ask.
//!
//! Measured on the embedded 135M model: with a single tool example it copies that example's
//! tool (and with the direct example last, its answer) whatever the question; with one example
//! per tool, direct first, it picks the right tool for calculator, time and weather questions.

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
            thought: Some(
                "The request divides 1234 by 8. The calculator works it out: 1234 / 8.".into(),
            ),
        }],
        answer: "1234 divided by 8 is 154.25.".into(),
        satisfied: true,
        thought: Some("The calculator says 1234 / 8 = 154.25.".into()),
    }
}

/// A word problem reasoned through in the thought, each calculation written with its result,
/// then checked in one calculator call.
fn word_problem() -> WorkedExample {
    WorkedExample {
        request: "A crate holds 12 bottles. A shop gets 7 crates and sells 30 bottles. How many bottles are left?".into(),
        steps: vec![ExampleStep {
            reason: "Bottles left after selling 30.".into(),
            tool: CALCULATOR.into(),
            input: json!({"expression": "7 * 12 - 30"}),
            result: "54".into(),
            thought: Some("The shop gets 7 crates of 12 bottles: 7 * 12 = 84 bottles. It sells 30 of them, so 84 - 30 = 54 bottles are left. The calculator checks the whole: 7 * 12 - 30.".into()),
        }],
        answer: "54 bottles are left.".into(),
        satisfied: true,
        thought: Some("The calculator says 7 * 12 - 30 = 54, the bottles left, which is what the question asks.".into()),
    }
}

fn time() -> WorkedExample {
    WorkedExample {
        request: "What time is it in Ulaanbaatar?".into(),
        steps: vec![ExampleStep {
            reason: "The time tool knows the current time in a city.".into(),
            tool: TIME.into(),
            input: json!({"city": "Ulaanbaatar"}),
            result: r#"{"timezone":"Asia/Ulaanbaatar","time":"08:15","local_time":"2026-02-03T08:15:00+08:00","utc_offset":"+08:00"}"#.into(),
            thought: Some("The current time in Ulaanbaatar comes from the time tool.".into()),
        }],
        answer: "It is 08:15 in Ulaanbaatar.".into(),
        satisfied: true,
        thought: Some("The time tool says it is 08:15 in Ulaanbaatar.".into()),
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
            thought: Some("The weather in Valparaiso comes from the weather tool.".into()),
        }],
        answer: "In Valparaíso it is 17.2 °C and partly cloudy, with wind at 21 km/h.".into(),
        satisfied: true,
        thought: Some("The weather tool says 17.2 °C, partly cloudy, wind 21 km/h.".into()),
    }
}

fn direct() -> WorkedExample {
    WorkedExample {
        request: "Say thank you in Portuguese.".into(),
        steps: Vec::new(),
        answer: "Obrigado (or Obrigada).".into(),
        satisfied: true,
        thought: Some("This needs no tool: thank you in Portuguese is obrigado.".into()),
    }
}

/// A question of general knowledge, answered from what the model knows.
fn knowledge() -> WorkedExample {
    WorkedExample {
        request: "Who invented the telephone?".into(),
        steps: Vec::new(),
        answer: "Alexander Graham Bell is credited with inventing the telephone, in 1876.".into(),
        satisfied: true,
        thought: Some("This needs no tool: it is general knowledge.".into()),
    }
}

/// A request that no tool can carry out, declined plainly: the agent acts only through tools.
fn unable() -> WorkedExample {
    WorkedExample {
        request: "Renew my library books.".into(),
        steps: Vec::new(),
        answer: "I can't renew library books: none of my tools can reach your library account. \
                 You can renew them on the library's website or at its desk."
            .into(),
        satisfied: false,
        thought: Some(
            "No tool here reaches a library account, so this cannot be done here.".into(),
        ),
    }
}

/// The default worked examples for an agent with the tools named `tools`: one answered
/// directly, one declined, one answered from knowledge (the three with no tool call teach a
/// small model when not to call one), then one for each of time, weather and calculator among
/// them, in that order, and a word problem when the calculator is the only built-in tool (with
/// the other tools offered it costs a small model more tasks than it gains).
/// None when no built-in tool is among them: examples without a tool call alone teach a small
/// model never to call a tool. The measurements are in `docs/benchmarks.md`.
pub fn builtin_examples<S: AsRef<str>>(tools: &[S]) -> Vec<WorkedExample> {
    let has = |name: &str| tools.iter().any(|t| t.as_ref() == name);
    let mut examples = vec![direct(), unable(), knowledge()];
    if has(TIME) {
        examples.push(time());
    }
    if has(WEATHER) {
        examples.push(weather());
    }
    if has(CALCULATOR) {
        examples.push(calculator());
        if !has(TIME) && !has(WEATHER) {
            examples.push(word_problem());
        }
    }
    if examples.iter().all(|e| e.steps.is_empty()) {
        examples.clear();
    }
    examples
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuiltinConfig, builtin_registry};

    #[test]
    fn a_direct_answer_then_one_example_per_tool() {
        let all = builtin_examples(&[CALCULATOR, TIME, WEATHER]);
        let tools: Vec<Vec<&str>> = all.iter().map(|e| e.tools().collect()).collect();
        assert_eq!(
            tools,
            [
                vec![],
                vec![],
                vec![],
                vec![TIME],
                vec![WEATHER],
                vec![CALCULATOR]
            ]
        );
        assert!(!all[1].satisfied, "the second example declines");
        let calculator_only = builtin_examples(&[CALCULATOR]);
        let tools: Vec<Vec<&str>> = calculator_only
            .iter()
            .map(|e| e.tools().collect())
            .collect();
        assert_eq!(
            tools,
            [vec![], vec![], vec![], vec![CALCULATOR], vec![CALCULATOR]]
        );
        assert_eq!(
            calculator_only[4].steps[0].input["expression"],
            "7 * 12 - 30"
        );
        let weather_only = builtin_examples(&[WEATHER]);
        assert_eq!(weather_only.len(), 4);
        assert_eq!(weather_only[3].tools().collect::<Vec<_>>(), [WEATHER]);
        assert!(builtin_examples::<&str>(&[]).is_empty());
        assert!(builtin_examples(&["math_factorial"]).is_empty());
    }

    #[test]
    fn example_inputs_are_valid_for_the_real_tools() {
        let registry = builtin_registry(&BuiltinConfig::default()).expect("registry");
        for example in [calculator(), word_problem(), time(), weather()] {
            for step in &example.steps {
                let verdict = registry.validate(&step.tool, &step.input);
                assert_eq!(verdict, Some(Ok(())), "{}", step.tool);
            }
        }
    }
}
