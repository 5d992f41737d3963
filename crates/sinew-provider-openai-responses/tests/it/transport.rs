//! `ResponsesProvider` against a real HTTP server on loopback, for OpenAI and Azure.

use serde_json::json;
use sinew_provider_openai_responses::{ResponsesConfig, ResponsesProvider};
use sinew_testing::transport::{self, quick_retry};
use sinew_testing::{ServedResponse, fixture_bytes};

fn provider(base_url: &str) -> ResponsesProvider {
    let mut config = ResponsesConfig::openai("sk-test-key");
    config.base_url = format!("{base_url}/v1");
    ResponsesProvider::new(config).with_retry(quick_retry())
}

fn azure(base_url: &str) -> ResponsesProvider {
    let config = ResponsesConfig::azure_versioned(&format!("{base_url}/openai"), "2025-04-01-preview", "az-key");
    ResponsesProvider::new(config).with_retry(quick_retry())
}

fn tool_stream() -> ServedResponse {
    ServedResponse::sse(fixture_bytes("openai-responses/reasoning-message-function-call.sse"))
}

const PARTIAL: &str = concat!(
    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\"}}\n\n",
    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"Hello, wor\"}\n\n",
);

#[tokio::test]
async fn happy_path_with_reasoning_text_and_a_function_call() {
    let (message, request) = transport::happy_path(provider, tool_stream()).await;
    assert_eq!(message.tool_calls().count(), 1);
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test-key"));
    let body = request.json();
    assert_eq!((body["model"].clone(), body["store"].clone()), (json!("test-model"), json!(false)));
    assert_eq!(body["tools"][0]["name"], "echo");
    assert_eq!(body["instructions"], "You are terse.");
}

#[tokio::test]
async fn azure_uses_its_url_version_and_key_header() {
    let stream = ServedResponse::sse(fixture_bytes("azure-openai/responses-function-call.sse"));
    let (message, request) = transport::happy_path(azure, stream).await;
    assert_eq!(message.provider, "azure_openai");
    assert_eq!(request.path, "/openai/responses?api-version=2025-04-01-preview");
    assert_eq!(request.header("api-key"), Some("az-key"));
    assert_eq!(request.header("authorization"), None);
}

sinew_testing::transport_checks! {
    provider: provider,
    ok: tool_stream(),
    overflow: json!({"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
    partial: PARTIAL,
    partial_text: "Hello, wor",
}

/// The same error paths through Azure OpenAI's URL, `api-version` and `api-key` header (REQ-167).
mod azure {
    use super::*;

    sinew_testing::transport_checks! {
        provider: azure,
        ok: ServedResponse::sse(fixture_bytes("azure-openai/responses-function-call.sse")),
        overflow: json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
        partial: PARTIAL,
        partial_text: "Hello, wor",
    }
}
