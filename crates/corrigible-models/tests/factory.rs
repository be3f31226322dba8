mod common;

use common::{Canned, FakeServer, first_request};
use corrigible_models::{ModelSpec, ModelsError, ProviderOptions, Timeouts, build, build_with_env};
use serde_json::json;

fn no_env(_: &str) -> Option<String> {
    None
}

#[tokio::test]
async fn replay_spec_builds_the_replay_model() {
    let path =
        std::env::temp_dir().join(format!("corrigible-factory-{}.jsonl", std::process::id()));
    std::fs::write(&path, "{\"text\": \"hello\"}\n").unwrap();
    let spec: ModelSpec = format!("replay:{}", path.display()).parse().unwrap();
    let model = build(&spec, ProviderOptions::default()).unwrap();
    assert_eq!(model.name(), "replay");
    let reply = model.complete(&first_request()).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("hello"));
    std::fs::remove_file(&path).ok();

    let missing: ModelSpec = "replay:/nonexistent/x.jsonl".parse().unwrap();
    assert!(matches!(
        build(&missing, ProviderOptions::default()),
        Err(ModelsError::Replay(_))
    ));
}

#[test]
fn local_is_built_elsewhere() {
    let err = build(&"local".parse().unwrap(), ProviderOptions::default())
        .err()
        .unwrap();
    assert!(matches!(err, ModelsError::LocalNotSupported));
}

#[test]
fn keys_are_required_where_the_provider_needs_them() {
    for spec in ["gemini:gemini-2.5-flash", "anthropic:claude-sonnet-4-5"] {
        let err = build_with_env(&spec.parse().unwrap(), ProviderOptions::default(), no_env)
            .err()
            .unwrap();
        assert!(matches!(err, ModelsError::MissingKey { .. }), "{err}");
    }
    let err = build_with_env(
        &"gemini:x".parse().unwrap(),
        ProviderOptions::default(),
        no_env,
    )
    .err()
    .unwrap();
    assert_eq!(
        err.to_string(),
        "no API key for gemini: set GEMINI_API_KEY or GOOGLE_API_KEY (or pass one explicitly)"
    );
    let openai = build_with_env(
        &"openai:gpt-4o-mini".parse().unwrap(),
        ProviderOptions::default(),
        no_env,
    )
    .err()
    .unwrap();
    assert_eq!(
        openai.to_string(),
        "no API key for openai: set OPENAI_API_KEY (or pass one explicitly)"
    );
    for own_api in ["https://api.openai.com/v1", "https://api.openai.com/v1/"] {
        let options = ProviderOptions {
            base_url: Some(own_api.into()),
            ..ProviderOptions::default()
        };
        let err = build_with_env(&"openai:gpt-4o-mini".parse().unwrap(), options, no_env);
        assert!(
            matches!(err, Err(ModelsError::MissingKey { .. })),
            "{own_api}"
        );
    }
}

#[test]
fn an_openai_compatible_server_elsewhere_takes_no_key() {
    let options = ProviderOptions {
        base_url: Some("http://127.0.0.1:11434/v1".into()),
        ..ProviderOptions::default()
    };
    let model = build_with_env(&"openai:llama3.2".parse().unwrap(), options, no_env).unwrap();
    assert_eq!(model.name(), "openai:llama3.2");
    let from_env =
        |name: &str| (name == "OPENAI_BASE_URL").then(|| "http://localhost:8080/v1".into());
    let model = build_with_env(
        &"openai:llama3.2".parse().unwrap(),
        ProviderOptions::default(),
        from_env,
    )
    .unwrap();
    assert_eq!(model.name(), "openai:llama3.2");
}

#[test]
fn bad_base_url_is_refused() {
    let options = ProviderOptions {
        base_url: Some("localhost:11434/v1".into()),
        ..ProviderOptions::default()
    };
    let err = build_with_env(&"openai:m".parse().unwrap(), options, no_env)
        .err()
        .unwrap();
    assert!(matches!(err, ModelsError::InvalidBaseUrl { .. }), "{err}");
}

#[tokio::test]
async fn base_url_and_key_come_from_the_environment() {
    let server = FakeServer::start(vec![Canned::ok(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]
    }))])
    .await;
    let base = format!("{}/v1", server.base);
    let env = |name: &str| match name {
        "OPENAI_BASE_URL" => Some(base.clone()),
        "OPENAI_API_KEY" => Some("env-key-42".to_string()),
        _ => None,
    };
    let options = ProviderOptions {
        timeouts: Timeouts::default(),
        ..ProviderOptions::default()
    };
    let model = build_with_env(&"openai:m".parse().unwrap(), options, env).unwrap();
    let reply = model.complete(&first_request()).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("hi"));
    assert_eq!(reply.usage.total(), 0);
    let request = server.only_request();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer env-key-42"));
}

#[test]
fn models_debug_shows_no_key() {
    let options = ProviderOptions {
        api_key: Some(corrigible_models::ApiKey::new("sk-very-secret")),
        ..ProviderOptions::default()
    };
    let model = corrigible_models::AnthropicModel::new("claude", options).unwrap();
    let shown = format!("{model:?}");
    assert!(!shown.contains("sk-very-secret"), "{shown}");
}
