//! The thin transport every provider shares: send, then feed the body to a pure decoder, within
//! the call's [`StreamLimits`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use sinew_core::{ProviderError, RetryConfig, StreamEvent};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::{HttpClient, HttpResponse};
use crate::credentials::Authorizer;
use crate::request::HttpRequest;
use crate::retry::{Failure, log_retry};

/// The bytes of a chunk fed to the decoder at once (then to the end of the line): a few dozen
/// events.
const FEED_SLICE: usize = 4 * 1024;

/// A pure, incremental decoder of one streamed response body.
///
/// It emits `Start`, deltas, and exactly one terminal `Done` or `Error`; once terminal it ignores
/// whatever it is given.
pub trait StreamDecoder: Send + 'static {
    /// Decodes `bytes`, appending the events they complete to `out`.
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>);

    /// The body ended: flush what is buffered, and fail if the message is incomplete.
    fn finish(&mut self, out: &mut Vec<StreamEvent>);

    /// The transport failed (or was cancelled): end with `error`, keeping what was decoded as the
    /// partial message.
    fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>);

    /// Decodes a whole body given in chunks: feeds each, then finishes. For recorded streams and
    /// tests; a live body goes through [`stream_response`].
    fn decode_all<B: AsRef<[u8]>>(&mut self, chunks: impl IntoIterator<Item = B>) -> Vec<StreamEvent>
    where
        Self: Sized,
    {
        let mut out = Vec::new();
        for chunk in chunks {
            self.feed(chunk.as_ref(), &mut out);
        }
        self.finish(&mut out);
        out
    }
}

/// What one streamed call may take: bytes, silence and time. Past a limit the call ends with a
/// clear error and the partial message.
///
/// A single event is bounded by the decoder (16 MiB for server-sent events and Bedrock frames,
/// see [`crate::sse::DEFAULT_MAX_EVENT_BYTES`]); these bound the whole call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamLimits {
    /// The largest response body accepted, in bytes. Default 256 MiB: a long answer with
    /// generated images stays far below, an endless stream does not.
    pub max_response_bytes: u64,
    /// How long the stream may go without producing anything (silence, or only keep-alives
    /// such as SSE comments and `ping` events) once the response has begun. Default 10 minutes,
    /// what the slowest reasoning models take before their first output.
    pub idle_timeout: Duration,
    /// A deadline for the whole call, from the first request to the final message, retries
    /// included. Default none.
    pub total_timeout: Option<Duration>,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            max_response_bytes: 256 * 1024 * 1024,
            idle_timeout: Duration::from_secs(600),
            total_timeout: None,
        }
    }
}

impl StreamLimits {
    /// The default limits with `max_response_bytes` set.
    #[must_use]
    pub fn max_response_bytes(mut self, bytes: u64) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// The default limits with `idle_timeout` set.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The default limits with a deadline for the whole call.
    #[must_use]
    pub fn total_timeout(mut self, timeout: Duration) -> Self {
        self.total_timeout = Some(timeout);
        self
    }
}

/// Sends `request` (retrying as [`HttpClient::send`] does) and streams the decoded events,
/// within [`StreamLimits::default`]. See [`stream_response_with`].
pub fn stream_response<D: StreamDecoder>(
    client: HttpClient,
    request: Result<HttpRequest, ProviderError>,
    retry: RetryConfig,
    decoder: D,
    cancel: CancellationToken,
) -> BoxStream<'static, StreamEvent> {
    stream_response_with(client, request, retry, StreamLimits::default(), decoder, cancel)
}

/// Sends `request` (retrying as [`HttpClient::send`] does) and streams the decoded events.
///
/// `request` is the builder's result, so a request that could not be built becomes the stream's
/// one `Error`. Cancellation is checked at every await; it ends the stream with
/// [`ProviderError::Cancelled`] and the partial message. A body that breaks off mid-stream ends
/// with [`ProviderError::Network`], one past `limits.max_response_bytes` with
/// [`ProviderError::Protocol`], and a silent stream or a passed deadline with
/// [`ProviderError::Timeout`], each with the partial message.
pub fn stream_response_with<D: StreamDecoder>(
    client: HttpClient,
    request: Result<HttpRequest, ProviderError>,
    retry: RetryConfig,
    limits: StreamLimits,
    decoder: D,
    cancel: CancellationToken,
) -> BoxStream<'static, StreamEvent> {
    stream_authorized_response(client, request, None, retry, limits, decoder, cancel)
}

