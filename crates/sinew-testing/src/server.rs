//! A real HTTP/1.1 server on loopback, answering from a script or a function. For transport
//! tests that need what a canned response cannot do, and so what `wiremock` cannot: bodies
//! streamed in timed chunks, connections dropped mid-body, responses that hang or never end.
//! Request matching, statuses, retries and error paths are tested with `wiremock` (see
//! [`crate::transport`]); a [`ServedResponse`] that is plain data becomes a wiremock response
//! with [`ServedResponse::to_wiremock`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A request the server received.
#[derive(Clone, Debug)]
pub struct ReceivedRequest {
    /// The HTTP method, upper case (`POST`).
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    /// Every header in received order, names lower-cased, values decoded as lossy UTF-8.
    pub headers: Vec<(String, String)>,
    /// The whole body, read before the response is chosen.
    pub body: Vec<u8>,
}

impl ReceivedRequest {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as JSON. Panics if it is not JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("request body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// How a response body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyEnd {
    /// Normally.
    Complete,
    /// The connection is cut before the body is complete.
    Drop,
    /// The body never ends (until the client goes away).
    Hang,
}

#[derive(Clone, Debug)]
enum Part {
    Bytes(Bytes),
    Pause(Duration),
    /// The same chunk `times` times (`None`: until the client goes away), `pause` before each.
    Repeat {
        bytes: Bytes,
        times: Option<usize>,
        pause: Duration,
    },
}

/// A scripted response: status, headers, body parts sent one by one, and how it ends.
#[derive(Clone, Debug)]
pub struct ServedResponse {
    status: u16,
    headers: Vec<(String, String)>,
    parts: Vec<Part>,
    end: BodyEnd,
}

impl ServedResponse {
    /// A response with `status`, no headers and an empty body that ends normally.
    pub fn new(status: u16) -> Self {
        ServedResponse { status, headers: Vec::new(), parts: Vec::new(), end: BodyEnd::Complete }
    }

    /// `200 text/event-stream` with `body`, sent as one chunk.
    pub fn sse(body: impl Into<Bytes>) -> Self {
        ServedResponse::new(200).header("content-type", "text/event-stream").chunk(body)
    }

    /// `status` with a JSON body.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        ServedResponse::new(status).header("content-type", "application/json").chunk(body.to_string())
    }

    /// The response's HTTP status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Adds a header; repeated names are all sent.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Appends a body chunk (flushed on its own).
    pub fn chunk(mut self, bytes: impl Into<Bytes>) -> Self {
        self.parts.push(Part::Bytes(bytes.into()));
        self
    }

    /// Waits before the next chunk.
    pub fn pause(mut self, duration: Duration) -> Self {
        self.parts.push(Part::Pause(duration));
        self
    }

    /// Appends `bytes` as `times` chunks in a row: a large body without holding it whole.
    pub fn repeat(mut self, bytes: impl Into<Bytes>, times: usize) -> Self {
        self.parts.push(Part::Repeat { bytes: bytes.into(), times: Some(times), pause: Duration::ZERO });
        self
    }

    /// Sends `bytes` again and again, `pause` before each, until the client goes away: an
    /// endless stream.
    pub fn repeat_forever(mut self, bytes: impl Into<Bytes>, pause: Duration) -> Self {
        self.parts.push(Part::Repeat { bytes: bytes.into(), times: None, pause });
        self
    }

    /// Cuts the connection after the chunks so far.
    pub fn then_drop(mut self) -> Self {
        self.end = BodyEnd::Drop;
        self
    }

    /// Never ends the body after the chunks so far.
    pub fn then_hang(mut self) -> Self {
        self.end = BodyEnd::Hang;
        self
    }

    /// The same response for a `wiremock` server: status, headers and the whole body at once.
    /// Only for a response that ends normally; pauses are dropped.
    pub fn to_wiremock(&self) -> wiremock::ResponseTemplate {
        let mut body = Vec::new();
        for part in &self.parts {
            match part {
                Part::Bytes(bytes) => body.extend_from_slice(bytes),
                Part::Repeat { bytes, times: Some(times), .. } => {
                    for _ in 0..*times {
                        body.extend_from_slice(bytes);
                    }
                }
                Part::Pause(_) | Part::Repeat { times: None, .. } => {}
            }
        }
        let mut template = wiremock::ResponseTemplate::new(self.status);
        let mut content_type = None;
        for (name, value) in &self.headers {
            if name.eq_ignore_ascii_case("content-type") {
                content_type = Some(value.clone());
            } else {
                template = template.append_header(name.as_str(), value.as_str());
            }
        }
        match content_type {
            Some(mime) => template.set_body_raw(body, &mime),
            None => template.set_body_bytes(body),
        }
    }

