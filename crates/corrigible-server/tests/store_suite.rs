//! One test suite that every run store passes: SQLite (always) and Postgres (when
//! `CORRIGIBLE_TEST_POSTGRES_URL` names a server; required in CI).

mod common;

use std::sync::Arc;
use std::time::Duration;

use corrigible::policy::{BreakerDecision, BreakerPolicy, BreakerState, CircuitBreakers};
use corrigible::trace::UsageTotals;
use corrigible::{Category, RunReport, StopReason};
use corrigible_server::open_store;
use corrigible_server::store::{
    Ending, NewRun, RunEnd, RunFilter, RunStatus, RunStore, StoreError, StoredEvent, Window, now_ms,
};

fn new_run(id: &str, owner: &str) -> NewRun {
    NewRun {
        id: id.into(),
        created_at: now_ms(),
        prompt: format!("prompt of {id}"),
        model: "replay".into(),
        protocol: "json".into(),
        owner: owner.into(),
    }
}

fn event(run_id: &str, seq: u64, kind: &str, data: &str) -> StoredEvent {
    StoredEvent {
        run_id: run_id.into(),
        seq,
        kind: kind.into(),
        at: now_ms(),
        data: data.into(),
    }
}

const MODEL_CALL: &str = r#"{"type":"model_call","record":{"stage":"1.0","latency_ms":1.0,"input_tokens":100,"output_tokens":7}}"#;

async fn runs_are_stored_listed_and_paged(store: &dyn RunStore) {
    for id in ["run-01", "run-02", "run-03"] {
        store.insert_run(&new_run(id, "a")).await.unwrap();
    }
    let page = store
        .list_runs(2, None, &RunFilter::default())
        .await
        .unwrap();
    let ids: Vec<&str> = page.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["run-03", "run-02"]);
    let rest = store
        .list_runs(2, Some("run-02"), &RunFilter::default())
        .await
        .unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].id, "run-01");
    let run = store.get_run("run-02").await.unwrap().unwrap();
    assert_eq!(run.summary.status, RunStatus::Running);
    assert_eq!(run.summary.prompt, "prompt of run-02");
    assert!(run.report.is_none());
    assert!(store.get_run("nope").await.unwrap().is_none());
    assert!(store.get_run("x' OR '1'='1").await.unwrap().is_none());
    assert!(store.insert_run(&new_run("run-01", "a")).await.is_err());
}

async fn events_append_in_order_once(store: &dyn RunStore) {
    store.insert_run(&new_run("ev", "a")).await.unwrap();
    store
        .append_events(&[
            event("ev", 1, "run_started", "{}"),
            event("ev", 2, "model_call", MODEL_CALL),
        ])
        .await
        .unwrap();
    // A repeated event (a retried batch) is kept once.
    store
        .append_events(&[
            event("ev", 2, "model_call", MODEL_CALL),
            event("ev", 3, "decision", "{\"ü\":\"✓\"}"),
        ])
        .await
        .unwrap();
    store.append_events(&[]).await.unwrap();
    let all = store.events("ev", 0).await.unwrap();
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
    assert_eq!(all[2].data, "{\"ü\":\"✓\"}");
    assert_eq!(store.events("ev", 2).await.unwrap().len(), 1);
    assert!(store.events("none", 0).await.unwrap().is_empty());
    // A batch larger than one statement holds, repeats included, is written whole.
    store.insert_run(&new_run("many", "a")).await.unwrap();
    let many: Vec<StoredEvent> = (1..=450)
        .chain(199..=202)
        .map(|seq| event("many", seq, "decision", &format!("{{\"n\":{seq}}}")))
        .collect();
    store.append_events(&many).await.unwrap();
    let all = store.events("many", 0).await.unwrap();
    assert_eq!(all.len(), 450);
    assert!(all.iter().zip(1..).all(|(e, seq)| e.seq == seq));
    assert_eq!(all[449].data, "{\"n\":450}");
}

