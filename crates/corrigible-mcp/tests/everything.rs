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

/// Held from picking a port until the server answers on it, so two tests never pick the same one.
static STARTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether an HTTP server answers on the port: a reply's status line, not just an open socket.
async fn answers_http(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let request = b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request).await.is_err() {
        return false;
    }
    let mut head = [0u8; 5];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_exact(&mut head)).await;
    matches!(read, Ok(Ok(_))) && &head == b"HTTP/"
}

async fn http_server(program: &std::path::Path) -> HttpServer {
    let _starting = STARTING.lock().await;
    let port = free_port();
    let loopback = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/loopback.cjs");
    let mut child = tokio::process::Command::new(program)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .env("NODE_OPTIONS", format!("--require {loopback}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !answers_http(port).await {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the HTTP server on port {port} exited: {status}");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the HTTP server did not answer on port {port} within 60 s"
        );
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
