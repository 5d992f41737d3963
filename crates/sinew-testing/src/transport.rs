//! The transport checks every provider must pass against a real HTTP server: the happy path,
//! authentication failures, rate limits and server errors retried, context overflow, a
//! connection cut mid-stream, and cancellation mid-stream.
//!
//! A provider crate calls each check from its own `#[tokio::test]` with its protocol's bodies;
//! `make` builds the provider for a base URL, with [`quick_retry`] so tests do not wait.
//!
//! Statuses, retries and error paths run against `wiremock` servers; a stream cut mid-body and a
//! body that never ends need [`MockServer`], which can dribble and break a body.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::json;
use sinew_core::{
    AssistantMessage, CancellationToken, Message, ProviderError, RetryConfig, StopReason, StreamEvent, StreamProvider,
    StreamRequest, ToolDefinition,
};

use crate::server::{MockServer, ReceivedRequest, ServedResponse};

/// A wiremock server answering every request with `responses` in order, each once; the last
/// one again after that.
async fn wiremock_serving(responses: &[ServedResponse]) -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    let count = responses.len();
    for (i, response) in responses.iter().enumerate() {
        let mock = wiremock::Mock::given(wiremock::matchers::any()).respond_with(response.to_wiremock());
        // Earlier responses first (a lower number is a higher priority), each used once.
        let mock = mock.with_priority(u8::try_from(i + 1).unwrap_or(u8::MAX));
        let mock = if i + 1 < count { mock.up_to_n_times(1) } else { mock };
        mock.mount(&server).await;
    }
    server
}

/// What a wiremock server received, as [`ReceivedRequest`]s.
async fn received(server: &wiremock::MockServer) -> Vec<ReceivedRequest> {
    let requests = server.received_requests().await.unwrap_or_default();
    requests
        .into_iter()
        .map(|r| ReceivedRequest {
            method: r.method.to_string(),
            path: match r.url.query() {
                Some(query) => format!("{}?{query}", r.url.path()),
                None => r.url.path().to_owned(),
            },
            headers: r
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                .collect(),
            body: r.body,
        })
        .collect()
}

/// Two retries after 1 ms each.
pub fn quick_retry() -> RetryConfig {
    RetryConfig::new(2, 1, 1.0, 1)
}

