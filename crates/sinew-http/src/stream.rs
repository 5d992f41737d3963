//! The thin transport every provider shares: send, then feed the body to a pure decoder.

use std::collections::VecDeque;

use futures::StreamExt;
use futures::stream::BoxStream;
use sinew_core::{ProviderError, RetryConfig, StreamEvent};
use tokio_util::sync::CancellationToken;

use crate::client::{HttpClient, HttpResponse};
use crate::request::HttpRequest;

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

/// Sends `request` (retrying as [`HttpClient::send`] does) and streams the decoded events.
///
/// `request` is the builder's result, so a request that could not be built becomes the stream's
/// one `Error`. Cancellation is checked at every await; it ends the stream with
/// [`ProviderError::Cancelled`] and the partial message. A body that breaks off mid-stream ends
/// with [`ProviderError::Network`] and the partial message.
pub fn stream_response<D: StreamDecoder>(
    client: HttpClient,
    request: Result<HttpRequest, ProviderError>,
    retry: RetryConfig,
    decoder: D,
    cancel: CancellationToken,
) -> BoxStream<'static, StreamEvent> {
    let state = Transport {
        client,
        request: Some(request),
        retry,
        decoder,
        cancel,
        response: None,
        decoded: Vec::new(),
        pending: VecDeque::new(),
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
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
    request: Option<Result<HttpRequest, ProviderError>>,
    retry: RetryConfig,
    decoder: D,
    cancel: CancellationToken,
    response: Option<HttpResponse>,
    /// The decoder's output buffer, reused for every chunk.
    decoded: Vec<StreamEvent>,
    pending: VecDeque<StreamEvent>,
    done: bool,
}

impl<D: StreamDecoder> Transport<D> {
    async fn step(&mut self) {
        match self.response.as_mut() {
            None => match self.request.take() {
                Some(Ok(request)) => match self.client.send(&request, &self.retry, &self.cancel).await {
                    Ok(response) => self.response = Some(response),
                    Err(error) => self.decoder.fail(error, &mut self.decoded),
                },
                Some(Err(error)) => self.decoder.fail(error, &mut self.decoded),
                None => self.done = true,
            },
            Some(response) => {
                let chunk = tokio::select! {
                    biased;
                    () = self.cancel.cancelled() => Err(ProviderError::Cancelled),
                    chunk = response.chunk() => chunk,
                };
                match chunk {
                    Ok(Some(bytes)) => self.decoder.feed(&bytes, &mut self.decoded),
                    Ok(None) => self.decoder.finish(&mut self.decoded),
                    Err(error) => self.decoder.fail(error, &mut self.decoded),
                }
            }
        }
        if self.decoded.iter().any(|e| matches!(e, StreamEvent::Done(_) | StreamEvent::Error { .. })) {
            // Dropping the response closes its connection if the body is not finished.
            self.done = true;
            self.response = None;
        }
        self.pending.extend(self.decoded.drain(..));
    }
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
            out.push(StreamEvent::Done(message));
        }

        fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
            out.push(StreamEvent::Error { error, partial: AssistantMessage::new("p", "m") });
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
