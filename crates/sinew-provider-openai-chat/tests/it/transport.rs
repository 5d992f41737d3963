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

#[tokio::test]
async fn unauthorized_is_an_auth_error() {
    transport::auth_failure(provider).await;
}

#[tokio::test]
async fn rate_limits_are_retried() {
    transport::rate_limit_retried(provider, tool_stream()).await;
}

#[tokio::test]
async fn server_errors_are_retried() {
    transport::server_error_retried(provider, tool_stream()).await;
}

#[tokio::test]
async fn context_length_exceeded_is_a_context_overflow() {
    let body = json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}});
    transport::context_overflow(provider, body).await;
}

#[tokio::test]
async fn a_cut_connection_keeps_the_partial_text() {
    transport::dropped_mid_stream(provider, PARTIAL, "Hello, wor").await;
}

#[tokio::test]
async fn cancellation_mid_stream_is_prompt_and_keeps_the_partial_text() {
    transport::cancelled_mid_stream(provider, PARTIAL, "Hello, wor").await;
}
