//! Responses and request bodies as FastAPI (and so `adk api_server`) writes and reads them.

use std::convert::Infallible;

use bytes::Bytes;
use futures::{Stream, StreamExt as _};
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

/// The body of every response: whole, or a stream of server-sent events.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// An empty body.
pub(crate) fn empty_body() -> Body {
    full(Bytes::new())
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// `value` as a JSON response with `status`.
pub(crate) fn json_response(status: StatusCode, value: &impl Serialize) -> Response<Body> {
    // Our values always serialize: maps have string keys, numbers are finite.
    let bytes = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    let mut response = Response::new(full(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `null`, what a route that returns nothing answers.
pub(crate) fn empty_json() -> Response<Body> {
    json_response(StatusCode::OK, &serde_json::Value::Null)
}

/// FastAPI's error: `{"detail": message}` with `status`.
pub(crate) fn detail(status: StatusCode, message: &str) -> Response<Body> {
    json_response(status, &json!({ "detail": message }))
}

/// A `text/event-stream` response of `frames` (each a whole `data: …\n\n` frame).
pub(crate) fn sse_response(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response<Body> {
    let body = StreamBody::new(frames.map(|bytes| Ok::<_, Infallible>(http_body::Frame::data(bytes))));
    let mut response = Response::new(body.boxed_unsync());
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// How long a client may take to send a request's body, unless the server is told otherwise.
pub(crate) const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The error of a body that did not arrive by its deadline.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub(crate) struct BodyTimedOut;

/// A request body that fails with [`BodyTimedOut`] once `deadline` passes.
pub(crate) struct TimedBody<B> {
    inner: B,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl<B> TimedBody<B> {
    /// `inner`, to be read within `timeout` from now.
    pub(crate) fn new(inner: B, timeout: std::time::Duration) -> Self {
        TimedBody { inner, deadline: Box::pin(tokio::time::sleep(timeout)) }
    }
}

impl<B> http_body::Body for TimedBody<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if let std::task::Poll::Ready(frame) = std::pin::Pin::new(&mut self.inner).poll_frame(cx) {
            return std::task::Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        match self.deadline.as_mut().poll(cx) {
            std::task::Poll::Ready(()) => std::task::Poll::Ready(Some(Err(Box::new(BodyTimedOut)))),
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Why a request body was not taken.
#[derive(Debug)]
pub(crate) enum DecodeError {
    /// The client did not finish sending it in time.
    TimedOut,
    /// Over the size limit.
    TooLarge(usize),
    /// The connection failed while the body was read.
    Read(String),
    /// Not JSON, or not the JSON the route takes (FastAPI's 422).
    Invalid { kind: &'static str, message: String },
}

impl DecodeError {
    /// The response FastAPI gives: 413 for a body over the limit, 422 with a validation error
    /// list otherwise.
    pub(crate) fn response(&self) -> Response<Body> {
        match self {
            DecodeError::TooLarge(limit) => {
                detail(StatusCode::PAYLOAD_TOO_LARGE, &format!("request body is larger than {limit} bytes"))
            }
            DecodeError::Read(message) => detail(StatusCode::BAD_REQUEST, message),
            DecodeError::TimedOut => detail(StatusCode::REQUEST_TIMEOUT, "the request body did not arrive in time"),
            DecodeError::Invalid { kind, message } => json_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({"detail": [{"type": kind, "loc": ["body"], "msg": message}]}),
            ),
        }
    }
}

/// Reads a JSON body of at most `limit` bytes, as fast as it comes: the caller bounds the wait
/// (`serve` does, with [`TimedBody`]). An empty body reads as `null`, which an `Option`
/// takes as `None` (FastAPI's optional bodies).
pub(crate) async fn read_json<T: DeserializeOwned, B>(body: B, limit: usize) -> Result<T, DecodeError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // The deadline is the body's own (`TimedBody`, which `serve` puts on every request).
    let collected = match Limited::new(body, limit).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            return Err(if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                DecodeError::TooLarge(limit)
            } else if error.downcast_ref::<BodyTimedOut>().is_some() {
                DecodeError::TimedOut
            } else {
                DecodeError::Read(format!("reading the request body: {error}"))
            });
        }
    };
    let text: &[u8] = if collected.iter().all(u8::is_ascii_whitespace) { b"null" } else { &collected };
    serde_json::from_slice(text).map_err(|error| match error.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof | serde_json::error::Category::Io => {
            DecodeError::Invalid { kind: "json_invalid", message: format!("JSON decode error: {error}") }
        }
        serde_json::error::Category::Data => DecodeError::Invalid { kind: "value_error", message: error.to_string() },
    })
}

/// Whether the request carries a body.
fn has_body(headers: &http::HeaderMap) -> bool {
    let length = headers.get(http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok());
    length.is_some_and(|l| l.trim() != "0") || headers.contains_key(http::header::TRANSFER_ENCODING)
}

/// Whether the body is declared JSON: `application/json` or a `+json` type.
fn is_json(headers: &http::HeaderMap) -> bool {
    let Some(kind) = headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else { return false };
    let essence = kind.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// A body that is not declared JSON is refused: a browser may send a `text/plain` body to any
/// origin without asking first, and FastAPI takes only JSON.
pub(crate) fn refuse_unless_json(headers: &http::HeaderMap) -> Option<Response<Body>> {
    (has_body(headers) && !is_json(headers)).then(|| {
        let message = "the request body must be JSON (Content-Type: application/json)".to_owned();
        DecodeError::Invalid { kind: "json_invalid", message }.response()
    })
}
