//! What a hostile or broken server can make a call take: a 100 MB event, an endless stream, a
//! stream that only sends keep-alives, a day-long `retry-after`. Each call ends within its limits
//! with a clear error (or, for the delay, with a prompt retry), keeping the partial message.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use sinew_core::{
    AssistantMessage, CancellationToken, Message, ProviderError, RetryConfig, StopReason, StreamEvent, StreamProvider,
    StreamRequest,
};
use sinew_http::sse::SseEvent;
use sinew_http::{
    Auth, Authorizer, HttpProvider, HttpRequest, Protocol, SseHandler, SseMessageDecoder, StreamLimits, TextBlocks,
};
use sinew_testing::{MockServer, ServedResponse};

/// A minimal SSE protocol: every `data:` is text, `[DONE]` ends the message.
pub(crate) struct Lines;

#[derive(Debug)]
pub(crate) struct LinesConfig {
    pub(crate) url: String,
    pub(crate) auth: Auth,
}

#[derive(Debug)]
pub(crate) struct LineEvents {
    message: AssistantMessage,
    blocks: TextBlocks,
    started: bool,
}

impl SseHandler for LineEvents {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        if !std::mem::replace(&mut self.started, true) {
            out.push(StreamEvent::Start);
        }
        if event.data == "[DONE]" {
            let mut message = std::mem::replace(&mut self.message, AssistantMessage::new("", ""));
            message.stop_reason = StopReason::Stop;
            return Ok(Some(message));
        }
        self.blocks.text(&mut self.message, event.data.clone(), out);
        Ok(None)
    }

    fn end(&mut self, _: &mut Vec<StreamEvent>) -> Result<AssistantMessage, ProviderError> {
        Err(ProviderError::Protocol("no [DONE]".into()))
    }

    fn partial(&mut self) -> AssistantMessage {
        std::mem::replace(&mut self.message, AssistantMessage::new("", ""))
    }
}

impl Protocol for Lines {
    type Config = LinesConfig;
    type Decoder = SseMessageDecoder<LineEvents>;

    fn config_from_env() -> Result<LinesConfig, ProviderError> {
        Err(ProviderError::Other("not from the environment".into()))
    }

    fn provider_id(_: &LinesConfig) -> &str {
        "lines"
    }

    fn request(config: &LinesConfig, _: &StreamRequest<'_>) -> Result<HttpRequest, ProviderError> {
        let mut request = HttpRequest::post_json(config.url.clone(), "{}");
        config.auth.apply(&mut request);
        Ok(request)
    }

    fn authorizer(config: &LinesConfig) -> Option<Arc<dyn Authorizer>> {
        config.auth.authorizer()
    }

    fn decoder(_: &LinesConfig, model: &str) -> Self::Decoder {
        SseMessageDecoder::new(LineEvents {
            message: AssistantMessage::new("lines", model),
            blocks: TextBlocks::default(),
            started: false,
        })
    }
}

fn provider(server: &MockServer, limits: StreamLimits) -> HttpProvider<Lines> {
    let retry = RetryConfig::new(2, 1, 1.0, 1);
    HttpProvider::<Lines>::new(LinesConfig { url: server.url(), auth: Auth::None })
        .with_retry(retry)
        .with_limits(limits)
}

/// Runs one call; returns the error and the partial message it ended with.
pub(crate) async fn failure(provider: &HttpProvider<Lines>) -> (ProviderError, AssistantMessage) {
    let prompt = Message::user("hi");
    let messages = [&prompt];
    let request = StreamRequest::new("m", "", &messages);
    let events: Vec<StreamEvent> = provider.stream(&request, CancellationToken::new()).collect().await;
    match events.into_iter().last() {
        Some(StreamEvent::Error { error, partial }) => (error, *partial),
        other => panic!("expected the call to fail, it ended with {other:?}"),
    }
}