async fn endings_are_recorded(store: &dyn RunStore) {
    store.insert_run(&new_run("failed", "a")).await.unwrap();
    let failed = RunEnd::Failed {
        kind: "transport".into(),
        error: "connection refused".into(),
    };
    store.end_run("failed", &failed, now_ms()).await.unwrap();
    let run = store.get_run("failed").await.unwrap().unwrap();
    assert_eq!(run.summary.status, RunStatus::Failed);
    assert_eq!(run.summary.error_kind.as_deref(), Some("transport"));
    assert!(run.summary.finished_at.is_some());
    // An interruption keeps what the events show.
    store.insert_run(&new_run("cut", "a")).await.unwrap();
    store
        .append_events(&[
            event("cut", 1, "run_started", "{}"),
            event("cut", 2, "model_call", MODEL_CALL),
            event("cut", 3, "rejection", "{}"),
            event("cut", 4, "model_call", MODEL_CALL),
            event("cut", 5, "tool_call", "{}"),
        ])
        .await
        .unwrap();
    store
        .end_run("cut", &RunEnd::Interrupted, now_ms())
        .await
        .unwrap();
    let run = store.get_run("cut").await.unwrap().unwrap().summary;
    assert_eq!(run.status, RunStatus::Interrupted);
    assert_eq!(
        (run.model_calls, run.tool_calls, run.corrections),
        (2, 1, 1)
    );
    assert_eq!((run.input_tokens, run.output_tokens), (200, 14));
    // An interruption does not overwrite an ending.
    store
        .end_run("failed", &RunEnd::Interrupted, now_ms())
        .await
        .unwrap();
    let run = store.get_run("failed").await.unwrap().unwrap();
    assert_eq!(run.summary.status, RunStatus::Failed);
}

fn report(run_id: &str) -> RunReport {
    RunReport {
        run_id: run_id.into(),
        satisfied: true,
        final_summary: Some("done".into()),
        missing: None,
        stop_reason: StopReason::Final,
        steps: Vec::new(),
        corrections: Vec::new(),
        repairs: Vec::new(),
        model_calls: Vec::new(),
        usage: UsageTotals {
            model_calls: 3,
            input_tokens: 300,
            output_tokens: 21,
            tool_calls: 2,
            corrections: 1,
            ..UsageTotals::default()
        },
        breaker_events: Vec::new(),
        verifications: Vec::new(),
        output: None,
        prompt: format!("prompt of {run_id}"),
        model: "replay".into(),
        protocol: Some(corrigible::Protocol::Json),
        protocol_reason: None,
        duration_ms: 12.5,
    }
}

fn ending(run_id: &str, end: RunEnd) -> Ending {
    Ending {
        run_id: run_id.into(),
        end,
        at: now_ms(),
    }
}

async fn batches_are_written_whole(store: &dyn RunStore) {
    store.insert_run(&new_run("b-old", "a")).await.unwrap();
    // More runs and endings than one statement holds, with their events and endings.
    let runs: Vec<NewRun> = (0..450)
        .map(|i| new_run(&format!("b-{i:03}"), "a"))
        .collect();
    store.write_batch(&runs, &[], &[]).await.unwrap();
    let events: Vec<StoredEvent> = runs
        .iter()
        .flat_map(|run| {
            [
                event(&run.id, 1, "run_started", "{}"),
                event(&run.id, 2, "model_call", MODEL_CALL),
            ]
        })
        .collect();
    let failure = RunEnd::Failed {
        kind: "transport".into(),
        error: "connection refused".into(),
    };
    let mut ends: Vec<Ending> = runs[..300]
        .iter()
        .map(|run| ending(&run.id, RunEnd::Finished(Box::new(report(&run.id)))))
        .collect();
    ends.extend(
        runs[300..]
            .iter()
            .map(|run| ending(&run.id, failure.clone())),
    );
    store
        .write_batch(&[new_run("b-new", "a")], &events, &ends)
        .await
        .unwrap();
    let stored: Vec<&StoredEvent> = events.iter().filter(|e| e.run_id == "b-449").collect();
    assert_eq!(
        store.events("b-449", 0).await.unwrap(),
        stored.into_iter().cloned().collect::<Vec<_>>()
    );
    let created = store.get_run("b-001").await.unwrap().unwrap().summary;
    let expected = runs[1].clone();
    assert_eq!(
        (
            created.created_at,
            created.prompt,
            created.model,
            created.protocol
        ),
        (
            expected.created_at,
            expected.prompt,
            expected.model,
            expected.protocol
        )
    );
    let run = store.get_run("b-299").await.unwrap().unwrap();
    assert_eq!(run.summary.status, RunStatus::Finished);
    assert_eq!(run.summary.satisfied, Some(true));
    assert_eq!(run.summary.stop_reason.as_deref(), Some("final"));
    assert_eq!(
        (run.summary.input_tokens, run.summary.output_tokens),
        (300, 21)
    );
    assert_eq!(run.summary.duration_ms, Some(12.5));
    assert_eq!(
        (
            run.summary.model_calls,
            run.summary.tool_calls,
            run.summary.corrections
        ),
        (3, 2, 1)
    );
    assert_eq!(run.report, Some(report("b-299")));
    let run = store.get_run("b-300").await.unwrap().unwrap().summary;
    assert_eq!(run.status, RunStatus::Failed);
    assert_eq!(run.error_kind.as_deref(), Some("transport"));
    assert_eq!(run.error.as_deref(), Some("connection refused"));
    assert!(run.finished_at.is_some());
    let untouched = store.get_run("b-old").await.unwrap().unwrap().summary;
    assert_eq!(untouched.status, RunStatus::Running);
    assert_eq!(
        store
            .get_run("b-new")
            .await
            .unwrap()
            .unwrap()
            .summary
            .status,
        RunStatus::Running
    );

    // One bad row fails the whole batch, and nothing of it is written.
    let err = store
        .write_batch(
            &[new_run("b-fresh", "a"), new_run("b-old", "a")],
            &[event("b-new", 1, "run_started", "{}")],
            &[ending("b-new", failure.clone())],
        )
        .await;
    assert!(err.is_err());
    assert!(store.get_run("b-fresh").await.unwrap().is_none());
    assert!(store.events("b-new", 0).await.unwrap().is_empty());
    assert_eq!(
        store
            .get_run("b-new")
            .await
            .unwrap()
            .unwrap()
            .summary
            .status,
        RunStatus::Running
    );
    // An interruption is refused, before anything is written.
    let err = store
        .write_batch(
            &[new_run("b-fresh", "a")],
            &[],
            &[ending("b-new", RunEnd::Interrupted)],
        )
        .await;
    assert!(matches!(err, Err(StoreError::Unsupported(_))), "{err:?}");
    assert!(store.get_run("b-fresh").await.unwrap().is_none());
}

