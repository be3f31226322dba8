//! The W3C trace context of a tool's span reaches the MCP server in the request's `_meta`
//! (SEP-414), over stdio and over Streamable HTTP; the server is the official Python SDK's.

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use common::installed;
use corrigible::{Tool, ToolContext, ToolOutcome};
use corrigible_mcp::{McpCatalog, McpServerConfig};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Value, json};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::prelude::*;

const WITNESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/trace_witness.py");

/// The Python of the virtualenv that holds `mcp-server-time`, and so the `mcp` SDK.
fn sdk_python() -> Option<PathBuf> {
    let server = installed("mcp-server-time")?;
    Some(server.with_file_name("python3"))
}

async fn witnessed(catalog: &McpCatalog) -> Value {
    let tool = catalog
        .tools()
        .iter()
        .find(|t| t.name() == "trace_context")
        .expect("the witness's tool");
    let ctx = ToolContext {
        run_id: "trace".into(),
        step: 1,
        attempt: 1,
        idempotency_key: "trace:1".into(),
    };
    match tool.call(json!({}), &ctx).await {
        ToolOutcome::Ok(value) => {
            let text = value["structured"]["result"]
                .as_str()
                .unwrap_or_else(|| panic!("the witness's answer: {value}"))
                .to_string();
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("the witness's answer: {value}"))
        }
        other => panic!("the witness failed: {other:?}"),
    }
}

/// Calls the witness inside a span recorded by an OpenTelemetry layer, then outside any, and
/// checks the first carries that span's context and the second none.
async fn propagates(config: McpServerConfig) {
    let catalog = McpCatalog::connect(vec![config]).await.expect("connects");
    let provider = SdkTracerProvider::builder().build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _default = tracing::subscriber::set_default(subscriber);

    let span = tracing::info_span!("execute_tool");
    let expected = {
        let context = span.context();
        let span_context = context.span().span_context().clone();
        format!(
            "00-{}-{}-01",
            span_context.trace_id(),
            span_context.span_id()
        )
    };
    let seen = witnessed(&catalog).instrument(span).await;
    assert_eq!(seen["traceparent"], expected.as_str(), "{seen}");
    assert_eq!(
        seen["tracestate"],
        Value::Null,
        "an empty tracestate is left out"
    );

    let seen = witnessed(&catalog).await;
    assert_eq!(
        seen["traceparent"],
        Value::Null,
        "no span, no context: {seen}"
    );
    catalog.close().await;
}

#[tokio::test]
async fn the_trace_context_reaches_a_stdio_server() {
    let Some(python) = sdk_python() else { return };
    let config = McpServerConfig::stdio(
        python.display().to_string(),
        vec![WITNESS.into(), "stdio".into()],
    );
    propagates(config).await;
}

#[tokio::test]
async fn the_trace_context_reaches_a_streamable_http_server() {
    let Some(python) = sdk_python() else { return };
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let mut child = tokio::process::Command::new(&python)
        .args([WITNESS, "http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the witness starts");
    wait_for(port, &mut child).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    propagates(McpServerConfig::http(&url, Vec::new()).unwrap()).await;
}

async fn wait_for(port: u16, child: &mut tokio::process::Child) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the witness on port {port} exited: {status}");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the witness did not listen on port {port} within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
