//! HTTP transports: Streamable HTTP (2025-03-26 and later, and the stateless 2026-07-28 revision)
//! and the legacy HTTP+SSE transport of 2024-11-05.
//!
//! Streamable HTTP: every message is a POST accepting `application/json, text/event-stream`; the
//! answer comes as JSON or as an SSE stream read on its own task. A stream that ends before the
//! answer is resumed with a GET carrying `Last-Event-ID`, after the server's `retry:` delay. After
//! the handshake, a GET stream carries the server's own requests and notifications; closing sends
//! DELETE with the session id.
//!
//! Legacy: a GET on the URL yields an `endpoint` event; messages are POSTed there and every
//! answer arrives on the GET stream.

use std::fmt;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use async_trait::async_trait;
use sinew_http::sse::{SseDecoder, SseEvent};
use sinew_http::{HttpClient, HttpRequest, HttpResponse, redact_url};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Inbound, Inbox, Outgoing, Transport};
use crate::error::McpError;
use crate::jsonrpc::{Message, RequestId, excerpt_bytes, parse_frame};

/// How long connecting waits for the GET stream to open.
const GET_STREAM_WAIT: Duration = Duration::from_secs(5);
/// How often a response stream is resumed before its request fails.
const MAX_RESUMPTIONS: usize = 5;
/// The resumption delay when the server gave no `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The most of an error body kept for a message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// How often one request is sent again after the server refused its credentials (401, or 403
/// asking for more scope): a provider that keeps asking for a retry cannot loop.
const MAX_AUTH_RETRIES: usize = 2;

/// Adds headers to every HTTP request: the seam for authentication ([`crate::OAuth`] is one;
/// fixed headers are another).
#[async_trait]
pub trait HeaderProvider: Send + Sync {
    /// Headers for the next request, e.g. `Authorization: Bearer …` from a token you refresh.
    async fn headers(&self) -> Result<Vec<(String, String)>, McpError>;

    /// Headers for a request of `method` to `url`: [`headers`](Self::headers) unless the
    /// provider signs each request (a DPoP proof names both).
    async fn request_headers(&self, method: &http::Method, url: &str) -> Result<Vec<(String, String)>, McpError> {
        let _ = (method, url);
        self.headers().await
    }

    /// The server refused a request (401, or 403). Return `true` when the request is worth
    /// sending again with fresh [`headers`](Self::headers) (the provider got a new token),
    /// `false` to let the refusal stand. The default lets it stand.
    async fn challenged(&self, refusal: &Refusal) -> Result<bool, McpError> {
        let _ = refusal;
        Ok(false)
    }
}

/// A request the server refused for its credentials. `Debug` hides the credential it carried.
#[derive(Clone)]
#[non_exhaustive]
pub struct Refusal {
    /// 401 (no or bad credentials) or 403 (not enough of them, e.g. `insufficient_scope`).
    pub status: u16,
    /// The response's `WWW-Authenticate` header values.
    pub www_authenticate: Vec<String>,
    /// The `Authorization` header the refused request carried: a provider that has already
    /// replaced that credential (another request was refused first) can answer at once.
    pub authorization: Option<String>,
    /// The response's `DPoP-Nonce` header (RFC 9449 §9): the nonce the next proof must carry.
    pub dpop_nonce: Option<String>,
}

impl fmt::Debug for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refusal")
            .field("status", &self.status)
            .field("www_authenticate", &self.www_authenticate)
            .field("authorization", &self.authorization.as_ref().map(|_| "****"))
            .field("dpop_nonce", &self.dpop_nonce)
            .finish()
    }
}

/// Fixed headers.
#[async_trait]
impl HeaderProvider for Vec<(String, String)> {
    async fn headers(&self) -> Result<Vec<(String, String)>, McpError> {
        Ok(self.clone())
    }
}

#[derive(Default)]
struct State {
    session_id: Option<String>,
    protocol_version: Option<String>,
}