#[tokio::test]
async fn a_hundred_megabyte_event_ends_the_call_at_the_event_limit() {
    let block = vec![b'x'; 1024 * 1024];
    let server =
        MockServer::scripted([ServedResponse::sse("data: before\n\ndata: ").repeat(block, 100).chunk("\n\n")]).await;
    let (error, partial) = failure(&provider(&server, StreamLimits::default())).await;
    assert_eq!(error, ProviderError::Protocol("a server-sent event exceeded the 16777216-byte limit".into()));
    assert_eq!(partial.text(), "before", "what arrived before is kept");
    assert_eq!(partial.stop_reason, StopReason::Error);
}

#[tokio::test]
async fn an_endless_stream_of_deltas_ends_at_the_response_limit() {
    let server = MockServer::scripted([ServedResponse::sse("").repeat_forever("data: more\n\n", Duration::ZERO)]).await;
    let (error, partial) = failure(&provider(&server, StreamLimits::default().max_response_bytes(1 << 20))).await;
    assert_eq!(error, ProviderError::Protocol("the response exceeded the 1048576-byte limit".into()));
    assert!(partial.text().starts_with("moremore"), "the partial text is kept");
}

#[tokio::test]
async fn an_endless_slow_stream_ends_at_the_call_deadline() {
    let server =
        MockServer::scripted([ServedResponse::sse("").repeat_forever("data: more\n\n", Duration::from_millis(20))])
            .await;
    let limits = StreamLimits::default().total_timeout(Duration::from_millis(300));
    let (error, partial) = failure(&provider(&server, limits)).await;
    assert_eq!(error, ProviderError::Timeout("the call's 300ms deadline passed".into()));
    assert!(partial.text().starts_with("more"), "the partial text is kept");
}

#[tokio::test]
async fn a_stream_of_keep_alives_only_ends_at_the_idle_timeout() {
    let server = MockServer::scripted([ServedResponse::sse("data: hello\n\n")
        .repeat_forever(": keep-alive\n\nevent: ping\n", Duration::from_millis(20))])
    .await;
    let limits = StreamLimits::default().idle_timeout(Duration::from_millis(200));
    let (error, partial) = failure(&provider(&server, limits)).await;
    assert_eq!(error, ProviderError::Timeout("the stream produced nothing for 200ms".into()));
    assert_eq!(partial.text(), "hello");
}

#[tokio::test]
async fn a_server_that_never_answers_ends_at_the_call_deadline() {
    let server = MockServer::scripted([ServedResponse::new(200).then_hang()]).await;
    let limits = StreamLimits::default().total_timeout(Duration::from_millis(200));
    let (error, _) = failure(&provider(&server, limits)).await;
    assert_eq!(error, ProviderError::Timeout("the call's 200ms deadline passed".into()));
}

#[tokio::test]
async fn a_day_long_retry_after_is_not_honoured() {
    let server = MockServer::scripted([
        ServedResponse::json(429, &serde_json::json!({"error": {"message": "come back tomorrow"}}))
            .header("retry-after", "86400"),
        ServedResponse::sse("data: hello\n\ndata: [DONE]\n\n"),
    ])
    .await;
    // A deadline far below a day: the call must succeed well within it.
    let limits = StreamLimits::default().total_timeout(Duration::from_secs(20));
    let provider = provider(&server, limits);
    let prompt = Message::user("hi");
    let messages = [&prompt];
    let request = StreamRequest::new("m", "", &messages);
    let events: Vec<StreamEvent> = provider.stream(&request, CancellationToken::new()).collect().await;
    assert!(matches!(events.last(), Some(StreamEvent::Done(m)) if m.text() == "hello"), "{:?}", events.last());
    assert_eq!(server.requests().len(), 2);
    // The retry is announced before the response begins, and the stream starts once: the
    // transport's `Start`, not the decoder's as well.
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            StreamEvent::Retry { .. } => "retry",
            StreamEvent::Start => "start",
            StreamEvent::Delta(_) => "delta",
            _ => "end",
        })
        .collect();
    assert_eq!(kinds, ["retry", "start", "delta", "end"]);
}