async fn leases_protect_live_owners_only(store: &dyn RunStore) {
    // `a` owns the runs the other steps left running, and stays alive.
    store.heartbeat("a").await.unwrap();
    store.heartbeat("alive").await.unwrap();
    store.heartbeat("dead").await.unwrap();
    store
        .insert_run(&new_run("of-alive", "alive"))
        .await
        .unwrap();
    store.insert_run(&new_run("of-dead", "dead")).await.unwrap();
    store
        .insert_run(&new_run("of-nobody", "never-heartbeat"))
        .await
        .unwrap();
    store.insert_run(&new_run("of-me", "me")).await.unwrap();
    store
        .append_events(&[event("of-dead", 1, "model_call", MODEL_CALL)])
        .await
        .unwrap();
    // Fresh leases: only the run of an instance that never took one is an orphan.
    assert_eq!(store.interrupt_orphans("me", 60_000).await.unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    store.heartbeat("alive").await.unwrap();
    store.heartbeat("a").await.unwrap();
    // `dead` stopped renewing its lease; `alive` renewed it; `me` is never swept by itself.
    assert_eq!(store.interrupt_orphans("me", 300).await.unwrap(), 1);
    let status =
        |run: &'static str| async move { store.get_run(run).await.unwrap().unwrap().summary };
    assert_eq!(status("of-alive").await.status, RunStatus::Running);
    let dead = status("of-dead").await;
    assert_eq!(dead.status, RunStatus::Interrupted);
    assert_eq!(dead.model_calls, 1);
    assert_eq!(status("of-nobody").await.status, RunStatus::Interrupted);
    assert_eq!(status("of-me").await.status, RunStatus::Running);
    // At start-up an instance takes back the runs a previous process with its id left.
    assert_eq!(store.interrupt_owned("me").await.unwrap(), 1);
    assert_eq!(status("of-me").await.status, RunStatus::Interrupted);
    assert_eq!(store.interrupt_owned("me").await.unwrap(), 0);
}

/// `a` and `b` are two instances' handles on one database.
async fn breakers_are_one_per_tool_for_every_instance(a: &dyn RunStore, b: &dyn RunStore) {
    let policy = BreakerPolicy::new(2, Duration::from_millis(300)).unwrap();
    let one = CircuitBreakers::shared(policy, a.breakers());
    let two = CircuitBreakers::shared(policy, b.breakers());
    // Consecutive failures count together, whichever instance saw them.
    assert_eq!(
        one.record("lookup", false).await,
        (BreakerState::Closed, None)
    );
    let (state, opened) = two.record("lookup", false).await;
    assert_eq!(state, BreakerState::Open);
    let opened = opened.unwrap();
    assert_eq!((opened.from, opened.failures), (BreakerState::Closed, 2));
    // The other instance fails fast too; other tools are untouched.
    assert!(matches!(
        one.acquire("lookup").await.0,
        BreakerDecision::Reject { .. }
    ));
    assert_eq!(one.state("lookup").await, BreakerState::Open);
    assert_eq!(one.acquire("search").await.0, BreakerDecision::Allow);
    // After the reset time, exactly one probe goes through, even when both ask at once.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let (first, second) = tokio::join!(one.acquire("lookup"), two.acquire("lookup"));
    let probes = [first.0.clone(), second.0.clone()]
        .into_iter()
        .filter(|gate| *gate == BreakerDecision::Probe)
        .count();
    assert_eq!(probes, 1, "{first:?} {second:?}");
    assert_eq!(two.state("lookup").await, BreakerState::HalfOpen);
    // The probe's success closes it for everyone.
    assert_eq!(two.record("lookup", true).await.0, BreakerState::Closed);
    assert_eq!(one.acquire("lookup").await.0, BreakerDecision::Allow);
    // Failures reported at once from both instances are all counted.
    let wide = BreakerPolicy::new(1000, Duration::from_secs(60)).unwrap();
    let one = Arc::new(CircuitBreakers::shared(wide, a.breakers()));
    let two = Arc::new(CircuitBreakers::shared(wide, b.breakers()));
    let mut tasks = Vec::new();
    for i in 0..20 {
        let breakers = if i % 2 == 0 { one.clone() } else { two.clone() };
        tasks.push(tokio::spawn(async move {
            breakers.record("flaky", false).await
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap().0, BreakerState::Closed);
    }
    let records = a.breakers().records().await.unwrap();
    let flaky = records.iter().find(|(tool, _)| tool == "flaky").unwrap();
    assert_eq!(flaky.1.failures, 20, "{records:?}");
}

async fn listings_keep_what_the_filter_names(store: &dyn RunStore) {
    let now = now_ms();
    let runs = [
        ("flt-1", "filter-a", now - 60_000),
        ("flt-2", "filter-a", now - 1_000),
        ("flt-3", "filter-b", now - 500),
        ("flt-4", "filter-a", now),
    ];
    for (id, model, created_at) in runs {
        let mut run = new_run(id, "a");
        run.model = model.into();
        run.created_at = created_at;
        store.insert_run(&run).await.unwrap();
    }
    let finished = RunEnd::Finished(Box::new(report("flt-2")));
    store.end_run("flt-2", &finished, now).await.unwrap();
    let failed = RunEnd::Failed {
        kind: "transport".into(),
        error: "connection refused".into(),
    };
    store.end_run("flt-3", &failed, now).await.unwrap();
    let ids = |runs: Vec<corrigible_server::store::RunSummary>| -> Vec<String> {
        runs.into_iter().map(|r| r.id).collect()
    };
    let list = |filter: RunFilter, before: Option<&'static str>| async move {
        ids(store.list_runs(10, before, &filter).await.unwrap())
    };
    let model_a = || RunFilter {
        model: Some("filter-a".into()),
        ..RunFilter::default()
    };
    assert_eq!(list(model_a(), None).await, ["flt-4", "flt-2", "flt-1"]);
    assert_eq!(list(model_a(), Some("flt-4")).await, ["flt-2", "flt-1"]);
    let running_a = RunFilter {
        status: Some(RunStatus::Running),
        ..model_a()
    };
    assert_eq!(list(running_a, None).await, ["flt-4", "flt-1"]);
    let failed = RunFilter {
        status: Some(RunStatus::Failed),
        model: Some("filter-b".into()),
        ..RunFilter::default()
    };
    assert_eq!(list(failed, None).await, ["flt-3"]);
    let stopped_final = RunFilter {
        stop_reason: Some(StopReason::Final.as_str().into()),
        ..model_a()
    };
    assert_eq!(list(stopped_final, None).await, ["flt-2"]);
    let recent = RunFilter {
        since: Some(now - 2_000),
        until: Some(now),
        ..model_a()
    };
    assert_eq!(list(recent, None).await, ["flt-2"]);
    let nothing = RunFilter {
        model: Some("filter-a' OR '1'='1".into()),
        ..RunFilter::default()
    };
    assert!(list(nothing, None).await.is_empty());
}

fn rejection(run_id: &str, seq: u64, at: i64, category: &str) -> StoredEvent {
    StoredEvent {
        at,
        ..event(
            run_id,
            seq,
            "rejection",
            &format!(
                r#"{{"type":"rejection","index":0,"record":{{"stage":"1.0","category":"{category}","error":"e","attempt":1}}}}"#
            ),
        )
    }
}

async fn corrections_are_counted_and_filtered_by_category(store: &dyn RunStore) {
    let base = 1_000_000_000_000;
    let runs = ["cat-1", "cat-2", "cat-3"].map(|id| new_run(id, "a"));
    let events = [
        rejection("cat-1", 1, base + 10, "invalid_json"),
        rejection("cat-1", 2, base + 1_500, "unknown_tool"),
        rejection("cat-2", 1, base + 1_600, "invalid_json"),
        StoredEvent {
            at: base + 1_700,
            ..event("cat-2", 2, "model_call", MODEL_CALL)
        },
        rejection("cat-3", 1, base + 3_000, "invalid_json"),
        rejection("cat-3", 2, base - 1, "invalid_json"),
    ];
    store.write_batch(&runs, &events, &[]).await.unwrap();
    let window = Window::new(base, base + 3_000, 3).unwrap();
    let counts: Vec<(u32, String, u64)> = store
        .corrections_over_time(&window)
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.bucket, c.category, c.count))
        .collect();
    assert_eq!(
        counts,
        [
            (0, "invalid_json".to_string(), 1),
            (1, "invalid_json".to_string(), 1),
            (1, "unknown_tool".to_string(), 1),
        ]
    );
    let with = |category| RunFilter {
        category: Some(category),
        model: Some("replay".into()),
        ..RunFilter::default()
    };
    let ids = |runs: Vec<corrigible_server::store::RunSummary>| -> Vec<String> {
        runs.into_iter().map(|r| r.id).collect()
    };
    let unknown_tool = store
        .list_runs(10, None, &with(Category::UnknownTool))
        .await
        .unwrap();
    assert_eq!(ids(unknown_tool), ["cat-1"]);
    let invalid_json = store
        .list_runs(10, None, &with(Category::InvalidJson))
        .await
        .unwrap();
    assert_eq!(ids(invalid_json), ["cat-3", "cat-2", "cat-1"]);
    let echo = store
        .list_runs(10, None, &with(Category::Echo))
        .await
        .unwrap();
    assert!(echo.is_empty());
}

