use corrigible::{
    Message, Model, ModelError, ModelReply, ModelRequest, Protocol, Stage, ToolCall, Usage,
};
use corrigible_models::{ReplayError, ReplayModel};

fn request() -> ModelRequest {
    ModelRequest {
        stage: Stage::new(1, 0),
        messages: vec![Message::request("hello")],
        tools: Vec::new(),
        protocol: Protocol::Json,
        correction: None,
        grounds: Default::default(),
    }
}

const FILE: &str = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"hi\"}", "usage": {"input_tokens": 12, "output_tokens": 3}}

{"tool_calls": [{"name": "weather", "arguments": "{\"city\": \"Delhi\""}, {"name": "calculator", "arguments": {"expression": "1+1"}}]}
{"tool_calls": [{"id": "mine", "name": "final_answer", "arguments": {"satisfied": true, "final_summary": "ok"}}], "text": "done"}
{"transport_error": "connection reset"}
"#;

#[tokio::test]
async fn serves_lines_in_order_then_exhausts() {
    let model = ReplayModel::from_str(FILE).unwrap();
    assert_eq!(model.name(), "replay");
    assert_eq!(model.len(), 4);

    let first = model.complete(&request()).await.unwrap();
    assert_eq!(
        first.text.as_deref(),
        Some(r#"{"state":"final","satisfied":true,"final_summary":"hi"}"#)
    );
    assert_eq!(
        first.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 3
        }
    );

    let second = model.complete(&request()).await.unwrap();
    assert_eq!(second.text, None);
    assert_eq!(
        second.tool_calls,
        vec![
            ToolCall {
                id: "call_1".into(),
                name: "weather".into(),
                arguments: r#"{"city": "Delhi""#.into()
            },
            ToolCall {
                id: "call_2".into(),
                name: "calculator".into(),
                arguments: r#"{"expression":"1+1"}"#.into()
            },
        ]
    );
    assert_eq!(second.usage, Usage::default());

    let third = model.complete(&request()).await.unwrap();
    assert_eq!(third.text.as_deref(), Some("done"));
    assert_eq!(third.tool_calls[0].id, "mine");

    assert_eq!(
        model.complete(&request()).await,
        Err(ModelError::Transport("connection reset".into()))
    );
    assert_eq!(model.remaining(), 0);
    match model.complete(&request()).await {
        Err(ModelError::Transport(m)) => assert!(m.contains("replay exhausted"), "{m}"),
        other => panic!("expected exhaustion, got {other:?}"),
    }
}

#[tokio::test]
async fn reset_and_restarted_replay_from_the_first_line() {
    let model = ReplayModel::from_str(FILE).unwrap();
    model.complete(&request()).await.unwrap();
    model.complete(&request()).await.unwrap();

    let fresh = model.restarted();
    assert_eq!(fresh.remaining(), 4);
    assert_eq!(model.remaining(), 2);
    let a = fresh.complete(&request()).await.unwrap();

    model.reset();
    let b = model.complete(&request()).await.unwrap();
    assert_eq!(a, b);
    assert!(a.text.is_some());
}

#[tokio::test]
async fn empty_object_is_an_empty_reply() {
    let model = ReplayModel::from_str("{}\n").unwrap();
    let reply = model.complete(&request()).await.unwrap();
    assert_eq!(reply.text, None);
    assert!(reply.tool_calls.is_empty());
}

#[test]
fn malformed_line_names_its_number() {
    let err = ReplayModel::from_str("{\"text\": \"ok\"}\n\n{\"text\": \n").unwrap_err();
    assert!(matches!(err, ReplayError::Line { line: 3, .. }), "{err}");
    assert!(err.to_string().starts_with("replay line 3:"), "{err}");

    let err = ReplayModel::from_str("{\"txt\": \"typo\"}").unwrap_err();
    assert!(err.to_string().contains("replay line 1"), "{err}");
    assert!(err.to_string().contains("txt"), "{err}");

    let err = ReplayModel::from_str("{\"transport_error\": \"x\", \"text\": \"y\"}").unwrap_err();
    assert!(matches!(err, ReplayError::Line { line: 1, .. }), "{err}");

    let err = ReplayModel::from_str("{\"tool_calls\": [{\"arguments\": {}}]}").unwrap_err();
    assert!(err.to_string().contains("name"), "{err}");
}

#[test]
fn missing_file_is_an_io_error() {
    let err = ReplayModel::from_file("/nonexistent/replay.jsonl").unwrap_err();
    assert!(matches!(err, ReplayError::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/replay.jsonl"));
}

#[tokio::test]
async fn from_file_reads_jsonl() {
    let dir = std::env::temp_dir().join(format!("corrigible-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.jsonl");
    std::fs::write(&path, FILE).unwrap();
    let model = ReplayModel::from_file(&path).unwrap();
    assert_eq!(model.len(), 4);
    assert!(model.complete(&request()).await.is_ok());
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_line_may_carry_the_reasoning_before_its_reply() {
    let model = ReplayModel::from_str(
        "{\"text\": \"{}\", \"reasoning\": \"2 + 2 is arithmetic.\"}\n{\"text\": \"{}\"}\n",
    )
    .unwrap();
    let first = model.complete(&request()).await.unwrap();
    assert_eq!(
        first.reasoning,
        Some(corrigible::Reasoning::text("2 + 2 is arithmetic."))
    );
    assert_eq!(model.complete(&request()).await.unwrap().reasoning, None);
    assert!(ReplayModel::from_str("{\"transport_error\": \"x\", \"reasoning\": \"y\"}").is_err());
}

#[tokio::test(start_paused = true)]
async fn a_line_may_take_its_time() {
    let model = ReplayModel::from_str(
        "{\"text\": \"{}\", \"delay_ms\": 250}\n{\"transport_error\": \"down\", \"delay_ms\": 40}\n",
    )
    .unwrap();
    let started = tokio::time::Instant::now();
    assert!(model.complete(&request()).await.is_ok());
    assert_eq!(started.elapsed(), std::time::Duration::from_millis(250));
    assert!(model.complete(&request()).await.is_err());
    assert_eq!(started.elapsed(), std::time::Duration::from_millis(290));
}

#[tokio::test]
async fn a_script_serves_replies_and_errors_and_keeps_its_requests() {
    let model = ReplayModel::script([
        Ok(ModelReply {
            text: Some("one".into()),
            ..ModelReply::default()
        }),
        Err(ModelError::Config("refused".into())),
    ]);
    let mut asked = request();
    assert_eq!(
        model.complete(&asked).await.unwrap().text.as_deref(),
        Some("one")
    );
    asked.stage = Stage::new(2, 0);
    assert_eq!(
        model.complete(&asked).await,
        Err(ModelError::Config("refused".into()))
    );
    let exhausted = model.complete(&asked).await.unwrap_err().to_string();
    assert!(exhausted.contains("replay exhausted"), "{exhausted}");
    let kept = model.requests();
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[1].stage, Stage::new(2, 0));
    assert_eq!(model.request(0).map(|r| r.stage), Some(Stage::new(1, 0)));
    assert!(model.request(3).is_none());
}

#[tokio::test]
async fn a_replay_file_keeps_no_requests() {
    let model = ReplayModel::from_str("{\"text\":\"a\"}\n").unwrap();
    model.complete(&request()).await.unwrap();
    assert!(model.requests().is_empty());
    let texts = ReplayModel::texts(&["x", "y"]);
    texts.complete(&request()).await.unwrap();
    assert_eq!(texts.requests().len(), 1);
    assert_eq!(texts.remaining(), 1);
}
