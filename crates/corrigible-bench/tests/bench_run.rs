//! A bench run on a small suite with a scripted model gives exactly the expected counts.

mod common;

use std::sync::Arc;

use common::ByPrompt;
use corrigible::{Model, Protocol};
use corrigible_bench::{
    BenchConfig, Examples, FaultConfig, ModelFactory, PolicyKind, SuiteSpec, Variant, run_bench,
};

const SUITE: &str = r#"{"id": "mul", "prompt": "What is 6 times 7?", "answer": [42], "tool": "calculator"}
{"id": "add", "prompt": "Add 10 and 5.", "answer": [15], "tool": "calculator"}
{"id": "tokyo", "prompt": "What time is it in Tokyo?", "answer": ["21:00"], "tool": "time", "args": ["Asia/Tokyo"]}
"#;

fn model() -> Arc<ByPrompt> {
    let fenced_mul = "```json\n{\"state\":\"action\",\"reason\":\"multiply\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"6*7\"}}\n```";
    ByPrompt::texts(&[
        (
            "What is 6 times 7?",
            &[
                &[fenced_mul],
                &[r#"{"state":"final","satisfied":true,"final_summary":"6 times 7 is 42.0"}"#],
            ],
        ),
        (
            "Add 10 and 5.",
            &[
                &[
                    r#"{"state":"action","reason":"add","tool":"calculator","tool_input":{"expr":"10+5"}}"#,
                    r#"{"state":"action","reason":"add","tool":"calculator","tool_input":{"expression":"10+5"}}"#,
                ],
                &[r#"{"state":"final","satisfied":true,"final_summary":"10 + 5 = 15"}"#],
            ],
        ),
        (
            "What time is it in Tokyo?",
            &[
                &[
                    r#"{"state":"action","reason":"clock","tool":"time","tool_input":{"city":"Tokyo"}}"#,
                ],
                &[r#"{"state":"final","satisfied":true,"final_summary":"It is 21:00 in Tokyo."}"#],
            ],
        ),
    ])
}

fn config(name: &str, faults: Option<FaultConfig>) -> BenchConfig {
    let path = std::env::temp_dir().join(format!(
        "corrigible-bench-{name}-{}.jsonl",
        std::process::id()
    ));
    std::fs::write(&path, SUITE).unwrap();
    BenchConfig {
        suite: SuiteSpec::Tools(Some(path)),
        skip: 0,
        limit: None,
        policies: vec![
            PolicyKind::OneShot,
            PolicyKind::Repair,
            PolicyKind::SelfCorrect,
        ],
        protocol: Protocol::Json,
        faults,
        progress: false,
        model_name: "by-prompt".into(),
        examples: Examples::Builtin,
        verifier: None,
        concurrency: 1,
    }
}

fn variant() -> Variant {
    let model = model();
    let factory: ModelFactory = Arc::new(move || model.clone() as Arc<dyn Model>);
    Variant::single(factory)
}

#[tokio::test]
async fn counts_per_policy_are_exact() {
    let report = run_bench(&config("counts", None), &[variant()])
        .await
        .unwrap();
    assert_eq!(report.tasks, 3);
    assert_eq!(report.results.len(), 9);
    let col = |p: PolicyKind| report.columns.iter().find(|c| c.policy == p).unwrap();

    let one = col(PolicyKind::OneShot);
    assert_eq!(one.mode, "-");
    assert_eq!(one.successes, 1);
    assert_eq!(one.model_calls_per_task, 4.0 / 3.0);
    assert_eq!(one.corrections.get("invalid_json"), Some(&1));
    assert_eq!(one.corrections.get("invalid_tool_input"), Some(&1));
    assert_eq!(one.stop_reasons.get("corrections_exhausted"), Some(&2));
    assert_eq!(one.unsatisfied.get("corrections_exhausted"), Some(&2));
    assert!(one.repairs.is_empty());
    // 4 calls, 2 rejected.
    assert_eq!(one.valid_reply_rate, 0.5);

    let repair = col(PolicyKind::Repair);
    assert_eq!(repair.successes, 2);
    assert_eq!(repair.model_calls_per_task, 5.0 / 3.0);
    assert_eq!(repair.repairs.get("code_fence"), Some(&1));
    assert_eq!(repair.corrections.get("invalid_tool_input"), Some(&1));

    let fix = col(PolicyKind::SelfCorrect);
    assert_eq!(fix.successes, 3);
    assert_eq!(fix.success_rate, 1.0);
    assert_eq!(fix.model_calls_per_task, 7.0 / 3.0);
    assert_eq!(fix.corrections.get("invalid_tool_input"), Some(&1));
    assert_eq!(fix.repairs.get("code_fence"), Some(&1));
    assert_eq!(fix.stop_reasons.get("final"), Some(&3));
    assert!(fix.unsatisfied.is_empty());
    assert_eq!(fix.identical_retries, 0);
    assert_eq!(fix.input_tokens_per_task, 700.0 / 3.0);
    assert!(fix.faults.is_none());
}

#[tokio::test]
async fn faults_are_counted_and_recovered_under_self_correction() {
    let faults = FaultConfig::new(1.0, 7).unwrap();
    let report = run_bench(&config("faults", Some(faults)), &[variant()])
        .await
        .unwrap();
    for column in &report.columns {
        let stats = column.faults.as_ref().unwrap();
        let injected: u32 = stats.injected.values().sum();
        let calls: u32 = report
            .results
            .iter()
            .filter(|r| r.policy == column.policy)
            .map(|r| r.model_calls)
            .sum();
        // Every reply is a JSON object or text here, so every call gets a fault.
        assert_eq!(injected, calls, "{}", column.policy);
        assert_eq!(stats.runs_with_faults, 3);
    }
    let one = report
        .columns
        .iter()
        .find(|c| c.policy == PolicyKind::OneShot)
        .unwrap();
    assert_eq!(
        one.faults.as_ref().unwrap().recovered.values().sum::<u32>(),
        0
    );
    // The same seed gives the same report.
    let again = run_bench(&config("faults", Some(faults)), &[variant()])
        .await
        .unwrap();
    let strip = |r: &corrigible_bench::BenchReport| {
        r.results
            .iter()
            .map(|t| (t.task.clone(), t.success, t.model_calls, t.faults.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&report), strip(&again));
}

#[tokio::test]
async fn outputs_render_and_write() {
    let report = run_bench(&config("outputs", None), &[variant()])
        .await
        .unwrap();
    let table = corrigible_bench::output::table(&report);
    assert!(table.contains("self-correct"), "{table}");
    assert!(table.contains("3/3 100.0%"), "{table}");
    let svg = corrigible_bench::output::chart_svg(&report).unwrap();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("<text") && svg.contains("one-shot"), "{svg}");
    let dir = std::env::temp_dir().join(format!("corrigible-bench-out-{}", std::process::id()));
    corrigible_bench::output::write_all(&report, &dir).unwrap();
    for file in ["table.txt", "report.json", "chart.svg"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["columns"][2]["successes"], 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Passes requests on to the scripted model, keeping the first user turn of each request's
/// worked examples.
struct SeesExamples {
    inner: Arc<common::ByPrompt>,
    first: std::sync::Mutex<Vec<Option<String>>>,
}

#[async_trait::async_trait]
impl Model for SeesExamples {
    fn name(&self) -> &str {
        "sees-examples"
    }

    async fn complete(
        &self,
        request: &corrigible::ModelRequest,
    ) -> Result<corrigible::ModelReply, corrigible::ModelError> {
        let first = request
            .messages
            .iter()
            .find(|m| m.kind == corrigible::MessageKind::Example)
            .map(|m| m.content.clone());
        self.first.lock().unwrap().push(first);
        self.inner.complete(request).await
    }
}

#[tokio::test]
async fn worked_examples_are_the_builtin_ones_none_or_the_given_ones() {
    let given: Vec<corrigible::WorkedExample> =
        serde_json::from_str(r#"[{"request": "Say hi in Dutch.", "answer": "Hallo!"}]"#).unwrap();
    for (name, examples) in [
        ("builtin", Examples::Builtin),
        ("none", Examples::None),
        ("given", Examples::Given(given.clone())),
    ] {
        let seen = Arc::new(SeesExamples {
            inner: model(),
            first: Default::default(),
        });
        let shared = seen.clone();
        let factory: ModelFactory = Arc::new(move || shared.clone() as Arc<dyn Model>);
        let config = BenchConfig {
            examples: examples.clone(),
            ..config(&format!("examples-{name}"), None)
        };
        let report = run_bench(&config, &[Variant::single(factory)])
            .await
            .unwrap();
        assert_eq!(report.results.len(), 9);
        let first = seen.first.lock().unwrap().clone();
        assert!(!first.is_empty());
        for request in first {
            match &examples {
                Examples::Builtin => {
                    assert!(request.is_some_and(|r| r != "Say hi in Dutch."))
                }
                Examples::None => assert_eq!(request, None),
                Examples::Given(_) => assert_eq!(request.as_deref(), Some("Say hi in Dutch.")),
            }
        }
    }
}

/// Counts the calls in flight at once around an inner model that takes a moment to answer.
struct Overlapping {
    inner: Arc<ByPrompt>,
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl Model for Overlapping {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &corrigible::ModelRequest,
    ) -> Result<corrigible::ModelReply, corrigible::ModelError> {
        use std::sync::atomic::Ordering;
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let reply = self.inner.complete(request).await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        reply
    }
}

#[tokio::test]
async fn tasks_run_at_once_report_what_they_report_one_at_a_time_in_order() {
    let mut reports = Vec::new();
    for concurrency in [1, 3] {
        let overlapping = Arc::new(Overlapping {
            inner: model(),
            now: Default::default(),
            most: Default::default(),
        });
        let shared = overlapping.clone();
        let factory: ModelFactory = Arc::new(move || shared.clone() as Arc<dyn Model>);
        let faults = FaultConfig::new(0.5, 7).unwrap();
        let config = BenchConfig {
            concurrency,
            ..config(&format!("concurrency-{concurrency}"), Some(faults))
        };
        let report = run_bench(&config, &[Variant::single(factory)])
            .await
            .unwrap();
        let most = overlapping.most.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(most, concurrency, "calls in flight at once");
        reports.push(
            report
                .results
                .iter()
                .map(|t| {
                    (
                        t.task.clone(),
                        t.policy,
                        t.success,
                        t.model_calls,
                        t.faults.clone(),
                    )
                })
                .collect::<Vec<_>>(),
        );
    }
    assert_eq!(reports[0], reports[1]);
    let tasks: Vec<&str> = reports[0].iter().map(|r| r.0.as_str()).collect();
    assert_eq!(tasks[..3], ["mul", "mul", "mul"]);
    assert_eq!(tasks[6..], ["tokyo", "tokyo", "tokyo"]);
}