/// [`stream_response_with`] for a request whose credentials `authorizer` adds before each
/// attempt (fetched then, so a retry gets fresh ones). An authorizer's error fails the attempt:
/// retried when it is [retryable](ProviderError::is_retryable), else the stream's error.
pub fn stream_authorized_response<D: StreamDecoder>(
    client: HttpClient,
    request: Result<HttpRequest, ProviderError>,
    authorizer: Option<Arc<dyn Authorizer>>,
    retry: RetryConfig,
    limits: StreamLimits,
    decoder: D,
    cancel: CancellationToken,
) -> BoxStream<'static, StreamEvent> {
    let now = Instant::now();
    let mut state = Transport {
        client,
        request: None,
        authorizer,
        retry,
        attempt: 0,
        retry_at: None,
        started: false,
        limits,
        deadline: limits.total_timeout.and_then(|t| now.checked_add(t)),
        quiet_since: now,
        received: 0,
        decoder,
        cancel,
        response: None,
        unfed: Bytes::new(),
        decoded: Vec::new(),
        pending: VecDeque::new(),
        done: false,
        refused: false,
    };
    match request {
        Ok(request) => state.request = Some(request),
        Err(error) => state.fail(error),
    }
    // Boxed: `unfold` moves its state in and out for every event, and the transport (the
    // decoder and its message within) is large; a box moves as a pointer.
    futures::stream::unfold(Box::new(state), |mut state| async move {
        loop {
            if let Some(event) = state.pending.pop_front() {
                return Some((event, state));
            }
            if state.done {
                return None;
            }
            state.step().await;
        }
    })
    .boxed()
}

struct Transport<D> {
    client: HttpClient,
    request: Option<HttpRequest>,
    authorizer: Option<Arc<dyn Authorizer>>,
    retry: RetryConfig,
    /// Retries made so far.
    attempt: u32,
    /// When the next attempt is due, after a failed one.
    retry_at: Option<Instant>,
    /// The response began (a 2xx arrived) and `Start` went out: the decoder's own is dropped.
    started: bool,
    limits: StreamLimits,
    /// When the whole call must be over.
    deadline: Option<Instant>,
    /// When the decoder last produced an event (or the response began).
    quiet_since: Instant,
    /// Body bytes received so far.
    received: u64,
    decoder: D,
    cancel: CancellationToken,
    response: Option<HttpResponse>,
    /// What is left of the chunk read last, fed to the decoder [`FEED_SLICE`] bytes at a time.
    unfed: Bytes,
    /// The decoder's output buffer, reused for every chunk.
    decoded: Vec<StreamEvent>,
    pending: VecDeque<StreamEvent>,
    done: bool,
    /// The service refused the credentials an authorizer added: they were renewed, once.
    refused: bool,
}

impl<D: StreamDecoder> Transport<D> {
    /// Ends the stream with `error`, keeping what was decoded.
    fn fail(&mut self, error: ProviderError) {
        self.decoder.fail(error, &mut self.decoded);
        self.flush();
    }

    async fn step(&mut self) {
        if !self.unfed.is_empty() {
            self.feed_slice();
        } else if self.response.is_some() {
            self.read().await;
        } else {
            self.send().await;
        }
        self.flush();
    }

