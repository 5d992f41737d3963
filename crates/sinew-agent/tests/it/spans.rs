//! Tracing spans with OpenTelemetry GenAI attribute names.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use sinew_testing::{EchoTool, MockResponse};
use tracing::span;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// A span's name, its parent's name, and its fields (recorded at creation and later).
type SpanRecord = (String, Option<String>, BTreeMap<String, String>);

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<SpanRecord>>>);

struct Visit<'a>(&'a mut BTreeMap<String, String>);

impl tracing::field::Visit for Visit<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}").trim_matches('"').to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        attrs.record(&mut Visit(&mut fields));
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.name().to_owned());
        let mut spans = self.0.lock().unwrap();
        spans.push((attrs.metadata().name().to_owned(), parent, fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(spans.len() - 1);
        }
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        let Some(index) = ctx.span(id).and_then(|s| s.extensions().get::<usize>().copied()) else { return };
        values.record(&mut Visit(&mut self.0.lock().unwrap()[index].2));
    }
}

#[test]
fn runs_turns_model_calls_and_tools_are_spans_with_gen_ai_attributes() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (agent, _) = crate::agent([
                MockResponse::new().tool_call("c1", "echo", json!({"text": "x"})).usage(11, 3),
                MockResponse::text("done").usage(20, 5),
            ]);
            agent.with_tool(EchoTool).prompt("q").finish().await;
        });
    });
    let spans = spans.0.lock().unwrap().clone();
    let names: Vec<&str> = spans.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, ["invoke_agent", "chat", "execute_tool", "chat"]);
    let field = |i: usize, k: &str| spans[i].2.get(k).cloned().unwrap_or_default();
    assert_eq!(field(0, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(field(0, "gen_ai.provider.name"), "mock");
    assert_eq!(field(0, "gen_ai.usage.input_tokens"), "31");
    assert_eq!(field(0, "gen_ai.usage.output_tokens"), "8");
    assert_eq!(field(1, "gen_ai.operation.name"), "chat");
    assert_eq!(field(1, "gen_ai.request.model"), "mock-model");
    assert_eq!(field(1, "gen_ai.response.model"), "mock-model");
    assert_eq!(field(1, "gen_ai.usage.input_tokens"), "11");
    assert_eq!(field(1, "gen_ai.usage.output_tokens"), "3");
    assert_eq!(field(1, "gen_ai.response.finish_reasons"), "ToolUse");
    assert_eq!(field(2, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(field(2, "gen_ai.tool.name"), "echo");
    assert_eq!(field(2, "gen_ai.tool.call.id"), "c1");
    for (name, parent, _) in &spans[1..] {
        assert_eq!(parent.as_deref(), Some("invoke_agent"), "{name} nests in the run span");
    }
}
