//! The client against a real server on loopback: retries, status mapping, timeouts,
//! cancellation, proxies, and secrets kept out of logs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sinew_core::{CancellationToken, ProviderError, RetryConfig};
use sinew_http::{HttpClient, HttpRequest};
use sinew_testing::{MockServer, ServedResponse};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tracing_subscriber::layer::SubscriberExt;

/// Fast retries, so tests do not wait for the default backoff.
fn quick(max_retries: u32) -> RetryConfig {
    RetryConfig::new(max_retries, 1, 1.0, 1)
}

fn request(server: &MockServer) -> HttpRequest {
    HttpRequest::post_json(format!("{}/v1/x", server.url()), r#"{"q":1}"#).header("authorization", "Bearer SECRET-T")
}

async fn body(response: &mut sinew_http::HttpResponse) -> String {
    String::from_utf8(response.bytes(usize::MAX).await.unwrap().to_vec()).unwrap()
}

#[tokio::test]
async fn sends_method_headers_and_body_and_streams_the_answer_in_chunks() {
    let server = MockServer::scripted([ServedResponse::sse("a")
        .pause(Duration::from_millis(20))
        .chunk("b")
        .pause(Duration::from_millis(20))
        .chunk("c")])
    .await;
    let client = HttpClient::new();
    let mut response = client.send(&request(&server), &quick(0), &CancellationToken::new()).await.unwrap();
    assert_eq!(response.status, 200);
    let mut chunks = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        chunks.push(String::from_utf8(chunk.to_vec()).unwrap());
    }
    assert_eq!(chunks, ["a", "b", "c"], "each paused chunk arrives on its own");
    let received = &server.requests()[0];
    assert_eq!((received.method.as_str(), received.path.as_str()), ("POST", "/v1/x"));
    assert_eq!(received.header("authorization"), Some("Bearer SECRET-T"));
    assert_eq!(received.header("content-type"), Some("application/json"));
    assert_eq!(received.json(), serde_json::json!({"q": 1}));
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried_after_the_asked_delay() {
    let server = MockServer::scripted([
        ServedResponse::json(429, &serde_json::json!({"error": {"message": "slow down"}}))
            .header("retry-after-ms", "300")
            .header("retry-after", "30"),
        ServedResponse::sse("ok"),
    ])
    .await;
    let logs = Logs::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(logs.clone()));
    let mut response =
        HttpClient::new().send(&request(&server), &RetryConfig::default(), &CancellationToken::new()).await.unwrap();
    assert_eq!(body(&mut response).await, "ok");
    assert_eq!(server.requests().len(), 2);
    // retry-after-ms (300 ms) wins over retry-after (30 s) and over the 1 s default backoff.
    assert_eq!(logs.retry_delays(), [300]);
}

#[tokio::test]
async fn retry_after_in_seconds_is_honoured() {
    let server =
        MockServer::scripted([ServedResponse::new(429).header("retry-after", "1"), ServedResponse::sse("ok")]).await;
    let logs = Logs::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(logs.clone()));
    let retry = RetryConfig::new(3, 1, 2.0, 1);
    HttpClient::new().send(&request(&server), &retry, &CancellationToken::new()).await.unwrap();
    assert_eq!(logs.retry_delays(), [1000], "the server's delay beats the 1 ms backoff");
}

#[tokio::test]
async fn server_errors_are_retried_up_to_the_limit_then_reported() {
    let server = MockServer::start(|_| ServedResponse::new(503).chunk("upstream overloaded")).await;
    let error = HttpClient::new().send(&request(&server), &quick(2), &CancellationToken::new()).await.unwrap_err();
    assert_eq!(error, ProviderError::Unavailable { status: 503, message: "upstream overloaded".into() });
    assert_eq!(server.requests().len(), 3, "the first attempt and two retries");
}

#[tokio::test]
async fn x_should_retry_overrides_the_status() {
    let server = MockServer::start(|_| ServedResponse::new(500).header("x-should-retry", "false")).await;
    let error = HttpClient::new().send(&request(&server), &quick(3), &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(error, ProviderError::Unavailable { status: 500, .. }), "{error:?}");
    assert_eq!(server.requests().len(), 1, "x-should-retry: false stops retrying");

    let server = MockServer::scripted([
        ServedResponse::new(400).header("x-should-retry", "true").chunk("try again"),
        ServedResponse::sse("ok"),
    ])
    .await;
    HttpClient::new().send(&request(&server), &quick(3), &CancellationToken::new()).await.unwrap();
    assert_eq!(server.requests().len(), 2, "x-should-retry: true retries a 400");
}

