//! The part every SSE protocol's decoder shares: buffering server-sent events, ending exactly
//! once, and turning failures into an error that keeps the partial message.

use sinew_core::{AssistantMessage, ProviderError, StopReason, StreamEvent};

use crate::sse::{SseDecoder, SseEvent};
use crate::stream::StreamDecoder;

/// One protocol's reading of server-sent events, driven by [`SseMessageDecoder`].
pub trait SseHandler: Send + 'static {
    /// Handles one event, appending `Start` and deltas to `out`. `Ok(Some(message))` completes
    /// the stream; an error ends it (the partial message is taken from [`SseHandler::partial`]).
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError>;

    /// The body ended before any event completed the message: the message, if the protocol
    /// allows ending this way, or why it is incomplete.
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<AssistantMessage, ProviderError>;

    /// What arrived so far; called once, when the stream fails.
    fn partial(&mut self) -> AssistantMessage;
}

/// An incremental decoder of one streamed response over server-sent events. Feed it bytes as
/// they arrive, then call [`finish`]; it emits exactly one terminal `Done` or `Error`, and
/// ignores everything after it.
///
/// [`finish`]: SseMessageDecoder::finish
#[derive(Debug)]
pub struct SseMessageDecoder<H> {
    sse: SseDecoder,
    events: Vec<SseEvent>,
    handler: H,
    finished: bool,
}

impl<H: SseHandler> SseMessageDecoder<H> {
    pub fn new(handler: H) -> Self {
        SseMessageDecoder { sse: SseDecoder::new(), events: Vec::new(), handler, finished: false }
    }

    /// Decodes `bytes`, appending the stream events they complete to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        self.sse.feed(bytes, &mut self.events);
        self.drain(out);
    }

    /// Ends the stream: the last event if the body ended without its blank line, then the
    /// handler's verdict on a body that ended before completing.
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        self.events.extend(self.sse.finish());
        self.drain(out);
        if !self.finished {
            match self.handler.end(out) {
                Ok(message) => self.complete(message, out),
                Err(error) => self.fail(error, out),
            }
        }
    }

    /// Ends the stream with `error` (a broken connection, cancellation), keeping what arrived as
    /// the partial message: `Aborted` for cancellation, `Error` otherwise. Nothing happens if
    /// the stream already ended.
    pub fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let mut partial = self.handler.partial();
        partial.stop_reason = if error == ProviderError::Cancelled { StopReason::Aborted } else { StopReason::Error };
        partial.error_message = Some(error.to_string());
        out.push(StreamEvent::Error { error, partial });
    }

    pub fn handler(&self) -> &H {
        &self.handler
    }

    fn complete(&mut self, message: AssistantMessage, out: &mut Vec<StreamEvent>) {
        self.finished = true;
        out.push(StreamEvent::Done(message));
    }

    fn drain(&mut self, out: &mut Vec<StreamEvent>) {
        let mut events = std::mem::take(&mut self.events);
        for event in &events {
            if self.finished {
                break;
            }
            match self.handler.event(event, out) {
                Ok(None) => {}
                Ok(Some(message)) => self.complete(message, out),
                Err(error) => self.fail(error, out),
            }
        }
        events.clear();
        self.events = events;
    }
}

impl<H: SseHandler> StreamDecoder for SseMessageDecoder<H> {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        SseMessageDecoder::feed(self, bytes, out);
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        SseMessageDecoder::finish(self, out);
    }

    fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
        SseMessageDecoder::fail(self, error, out);
    }
}

/// `text` cut to its first 200 characters, for error messages that quote a payload.
pub fn excerpt(text: &str) -> &str {
    match text.char_indices().nth(200) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}
