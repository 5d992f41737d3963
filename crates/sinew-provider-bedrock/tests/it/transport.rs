//! `BedrockProvider` against a real HTTP server on loopback.

use serde_json::json;
use sinew_core::{CancellationToken, ProviderError, StopReason};
use sinew_provider_bedrock::eventstream::{event_frame, exception_frame};
use sinew_provider_bedrock::{AwsCredentials, BedrockConfig, BedrockProvider};
use sinew_testing::transport::{self, quick_retry};
use sinew_testing::{MockServer, ServedResponse, fixture_bytes};

fn provider(base_url: &str) -> BedrockProvider {
    let credentials =
        AwsCredentials { access_key_id: "AKIDTEST".into(), secret_access_key: "secret".into(), session_token: None };
    let mut config = BedrockConfig::new("us-east-1", credentials);
    config.endpoint = base_url.to_owned();
    BedrockProvider::new(config).with_retry(quick_retry())
}

fn eventstream(bytes: Vec<u8>) -> ServedResponse {
    ServedResponse::new(200).header("content-type", "application/vnd.amazon.eventstream").chunk(bytes)
}

fn tool_stream() -> ServedResponse {
    eventstream(fixture_bytes("bedrock-converse-stream/text-then-tool-use.bin"))
}

fn partial() -> Vec<u8> {
    [
        event_frame("messageStart", &json!({"role": "assistant"})),
        event_frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": "Hello, wor"}, "p": "abcdef"}),
        ),
    ]
    .concat()
}

#[tokio::test]
async fn happy_path_with_a_tool_call_and_a_signed_request() {
    let (message, request) = transport::happy_path(provider, tool_stream()).await;
    assert_eq!(message.tool_calls().count(), 1);
    assert_eq!(request.path, "/model/test-model/converse-stream");
    let authorization = request.header("authorization").unwrap();
    assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"), "{authorization}");
    assert!(request.header("x-amz-date").is_some());
    let body = request.json();
    assert_eq!(body["toolConfig"]["tools"][0]["toolSpec"]["name"], "echo");
    assert_eq!(body["system"][0]["text"], "You are terse.");
}

#[tokio::test]
async fn an_exception_frame_mid_stream_ends_with_its_error_and_the_partial_text() {
    let mut bytes = partial();
    bytes.extend(exception_frame("throttlingException", "Too many tokens, please wait before trying again."));
    let server = MockServer::scripted([eventstream(bytes)]).await;
    let (_, terminal) = transport::run(&provider(&server.url()), CancellationToken::new()).await;
    let (error, partial) = terminal.expect_err("an exception ends the stream");
    assert!(
        matches!(&error, ProviderError::RateLimited { message, .. } if message.contains("throttlingException")),
        "{error:?}"
    );
    assert_eq!((partial.text().as_str(), partial.stop_reason), ("Hello, wor", StopReason::Error));
}

#[tokio::test]
async fn a_request_that_cannot_be_signed_fails_without_reaching_the_server() {
    #[derive(Debug)]
    struct Expired;
    #[async_trait::async_trait]
    impl sinew_provider_bedrock::CredentialsProvider for Expired {
        async fn credentials(&self) -> Result<AwsCredentials, ProviderError> {
            Err(ProviderError::Auth("the SSO session has expired".into()))
        }
    }
    let server = MockServer::scripted([tool_stream()]).await;
    let mut config = BedrockConfig::new("us-east-1", Expired);
    config.endpoint = server.url();
    let (events, terminal) = transport::run(&BedrockProvider::new(config), CancellationToken::new()).await;
    let (error, partial) = terminal.expect_err("no credentials, no call");
    assert_eq!(error, ProviderError::Auth("the SSO session has expired".into()));
    assert_eq!(partial.stop_reason, StopReason::Error);
    assert!(events.is_empty(), "nothing but the error");
    assert!(server.requests().is_empty(), "the server was never called");
}

sinew_testing::transport_checks! {
    provider: provider,
    ok: tool_stream(),
    overflow: json!({"message": "Input is too long for requested model."}),
    partial: partial(),
    partial_text: "Hello, wor",
}