/// Where and how to send: what a transport and its stream tasks share.
#[derive(Clone)]
pub(crate) struct Shared {
    client: HttpClient,
    url: String,
    state: Arc<StdMutex<State>>,
    headers: Option<Arc<dyn HeaderProvider>>,
    inbox: Inbox,
    max_message_bytes: usize,
    closed: CancellationToken,
}

impl Shared {
    pub(crate) fn new(
        client: HttpClient,
        url: String,
        headers: Option<Arc<dyn HeaderProvider>>,
        max_message_bytes: usize,
        inbox: Inbox,
    ) -> Self {
        Shared {
            client,
            url,
            state: Arc::default(),
            headers,
            inbox,
            max_message_bytes,
            closed: CancellationToken::new(),
        }
    }

    async fn request(&self, method: http::Method, url: &str, body: bytes::Bytes) -> Result<HttpRequest, McpError> {
        let mut request = HttpRequest { method, url: url.to_owned(), headers: Vec::new(), body };
        if let Some(provider) = &self.headers {
            request.headers.extend(provider.request_headers(&request.method, url).await?);
        }
        Ok(request)
    }

    fn with_session(&self, mut request: HttpRequest) -> HttpRequest {
        let state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(id) = &state.session_id {
            request.headers.push(("mcp-session-id".into(), id.clone()));
        }
        request
    }

    /// Sends `request`; when the server refuses its credentials and the header provider gets new
    /// ones, sends it again with them (at most [`MAX_AUTH_RETRIES`] times).
    async fn send(&self, request: &HttpRequest) -> Result<HttpResponse, McpError> {
        let mut response = self.send_once(request).await?;
        let Some(provider) = &self.headers else { return Ok(response) };
        let mut retry: Option<HttpRequest> = None;
        for _ in 0..MAX_AUTH_RETRIES {
            let status = response.status.as_u16();
            if status != 401 && status != 403 {
                break;
            }
            let sent = retry.as_ref().unwrap_or(request);
            let refusal = Refusal {
                status,
                www_authenticate: response
                    .headers
                    .get_all(http::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .map(str::to_owned)
                    .collect(),
                authorization: sent
                    .headers
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
                    .map(|(_, value)| value.clone()),
                dpop_nonce: response.headers.get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned),
            };
            if !provider.challenged(&refusal).await? {
                break;
            }
            let fresh = provider.request_headers(&request.method, &request.url).await?;
            let mut next = request.clone();
            next.headers.retain(|(name, _)| !fresh.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)));
            next.headers.extend(fresh);
            response = self.send_once(&next).await?;
            retry = Some(next);
        }
        Ok(response)
    }

    async fn send_once(&self, request: &HttpRequest) -> Result<HttpResponse, McpError> {
        tokio::select! {
            response = self.client.send_once(request) => response.map_err(|e| {
                McpError::Transport(format!("{} {}: {e}", request.method, redact_url(&request.url)))
            }),
            () = self.closed.cancelled() => Err(McpError::ConnectionClosed("the client was closed".into())),
        }
    }

    /// A GET that resumes or opens an SSE stream.
    async fn get_stream(&self, last_event_id: Option<&str>) -> Result<HttpRequest, McpError> {
        let mut request = self.with_session(self.request(http::Method::GET, &self.url, bytes::Bytes::new()).await?);
        request.headers.push(("accept".into(), "text/event-stream".into()));
        if let Some(version) = self.state.lock().ok().and_then(|s| s.protocol_version.clone()) {
            request.headers.push(("mcp-protocol-version".into(), version));
        }
        if let Some(id) = last_event_id.filter(|id| !id.is_empty()) {
            request.headers.push(("last-event-id".into(), id.to_owned()));
        }
        Ok(request)
    }

    async fn deliver(&self, inbound: Inbound) -> bool {
        self.inbox.send(inbound).await.is_ok()
    }
}

/// The Streamable HTTP transport.
pub(crate) struct StreamableHttp {
    shared: Shared,
}

impl fmt::Debug for StreamableHttp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttp").field("url", &redact_url(&self.shared.url)).finish_non_exhaustive()
    }
}