#[tokio::test]
async fn client_errors_are_mapped_and_not_retried() {
    let cases = [
        (401, r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#),
        (
            400,
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens","code":"context_length_exceeded"}}"#,
        ),
        (404, r#"{"error":{"message":"model not found"}}"#),
    ];
    for (status, text) in cases {
        let server = MockServer::start(move |_| ServedResponse::new(status).chunk(text)).await;
        let error = HttpClient::new().send(&request(&server), &quick(3), &CancellationToken::new()).await.unwrap_err();
        assert_eq!(server.requests().len(), 1, "{status} is not retried");
        match status {
            401 => assert_eq!(error, ProviderError::Auth("invalid x-api-key [authentication_error]".into())),
            400 => assert!(matches!(error, ProviderError::ContextOverflow { .. }), "{error:?}"),
            _ => assert!(matches!(error, ProviderError::Api { status: Some(404), .. }), "{error:?}"),
        }
    }
}

#[tokio::test]
async fn a_request_that_is_not_valid_http_is_refused_before_sending() {
    let server = MockServer::start(|_| ServedResponse::sse("x")).await;
    let bad = request(&server).header("x-bad", "line\nbreak");
    let error = HttpClient::new().send(&bad, &quick(3), &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(&error, ProviderError::Other(m) if m.starts_with("invalid request")), "{error:?}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn refused_connections_are_network_errors() {
    let port = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let request = HttpRequest::post_json(format!("http://127.0.0.1:{port}/"), "{}");
    let error = HttpClient::new().send(&request, &quick(1), &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(&error, ProviderError::Network(m) if m.contains("onnect")), "{error:?}");
    // The cause is kept: the client's own error, and the I/O error under it.
    let network = std::error::Error::source(&error).expect("the network error");
    let client = network.source().expect("the HTTP client's error");
    let mut io = client.source();
    while let Some(cause) = io {
        if let Some(io_error) = cause.downcast_ref::<std::io::Error>() {
            assert_eq!(io_error.kind(), std::io::ErrorKind::ConnectionRefused);
            return;
        }
        io = cause.source();
    }
    panic!("no I/O error in the chain of {error:?}");
}

#[tokio::test]
async fn a_stalled_body_hits_the_read_timeout_and_a_cut_one_is_a_network_error() {
    let server =
        MockServer::scripted([ServedResponse::sse("partial").then_hang(), ServedResponse::sse("partial").then_drop()])
            .await;
    let client = HttpClient::builder().read_timeout(Duration::from_millis(200)).build();
    let cancel = CancellationToken::new();
    let mut response = client.send(&request(&server), &quick(0), &cancel).await.unwrap();
    assert_eq!(response.chunk().await.unwrap().as_deref(), Some(&b"partial"[..]));
    let error = response.chunk().await.unwrap_err();
    assert!(matches!(&error, ProviderError::Network(m) if m.contains("stalled")), "{error:?}");

    let mut response = client.send(&request(&server), &quick(0), &cancel).await.unwrap();
    assert_eq!(response.chunk().await.unwrap().as_deref(), Some(&b"partial"[..]));
    let error = response.chunk().await.unwrap_err();
    assert!(matches!(error, ProviderError::Network(_)), "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn cancellation_ends_a_retry_wait_at_once() {
    let server = MockServer::start(|_| ServedResponse::new(429).header("retry-after", "30")).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    // Paused time: the clock moves only to the next timer, so "at once" is exact, not timed.
    let started = tokio::time::Instant::now();
    let error = HttpClient::new().send(&request(&server), &RetryConfig::default(), &cancel).await.unwrap_err();
    assert_eq!(error, ProviderError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(30), "did not sleep out the 30 s");
}

/// A minimal HTTP CONNECT proxy that counts the tunnels it opened.
async fn connect_proxy() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let tunnels = Arc::new(AtomicUsize::new(0));
    let count = tunnels.clone();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head);
                let target = head.strip_prefix("CONNECT ").and_then(|rest| rest.split(' ').next()).unwrap();
                let mut upstream = TcpStream::connect(target).await.unwrap();
                count.fetch_add(1, Ordering::SeqCst);
                client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
    });
    (url, tunnels)
}

