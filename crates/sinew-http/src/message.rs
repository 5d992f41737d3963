//! The part every SSE protocol's decoder shares: buffering server-sent events, ending exactly
//! once, and turning failures into an error that keeps the partial message.

use sinew_core::{AssistantMessage, Content, ProviderError, StopReason, StreamDelta, StreamEvent};

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
    handler: H,
    finished: bool,
}

impl<H: SseHandler> SseMessageDecoder<H> {
    /// A decoder that hands each event to `handler`.
    pub fn new(handler: H) -> Self {
        SseMessageDecoder { sse: SseDecoder::new(), handler, finished: false }
    }

    /// Decodes `bytes`, appending the stream events they complete to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        let (handler, finished) = (&mut self.handler, &mut self.finished);
        // The events completed before an oversized one are still handled.
        let fed = self.sse.feed_with(bytes, |event| handle(handler, finished, event, out));
        if let Err(error) = fed {
            self.fail(ProviderError::Protocol(error.to_string()), out);
        }
    }

    /// Ends the stream: the last event if the body ended without its blank line, then the
    /// handler's verdict on a body that ended before completing.
    pub fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        let (handler, finished) = (&mut self.handler, &mut self.finished);
        self.sse.finish_with(|event| handle(handler, finished, event, out));
        if !self.finished {
            match self.handler.end(out) {
                Ok(message) => complete(&mut self.finished, message, out),
                Err(error) => self.fail(error, out),
            }
        }
    }

    /// Ends the stream with `error` (a broken connection, cancellation), keeping what arrived as
    /// the partial message: `Aborted` for cancellation, `Error` otherwise. Nothing happens if
    /// the stream already ended.
    pub fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
        fail(&mut self.handler, &mut self.finished, error, out);
    }

    /// The protocol's handler, with whatever state it kept.
    pub fn handler(&self) -> &H {
        &self.handler
    }
}

/// Hands one event to the handler, unless the stream already ended.
fn handle<H: SseHandler>(handler: &mut H, finished: &mut bool, event: &SseEvent, out: &mut Vec<StreamEvent>) {
    if *finished {
        return;
    }
    match handler.event(event, out) {
        Ok(None) => {}
        Ok(Some(message)) => complete(finished, message, out),
        Err(error) => fail(handler, finished, error, out),
    }
}

fn complete(finished: &mut bool, message: AssistantMessage, out: &mut Vec<StreamEvent>) {
    *finished = true;
    out.push(StreamEvent::done(message));
}

fn fail<H: SseHandler>(handler: &mut H, finished: &mut bool, error: ProviderError, out: &mut Vec<StreamEvent>) {
    if std::mem::replace(finished, true) {
        return;
    }
    let mut partial = handler.partial();
    partial.stop_reason = if error == ProviderError::Cancelled { StopReason::Aborted } else { StopReason::Error };
    partial.error_message = Some(error.to_string());
    out.push(StreamEvent::error(error, partial));
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

/// Appends streamed text and thinking to a message: a delta extends the open block of its kind,
/// or opens a new block (also after any other content); each delta is emitted as an event. For
/// protocols without block indexes of their own (Chat Completions, Gemini).
#[derive(Debug, Default)]
pub struct TextBlocks {
    /// Whether the open block is thinking, and its index.
    open: Option<(bool, usize)>,
}

impl TextBlocks {
    /// Appends `delta` as text; returns the block's index.
    pub fn text(&mut self, message: &mut AssistantMessage, delta: String, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.block(message, false);
        if let Some(Content::Text { text, .. }) = message.content.get_mut(index) {
            text.push_str(&delta);
        }
        out.push(StreamEvent::Delta(StreamDelta::Text { index, delta }));
        index
    }

    /// Appends `delta` as thinking; returns the block's index.
    pub fn thinking(&mut self, message: &mut AssistantMessage, delta: String, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.block(message, true);
        if let Some(Content::Thinking { thinking, .. }) = message.content.get_mut(index) {
            thinking.push_str(&delta);
        }
        out.push(StreamEvent::Delta(StreamDelta::Thinking { index, delta }));
        index
    }

    /// The index of the open block, if any.
    pub fn open_index(&self) -> Option<usize> {
        self.open.map(|(_, index)| index)
    }

    /// Closes the open block: the next delta opens a new one (call it when other content is
    /// pushed).
    pub fn close(&mut self) {
        self.open = None;
    }

    fn block(&mut self, message: &mut AssistantMessage, thinking: bool) -> usize {
        match self.open {
            Some((kind, index)) if kind == thinking => index,
            _ => {
                let index = message.content.len();
                message.content.push(if thinking {
                    Content::Thinking { thinking: String::new(), signature: None, redacted: false, id: None }
                } else {
                    Content::text("")
                });
                self.open = Some((thinking, index));
                index
            }
        }
    }
}

/// `text` cut to its first 200 characters, for error messages that quote a payload.
pub fn excerpt(text: &str) -> &str {
    match text.char_indices().nth(200) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_extend_the_open_block_of_their_kind_until_it_closes() {
        let (mut blocks, mut message, mut out) = (TextBlocks::default(), AssistantMessage::new("p", "m"), Vec::new());
        assert_eq!(blocks.thinking(&mut message, "a".into(), &mut out), 0);
        assert_eq!(blocks.thinking(&mut message, "b".into(), &mut out), 0);
        assert_eq!(blocks.text(&mut message, "c".into(), &mut out), 1);
        blocks.close();
        assert_eq!(blocks.open_index(), None);
        assert_eq!(blocks.text(&mut message, "d".into(), &mut out), 2, "a closed block is not extended");
        assert_eq!(blocks.open_index(), Some(2));
        assert!(matches!(&message.content[0], Content::Thinking { thinking, .. } if thinking == "ab"));
        assert_eq!((message.content[1].as_text(), message.content[2].as_text()), (Some("c"), Some("d")));
        assert!(matches!(&out[3], StreamEvent::Delta(StreamDelta::Text { index: 2, delta }) if delta == "d"));
    }
}
