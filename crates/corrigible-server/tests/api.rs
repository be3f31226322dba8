//! The HTTP API against a server on a random loopback port, with the replay model: every
//! status code of `POST /v1/runs` and the read routes.

mod common;

use std::time::Duration;

use common::{Options, SIMPLE, TRANSPORT_FAILURE, TWO_CORRECTIONS, TestServer, read_sse, slow};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn body(response: reqwest::Response) -> Value {
    response.json().await.expect("JSON body")
}

#[tokio::test]
async fn post_returns_the_run_report() {
    let server = TestServer::start(Options::replay(TWO_CORRECTIONS)).await;
    let response = server
        .post_run(
            &json!({"prompt": "What is 2*(3+4)?", "tools": ["calculator"], "protocol": "json"}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let location = response.headers()["location"].to_str().unwrap().to_string();
    let report = body(response).await;
    assert_eq!(report["satisfied"], true);
    assert_eq!(report["stop_reason"], "final");
    assert_eq!(report["final_summary"], "2*(3+4) = 14");
    assert_eq!(
        report["model_calls"][2]["reasoning"]["text"],
        "The calculator computes 2*(3+4)."
    );
    assert_eq!(
        report["model_calls"][2]["reasoning"]["recalculated"][0],
        serde_json::json!({"expression": "3 + 4", "stated": "8", "value": "7"})
    );
    assert_eq!(report["model_calls"][1]["reasoning"], Value::Null);
    assert_eq!(report["missing"], Value::Null);
    assert_eq!(report["steps"][0]["tool"], "calculator");
    assert_eq!(report["steps"][0]["outcome"], "ok");
    assert_eq!(report["steps"][0]["output"], 14);
    let categories: Vec<&str> = report["corrections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["category"].as_str().unwrap())
        .collect();
    assert_eq!(categories, ["invalid_json", "unknown_tool"]);
    assert_eq!(report["corrections"][1]["corrected"], true);
    assert_eq!(report["usage"]["model_calls"], 4);
    assert_eq!(report["usage"]["corrections"], 2);
    assert_eq!(report["model_calls"][1]["stage"], "step_1_correction_1");
    let run_id = report["run_id"].as_str().unwrap();
    assert_eq!(location, format!("/v1/runs/{run_id}"));

    let stored = body(
        server
            .client
            .get(server.url(&location))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(stored["status"], "finished");
    assert_eq!(stored["satisfied"], true);
    assert_eq!(stored["corrections"], 2);
    assert_eq!(stored["input_tokens"], 520);
    assert_eq!(stored["report"], report);
    server.stop().await;
}

#[tokio::test]
async fn every_run_replays_from_the_first_line() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let request = json!({"prompt": "6*7?"});
    let runs = (0..8).map(|_| server.post_run(&request));
    for response in futures_util::future::join_all(runs).await {
        assert_eq!(response.status(), StatusCode::OK);
        let report = body(response).await;
        assert_eq!(report["final_summary"], "42");
        assert_eq!(report["steps"][0]["output"], 42);
    }
    server.stop().await;
}

#[tokio::test]
async fn bad_requests_are_400_and_name_the_field() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let cases: [(&str, &str); 10] = [
        ("{\"prompt\": ", "body"),
        ("[1, 2]", "body"),
        (r#"{"prompt": "hi", "colour": "red"}"#, "colour"),
        (r#"{"tools": ["calculator"]}"#, "prompt"),
        (r#"{"prompt": "   "}"#, "prompt"),
        (
            r#"{"prompt": "hi", "tools": ["calculator", "abacus"]}"#,
            "tools",
        ),
        (r#"{"prompt": "hi", "protocol": "native"}"#, "protocol"),
        (r#"{"prompt": "hi", "protocol": "xml"}"#, "protocol"),
        (
            r#"{"prompt": "hi", "limits": {"max_actions": 3, "speed": 9}}"#,
            "limits.speed",
        ),
        (
            r#"{"prompt": "hi", "limits": {"max_corrections": 1000}}"#,
            "limits.max_corrections",
        ),
    ];
    for (request, field) in cases {
        let response = server
            .client
            .post(server.url("/v1/runs"))
            .header("content-type", "application/json")
            .body(request)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{request}");
        let error = body(response).await;
        assert_eq!(error["error"]["kind"], "invalid_request", "{request}");
        assert_eq!(error["error"]["field"], field, "{request}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{field}: ")), "{message}");
    }
    let protocol = server
        .post_run(&json!({"prompt": "hi", "protocol": "native"}))
        .await;
    let message = body(protocol).await["error"]["message"].to_string();
    assert!(message.contains("`json` protocol"), "{message}");
    let unknown = server
        .post_run(&json!({"prompt": "hi", "tools": ["abacus"]}))
        .await;
    let message = body(unknown).await["error"]["message"].to_string();
    assert!(
        message.contains("abacus") && message.contains("calculator"),
        "{message}"
    );

    let list = body(
        server
            .client
            .get(server.url("/v1/runs"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        list["runs"],
        json!([]),
        "no run is stored for a bad request"
    );
    server.stop().await;
}

#[tokio::test]
async fn bodies_above_the_limit_are_413() {
    let mut options = Options::replay(SIMPLE);
    options.body_limit = 1024;
    let server = TestServer::start(options).await;
    let big = json!({"prompt": "x".repeat(2000)});
    let response = server.post_run(&big).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body(response).await["error"]["kind"], "payload_too_large");

    // Without a Content-Length (chunked), the limit holds while reading.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = vec![
        Ok(b"{\"prompt\": \"".to_vec()),
        Ok(vec![b'y'; 4096]),
        Ok(b"\"}".to_vec()),
    ];
    let response = server
        .client
        .post(server.url("/v1/runs"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
            chunks,
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    let small = server.post_run(&json!({"prompt": "6*7?"})).await;
    assert_eq!(small.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn default_body_limit_is_64_kib() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let response = server
        .post_run(&json!({"prompt": "x".repeat(64 * 1024)}))
        .await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let response = server
        .post_run(&json!({"prompt": "x".repeat(60 * 1024)}))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn a_configured_api_key_is_required() {
    let mut options = Options::replay(SIMPLE);
    options.api_key = Some("s3cret-key".into());
    let server = TestServer::start(options).await;
    let run = json!({"prompt": "6*7?"});

    let missing = server.post_run(&run).await;
    assert_eq!(missing.status(), StatusCode::UNAUTHORIZED);
    assert!(missing.headers().contains_key("www-authenticate"));
    assert_eq!(body(missing).await["error"]["kind"], "unauthorized");

    let wrong = server
        .client
        .post(server.url("/v1/runs"))
        .bearer_auth("s3cret-kez")
        .json(&run)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    for path in ["/v1/runs", "/v1/runs/x", "/v1/runs/x/events", "/v1/info"] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{path}");
    }

    let right = server
        .client
        .post(server.url("/v1/runs"))
        .bearer_auth("s3cret-key")
        .json(&run)
        .send()
        .await
        .unwrap();
    assert_eq!(right.status(), StatusCode::OK);

    let health = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn a_transport_failure_is_502_and_the_run_is_stored_failed() {
    let server = TestServer::start(Options::replay(TRANSPORT_FAILURE)).await;
    let response = server.post_run(&json!({"prompt": "6*7?"})).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    let error = body(response).await;
    assert_eq!(error["error"]["kind"], "transport");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("connection refused (replayed)")
    );
    let run_id = error["error"]["run_id"].as_str().unwrap();
    let stored = body(
        server
            .client
            .get(server.url(&format!("/v1/runs/{run_id}")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(stored["status"], "failed");
    assert_eq!(stored["error_kind"], "transport");
    assert_eq!(stored["report"], Value::Null);
    server.stop().await;
}

#[tokio::test]
async fn shutting_down_refuses_new_runs_with_503_and_finishes_those_in_flight() {
    let server = TestServer::start(Options::replay(&slow(400))).await;
    let client = server.client.clone();
    let url = server.url("/v1/runs");
    let in_flight = tokio::spawn(async move {
        client
            .post(url)
            .json(&json!({"prompt": "wait a bit"}))
            .send()
            .await
            .unwrap()
    });
    let state = server.state.clone();
    common::eventually(|| state.runs_in_flight() == 1).await;

    let mut server = server;
    server.signal_shutdown();
    common::eventually(|| state.is_shutting_down()).await;
    let refused = server.post_run(&json!({"prompt": "too late"})).await;
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body(refused).await["error"]["kind"], "shutting_down");
    let health = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::SERVICE_UNAVAILABLE);

    let finished = in_flight.await.unwrap();
    assert_eq!(finished.status(), StatusCode::OK);
    assert_eq!(body(finished).await["final_summary"], "slept 400 ms");
    server.stop().await;
}

#[tokio::test]
async fn runs_past_the_shutdown_deadline_are_interrupted() {
    let mut options = Options::replay(&slow(30_000));
    options.deadline = Duration::from_millis(200);
    let server = TestServer::start(options).await;
    let client = server.client.clone();
    let url = server.url("/v1/runs");
    let in_flight = tokio::spawn(async move {
        client
            .post(url)
            .json(&json!({"prompt": "wait too long"}))
            .send()
            .await
            .unwrap()
    });
    let state = server.state.clone();
    common::eventually(|| state.runs_in_flight() == 1).await;
    let store = state.store().clone();
    let mut server = server;
    let _dir = server.take_dir();
    server.stop().await;

    let response = in_flight.await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let error = body(response).await;
    assert_eq!(error["error"]["kind"], "interrupted");
    let run_id = error["error"]["run_id"].as_str().unwrap();
    let record = store.get_run(run_id).await.unwrap().unwrap();
    assert_eq!(record.summary.status.as_str(), "interrupted");
    let events = store.events(run_id, 0).await.unwrap();
    assert!(events.iter().any(|e| e.kind == "decision"), "{events:?}");
}

#[tokio::test]
async fn unknown_runs_and_routes_are_404() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    for path in [
        "/v1/runs/0190-nope",
        "/v1/runs/0190-nope/events",
        "/v2/anything",
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(body(response).await["error"]["kind"], "not_found");
    }
    server.stop().await;
}

#[tokio::test]
async fn runs_are_listed_newest_first_with_a_cursor() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let mut ids = Vec::new();
    for prompt in ["first", "second", "third"] {
        let report = body(server.post_run(&json!({"prompt": prompt})).await).await;
        ids.push(report["run_id"].as_str().unwrap().to_string());
    }
    let page = body(
        server
            .client
            .get(server.url("/v1/runs?limit=2"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let prompts: Vec<&str> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["third", "second"]);
    assert_eq!(page["next_before"], ids[1].as_str());
    let rest = body(
        server
            .client
            .get(server.url(&format!("/v1/runs?limit=2&before={}", ids[1])))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(rest["runs"][0]["prompt"], "first");
    assert_eq!(rest["runs"][0]["status"], "finished");
    assert_eq!(rest["runs"][0]["satisfied"], true);
    assert_eq!(rest["runs"][0]["tool_calls"], 1);
    assert_eq!(rest["next_before"], Value::Null);

    let listed = |query: String| {
        let request = server.client.get(server.url(&format!("/v1/runs?{query}")));
        async move {
            let page = body(request.send().await.unwrap()).await;
            page["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["prompt"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed("status=finished&stop_reason=final&model=replay".into()).await,
        ["third", "second", "first"]
    );
    assert!(listed("status=running".into()).await.is_empty());
    assert!(
        listed("stop_reason=corrections_exhausted".into())
            .await
            .is_empty()
    );
    assert!(listed("model=openai%3Agpt-4o".into()).await.is_empty());
    assert!(listed("since=4102444800000".into()).await.is_empty());
    assert_eq!(
        listed("until=4102444800000&limit=1".into()).await,
        ["third"]
    );

    for query in [
        "limit=0",
        "limit=abc",
        "limit=501",
        "colour=red",
        "status=done",
        "stop_reason=whatever",
        "since=yesterday",
    ] {
        let response = server
            .client
            .get(server.url(&format!("/v1/runs?{query}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{query}");
    }
    server.stop().await;
}

#[tokio::test]
async fn corrections_are_counted_over_time_and_runs_filtered_by_category() {
    let server = TestServer::start(Options::replay(TWO_CORRECTIONS)).await;
    let before = body(server.post_run(&json!({"prompt": "2*(3+4)?"})).await).await;
    let get = |path: String| {
        let request = server.client.get(server.url(&path));
        async move { request.send().await.unwrap() }
    };
    let chart = body(get("/v1/stats/corrections".into()).await).await;
    assert_eq!(
        chart["categories"],
        json!([{"category": "invalid_json", "total": 1}, {"category": "unknown_tool", "total": 1}])
    );
    let buckets = chart["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 24);
    assert_eq!(
        buckets.last().unwrap()["counts"],
        json!({"invalid_json": 1, "unknown_tool": 1}),
        "the run is in the last hour"
    );
    assert_eq!(
        chart["until"].as_i64().unwrap() - chart["since"].as_i64().unwrap(),
        24 * 3_600_000
    );
    let old = body(get("/v1/stats/corrections?since=0&until=1000&buckets=2".into()).await).await;
    assert_eq!(old["categories"], json!([]));
    assert_eq!(old["bucket_ms"], 500);
    assert_eq!(old["buckets"][1], json!({"start": 500, "counts": {}}));

    let listed = |query: &str| {
        let request = server.client.get(server.url(&format!("/v1/runs?{query}")));
        async move {
            let page = body(request.send().await.unwrap()).await;
            page["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["run_id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        listed("category=unknown_tool").await,
        [before["run_id"].as_str().unwrap()]
    );
    assert!(listed("category=echo").await.is_empty());
    for query in [
        "/v1/runs?category=typo",
        "/v1/stats/corrections?since=10&until=5",
        "/v1/stats/corrections?buckets=0",
        "/v1/stats/corrections?buckets=241",
        "/v1/stats/corrections?since=-5",
        "/v1/stats/corrections?window=day",
    ] {
        assert_eq!(
            get(query.into()).await.status(),
            StatusCode::BAD_REQUEST,
            "{query}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn a_finished_run_replays_its_events_and_closes() {
    let server = TestServer::start(Options::replay(TWO_CORRECTIONS)).await;
    let report = body(server.post_run(&json!({"prompt": "2*(3+4)?"})).await).await;
    let run_id = report["run_id"].as_str().unwrap();
    let response = server
        .client
        .get(server.url(&format!("/v1/runs/{run_id}/events")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = read_sse(response).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "messages",
            "model_call",
            "rejection",
            "messages",
            "model_call",
            "rejection",
            "messages",
            "model_call",
            "corrected",
            "corrected",
            "decision",
            "tool_call",
            "messages",
            "model_call",
            "decision",
            "run_finished",
            "end"
        ]
    );
    assert_eq!(events[3].data["record"]["category"], "invalid_json");
    assert_eq!(events[3].id.as_deref(), Some("4"));
    assert_eq!(events.last().unwrap().data, json!({"status": "finished"}));

    // The first call's messages are whole; each later call's add to them what came since:
    // the rejected reply and the correction feedback.
    let first = &events[1].data;
    assert_eq!(first["kept"], 0);
    let kinds_of = |event: &Value| -> Vec<String> {
        event["added"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["kind"].as_str().unwrap_or("reply").to_string())
            .collect()
    };
    assert_eq!(kinds_of(first).last().map(String::as_str), Some("request"));
    let second = &events[4].data;
    assert_eq!(second["kept"], first["added"].as_array().unwrap().len());
    assert_eq!(kinds_of(second), ["reply", "feedback"]);
    assert!(
        second["added"][1]["content"]
            .as_str()
            .unwrap()
            .contains("JSON"),
        "{second}"
    );

    // Last-Event-ID resumes after that event.
    let resumed = server
        .client
        .get(server.url(&format!("/v1/runs/{run_id}/events")))
        .header("last-event-id", "16")
        .send()
        .await
        .unwrap();
    let kinds: Vec<String> = read_sse(resumed)
        .await
        .into_iter()
        .map(|e| e.event)
        .collect();
    assert_eq!(kinds, ["run_finished", "end"]);
    server.stop().await;
}

#[tokio::test]
async fn a_running_run_streams_its_events_as_they_happen() {
    let server = TestServer::start(Options::replay(&slow(300))).await;
    let started = server
        .client
        .post(server.url("/v1/runs"))
        .header("prefer", "respond-async")
        .json(&json!({"prompt": "wait"}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let run_id = body(started).await["run_id"].as_str().unwrap().to_string();
    let response = server
        .client
        .get(server.url(&format!("/v1/runs/{run_id}/events")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = response.bytes_stream();
    let mut text = String::new();
    let mut first_at = None;
    use futures_util::StreamExt;
    let begun = std::time::Instant::now();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("events arrive")
    {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if first_at.is_none() && text.contains("event: decision") {
            first_at = Some(begun.elapsed());
        }
    }
    let events = common::parse_sse(&text);
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert!(kinds.contains(&"tool_call"));
    assert_eq!(&kinds[kinds.len() - 2..], ["run_finished", "end"]);
    assert!(
        first_at.expect("a decision was streamed") < Duration::from_millis(250),
        "the decision came before the 300 ms tool finished"
    );
    let stored = server
        .state
        .store()
        .get_run(&run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.summary.status.as_str(), "finished");
    server.stop().await;
}

#[tokio::test]
async fn metrics_count_runs_corrections_tools_breakers_and_latency() {
    let server = TestServer::start(Options::replay(TWO_CORRECTIONS)).await;
    assert_eq!(
        server
            .post_run(&json!({"prompt": "2*(3+4)?"}))
            .await
            .status(),
        StatusCode::OK
    );
    let response = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    for expected in [
        "corrigible_runs_total{outcome=\"satisfied\",stop_reason=\"final\"} 1",
        "corrigible_corrections_total{category=\"invalid_json\"} 1",
        "corrigible_corrections_total{category=\"unknown_tool\"} 1",
        "corrigible_tool_calls_total{tool=\"calculator\",outcome=\"ok\"} 1",
        "corrigible_breaker_state{tool=\"calculator\"} 0",
        "corrigible_breaker_state{tool=\"sleep\"} 0",
        "corrigible_model_call_duration_seconds_bucket{le=\"0.001\"}",
        "corrigible_model_call_duration_seconds_count 4",
        "gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name=\"chat\"} 4",
        "gen_ai_client_token_usage_bucket{gen_ai_operation_name=\"chat\",gen_ai_token_type=\"input\",le=\"1\"} 0",
        "gen_ai_client_token_usage_count{gen_ai_operation_name=\"chat\",gen_ai_token_type=\"output\"} 4",
        "# HELP corrigible_corrections_total",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    server.stop().await;
}

#[tokio::test]
async fn health_openapi_info_and_dashboard_are_served() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let health = body(
        server
            .client
            .get(server.url("/healthz"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(health["status"], "ok");

    let openapi = body(
        server
            .client
            .get(server.url("/openapi.json"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(openapi["openapi"], "3.1.0");
    for path in [
        "/v1/runs",
        "/v1/runs/{id}",
        "/v1/runs/{id}/events",
        "/v1/stats/corrections",
        "/healthz",
        "/metrics",
    ] {
        assert!(openapi["paths"].get(path).is_some(), "{path}");
    }
    for code in ["200", "202", "400", "401", "413", "502", "503"] {
        assert!(
            openapi["paths"]["/v1/runs"]["post"]["responses"]
                .get(code)
                .is_some(),
            "{code}"
        );
    }

    let info = body(
        server
            .client
            .get(server.url("/v1/info"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(info["model"], "replay");
    assert_eq!(info["protocol"], "json");
    assert_eq!(info["tools"][0]["name"], "calculator");

    for (path, kind, needle) in [
        ("/", "text/html", "<title>corrigible</title>"),
        ("/assets/app.css", "text/css", ".timeline"),
        ("/assets/app.js", "text/javascript", "followEvents"),
    ] {
        let response = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        assert!(response.text().await.unwrap().contains(needle), "{path}");
    }
    server.stop().await;
}
