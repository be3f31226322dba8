//! The spans a run emits through `tracing`, as a `tracing-opentelemetry` layer would read
//! them: names, parents, GenAI attributes, and the correction and retry events.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;
use corrigible::Agent;
use serde_json::json;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Default, Clone)]
struct SpanSeen {
    name: String,
    parent: Option<String>,
    fields: BTreeMap<String, String>,
}

#[derive(Debug, Default, Clone)]
struct EventSeen {
    message: String,
    span: Option<String>,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Seen {
    spans: Vec<SpanSeen>,
    ids: BTreeMap<u64, usize>,
    events: Vec<EventSeen>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Seen>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut seen = SpanSeen {
            name: attrs.metadata().name().to_string(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.name().to_string()),
            ..SpanSeen::default()
        };
        attrs.record(&mut Fields(&mut seen.fields));
        let mut all = self.0.lock().unwrap();
        let index = all.spans.len();
        all.spans.push(seen);
        all.ids.insert(id.into_u64(), index);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
        let mut all = self.0.lock().unwrap();
        if let Some(&index) = all.ids.get(&id.into_u64()) {
            values.record(&mut Fields(&mut all.spans[index].fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let seen = EventSeen {
            message: fields.remove("message").unwrap_or_default(),
            span: ctx.event_span(event).map(|s| s.name().to_string()),
            fields,
        };
        self.0.lock().unwrap().events.push(seen);
    }
}

async fn traced(agent: Agent, prompt: &str) -> Seen {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    agent.run(prompt).await.unwrap();
    drop(guard);
    std::mem::take(&mut *capture.0.lock().unwrap())
}

fn named<'a>(seen: &'a Seen, name: &str) -> Vec<&'a SpanSeen> {
    seen.spans.iter().filter(|s| s.name == name).collect()
}

#[tokio::test(flavor = "current_thread")]
async fn a_run_with_a_correction_and_a_tool_call_is_a_tree_of_genai_spans() {
    let model = Arc::new(Scripted::texts(&[
        "not json",
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "14"),
    ]));
    let agent = Agent::builder_shared(model)
        .tool(Calc::new())
        .build()
        .unwrap();
    let seen = traced(agent, "What is 2*(3+4)?").await;