impl StreamableHttp {
    pub(crate) fn new(shared: Shared) -> Self {
        StreamableHttp { shared }
    }
}

#[async_trait]
impl Transport for StreamableHttp {
    async fn send(&self, message: Outgoing) -> Result<(), McpError> {
        let shared = &self.shared;
        let mut request = shared.with_session(shared.request(http::Method::POST, &shared.url, message.body).await?);
        request.headers.push(("content-type".into(), "application/json".into()));
        request.headers.push(("accept".into(), "application/json, text/event-stream".into()));
        if let Some(version) = &message.protocol_version {
            request.headers.push(("mcp-protocol-version".into(), version.clone()));
        }
        if message.stateless {
            if let Some(method) = &message.method {
                request.headers.push(("mcp-method".into(), method.clone()));
            }
            if let Some(name) = &message.name {
                request.headers.push(("mcp-name".into(), name.clone()));
            }
            request.headers.extend(message.headers);
        }
        let mut response = shared.send(&request).await?;
        if let Some(id) = response.headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            let mut state = shared.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.session_id.is_none() {
                state.session_id = Some(id.to_owned());
            }
        }
        let status = response.status;
        let is_sse = content_type(&response).starts_with("text/event-stream");
        if status.is_success() {
            if is_sse {
                let shared = shared.clone();
                tokio::spawn(async move { read_response_stream(shared, response, message.id).await });
                return Ok(());
            }
            let body = read_body(&mut response, shared.max_message_bytes).await?;
            if body.trim_ascii().is_empty() {
                // 202 Accepted: a notification or a response of ours; a request is answered later.
                return Ok(());
            }
            return deliver_frame(shared, &body, message.id.as_ref()).await;
        }
        // A failure status may still carry a JSON-RPC error for the request (-32022, -32020, ...).
        let body = response.bytes(ERROR_BODY_LIMIT).await.unwrap_or_default();
        if message.id.is_some() && (content_type(&response).starts_with("application/json") || body.starts_with(b"{")) {
            match parse_frame(&body) {
                Ok(messages) if !messages.is_empty() => {
                    for message in messages {
                        shared.deliver(Inbound::Message(message)).await;
                    }
                    return Ok(());
                }
                Err(error @ McpError::JsonRpc { .. }) => return Err(error),
                _ => {}
            }
        }
        let session = shared.state.lock().ok().and_then(|s| s.session_id.clone());
        let message = if status == http::StatusCode::NOT_FOUND && session.is_some() {
            "the server does not know this session any more (it expired or was deleted): reconnect".to_owned()
        } else {
            excerpt_bytes(&body)
        };
        Err(McpError::Http { status: status.as_u16(), message })
    }

    async fn connected(&self, version: &str) {
        {
            let mut state = self.shared.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            state.protocol_version = Some(version.to_owned());
        }
        if crate::protocol::is_stateless_version(version) {
            return; // no session, no GET stream
        }
        // Servers send requests unrelated to a POST (elicitation during a tool call, with some
        // SDKs) on this stream, and drop them while it is not open: open it before going on.
        let first = match tokio::time::timeout(GET_STREAM_WAIT, open_get_stream(&self.shared, "")).await {
            Ok(first) => first,
            Err(_) => Err(McpError::Transport("the GET stream did not open in time".into())),
        };
        let shared = self.shared.clone();
        tokio::spawn(async move { listen(shared, first).await });
    }

    async fn close(&self) {
        if self.shared.closed.is_cancelled() {
            return;
        }
        self.shared.closed.cancel();
        let (session, version) = {
            let state = self.shared.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            (state.session_id.clone(), state.protocol_version.clone())
        };
        let Some(session) = session else { return };
        let Ok(mut request) = self.shared.request(http::Method::DELETE, &self.shared.url, bytes::Bytes::new()).await
        else {
            return;
        };
        request.headers.push(("mcp-session-id".into(), session));
        if let Some(version) = version {
            request.headers.push(("mcp-protocol-version".into(), version));
        }
        match tokio::time::timeout(Duration::from_secs(5), self.shared.client.send_once(&request)).await {
            Ok(Ok(response)) => tracing::debug!(status = response.status.as_u16(), "MCP session deleted"),
            Ok(Err(error)) => tracing::debug!(%error, "MCP session DELETE failed"),
            Err(_) => tracing::debug!("MCP session DELETE timed out"),
        }
    }
}