    fn into_hyper(self) -> hyper::Response<Body> {
        let end = self.end;
        let parts = futures::stream::iter(self.parts)
            .flat_map(|part| -> BoxStream<'static, Option<Part>> {
                match part {
                    Part::Repeat { bytes, times, pause } => {
                        let chunk = move || [Some(Part::Pause(pause)), Some(Part::Bytes(bytes.clone()))];
                        let chunks = futures::stream::iter(std::iter::repeat_with(chunk).flatten());
                        match times {
                            Some(times) => chunks.take(times * 2).boxed(),
                            None => chunks.boxed(),
                        }
                    }
                    part => futures::stream::once(async { Some(part) }).boxed(),
                }
            })
            .filter_map(futures::future::ready)
            .then(|part| async move {
                match part {
                    Part::Bytes(bytes) => Some(Ok(Frame::data(bytes))),
                    Part::Pause(duration) => {
                        if !duration.is_zero() {
                            tokio::time::sleep(duration).await;
                        }
                        None
                    }
                    Part::Repeat { .. } => None,
                }
            })
            .filter_map(futures::future::ready);
        let tail: BoxStream<'static, _> = match end {
            BodyEnd::Complete => futures::stream::empty().boxed(),
            BodyEnd::Drop => futures::stream::once(async {
                // Let hyper flush what was sent before the connection is cut.
                tokio::time::sleep(Duration::from_millis(20)).await;
                Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "scripted drop"))
            })
            .boxed(),
            BodyEnd::Hang => futures::stream::pending().boxed(),
        };
        let mut response = hyper::Response::new(StreamBody::new(parts.chain(tail).boxed()));
        *response.status_mut() = hyper::StatusCode::from_u16(self.status).unwrap_or(hyper::StatusCode::OK);
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) =
                (hyper::header::HeaderName::from_bytes(name.as_bytes()), hyper::header::HeaderValue::from_str(&value))
            {
                response.headers_mut().append(name, value);
            }
        }
        response
    }
}

type Body = StreamBody<BoxStream<'static, Result<Frame<Bytes>, std::io::Error>>>;

type Handler = Arc<dyn Fn(&ReceivedRequest) -> ServedResponse + Send + Sync>;

/// The server. It stops when dropped.
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<ReceivedRequest>>>,
    stop: CancellationToken,
}

impl MockServer {
    /// Serves `responses` in order, one per request; after the last, `500 script exhausted`.
    pub async fn scripted(responses: impl IntoIterator<Item = ServedResponse>) -> Self {
        let script = Mutex::new(responses.into_iter().collect::<std::collections::VecDeque<_>>());
        MockServer::start(move |_| {
            script
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front()
                .unwrap_or_else(|| ServedResponse::new(500).chunk("script exhausted"))
        })
        .await
    }

    /// Answers every request with `handler`. Requests are recorded unless `record` is off
    /// ([`MockServer::start_unrecorded`], for benchmarks).
    pub async fn start(handler: impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync + 'static) -> Self {
        MockServer::spawn(Arc::new(handler), true).await
    }

    /// Like [`MockServer::start`], keeping no record of requests, on `port` (0: any free one).
    pub async fn start_unrecorded(
        port: u16,
        handler: impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync + 'static,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        Ok(MockServer::serve(listener, Arc::new(handler), false))
    }

    async fn spawn(handler: Handler, record: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a loopback port");
        MockServer::serve(listener, handler, record)
    }

    fn serve(listener: TcpListener, handler: Handler, record: bool) -> Self {
        let addr = listener.local_addr().expect("a bound listener has an address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let (log, token) = (received.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let stream = tokio::select! {
                    () = token.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => continue,
                    },
                };
                let _ = stream.set_nodelay(true);
                let (handler, log, token) = (handler.clone(), log.clone(), token.clone());
                tokio::spawn(async move {
                    let service = service_fn(move |request: hyper::Request<Incoming>| {
                        let (handler, log) = (handler.clone(), log.clone());
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body.collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
                            let received = ReceivedRequest {
                                method: parts.method.to_string(),
                                path: parts.uri.path_and_query().map(|p| p.to_string()).unwrap_or_default(),
                                headers: parts
                                    .headers
                                    .iter()
                                    .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                                    .collect(),
                                body,
                            };
                            let response = handler(&received);
                            if record {
                                log.lock().unwrap_or_else(|e| e.into_inner()).push(received);
                            }
                            Ok::<_, Infallible>(response.into_hyper())
                        }
                    });
                    let connection =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        () = token.cancelled() => {}
                        _ = connection => {}
                    }
                });
            }
        });
        MockServer { addr, received, stop }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The loopback address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<ReceivedRequest> {
        self.received.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
