//! `@modelcontextprotocol/server-everything` (npm) over stdio and over Streamable HTTP: text,
//! structured and image content, annotations, and two servers declaring the same names.

mod common;

use std::net::TcpListener;
use std::time::Duration;

use common::*;
use corrigible::{Tool, ToolContext, ToolOutcome};
use corrigible_mcp::{McpCatalog, McpServerConfig, McpTransport};
use serde_json::json;

const EVERYTHING: &str = "mcp-server-everything";

fn ctx() -> ToolContext {
    ToolContext {
        run_id: "test".into(),
        step: 1,
        attempt: 1,
        idempotency_key: "test:1".into(),
    }
}

async fn call(catalog: &McpCatalog, name: &str, input: serde_json::Value) -> ToolOutcome {
    let tool = catalog
        .tools()
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    tool.call(input, &ctx()).await
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The HTTP server, listening on 127.0.0.1 only; killed when dropped.
struct HttpServer {
    _child: tokio::process::Child,
    url: String,
}

async fn http_server(program: &std::path::Path) -> HttpServer {
    let port = free_port();
    let loopback = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/loopback.cjs");
    let child = tokio::process::Command::new(program)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .env("NODE_OPTIONS", format!("--require {loopback}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    HttpServer {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

#[tokio::test]
async fn stdio_text_structured_and_image_content_reach_the_model() {
    let Some(program) = installed(EVERYTHING) else {
        return;
    };
    let config = McpServerConfig::stdio(program.display().to_string(), vec!["stdio".into()]);
    let catalog = McpCatalog::connect(vec![config]).await.unwrap();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name()).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-structured-content",
        "get-tiny-image",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let sum = catalog
        .tools()
        .iter()
        .find(|t| t.name() == "get-sum")
        .unwrap();
    assert!(sum.idempotent(), "readOnlyHint + idempotentHint");

    assert_eq!(
        call(&catalog, "echo", json!({"message": "hello"})).await,
        ToolOutcome::Ok(json!("Echo: hello"))
    );
    assert_eq!(
        call(&catalog, "get-sum", json!({"a": 2, "b": 3})).await,
        ToolOutcome::Ok(json!("The sum of 2 and 3 is 5."))
    );
    let ToolOutcome::Ok(weather) = call(
        &catalog,
        "get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await
    else {
        panic!("structured content expected");
    };
    assert_eq!(weather["temperature"], 36, "{weather}");
    let ToolOutcome::Ok(image) = call(&catalog, "get-tiny-image", json!({})).await else {
        panic!("image content expected");
    };
    let text = image.to_string();
    assert!(text.contains("image/png"), "{text}");
    catalog.close().await;
}

#[tokio::test]
async fn streamable_http_serves_the_same_tools() {
    let Some(program) = installed(EVERYTHING) else {
        return;
    };
    let server = http_server(&program).await;
    let config = McpServerConfig::http(&server.url, Vec::new()).unwrap();
    assert!(matches!(config.transport, McpTransport::Http { .. }));
    let catalog = McpCatalog::connect(vec![config]).await.unwrap();
    assert_eq!(
        call(&catalog, "get-sum", json!({"a": 40, "b": 2})).await,
        ToolOutcome::Ok(json!("The sum of 40 and 2 is 42."))
    );
    catalog.close().await;
    drop(server);
}

#[tokio::test]
async fn two_servers_with_the_same_tools_get_prefixed_names() {
    let Some(program) = installed(EVERYTHING) else {
        return;
    };
    let server = http_server(&program).await;
    let stdio =
        McpServerConfig::stdio(program.display().to_string(), vec!["stdio".into()]).named("local");
    let http = McpServerConfig::http(&server.url, Vec::new())
        .unwrap()
        .named("remote");
    let time_like = McpServerConfig::stdio(fault_server(), Vec::new()).named("faults");
    let catalog = McpCatalog::connect(vec![stdio, http, time_like])
        .await
        .unwrap();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name()).collect();
    assert!(names.contains(&"local_echo"), "{names:?}");
    assert!(names.contains(&"remote_echo"), "{names:?}");
    assert!(names.contains(&"faults_echo"), "{names:?}");
    assert!(!names.contains(&"echo"), "{names:?}");
    assert!(
        names.contains(&"pid"),
        "only clashing names are prefixed: {names:?}"
    );
    assert_eq!(
        call(&catalog, "remote_get-sum", json!({"a": 1, "b": 1})).await,
        ToolOutcome::Ok(json!("The sum of 1 and 1 is 2."))
    );
    assert_eq!(
        call(&catalog, "faults_echo", json!({"text": "x"})).await,
        ToolOutcome::Ok(json!({"echo": "x"}))
    );
    catalog.close().await;
    drop(server);
}