/// The request every check sends: one user message and an `echo` tool.
pub fn with_check_request<R>(model: &str, call: impl FnOnce(&StreamRequest<'_>) -> R) -> R {
    let prompt = Message::user("Say hello, then echo it.");
    let messages = [&prompt];
    let tools = [ToolDefinition {
        name: "echo".into(),
        description: "Echoes text".into(),
        parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    }];
    let mut request = StreamRequest::new(model, "You are terse.", &messages);
    request.tools = &tools;
    call(&request)
}

/// Runs one call to the end: all events, and the terminal message or error.
pub async fn run(
    provider: &dyn StreamProvider,
    cancel: CancellationToken,
) -> (Vec<StreamEvent>, Result<AssistantMessage, (ProviderError, AssistantMessage)>) {
    let stream = with_check_request("test-model", |request| provider.stream(request, cancel));
    let mut events: Vec<StreamEvent> = stream.collect().await;
    let terminal = match events.pop() {
        Some(StreamEvent::Done(message)) => Ok(*message),
        Some(StreamEvent::Error { error, partial }) => Err((error, *partial)),
        other => panic!("the stream must end with Done or Error, ended with {other:?}"),
    };
    (events, terminal)
}

/// Serves `response` and returns the final message and the request the server got.
pub async fn happy_path<P: StreamProvider>(
    make: impl Fn(&str) -> P,
    response: ServedResponse,
) -> (AssistantMessage, ReceivedRequest) {
    let server = wiremock_serving(&[response]).await;
    let provider = make(&server.uri());
    let (events, terminal) = run(&provider, CancellationToken::new()).await;
    let message = terminal.unwrap_or_else(|(e, _)| panic!("happy path failed: {e}"));
    assert!(matches!(events.first(), Some(StreamEvent::Start)), "the stream starts with Start");
    assert_eq!(
        message.stop_reason,
        if message.tool_calls().next().is_some() { StopReason::ToolUse } else { StopReason::Stop }
    );
    let requests = received(&server).await;
    assert_eq!(requests.len(), 1);
    (message, requests.into_iter().next().expect("the server recorded the request"))
}

/// 401 → [`ProviderError::Auth`], not retried.
pub async fn auth_failure<P: StreamProvider>(make: impl Fn(&str) -> P) {
    let server =
        wiremock_serving(&[ServedResponse::json(401, &json!({"error": {"message": "invalid api key"}}))]).await;
    let (_, terminal) = run(&make(&server.uri()), CancellationToken::new()).await;
    let (error, partial) = terminal.expect_err("401 must fail");
    assert!(matches!(&error, ProviderError::Auth(m) if m.contains("invalid api key")), "{error:?}");
    assert_eq!(partial.stop_reason, StopReason::Error);
    assert_eq!(received(&server).await.len(), 1, "authentication failures are not retried");
}

/// 429 with `retry-after` → retried, then `ok` succeeds.
pub async fn rate_limit_retried<P: StreamProvider>(make: impl Fn(&str) -> P, ok: ServedResponse) {
    let server = wiremock_serving(&[
        ServedResponse::json(429, &json!({"error": {"message": "rate limited"}})).header("retry-after", "0"),
        ok,
    ])
    .await;
    let (_, terminal) = run(&make(&server.uri()), CancellationToken::new()).await;
    terminal.unwrap_or_else(|(e, _)| panic!("the retry must succeed: {e}"));
    assert_eq!(received(&server).await.len(), 2);
}

/// 500 → retried, then `ok` succeeds.
pub async fn server_error_retried<P: StreamProvider>(make: impl Fn(&str) -> P, ok: ServedResponse) {
    let server = wiremock_serving(&[ServedResponse::new(500).chunk("internal error"), ok]).await;
    let (_, terminal) = run(&make(&server.uri()), CancellationToken::new()).await;
    terminal.unwrap_or_else(|(e, _)| panic!("the retry must succeed: {e}"));
    assert_eq!(received(&server).await.len(), 2);
}

/// 400 with the service's overflow body → [`ProviderError::ContextOverflow`], not retried.
pub async fn context_overflow<P: StreamProvider>(make: impl Fn(&str) -> P, body: serde_json::Value) {
    let server = wiremock_serving(&[ServedResponse::json(400, &body)]).await;
    let (_, terminal) = run(&make(&server.uri()), CancellationToken::new()).await;
    let (error, partial) = terminal.expect_err("overflow must fail");
    assert!(matches!(error, ProviderError::ContextOverflow { .. }), "{error:?}");
    assert!(partial.is_context_overflow(), "the partial message reports the overflow: {partial:?}");
    assert_eq!(received(&server).await.len(), 1);
}

/// The connection is cut after `partial_stream`: a network error whose partial message keeps
/// `partial_text`.
pub async fn dropped_mid_stream<P: StreamProvider>(
    make: impl Fn(&str) -> P,
    partial_stream: impl Into<Bytes>,
    partial_text: &str,
) {
    let server = MockServer::scripted([ServedResponse::sse(partial_stream).then_drop()]).await;
    let (events, terminal) = run(&make(&server.url()), CancellationToken::new()).await;
    let (error, partial) = terminal.expect_err("a cut stream must fail");
    assert!(matches!(error, ProviderError::Network(_)), "{error:?}");
    assert_eq!(partial.stop_reason, StopReason::Error);
    assert_eq!(partial.text(), partial_text, "what arrived is kept");
    assert!(partial.error_message.is_some());
    assert!(events.iter().any(|e| matches!(e, StreamEvent::Delta(_))), "deltas streamed before the cut");
    assert_eq!(server.requests().len(), 1, "a stream that started is not retried");
}

/// The call is cancelled while the server holds the stream open after `partial_stream`: it ends
/// promptly with [`ProviderError::Cancelled`] and an `Aborted` partial message keeping
/// `partial_text`.
pub async fn cancelled_mid_stream<P: StreamProvider>(
    make: impl Fn(&str) -> P,
    partial_stream: impl Into<Bytes>,
    partial_text: &str,
) {
    let server = MockServer::scripted([ServedResponse::sse(partial_stream).then_hang()]).await;
    let provider = make(&server.url());
    let cancel = CancellationToken::new();
    let mut stream = with_check_request("test-model", |request| provider.stream(request, cancel.clone()));
    // Wait for the first delta, then cancel.
    loop {
        match stream.next().await {
            Some(StreamEvent::Delta(_)) => break,
            Some(StreamEvent::Start) => {}
            other => panic!("expected deltas before the hang, got {other:?}"),
        }
    }
    cancel.cancel();
    // The server never ends the body: only cancellation can end the stream. The bound turns a
    // cancellation that does not work into a failure instead of a hang.
    let rest: Vec<StreamEvent> = tokio::time::timeout(Duration::from_secs(30), stream.collect())
        .await
        .expect("the stream did not end after cancellation");
    match rest.last() {
        Some(StreamEvent::Error { error: ProviderError::Cancelled, partial }) => {
            assert_eq!(partial.stop_reason, StopReason::Aborted);
            assert_eq!(partial.text(), partial_text, "what arrived is kept");
        }
        other => panic!("expected a Cancelled error, got {other:?}"),
    }
}

/// The seven transport checks as `#[tokio::test]`s in the calling test crate (which needs tokio
/// with `macros` and `rt`): its provider (`make`, a function of the base URL), a successful
/// response (`ok`), the service's context-overflow body (`overflow`), and the beginning of a
/// stream (`partial`) that streams `partial_text`. The happy path stays a test of its own, since
/// what the request must look like differs per protocol.
#[macro_export]
macro_rules! transport_checks {
    (provider: $make:path, ok: $ok:expr, overflow: $overflow:expr, partial: $partial:expr, partial_text: $text:expr $(,)?) => {
        #[tokio::test]
        async fn unauthorized_is_an_auth_error() {
            $crate::transport::auth_failure($make).await;
        }

        #[tokio::test]
        async fn rate_limits_are_retried() {
            $crate::transport::rate_limit_retried($make, $ok).await;
        }

        #[tokio::test]
        async fn server_errors_are_retried() {
            $crate::transport::server_error_retried($make, $ok).await;
        }

        #[tokio::test]
        async fn an_oversized_prompt_is_a_context_overflow() {
            $crate::transport::context_overflow($make, $overflow).await;
        }

        #[tokio::test]
        async fn a_cut_connection_keeps_the_partial_text() {
            $crate::transport::dropped_mid_stream($make, $partial, $text).await;
        }

        #[tokio::test]
        async fn cancellation_mid_stream_is_prompt_and_keeps_the_partial_text() {
            $crate::transport::cancelled_mid_stream($make, $partial, $text).await;
        }
    };
}