    /// One attempt at the request, or the wait before the next. A failure that may pass on
    /// another try, with tries left, becomes a [`StreamEvent::Retry`] and a wait; any other
    /// ends the stream.
    async fn send(&mut self) {
        let Some(request) = &self.request else {
            self.done = true;
            return;
        };
        // Until the response begins, only the call's deadline applies: the client bounds each
        // attempt with its timeouts, and retries have a maximum count and delay.
        let deadline = until(self.deadline);
        if let Some(retry_at) = self.retry_at.take() {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => self.decoder.fail(ProviderError::Cancelled, &mut self.decoded),
                () = deadline => self.decoder.fail(timeout(&self.limits, Expiry::Deadline), &mut self.decoded),
                () = tokio::time::sleep_until(retry_at) => {}
            }
            return;
        }
        let renew = !self.refused;
        let attempt = tokio::select! {
            attempt = authorized_attempt(&self.client, request, self.authorizer.as_deref(), renew, &self.cancel) => attempt,
            () = deadline => {
                self.decoder.fail(timeout(&self.limits, Expiry::Deadline), &mut self.decoded);
                return;
            }
        };
        match attempt {
            Ok(response) => {
                self.quiet_since = Instant::now();
                self.response = Some(response);
                // The response began: what fails from here on is no longer the request's failure,
                // and a caller that retries may retry it (nothing was retried by the transport).
                self.started = true;
                self.pending.push_back(StreamEvent::Start);
            }
            Err(failure) if failure.retryable && self.attempt < self.retry.max_retries => {
                self.refused |= matches!(failure.error, ProviderError::Auth(_));
                self.attempt += 1;
                let delay = failure.delay(&self.retry, self.attempt);
                log_retry(request, &self.retry, self.attempt, delay, &failure.error);
                self.retry_at = Some(Instant::now() + delay);
                self.decoded.push(StreamEvent::Retry { attempt: self.attempt, delay, error: failure.error });
            }
            Err(failure) => self.decoder.fail(failure.error, &mut self.decoded),
        }
    }

    /// One chunk of the body, fed to the decoder, within the limits.
    async fn read(&mut self) {
        let Some(response) = self.response.as_mut() else { return };
        // Whichever comes first: the end of the silence allowed, or the call's deadline.
        let quiet_until = self.quiet_since.checked_add(self.limits.idle_timeout);
        let (expiry, why) = match (quiet_until, self.deadline) {
            (Some(quiet), Some(deadline)) if deadline <= quiet => (Some(deadline), Expiry::Deadline),
            (Some(quiet), _) => (Some(quiet), Expiry::Idle),
            (None, deadline) => (deadline, Expiry::Deadline),
        };
        // Checked before waiting too: a body that always has a chunk ready would otherwise keep
        // the timer from ever being polled.
        let chunk = if expiry.is_some_and(|at| Instant::now() >= at) {
            Err(timeout(&self.limits, why))
        } else {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => Err(ProviderError::Cancelled),
                () = until(expiry) => Err(timeout(&self.limits, why)),
                chunk = response.chunk() => chunk,
            }
        };
        match chunk {
            Ok(Some(bytes)) => {
                self.received = self.received.saturating_add(bytes.len() as u64);
                if self.received > self.limits.max_response_bytes {
                    let limit = self.limits.max_response_bytes;
                    let error = ProviderError::Protocol(format!("the response exceeded the {limit}-byte limit"));
                    self.decoder.fail(error, &mut self.decoded);
                } else {
                    self.unfed = bytes;
                    self.feed_slice();
                    return;
                }
            }
            Ok(None) => self.decoder.finish(&mut self.decoded),
            Err(error) => self.decoder.fail(error, &mut self.decoded),
        }
        if !self.decoded.is_empty() {
            self.quiet_since = Instant::now();
        }
    }

    /// Feeds the decoder the next slice of the chunk read last. A chunk that holds a whole
    /// response (a fast server, or a slow reader) is decoded as its events are taken, a slice at
    /// a time, so the events waiting decoded stay few.
    fn feed_slice(&mut self) {
        // To the end of a line, so that a slice does not split an event's line (which the SSE
        // decoder would then copy): a chunk is at most the client's read buffer anyway.
        let length = match self.unfed.get(FEED_SLICE..) {
            Some(after) => memchr::memchr(b'\n', after).map_or(self.unfed.len(), |at| FEED_SLICE + at + 1),
            None => self.unfed.len(),
        };
        let slice = self.unfed.split_to(length);
        self.decoder.feed(&slice, &mut self.decoded);
        if !self.decoded.is_empty() {
            self.quiet_since = Instant::now();
        }
    }

    /// Hands what was decoded to the stream; after a terminal event, nothing more is read.
    fn flush(&mut self) {
        if self.started {
            // One `Start` per stream: the transport's, when the response began.
            self.decoded.retain(|e| !matches!(e, StreamEvent::Start));
        }
        if self.decoded.iter().any(|e| matches!(e, StreamEvent::Done(_) | StreamEvent::Error { .. })) {
            // Dropping the response closes its connection if the body is not finished.
            self.done = true;
            self.response = None;
            self.unfed = Bytes::new();
        }
        self.pending.extend(self.decoded.drain(..));
    }
}