impl Drop for StreamableHttp {
    fn drop(&mut self) {
        self.shared.closed.cancel();
    }
}

fn content_type(response: &HttpResponse) -> &str {
    response.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
}

async fn read_body(response: &mut HttpResponse, max: usize) -> Result<bytes::Bytes, McpError> {
    let body = response.bytes(max.saturating_add(1)).await.map_err(|e| McpError::Transport(e.to_string()))?;
    if body.len() > max {
        return Err(McpError::Protocol(format!("the server sent a message over the {max}-byte limit")));
    }
    Ok(body)
}

/// Delivers a JSON body. An error the server could not attach to an id is the request's.
async fn deliver_frame(shared: &Shared, body: &[u8], request: Option<&RequestId>) -> Result<(), McpError> {
    match parse_frame(body) {
        Ok(messages) => {
            for message in messages {
                shared.deliver(Inbound::Message(message)).await;
            }
            Ok(())
        }
        Err(error) if request.is_some() => Err(error),
        Err(error) => {
            tracing::warn!(%error, "ignoring an unreadable answer to a notification");
            Ok(())
        }
    }
}

/// An SSE stream being read: events → messages, with what resumption needs. One event (one
/// message) may not exceed the client's message limit.
struct EventReader {
    decoder: SseDecoder,
    events: Vec<SseEvent>,
}

impl EventReader {
    fn new(max_message_bytes: usize) -> Self {
        EventReader { decoder: SseDecoder::with_max_event_bytes(max_message_bytes), events: Vec::new() }
    }