    let runs = named(&seen, "invoke_agent");
    assert_eq!(runs.len(), 1);
    let run = runs[0];
    assert_eq!(run.parent, None);
    assert_eq!(run.fields["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(run.fields["otel.name"], "invoke_agent corrigible");
    assert!(!run.fields["gen_ai.conversation.id"].is_empty());

    let chats = named(&seen, "chat");
    assert_eq!(
        chats.len(),
        3,
        "one span a model call, the correction's too"
    );
    for chat in &chats {
        assert_eq!(chat.parent.as_deref(), Some("invoke_agent"));
        assert_eq!(chat.fields["gen_ai.operation.name"], "chat");
        assert_eq!(chat.fields["gen_ai.provider.name"], "corrigible");
        assert_eq!(chat.fields["gen_ai.request.model"], "replay");
        assert_eq!(chat.fields["otel.name"], "chat replay");
        assert_eq!(chat.fields["otel.kind"], "client");
        assert_eq!(chat.fields["gen_ai.usage.input_tokens"], "100");
        assert_eq!(chat.fields["gen_ai.usage.output_tokens"], "10");
        assert!(!chat.fields.contains_key("error.type"));
        assert!(
            !chat.fields.contains_key("gen_ai.input.messages"),
            "no content unless asked"
        );
        assert!(!chat.fields.contains_key("gen_ai.output.messages"));
    }
    assert_eq!(chats[0].fields["corrigible.stage"], "step_1");
    assert_eq!(chats[1].fields["corrigible.stage"], "step_1_correction_1");

    let tools = named(&seen, "execute_tool");
    assert_eq!(tools.len(), 1);
    let tool = tools[0];
    assert_eq!(tool.parent.as_deref(), Some("invoke_agent"));
    assert_eq!(tool.fields["gen_ai.tool.name"], "calculator");
    assert_eq!(tool.fields["otel.name"], "execute_tool calculator");
    assert_eq!(tool.fields["corrigible.attempts"], "1");
    assert!(!tool.fields.contains_key("error.type"));

    let corrections: Vec<&EventSeen> = seen
        .events
        .iter()
        .filter(|e| e.message == "correction")
        .collect();
    assert_eq!(corrections.len(), 1);
    let correction = corrections[0];
    assert_eq!(correction.span.as_deref(), Some("invoke_agent"));
    assert_eq!(
        correction.fields["corrigible.correction.category"],
        "invalid_json"
    );
    assert_eq!(correction.fields["corrigible.correction.slot"], "1");
    assert_eq!(correction.fields["corrigible.correction.round"], "0");
    assert_eq!(correction.fields["corrigible.correction.attempt"], "1");
    assert_eq!(correction.fields["corrigible.correction.left"], "1");
}

#[tokio::test(flavor = "current_thread")]
async fn a_tool_retry_is_an_attempt_under_its_one_span_and_a_failure_sets_error_type() {
    let model = Arc::new(Scripted::texts(&[
        &action("flaky", json!({"q": "a"})),
        &action("down", json!({"q": "b"})),
        &final_answer(false, "the service is down"),
    ]));
    let agent = Agent::builder_shared(model)
        .tool(Flaky::new("flaky", 1))
        .tool(Flaky::new("down", 10))
        .build()
        .unwrap();
    let seen = traced(agent, "use the tools").await;

    let tools = named(&seen, "execute_tool");
    assert_eq!(tools.len(), 2, "one span a call, whatever its attempts");
    let flaky = tools[0];
    assert_eq!(flaky.fields["gen_ai.tool.name"], "flaky");
    assert_eq!(flaky.fields["corrigible.attempts"], "2");
    assert!(!flaky.fields.contains_key("error.type"));
    let retries: Vec<&EventSeen> = seen
        .events
        .iter()
        .filter(|e| e.message == "tool attempt failed, retrying")
        .collect();
    assert!(!retries.is_empty());
    assert!(
        retries
            .iter()
            .all(|e| e.span.as_deref() == Some("execute_tool"))
    );
    assert_eq!(retries[0].fields["corrigible.attempt"], "1");

    let down = tools[1];
    assert_eq!(down.fields["gen_ai.tool.name"], "down");
    assert_eq!(down.fields["error.type"], "tool_failed");
    assert_eq!(down.fields["otel.status_code"], "ERROR");
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_model_call_sets_error_type_on_its_span() {
    let model = Arc::new(Scripted::script(vec![Err(
        corrigible::ModelError::Transport("connection reset".into()),
    )]));
    let agent = Agent::builder_shared(model).build().unwrap();
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    let result = agent.run("x").await;
    drop(guard);
    assert!(result.is_err());
    let seen = capture.0.lock().unwrap();
    let chats = named(&seen, "chat");
    assert_eq!(chats.len(), 1);
    assert_eq!(chats[0].fields["error.type"], "transport");
    assert_eq!(chats[0].fields["otel.status_code"], "ERROR");
}

#[tokio::test(flavor = "current_thread")]
async fn content_is_on_the_spans_only_when_the_agent_captures_it() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "14"),
    ]));
    let agent = Agent::builder_shared(model)
        .tool(Calc::new())
        .capture_content(true)
        .build()
        .unwrap();
    let seen = traced(agent, "What is 2*(3+4)?").await;
    let chats = named(&seen, "chat");
    let input: serde_json::Value =
        serde_json::from_str(&chats[0].fields["gen_ai.input.messages"]).unwrap();
    let request = input
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(request["parts"][0]["type"], "text");
    assert!(
        request["parts"][0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("What is 2*(3+4)?"))
    );
    let output: serde_json::Value =
        serde_json::from_str(&chats[0].fields["gen_ai.output.messages"]).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    let tools = named(&seen, "execute_tool");
    assert_eq!(
        tools[0].fields["gen_ai.tool.call.arguments"],
        r#"{"expression":"2*(3+4)"}"#
    );
    assert_eq!(tools[0].fields["gen_ai.tool.call.result"], "14");
}