/// One attempt at `request`, its credentials added first by `authorizer` (to a copy: the next
/// attempt gets its own). When the service refuses them (401 or 403), the authorizer is told, and
/// with `renew` the failure may be retried: the next attempt gets fresh credentials (revoked or
/// rotated ones are not kept until they expire).
async fn authorized_attempt(
    client: &HttpClient,
    request: &HttpRequest,
    authorizer: Option<&dyn Authorizer>,
    renew: bool,
    cancel: &CancellationToken,
) -> Result<HttpResponse, Failure> {
    let Some(authorizer) = authorizer else {
        return client.attempt(request, cancel).await;
    };
    let mut authorized = request.clone();
    let outcome = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(ProviderError::Cancelled),
        outcome = authorizer.authorize(&mut authorized) => outcome,
    };
    match outcome {
        Ok(()) => match client.attempt(&authorized, cancel).await {
            Err(mut failure) if matches!(failure.error, ProviderError::Auth(_)) => {
                failure.retryable = authorizer.rejected() && renew;
                // Fresh credentials need no backoff.
                failure.server_delay = Some(Duration::ZERO);
                Err(failure)
            }
            other => other,
        },
        Err(error) => Err(Failure { retryable: error.is_retryable(), error, server_delay: None }),
    }
}

/// Resolves at `instant`, or never.
async fn until(instant: Option<Instant>) {
    match instant {
        Some(instant) => tokio::time::sleep_until(instant).await,
        None => std::future::pending().await,
    }
}

fn timeout(limits: &StreamLimits, why: Expiry) -> ProviderError {
    ProviderError::Timeout(match why {
        Expiry::Idle => format!("the stream produced nothing for {:?}", limits.idle_timeout),
        Expiry::Deadline => format!("the call's {:?} deadline passed", limits.total_timeout.unwrap_or_default()),
    })
}

#[derive(Clone, Copy)]
enum Expiry {
    Idle,
    Deadline,
}

#[cfg(test)]
mod tests {
    use sinew_core::AssistantMessage;

    use super::*;

    /// Counts bytes; ends with a message whose text is the count.
    #[derive(Default)]
    struct Counter(usize);

    impl StreamDecoder for Counter {
        fn feed(&mut self, bytes: &[u8], _: &mut Vec<StreamEvent>) {
            self.0 += bytes.len();
        }

        fn finish(&mut self, out: &mut Vec<StreamEvent>) {
            let mut message = AssistantMessage::new("p", "m");
            message.content.push(sinew_core::Content::text(self.0.to_string()));
            out.push(StreamEvent::done(message));
        }

        fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
            out.push(StreamEvent::error(error, AssistantMessage::new("p", "m")));
        }
    }

    #[test]
    fn decode_all_feeds_every_chunk_then_finishes() {
        let events = Counter::default().decode_all([&b"abc"[..], b"", b"de"]);
        assert_eq!(events.len(), 1);
        assert!(matches!(&events[0], StreamEvent::Done(m) if m.text() == "5"));
        assert!(
            matches!(&Counter::default().decode_all(Vec::<Vec<u8>>::new())[0], StreamEvent::Done(m) if m.text() == "0")
        );
    }
}
