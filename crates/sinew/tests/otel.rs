//! Telemetry export against a local OTLP/HTTP receiver: the GenAI spans and metrics of a run
//! arrive decoded as a collector decodes them, with the conventions' names and attributes.

use std::collections::BTreeMap;

use futures::StreamExt;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric;
use prost::Message as _;
use serde_json::json;
use sinew::Agent;
use sinew::telemetry::{OtelConfig, Telemetry};
use sinew::testing::{EchoTool, MockProvider, MockResponse, MockServer, ReceivedRequest, ServedResponse};
use tracing::instrument::WithSubscriber as _;
use tracing_subscriber::layer::SubscriberExt as _;

fn text(value: &Option<AnyValue>) -> String {
    match value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        other => format!("{other:?}"),
    }
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter().map(|kv| (kv.key.clone(), text(&kv.value))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_spans_and_genai_metrics_reach_the_collector() {
    let collector = MockServer::start(|_: &ReceivedRequest| ServedResponse::new(200)).await;
    let mut config = OtelConfig::new(collector.url());
    config.service_name = "otel-test".into();
    config.headers.push(("x-api-key".into(), "k-1".into()));
    let telemetry = Telemetry::start(config).unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(telemetry.layer()));

    let model = MockProvider::new([
        MockResponse::new().tool_call("call_1", "echo", json!({"text": "hi"})).usage(120, 8),
        MockResponse::new().text_delta("The tool said ").text_delta("hi.").usage(140, 5),
    ]);
    let mut agent = Agent::new(model, "mock-model").with_tool(EchoTool);
    async {
        let mut run = agent.prompt("Use the echo tool");
        while run.next().await.is_some() {}
    }
    .with_subscriber(dispatch)
    .await;
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await.unwrap().unwrap();

    let requests = collector.requests();
    assert!(requests.iter().all(|r| r.method == "POST" && r.header("x-api-key") == Some("k-1")), "{requests:?}");
    assert!(requests.iter().all(|r| r.header("content-type") == Some("application/x-protobuf")));
    let bodies = |path: &'static str| requests.iter().filter(move |r| r.path == path).map(|r| r.body.clone());

    let mut spans = Vec::new();
    for body in bodies("/v1/traces") {
        let export = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource in export.resource_spans {
            let resource_attributes = attributes(&resource.resource.unwrap_or_default().attributes);
            assert_eq!(resource_attributes["service.name"], "otel-test");
            spans.extend(resource.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for name in ["invoke_agent", "chat mock-model", "execute_tool echo"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let chats: Vec<BTreeMap<String, String>> =
        spans.iter().filter(|s| s.name == "chat mock-model").map(|s| attributes(&s.attributes)).collect();
    assert_eq!(chats.len(), 2);
    let first = &chats[0];
    assert_eq!(first["gen_ai.operation.name"], "chat");
    assert_eq!(first["gen_ai.request.model"], "mock-model");
    assert!(first.contains_key("gen_ai.provider.name"), "{first:?}");
    let used: Vec<(&str, &str)> = chats
        .iter()
        .map(|c| (c["gen_ai.usage.input_tokens"].as_str(), c["gen_ai.usage.output_tokens"].as_str()))
        .collect();
    assert!(used.contains(&("120", "8")) && used.contains(&("140", "5")), "{used:?}");
    assert!(!first.contains_key("gen_ai.input.messages"), "no content unless asked: {first:?}");
    let tool = spans.iter().find(|s| s.name == "execute_tool echo").unwrap();
    let tool = attributes(&tool.attributes);
    assert_eq!((tool["gen_ai.tool.name"].as_str(), tool["gen_ai.tool.call.id"].as_str()), ("echo", "call_1"));
    let agent_span = spans.iter().find(|s| s.name == "invoke_agent").unwrap();
    let chat_span = spans.iter().find(|s| s.name == "chat mock-model").unwrap();
    assert_eq!(chat_span.trace_id, agent_span.trace_id, "one trace per run");
    assert_eq!(chat_span.parent_span_id, agent_span.span_id, "model calls are children of the run");

    let mut metrics = BTreeMap::new();
    for body in bodies("/v1/metrics") {
        let export = ExportMetricsServiceRequest::decode(body.as_slice()).unwrap();
        for metric in export.resource_metrics.into_iter().flat_map(|r| r.scope_metrics).flat_map(|s| s.metrics) {
            let Some(metric::Data::Histogram(histogram)) = metric.data else { continue };
            let points: Vec<(BTreeMap<String, String>, u64, f64)> = histogram
                .data_points
                .iter()
                .map(|p| (attributes(&p.attributes), p.count, p.sum.unwrap_or_default()))
                .collect();
            metrics.entry(metric.name.clone()).or_insert_with(Vec::new).extend(points);
            assert!(!metric.unit.is_empty(), "{} has a unit", metric.name);
        }
    }
    let duration = &metrics["gen_ai.client.operation.duration"];
    assert_eq!(duration.iter().map(|(_, count, _)| count).sum::<u64>(), 2, "two model calls");
    assert!(
        duration
            .iter()
            .all(|(a, _, _)| a["gen_ai.operation.name"] == "chat" && a["gen_ai.request.model"] == "mock-model")
    );
    let tokens = &metrics["gen_ai.client.token.usage"];
    let sum = |kind: &str| -> f64 {
        tokens.iter().filter(|(a, _, _)| a["gen_ai.token.type"] == kind).map(|(_, _, sum)| sum).sum()
    };
    assert_eq!((sum("input"), sum("output")), (260.0, 13.0));
    let first_chunk = &metrics["gen_ai.client.operation.time_to_first_chunk"];
    let first_chunks: u64 = first_chunk.iter().map(|(_, count, _)| count).sum();
    assert_eq!(first_chunks, 2, "both answers streamed a first chunk");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_loses_the_telemetry_not_the_run() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = OtelConfig::new(format!("http://127.0.0.1:{port}"));
    config.timeout = std::time::Duration::from_secs(2);
    let telemetry = Telemetry::start(config).unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(telemetry.layer()));
    let mut agent = Agent::new(MockProvider::new([MockResponse::new().text_delta("fine")]), "mock-model");
    let ended = async {
        let mut run = agent.prompt("hi");
        while run.next().await.is_some() {}
        run.outcome().map(|o| o.reason)
    }
    .with_subscriber(dispatch)
    .await;
    assert_eq!(ended, Some(sinew::EndReason::Completed));
    let shutdown = tokio::task::spawn_blocking(move || telemetry.shutdown()).await.unwrap();
    assert!(shutdown.is_err(), "the failed export is reported at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_content_reaches_the_collector_only_when_the_agent_asks() {
    let collector = MockServer::start(|_: &ReceivedRequest| ServedResponse::new(200)).await;
    let telemetry = Telemetry::start(OtelConfig::new(collector.url())).unwrap();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(telemetry.layer()));
    let model = MockProvider::new([MockResponse::new().text_delta("Paris.")]);
    let mut agent = Agent::new(model, "mock-model").with_system_prompt("Be brief.").with_message_content_capture(true);
    async {
        let mut run = agent.prompt("Capital of France?");
        while run.next().await.is_some() {}
    }
    .with_subscriber(dispatch)
    .await;
    tokio::task::spawn_blocking(move || telemetry.shutdown()).await.unwrap().unwrap();
    let chat = collector
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/traces")
        .flat_map(|r| ExportTraceServiceRequest::decode(r.body.as_slice()).unwrap().resource_spans)
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans)
        .find(|s| s.name == "chat mock-model")
        .map(|s| attributes(&s.attributes))
        .unwrap();
    let parsed = |key: &str| serde_json::from_str::<serde_json::Value>(&chat[key]).unwrap();
    assert_eq!(parsed("gen_ai.system_instructions"), json!([{"type": "text", "content": "Be brief."}]));
    assert_eq!(
        parsed("gen_ai.input.messages"),
        json!([{"role": "user", "parts": [{"type": "text", "content": "Capital of France?"}]}])
    );
    assert_eq!(
        parsed("gen_ai.output.messages"),
        json!([{"role": "assistant", "parts": [{"type": "text", "content": "Paris."}], "finish_reason": "stop"}])
    );
}
