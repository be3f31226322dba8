mod common;

use corrigible::ToolRegistry;
use corrigible_tools::Calculator;
use serde_json::{Value, json};

use common::{call, ok_value, retry_message};

fn registry() -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register_typed(Calculator).unwrap();
    registry
}

async fn calc(expression: &str) -> corrigible::ToolOutcome {
    call(
        &registry(),
        "calculator",
        json!({ "expression": expression }),
    )
    .await
}

async fn value(expression: &str) -> Value {
    ok_value(calc(expression).await)
}

#[tokio::test]
async fn whole_results_are_integers() {
    assert_eq!(value("2*(3+4)").await, json!(14));
    assert_eq!(value("10 - 4 * 2").await, json!(2));
    assert_eq!(value("2^10").await, json!(1024));
    assert_eq!(value("-(3 + 4)").await, json!(-7));
    assert_eq!(value("17 % 5").await, json!(2));
    assert_eq!(value("6/3").await, json!(2));
    assert!(value("2*(3+4)").await.is_i64());
}

#[tokio::test]
async fn division_is_real_division() {
    assert_eq!(value("7/2").await, json!(3.5));
    assert_eq!(value("1/4").await, json!(0.25));
    assert_eq!(value("-7 / 2").await, json!(-3.5));
    assert_eq!(value("0.1 + 0.2").await, json!(0.3));
    assert_eq!(value("2.5 * 4").await, json!(10));
}

#[tokio::test]
async fn functions_and_constants() {
    assert_eq!(value("sqrt(144)").await, json!(12));
    assert_eq!(value("sqrt(2)").await.to_string(), "1.4142135623731");
    assert_eq!(value("abs(-3.5)").await, json!(3.5));
    assert_eq!(value("min(4, 2, 8) + max(1, 9)").await, json!(11));
    assert_eq!(value("round(2.6) + floor(2.6) + ceil(2.1)").await, json!(8));
    assert_eq!(value("log10(1000)").await, json!(3));
    assert_eq!(value("pow(2, 8)").await, json!(256));
    assert_eq!(value("2 * pi").await.to_string(), "6.28318530717959");
}

#[tokio::test]
async fn common_notations_are_understood() {
    assert_eq!(value("45% of 360 + 12").await, json!(174));
    assert_eq!(value("40 × 85%").await, json!(34));
    assert_eq!(value("1024 ÷ 16").await, json!(64));
    assert_eq!(value("√1764").await, json!(42));
    assert_eq!(value("100 % 7").await, json!(2));
}

#[tokio::test]
async fn what_was_left_out_is_noted_beside_the_result() {
    let claimed = value("12 + 3 + 4 = 18").await;
    assert_eq!(claimed["result"], json!(19));
    let note = claimed["note"].as_str().unwrap();
    assert_eq!(note, "the claim after `=` is wrong: the left side is 19");
    let chain = value("45% of 360 = 0.45 x 360 = 180").await;
    assert_eq!(chain["result"], json!(162));
    assert!(
        chain["note"].as_str().unwrap().contains("is wrong"),
        "{chain}"
    );
    let words = value("12 + 3 = fifteen").await;
    let note = words["note"].as_str().unwrap();
    assert!(note.contains("claim after `=` was not checked"), "{note}");

    assert_eq!(value("12 + 3 + 4 = 19").await, json!(19), "a true claim");
    assert_eq!(value("10 / 3 = 3.33").await, json!(3.33333333333333));
    assert_eq!(value("45% of 360 = 0.45 * 360 = 162").await, json!(162));

    let units = value("72 km/h * 2.5 h").await;
    assert_eq!(units["result"], json!(180));
    let note = units["note"].as_str().unwrap();
    assert!(note.contains("units ignored (km/h, h)"), "{note}");
}

#[tokio::test]
async fn parse_errors_say_what_is_wrong() {
    let message = retry_message(calc("2*(3+").await);
    assert!(
        message.starts_with("cannot parse the expression"),
        "{message}"
    );
    assert!(message.contains("+ - * / % ^"), "{message}");

    let message = retry_message(calc("").await);
    assert!(message.contains("empty"), "{message}");

    let message = retry_message(calc("x * 2").await);
    assert!(message.contains("unknown name `x`"), "{message}");

    let message = retry_message(calc("frobnicate(2)").await);
    assert!(
        message.contains("unknown function `frobnicate`"),
        "{message}"
    );
    assert!(message.contains("sqrt"), "{message}");

    let message = retry_message(calc("1 < 2").await);
    assert!(message.contains("`<` is not supported"), "{message}");

    let message = retry_message(calc("\"hello\"").await);
    assert!(message.contains("not a number"), "{message}");

    let message = retry_message(calc("sqrt(1, 2)").await);
    assert!(
        message.contains("`sqrt` takes one argument, got 2"),
        "{message}"
    );
}

#[tokio::test]
async fn division_by_zero_and_non_finite_results_are_retries() {
    let message = retry_message(calc("5 / (3 - 3)").await);
    assert!(message.contains("division by zero in `5 / 0`"), "{message}");

    let message = retry_message(calc("1 % 0").await);
    assert!(message.contains("division by zero"), "{message}");

    let message = retry_message(calc("sqrt(-4)").await);
    assert!(message.contains("not a finite number"), "{message}");

    let message = retry_message(calc("10^400").await);
    assert!(message.contains("not a finite number"), "{message}");
}

#[test]
fn schema_is_closed_and_described() {
    let schema = registry().specs()[0].parameters.clone();
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(schema["required"], json!(["expression"]));
    assert!(
        schema["properties"]["expression"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("2*(3+4)"))
    );
    let registry = registry();
    let extra = registry.validate("calculator", &json!({"expression": "1", "x": 2}));
    assert!(matches!(extra, Some(Err(_))));
}