async fn suite(store: Arc<dyn RunStore>, other: Arc<dyn RunStore>) {
    runs_are_stored_listed_and_paged(store.as_ref()).await;
    listings_keep_what_the_filter_names(store.as_ref()).await;
    corrections_are_counted_and_filtered_by_category(store.as_ref()).await;
    events_append_in_order_once(store.as_ref()).await;
    endings_are_recorded(store.as_ref()).await;
    batches_are_written_whole(store.as_ref()).await;
    leases_protect_live_owners_only(store.as_ref()).await;
    breakers_are_one_per_tool_for_every_instance(store.as_ref(), other.as_ref()).await;
}

/// SQLite keeps any text as given, a NUL included, also through the batch path's JSON rows
/// (Postgres refuses a NUL in text, so this is not part of the shared suite).
async fn text_is_stored_as_given(store: &dyn RunStore) {
    let mut run = new_run("t-nul", "a");
    run.prompt = "a\u{0}b \u{1F600} \"quoted\" \\ \u{7}".into();
    let events = [event(&run.id, 1, "run_started", "{\"s\":\"\\u0000\"}")];
    store
        .write_batch(std::slice::from_ref(&run), &events, &[])
        .await
        .unwrap();
    let stored = store.get_run("t-nul").await.unwrap().unwrap().summary;
    assert_eq!(stored.prompt, run.prompt);
    assert_eq!(store.events("t-nul", 0).await.unwrap(), events);
}

#[tokio::test]
async fn sqlite_passes_the_store_suite() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("suite.db").display().to_string();
    let store = open_store(&db).await.unwrap();
    suite(store.clone(), open_store(&db).await.unwrap()).await;
    text_is_stored_as_given(store.as_ref()).await;
}

#[tokio::test]
async fn sqlite_in_memory_passes_the_store_suite() {
    let store = open_store("sqlite::memory:").await.unwrap();
    suite(store.clone(), store.clone()).await;
    text_is_stored_as_given(store.as_ref()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_passes_the_store_suite() {
    let Some(url) = common::postgres::fresh_database().await else {
        return;
    };
    suite(
        open_store(&url).await.unwrap(),
        open_store(&url).await.unwrap(),
    )
    .await;
}
