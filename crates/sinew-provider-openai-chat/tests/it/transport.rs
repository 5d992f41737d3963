//! `OpenAiChatProvider` against a real HTTP server on loopback.

use serde_json::json;
use sinew_provider_openai_chat::{OpenAiChatConfig, OpenAiChatProvider};
use sinew_testing::transport::{self, quick_retry};
use sinew_testing::{ServedResponse, fixture_bytes};

fn provider(base_url: &str) -> OpenAiChatProvider {
    let mut config = OpenAiChatConfig::openai("sk-test-key");
    config.base_url = format!("{base_url}/v1");
    OpenAiChatProvider::new(config).with_retry(quick_retry())
}

fn tool_stream() -> ServedResponse {
    ServedResponse::sse(fixture_bytes("openai-chat/parallel-tool-calls.sse"))
}

const PARTIAL: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello, wor\"}}]}\n\n",
);

#[tokio::test]
async fn happy_path_with_parallel_tool_calls() {
    let (message, request) = transport::happy_path(provider, tool_stream()).await;
    assert_eq!(message.tool_calls().count(), 2);
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-key"));
    let body = request.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["tools"][0]["function"]["name"], "echo");
}

sinew_testing::transport_checks! {
    provider: provider,
    ok: tool_stream(),
    overflow: json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
    partial: PARTIAL,
    partial_text: "Hello, wor",
}