#[tokio::test]
async fn proxies_tunnel_requests_unless_the_host_is_excluded() {
    let server = MockServer::start(|_| ServedResponse::sse("via")).await;
    let (proxy, tunnels) = connect_proxy().await;

    let client = HttpClient::builder().proxies(Some(&proxy), Some(&proxy), None).build();
    let mut response = client.send(&request(&server), &quick(0), &CancellationToken::new()).await.unwrap();
    assert_eq!(body(&mut response).await, "via");
    assert_eq!(tunnels.load(Ordering::SeqCst), 1, "the request went through the proxy");

    let client = HttpClient::builder().proxies(Some(&proxy), Some(&proxy), Some("localhost,127.0.0.1")).build();
    let mut response = client.send(&request(&server), &quick(0), &CancellationToken::new()).await.unwrap();
    assert_eq!(body(&mut response).await, "via");
    assert_eq!(tunnels.load(Ordering::SeqCst), 1, "NO_PROXY hosts are reached directly");
}

#[tokio::test]
async fn connections_are_pooled() {
    let server = MockServer::start(|_| ServedResponse::sse("x")).await;
    let (proxy, tunnels) = connect_proxy().await;
    let client = HttpClient::builder().proxies(Some(&proxy), None, None).build();
    for _ in 0..5 {
        let mut response = client.send(&request(&server), &quick(0), &CancellationToken::new()).await.unwrap();
        body(&mut response).await;
    }
    assert_eq!(tunnels.load(Ordering::SeqCst), 1, "five requests, one connection");
}

/// Collects every log event as text: its message and fields.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
}

impl Logs {
    /// The `delay_ms` of every "retrying HTTP request" line, in order.
    fn retry_delays(&self) -> Vec<u64> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.contains("retrying HTTP request"))
            .filter_map(|line| line.split(" delay_ms=").nth(1)?.split(' ').next()?.parse().ok())
            .collect()
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logs {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut line = format!("{}", event.metadata().level());
        event.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
    }
}

#[tokio::test]
async fn retries_are_logged_with_attempt_delay_and_error_and_secrets_never_are() {
    let logs = Logs::default();
    let _guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(logs.clone()));
    let server = MockServer::scripted([
        ServedResponse::new(503).chunk("busy"),
        ServedResponse::new(503).chunk("busy"),
        ServedResponse::sse("ok"),
    ])
    .await;
    let mut request = request(&server).header("x-api-key", "SECRET-K");
    request.url.push_str("?key=SECRET-Q");
    HttpClient::new().send(&request, &quick(2), &CancellationToken::new()).await.unwrap();

    let logs = logs.0.lock().unwrap().clone();
    let retries: Vec<&String> = logs.iter().filter(|l| l.contains("retrying HTTP request")).collect();
    assert_eq!(retries.len(), 2, "{logs:#?}");
    for (i, line) in retries.iter().enumerate() {
        assert!(line.starts_with("WARN"), "{line}");
        assert!(line.contains(&format!("attempt={}", i + 1)), "{line}");
        assert!(line.contains("max_retries=2") && line.contains("delay_ms="), "{line}");
        assert!(line.contains("service unavailable (status 503): busy"), "{line}");
    }
    assert!(logs.iter().all(|l| !l.contains("SECRET")), "{logs:#?}");
    assert!(logs.iter().any(|l| l.contains("key=****")), "{logs:#?}");
}

/// What a connection buffers of its reads is bounded (16 KiB): a body far larger still arrives
/// whole, in pieces no larger than the bound; headers must fit in it, or the response is an error
/// that says so, and is not retried.
#[tokio::test]
async fn reads_are_buffered_within_a_bound() {
    let big = "x".repeat(1 << 20);
    let server = MockServer::scripted([
        ServedResponse::sse(big.clone()).header("x-large", "h".repeat(12 * 1024)),
        ServedResponse::sse("x").header("x-huge", "h".repeat(20 * 1024)),
    ])
    .await;
    let client = HttpClient::new();
    let mut response = client.send(&request(&server), &quick(0), &CancellationToken::new()).await.unwrap();
    let (mut total, mut largest) = (0, 0);
    while let Some(chunk) = response.chunk().await.unwrap() {
        total += chunk.len();
        largest = largest.max(chunk.len());
    }
    assert_eq!(total, big.len());
    assert!(largest <= 16 * 1024, "a chunk of {largest} bytes");
    let error = client.send(&request(&server), &quick(3), &CancellationToken::new()).await.unwrap_err();
    assert!(error.to_string().contains("headers larger than the 16 KiB"), "{error}");
    assert!(!error.is_retryable());
    assert_eq!(server.requests().len(), 2, "the refused response was not asked for again");
}