/// Records how many bytes each `feed` got, and ends with an empty message at the end of the body.
struct Feeds(Arc<std::sync::Mutex<Vec<usize>>>);

impl sinew_http::StreamDecoder for Feeds {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        self.0.lock().unwrap().push(bytes.len());
        out.push(StreamEvent::Delta(sinew_core::StreamDelta::Text { index: 0, delta: "x".into() }));
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        out.push(StreamEvent::done(AssistantMessage::new("p", "m")));
    }

    fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
        out.push(StreamEvent::error(error, AssistantMessage::new("p", "m")));
    }
}

/// A response that arrives whole (a fast server, or a reader that fell behind) is not decoded
/// whole: the decoder gets it a few KiB at a time, as the events are taken, so the events waiting
/// decoded stay few however large the chunk.
#[tokio::test]
async fn a_chunk_holding_many_events_is_decoded_a_slice_at_a_time() {
    let body = "data: event\n\n".repeat(1_000);
    let server = MockServer::scripted([ServedResponse::sse(body.clone())]).await;
    let feeds = Arc::new(std::sync::Mutex::new(Vec::new()));
    let request = HttpRequest::post_json(server.url(), "{}");
    let mut stream = sinew_http::stream_response(
        sinew_http::HttpClient::new(),
        Ok(request),
        RetryConfig::none(),
        Feeds(feeds.clone()),
        CancellationToken::new(),
    );
    assert!(matches!(stream.next().await, Some(StreamEvent::Start)));
    assert!(matches!(stream.next().await, Some(StreamEvent::Delta(_))));
    // The first delta is out: a slice was fed (4 KiB, to the end of its line), not the 13 KB
    // chunk that holds it.
    let line = "data: event\n\n".len();
    let fed: usize = feeds.lock().unwrap().iter().sum();
    assert!(fed <= 4 * 1024 + line, "{fed} bytes fed before the first event was taken");
    let rest: Vec<StreamEvent> = stream.collect().await;
    assert!(matches!(rest.last(), Some(StreamEvent::Done(_))));
    let feeds = feeds.lock().unwrap();
    assert_eq!(feeds.iter().sum::<usize>(), body.len(), "every byte is fed, once");
    assert!(feeds.iter().all(|&n| n <= 4 * 1024 + line), "{feeds:?}");
    assert!(feeds.len() >= body.len() / (4 * 1024 + line), "{feeds:?}");
}

/// Ends the message at the first bytes it is fed, and records every feed.
struct EndsAtOnce(Arc<std::sync::Mutex<Vec<usize>>>);

impl sinew_http::StreamDecoder for EndsAtOnce {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        let mut feeds = self.0.lock().unwrap();
        feeds.push(bytes.len());
        if feeds.len() == 1 {
            out.push(StreamEvent::done(AssistantMessage::new("p", "m")));
        }
    }

    fn finish(&mut self, _: &mut Vec<StreamEvent>) {
        self.0.lock().unwrap().push(0);
    }

    fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
        out.push(StreamEvent::error(error, AssistantMessage::new("p", "m")));
    }
}

/// What is left of a chunk once the message ended is dropped, not fed: the decoder sees nothing
/// after its terminal event, and the stream ends.
#[tokio::test]
async fn the_rest_of_a_chunk_after_the_end_is_not_fed() {
    let server = MockServer::scripted([ServedResponse::sse("data: event\n\n".repeat(1_000))]).await;
    let feeds = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stream = sinew_http::stream_response(
        sinew_http::HttpClient::new(),
        Ok(HttpRequest::post_json(server.url(), "{}")),
        RetryConfig::none(),
        EndsAtOnce(feeds.clone()),
        CancellationToken::new(),
    );
    let events: Vec<StreamEvent> = stream.collect().await;
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{events:?}");
    assert_eq!(feeds.lock().unwrap().len(), 1, "fed once, then nothing: {:?}", feeds.lock().unwrap());
}
