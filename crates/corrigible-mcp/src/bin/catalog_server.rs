//! An MCP server over stdio with a large catalog: 44 unit conversions, one tool each
//! (`km_to_miles {value}` → `{"value": 10, "from": "km", "to": "miles", "result": 6.2137}`).
//! It measures tool discovery: tasks against a catalog too large to show in full.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// `(from, to, factor, offset)`: `result = value * factor + offset`.
const CONVERSIONS: &[(&str, &str, f64, f64)] = &[
    ("km", "miles", 0.621_371, 0.0),
    ("miles", "km", 1.609_344, 0.0),
    ("m", "feet", 3.280_84, 0.0),
    ("feet", "m", 0.3048, 0.0),
    ("cm", "inches", 0.393_701, 0.0),
    ("inches", "cm", 2.54, 0.0),
    ("m", "yards", 1.093_61, 0.0),
    ("yards", "m", 0.9144, 0.0),
    ("nautical_miles", "km", 1.852, 0.0),
    ("km", "nautical_miles", 0.539_957, 0.0),
    ("kg", "pounds", 2.204_62, 0.0),
    ("pounds", "kg", 0.453_592, 0.0),
    ("g", "ounces", 0.035_274, 0.0),
    ("ounces", "g", 28.3495, 0.0),
    ("tonnes", "short_tons", 1.102_31, 0.0),
    ("short_tons", "tonnes", 0.907_185, 0.0),
    ("stones", "kg", 6.350_29, 0.0),
    ("kg", "stones", 0.157_473, 0.0),
    ("celsius", "fahrenheit", 1.8, 32.0),
    ("fahrenheit", "celsius", 0.555_556, -17.777_8),
    ("celsius", "kelvin", 1.0, 273.15),
    ("kelvin", "celsius", 1.0, -273.15),
    ("liters", "gallons", 0.264_172, 0.0),
    ("gallons", "liters", 3.785_41, 0.0),
    ("ml", "fluid_ounces", 0.033_814, 0.0),
    ("fluid_ounces", "ml", 29.5735, 0.0),
    ("liters", "cups", 4.226_75, 0.0),
    ("cups", "liters", 0.236_588, 0.0),
    ("kmh", "mph", 0.621_371, 0.0),
    ("mph", "kmh", 1.609_344, 0.0),
    ("ms", "kmh", 3.6, 0.0),
    ("kmh", "ms", 0.277_778, 0.0),
    ("knots", "kmh", 1.852, 0.0),
    ("hours", "minutes", 60.0, 0.0),
    ("minutes", "seconds", 60.0, 0.0),
    ("days", "hours", 24.0, 0.0),
    ("weeks", "days", 7.0, 0.0),
    ("sqm", "sqft", 10.7639, 0.0),
    ("sqft", "sqm", 0.092_903, 0.0),
    ("hectares", "acres", 2.471_05, 0.0),
    ("acres", "hectares", 0.404_686, 0.0),
    ("kwh", "joules", 3_600_000.0, 0.0),
    ("calories", "joules", 4.184, 0.0),
    ("bar", "psi", 14.5038, 0.0),
];

struct CatalogServer;

fn name(from: &str, to: &str) -> String {
    format!("{from}_to_{to}")
}

fn tools() -> Vec<Tool> {
    CONVERSIONS
        .iter()
        .map(|(from, to, _, _)| {
            let schema = json!({
                "type": "object",
                "properties": {"value": {"type": "number", "description": format!("the amount in {from}")}},
                "required": ["value"],
                "additionalProperties": false
            });
            let schema = match schema {
                Value::Object(map) => map,
                _ => serde_json::Map::new(),
            };
            Tool::new(
                name(from, to),
                format!(
                    "Converts an amount in {} to {}. Returns the value, both units and the rounded result.",
                    from.replace('_', " "),
                    to.replace('_', " ")
                ),
                Arc::new(schema),
            )
            .annotate(ToolAnnotations::new().read_only(true))
        })
        .collect()
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

impl ServerHandler for CatalogServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some((from, to, factor, offset)) = CONVERSIONS
            .iter()
            .find(|(from, to, _, _)| name(from, to) == request.name)
        else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        };
        let args = request.arguments.unwrap_or_default();
        let Some(value) = args.get("value").and_then(Value::as_f64) else {
            return Ok(
                CallToolResult::error(vec![ContentBlock::text("value must be a number")]).into(),
            );
        };
        let result = json!({"value": value, "from": from, "to": to, "result": round(value * factor + offset)});
        let mut reply = CallToolResult::success(vec![ContentBlock::text(result.to_string())]);
        reply.structured_content = Some(result);
        Ok(reply.into())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let service = match CatalogServer.serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        Err(e) => {
            eprintln!("catalog server: {e}");
            std::process::exit(1);
        }
    };
    let _ = service.waiting().await;
}
