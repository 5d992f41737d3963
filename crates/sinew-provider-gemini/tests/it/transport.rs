//! `GeminiProvider` against a real HTTP server on loopback, for the Gemini API and Vertex AI.

use serde_json::json;
use sinew_provider_gemini::{GeminiConfig, GeminiProvider};
use sinew_testing::transport::{self, quick_retry};
use sinew_testing::{ServedResponse, fixture_bytes};

fn provider(base_url: &str) -> GeminiProvider {
    let mut config = GeminiConfig::gemini("AIza-test-key");
    config.models_url = format!("{base_url}/v1beta/models");
    GeminiProvider::new(config).with_retry(quick_retry())
}

fn vertex(base_url: &str) -> GeminiProvider {
    let mut config = GeminiConfig::vertex("proj", "us-central1", "ya29.token");
    config.models_url = config.models_url.replace("https://us-central1-aiplatform.googleapis.com", base_url);
    GeminiProvider::new(config).with_retry(quick_retry())
}

fn tool_stream() -> ServedResponse {
    ServedResponse::sse(fixture_bytes("gemini/function-call-thought-signature.sse"))
}

const PARTIAL: &str = concat!(
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello, \"}]}}]}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"wor\"}]}}]}\r\n\r\n",
);

#[tokio::test]
async fn happy_path_with_a_signed_function_call() {
    let (message, request) = transport::happy_path(provider, tool_stream()).await;
    assert_eq!(message.tool_calls().count(), 1);
    assert_eq!(request.path, "/v1beta/models/test-model:streamGenerateContent?alt=sse");
    assert_eq!(request.header("x-goog-api-key"), Some("AIza-test-key"));
    let body = request.json();
    assert_eq!(body["tools"][0]["functionDeclarations"][0]["name"], "echo");
    assert_eq!(body["systemInstruction"]["parts"][0]["text"], "You are terse.");
}

#[tokio::test]
async fn vertex_uses_its_path_and_bearer_token() {
    let stream = ServedResponse::sse(fixture_bytes("vertex/stream-function-call-args.sse"));
    let (message, request) = transport::happy_path(vertex, stream).await;
    assert_eq!(message.provider, "google_vertex");
    assert!(message.tool_calls().all(|c| c.id.starts_with("vertex-fc-")), "REQ-121 id prefix");
    assert_eq!(
        request.path,
        "/v1/projects/proj/locations/us-central1/publishers/google/models/test-model:streamGenerateContent?alt=sse"
    );
    assert_eq!(request.header("authorization"), Some("Bearer ya29.token"));
}

sinew_testing::transport_checks! {
    provider: provider,
    ok: tool_stream(),
    overflow: json!({"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}),
    partial: PARTIAL,
    partial_text: "Hello, wor",
}

/// The same error paths through Vertex AI's URL and bearer token (REQ-167).
mod vertex {
    use super::*;

    sinew_testing::transport_checks! {
        provider: vertex,
        ok: ServedResponse::sse(fixture_bytes("vertex/stream-function-call-args.sse")),
        overflow: json!({"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}),
        partial: PARTIAL,
        partial_text: "Hello, wor",
    }
}
