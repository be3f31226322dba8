//! The tools of the built-in tools suite served over MCP on stdio: the calculator, the time
//! tool with its clock fixed at the suite's instant, and the weather tool on the fake
//! Open-Meteo server. An agent outside corrigible then runs the suite's tasks against the very
//! tools the bench grades, which is how the gateway's gain is measured.

use std::sync::Arc;

use corrigible::tool::{ToolContext, ToolOutcome, ToolRegistry};
use corrigible_bench::tools_suite::ToolsEnv;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::Value;

struct BenchTools {
    env: ToolsEnv,
}

impl BenchTools {
    fn registry(&self) -> &ToolRegistry {
        &self.env.registry
    }
}

impl ServerHandler for BenchTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self
            .registry()
            .specs()
            .into_iter()
            .map(|spec| {
                let schema = match spec.parameters {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                let read_only = self.registry().read_only(&spec.name);
                Tool::new(spec.name, spec.description, Arc::new(schema))
                    .annotate(ToolAnnotations::new().read_only(read_only))
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.registry().get(&request.name) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        };
        let input = Value::Object(request.arguments.unwrap_or_default());
        if let Some(Err(message)) = self.registry().validate(&request.name, &input) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(message.to_string())]).into());
        }
        let ctx = ToolContext {
            run_id: "bench-tools".into(),
            step: 1,
            attempt: 1,
            idempotency_key: String::new(),
        };
        let reply = match tool.call(input, &ctx).await {
            ToolOutcome::Ok(value) => {
                let mut reply =
                    CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
                reply.structured_content = Some(value);
                reply
            }
            ToolOutcome::Retry(message)
            | ToolOutcome::Failed(message)
            | ToolOutcome::Fatal(message) => {
                CallToolResult::error(vec![ContentBlock::text(message)])
            }
        };
        Ok(reply.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let env = match ToolsEnv::start() {
        Ok(env) => env,
        Err(e) => {
            eprintln!("bench tools: {e}");
            std::process::exit(1);
        }
    };
    let server = BenchTools { env };
    let service = match server.serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        Err(e) => {
            eprintln!("bench tools: {e}");
            std::process::exit(1);
        }
    };
    let _ = service.waiting().await;
}