    /// Reads `response` until it ends; returns whether `awaiting` was answered, or the error
    /// that ended the stream.
    async fn read(
        &mut self,
        shared: &Shared,
        response: &mut HttpResponse,
        awaiting: Option<&RequestId>,
    ) -> Result<bool, McpError> {
        let mut answered = false;
        loop {
            let chunk = tokio::select! {
                chunk = response.chunk() => chunk.map_err(|e| McpError::Transport(e.to_string()))?,
                () = shared.closed.cancelled() => return Err(McpError::ConnectionClosed("the client was closed".into())),
            };
            let Some(chunk) = chunk else { return Ok(answered) };
            if self.decoder.feed(&chunk, &mut self.events).is_err() {
                return Err(McpError::Protocol(format!(
                    "the server sent a message over the {}-byte limit",
                    shared.max_message_bytes
                )));
            }
            if self.events.is_empty() {
                continue;
            }
            for event in self.events.drain(..) {
                // Priming events carry an id and no data.
                if event.data.trim().is_empty() || (event.event != "message" && !event.event.is_empty()) {
                    continue;
                }
                match parse_frame(event.data.as_bytes()) {
                    Ok(messages) => {
                        for message in messages {
                            if let (Message::Response { id, .. }, Some(want)) = (&message, awaiting)
                                && id == want
                            {
                                answered = true;
                            }
                            if !shared.deliver(Inbound::Message(message)).await {
                                return Ok(answered);
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "skipping an SSE event that is not JSON-RPC"),
                }
            }
        }
    }

    fn resume_delay(&self) -> Duration {
        self.decoder.retry().unwrap_or(DEFAULT_RETRY)
    }
}

/// Reads the SSE answer to a POST, resuming it with GET + `Last-Event-ID` if it ends unanswered.
async fn read_response_stream(shared: Shared, mut response: HttpResponse, awaiting: Option<RequestId>) {
    let mut reader = EventReader::new(shared.max_message_bytes);
    let mut resumptions = 0;
    let failure = loop {
        let ended = reader.read(&shared, &mut response, awaiting.as_ref()).await;
        let Some(id) = &awaiting else { return };
        let error = match ended {
            Ok(true) => return,
            Ok(false) => McpError::ConnectionClosed("the server ended the response stream before answering".into()),
            Err(error @ McpError::ConnectionClosed(_)) => return drop(error),
            Err(error) => error,
        };
        let last_event_id = reader.decoder.last_event_id().to_owned();
        if last_event_id.is_empty() || resumptions == MAX_RESUMPTIONS {
            break error;
        }
        resumptions += 1;
        tokio::select! {
            () = tokio::time::sleep(reader.resume_delay()) => {}
            () = shared.closed.cancelled() => return,
        }
        tracing::debug!(request = %id, last_event_id, "resuming an MCP response stream");
        let resumed = match shared.get_stream(Some(&last_event_id)).await {
            Ok(request) => shared.send(&request).await,
            Err(error) => Err(error),
        };
        match resumed {
            Ok(next) if next.status.is_success() => response = next,
            Ok(next) => {
                break McpError::Http {
                    status: next.status.as_u16(),
                    message: "cannot resume the response stream".into(),
                };
            }
            Err(error) => break error,
        }
    };
    if let Some(id) = awaiting {
        shared.deliver(Inbound::RequestFailed { id, error: failure }).await;
    }
}

async fn open_get_stream(shared: &Shared, last_event_id: &str) -> Result<HttpResponse, McpError> {
    let request = shared.get_stream(Some(last_event_id)).await?;
    shared.send(&request).await
}

/// The server-to-client GET stream of a handshake-era session, reopened when it ends.
async fn listen(shared: Shared, first: Result<HttpResponse, McpError>) {
    let mut reader = EventReader::new(shared.max_message_bytes);
    let mut failures = 0u32;
    let mut next = Some(first);
    while !shared.closed.is_cancelled() && failures < 5 {
        let response = match next.take() {
            Some(response) => response,
            None => open_get_stream(&shared, reader.decoder.last_event_id()).await,
        };
        match response {
            Ok(mut response) if response.status.is_success() => {
                failures = 0;
                if let Err(error) = reader.read(&shared, &mut response, None).await {
                    tracing::debug!(%error, "the MCP server's GET stream ended");
                }
            }
            Ok(response) => {
                // 405: this server has no GET stream. Anything else: it does not want one.
                tracing::debug!(status = response.status.as_u16(), "no server-to-client stream");
                return;
            }
            Err(error) => {
                failures += 1;
                tracing::debug!(%error, "cannot open the MCP server's GET stream");
            }
        }
        let delay = reader.resume_delay() * 2u32.pow(failures.min(5));
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shared.closed.cancelled() => return,
        }
    }
}

/// The legacy HTTP+SSE transport (2024-11-05).
pub(crate) struct LegacySse {
    shared: Shared,
    endpoint: String,
}

impl fmt::Debug for LegacySse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LegacySse").field("url", &redact_url(&self.shared.url)).finish_non_exhaustive()
    }
}

