//! `AnthropicProvider` against a real HTTP server on loopback.

use serde_json::json;
use sinew_provider_anthropic::{AnthropicConfig, AnthropicProvider};
use sinew_testing::transport::{self, quick_retry};
use sinew_testing::{ServedResponse, fixture_bytes};

fn provider(base_url: &str) -> AnthropicProvider {
    let mut config = AnthropicConfig::new("sk-ant-test-key");
    config.base_url = base_url.to_owned();
    AnthropicProvider::new(config).with_retry(quick_retry())
}

fn tool_stream() -> ServedResponse {
    ServedResponse::sse(fixture_bytes("anthropic/tool-use-parallel-3.sse"))
}

const PARTIAL: &str = concat!(
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello, wor\"}}\n\n",
);

#[tokio::test]
async fn happy_path_with_parallel_tool_calls() {
    let (message, request) = transport::happy_path(provider, tool_stream()).await;
    assert_eq!(message.tool_calls().count(), 3);
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    let body = request.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["tools"][0]["name"], "echo");
    assert_eq!(body["system"][0]["text"], "You are terse.");
}

sinew_testing::transport_checks! {
    provider: provider,
    ok: tool_stream(),
    overflow: json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 215000 tokens > 200000 maximum"}}),
    partial: PARTIAL,
    partial_text: "Hello, wor",
}