impl LegacySse {
    /// Opens the GET stream and waits (up to `timeout`) for the server's `endpoint` event.
    pub(crate) async fn connect(shared: Shared, timeout: Duration) -> Result<Self, McpError> {
        let mut request = shared.request(http::Method::GET, &shared.url, bytes::Bytes::new()).await?;
        request.headers.push(("accept".into(), "text/event-stream".into()));
        let mut response = shared.send(&request).await?;
        if !response.status.is_success() || !content_type(&response).starts_with("text/event-stream") {
            let body = response.bytes(ERROR_BODY_LIMIT).await.unwrap_or_default();
            return Err(McpError::Http {
                status: response.status.as_u16(),
                message: format!("not an SSE endpoint: {}", excerpt_bytes(&body)),
            });
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let reader_shared = shared.clone();
        tokio::spawn(async move {
            // One event is one message: the client's message limit bounds it.
            let mut decoder = SseDecoder::with_max_event_bytes(reader_shared.max_message_bytes);
            let mut events = Vec::new();
            let mut endpoint_tx = Some(endpoint_tx);
            let end = loop {
                let chunk = tokio::select! {
                    chunk = response.chunk() => chunk,
                    () = reader_shared.closed.cancelled() => return,
                };
                let chunk = match chunk {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => break McpError::ConnectionClosed("the server ended its SSE stream".into()),
                    Err(error) => break McpError::Transport(error.to_string()),
                };
                let fed = decoder.feed(&chunk, &mut events);
                for event in events.drain(..) {
                    if event.event == "endpoint" {
                        if let Some(tx) = endpoint_tx.take() {
                            let _ = tx.send(event.data);
                        }
                        continue;
                    }
                    if event.data.trim().is_empty() {
                        continue;
                    }
                    match parse_frame(event.data.as_bytes()) {
                        Ok(messages) => {
                            for message in messages {
                                if !reader_shared.deliver(Inbound::Message(message)).await {
                                    return;
                                }
                            }
                        }
                        Err(error) => tracing::warn!(%error, "skipping an SSE event that is not JSON-RPC"),
                    }
                }
                if fed.is_err() {
                    break McpError::Protocol(format!(
                        "the server sent a message over the {}-byte limit",
                        reader_shared.max_message_bytes
                    ));
                }
            };
            reader_shared.deliver(Inbound::Closed(end)).await;
        });
        let endpoint = match tokio::time::timeout(timeout, endpoint_rx).await {
            Ok(Ok(endpoint)) => endpoint,
            Ok(Err(_)) => return Err(McpError::Protocol("the SSE stream ended before its `endpoint` event".into())),
            Err(_) => return Err(McpError::Protocol(format!("no `endpoint` event within {timeout:?}"))),
        };
        let endpoint = resolve(&shared.url, endpoint.trim())?;
        Ok(LegacySse { shared, endpoint })
    }
}

#[async_trait]
impl Transport for LegacySse {
    async fn send(&self, message: Outgoing) -> Result<(), McpError> {
        let shared = &self.shared;
        let mut request = shared.request(http::Method::POST, &self.endpoint, message.body).await?;
        request.headers.push(("content-type".into(), "application/json".into()));
        let mut response = shared.send(&request).await?;
        if response.status.is_success() {
            return Ok(());
        }
        let body = response.bytes(ERROR_BODY_LIMIT).await.unwrap_or_default();
        Err(McpError::Http { status: response.status.as_u16(), message: excerpt_bytes(&body) })
    }

    async fn close(&self) {
        self.shared.closed.cancel();
    }
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.shared.closed.cancel();
    }
}

/// `endpoint` (absolute, absolute-path or relative) resolved against `base`; it must stay on the
/// same origin, so a hostile server cannot make us POST elsewhere.
fn resolve(base: &str, endpoint: &str) -> Result<String, McpError> {
    let base_uri: http::Uri = base.parse().map_err(|e| McpError::Protocol(format!("bad URL {base}: {e}")))?;
    let origin = format!(
        "{}://{}",
        base_uri.scheme_str().unwrap_or("http"),
        base_uri.authority().map(http::uri::Authority::as_str).unwrap_or_default()
    );
    let resolved = if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else if endpoint.starts_with('/') {
        format!("{origin}{endpoint}")
    } else {
        let path = base_uri.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        format!("{origin}{dir}{endpoint}")
    };
    if !resolved.starts_with(&format!("{origin}/")) {
        return Err(McpError::Protocol(format!("the server's endpoint {resolved} is not on {origin}")));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_resolve_on_the_same_origin() {
        let base = "http://127.0.0.1:3001/sse";
        assert_eq!(resolve(base, "/message?sessionId=1").unwrap(), "http://127.0.0.1:3001/message?sessionId=1");
        assert_eq!(resolve("http://h/a/sse", "message?s=2").unwrap(), "http://h/a/message?s=2");
        assert_eq!(resolve(base, "http://127.0.0.1:3001/m").unwrap(), "http://127.0.0.1:3001/m");
        assert!(resolve(base, "http://evil.test/m").unwrap_err().to_string().contains("not on"));
    }
}
