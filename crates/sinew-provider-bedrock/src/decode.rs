//! The ConverseStream response, decoded incrementally: eventstream frames, then the JSON event
//! each carries (`:event-type`), or an exception (`:message-type: exception`).
//!
//! Text blocks have no `contentBlockStart`: a block begins with its first delta. Tool inputs
//! arrive as JSON fragments, parsed when the block stops. A server tool's call (`toolUse` of type
//! `server_tool_use`, such as Nova's code interpreter) and the `toolResult` the service streams
//! after it are kept as opaque blocks that go back as they came; the call is never dispatched. Reasoning comes as text plus a
//! signature, or as base64 `redactedContent`. The `p` padding field Bedrock adds to payloads is
//! ignored. The message is complete after `messageStop` and its `metadata` (usage), or when the
//! body ends after `messageStop`.

use serde::Deserialize;
use serde_json::{Map, Value, json};
use sinew_core::{AssistantMessage, Content, ProviderError, StopReason, StreamDelta, StreamEvent, Usage};
use sinew_http::json::{self, MaybeStr, Object};
use sinew_http::{StreamDecoder, excerpt};

use crate::eventstream::{FrameDecoder, FrameRef};

/// The `provider_id` of Bedrock messages.
pub const PROVIDER_ID: &str = "bedrock";

/// A content block being assembled.
#[derive(Debug)]
struct Block {
    /// Bedrock's `contentBlockIndex`.
    wire_index: u64,
    content_index: usize,
    tool_input: String,
}

/// Decodes one ConverseStream response. Feed it bytes as they arrive, then call `finish`.
#[derive(Debug)]
pub struct BedrockDecoder {
    frames: FrameDecoder,
    message: AssistantMessage,
    blocks: Vec<Block>,
    stop_reason: Option<StopReason>,
    started: bool,
    finished: bool,
}

/// A decoder for a response to a request for `model`.
pub fn decoder(model: &str) -> BedrockDecoder {
    BedrockDecoder {
        frames: FrameDecoder::new(),
        message: AssistantMessage::new(PROVIDER_ID, model),
        blocks: Vec::new(),
        stop_reason: None,
        started: false,
        finished: false,
    }
}

impl StreamDecoder for BedrockDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        // Frames are read where they lie, each handled as it comes; the first error ends it.
        let mut frames = std::mem::take(&mut self.frames);
        let result = frames.feed_frames(bytes, |frame| {
            if let Err(error) = self.frame(frame, out) {
                self.fail(error, out);
            }
            !self.finished
        });
        self.frames = frames;
        if let Err(error) = result {
            self.fail(error, out);
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        if self.finished {
            return;
        }
        if self.frames.has_partial_frame() {
            self.fail(ProviderError::Protocol("the stream ended inside an eventstream frame".into()), out);
        } else if self.stop_reason.is_some() {
            self.complete(out);
        } else {
            self.fail(ProviderError::Protocol("the stream ended before messageStop".into()), out);
        }
    }

    fn fail(&mut self, error: ProviderError, out: &mut Vec<StreamEvent>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        let mut partial = self.take_message();
        partial.stop_reason = if error == ProviderError::Cancelled { StopReason::Aborted } else { StopReason::Error };
        partial.error_message = Some(error.to_string());
        out.push(StreamEvent::error(error, partial));
    }
}

impl BedrockDecoder {
    fn frame(&mut self, frame: FrameRef<'_>, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        // Text and tool-input deltas (one per streamed token) are read into typed, borrowed
        // fields; every other frame, and a delta those do not cover, whole.
        if !matches!(frame.header_bytes(":message-type"), Some(b"exception" | b"error"))
            && frame.header_bytes(":event-type") == Some(b"contentBlockDelta")
            && json::is_object(frame.payload)
            // Checked whole: the typed reading skips strings without checking their UTF-8.
            && let Ok(text) = std::str::from_utf8(frame.payload)
            && let Ok(head) = serde_json::from_str::<BlockDelta<'_>>(text)
            && let Some(delta) = &head.delta.0
        {
            let wire_index = head.content_block_index.unwrap_or(0);
            if let Some(text) = delta.text.as_str() {
                self.start(out);
                self.text_delta(wire_index, text, out);
                return Ok(());
            }
            if let Some(input) = delta.tool_use.0.as_ref().and_then(|t| t.input.as_str()) {
                self.start(out);
                self.tool_input_delta(wire_index, input, out);
                return Ok(());
            }
        }
        let payload: Value = if frame.payload.is_empty() {
            Value::Null
        } else {
            // Checked whole once, then read without checking each string again; bytes that are
            // not UTF-8 are read as bytes, for serde_json to say where they go wrong.
            let read = match std::str::from_utf8(frame.payload) {
                Ok(text) => serde_json::from_str(text),
                Err(_) => serde_json::from_slice(frame.payload),
            };
            read.map_err(|e| {
                let text = String::from_utf8_lossy(frame.payload);
                ProviderError::Protocol(format!("invalid json in eventstream payload: {e}: {}", excerpt(&text)))
            })?
        };
        match frame.header_str(":message-type").unwrap_or("event") {
            "exception" => return Err(exception(frame.header_str(":exception-type").unwrap_or_default(), &payload)),
            "error" => {
                let code = frame.header_str(":error-code").unwrap_or_default();
                let message = frame.header_str(":error-message").unwrap_or("unknown error");
                return Err(exception(code, &serde_json::json!({ "message": message })));
            }
            _ => {}
        }
        self.start(out);
        match frame.header_str(":event-type").unwrap_or_default() {
            "contentBlockStart" => {
                let start = &payload["start"];
                // A server tool's call (the service runs it: kept to go back as it came, never
                // dispatched) and the result the service streams for it.
                let server = match (start.get("toolUse"), start.get("toolResult")) {
                    (Some(tool), _) if tool["type"] == "server_tool_use" => Some(("toolUse", tool, "input", json!({}))),
                    (None, Some(result)) => Some(("toolResult", result, "content", json!([]))),
                    _ => None,
                };
                if let Some((kind, start, filled_later, empty)) = server {
                    let mut data = start.clone();
                    data[filled_later] = empty;
                    let data = Value::Object(Map::from_iter([(kind.to_owned(), data)]));
                    self.block(&payload, || Content::Opaque { provider: PROVIDER_ID.into(), data });
                } else if let Some(tool) = start.get("toolUse") {
                    let index = self.block(&payload, || {
                        Content::tool_call(
                            tool["toolUseId"].as_str().unwrap_or_default(),
                            tool["name"].as_str().unwrap_or_default(),
                            Value::Null,
                        )
                    });
                    out.push(StreamEvent::Delta(StreamDelta::ToolCall {
                        index,
                        id: tool["toolUseId"].as_str().map(str::to_owned),
                        name: tool["name"].as_str().map(str::to_owned),
                        delta: String::new(),
                    }));
                }
            }
            "contentBlockDelta" => self.delta(&payload, out),
            "contentBlockStop" => self.stop_block(&payload),
            "messageStop" => {
                self.stop_reason = Some(match payload["stopReason"].as_str().unwrap_or_default() {
                    "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
                    "tool_use" => StopReason::ToolUse,
                    "guardrail_intervened" | "content_filtered" => {
                        return Err(ProviderError::Api {
                            status: None,
                            message: format!("the answer was blocked: {}", payload["stopReason"]),
                        });
                    }
                    _ => StopReason::Stop,
                });
            }
            "metadata" => {
                let usage = &payload["usage"];
                let n = |k: &str| usage[k].as_u64().unwrap_or(0);
                self.message.usage = Usage::new(n("inputTokens"), n("outputTokens"))
                    .with_cache(n("cacheReadInputTokens"), n("cacheWriteInputTokens"))
                    .with_total(n("totalTokens"));
                if self.stop_reason.is_some() {
                    self.complete(out);
                }
            }
            // messageStart, and events added later.
            _ => {}
        }
        Ok(())
    }

    fn start(&mut self, out: &mut Vec<StreamEvent>) {
        if !std::mem::replace(&mut self.started, true) {
            out.push(StreamEvent::Start);
        }
    }

    /// The content index of the block `payload` is about, creating its content with `make`.
    fn block(&mut self, payload: &Value, make: impl FnOnce() -> Content) -> usize {
        self.block_at(payload["contentBlockIndex"].as_u64().unwrap_or(0), make)
    }

    /// The content index of Bedrock's block `wire_index`, creating its content with `make`.
    fn block_at(&mut self, wire_index: u64, make: impl FnOnce() -> Content) -> usize {
        if let Some(block) = self.blocks.iter().find(|b| b.wire_index == wire_index) {
            return block.content_index;
        }
        let content_index = self.message.content.len();
        self.message.content.push(make());
        self.blocks.push(Block { wire_index, content_index, tool_input: String::new() });
        content_index
    }

    fn text_delta(&mut self, wire_index: u64, text: &str, out: &mut Vec<StreamEvent>) {
        let index = self.block_at(wire_index, || Content::text(""));
        if let Some(Content::Text { text: buffer, .. }) = self.message.content.get_mut(index) {
            buffer.push_str(text);
            out.push(StreamEvent::Delta(StreamDelta::Text { index, delta: text.to_owned() }));
        }
    }

    fn tool_input_delta(&mut self, wire_index: u64, input: &str, out: &mut Vec<StreamEvent>) {
        let index = self.block_at(wire_index, || Content::tool_call("", "", Value::Null));
        if let Some(block) = self.blocks.iter_mut().find(|b| b.content_index == index) {
            block.tool_input.push_str(input);
        }
        if matches!(self.message.content.get(index), Some(Content::Opaque { .. })) {
            return;
        }
        out.push(StreamEvent::Delta(StreamDelta::ToolCall { index, id: None, name: None, delta: input.to_owned() }));
    }

    fn delta(&mut self, payload: &Value, out: &mut Vec<StreamEvent>) {
        let delta = &payload["delta"];
        let wire_index = payload["contentBlockIndex"].as_u64().unwrap_or(0);
        if let Some(text) = delta["text"].as_str() {
            self.text_delta(wire_index, text, out);
        } else if let Some(input) = delta["toolUse"]["input"].as_str() {
            self.tool_input_delta(wire_index, input, out);
        } else if let Some(reasoning) = delta.get("reasoningContent") {
            let redacted = reasoning.get("redactedContent").is_some();
            let index = self.block(payload, || Content::Thinking {
                thinking: String::new(),
                signature: None,
                redacted,
                id: None,
            });
            let Some(Content::Thinking { thinking, signature, .. }) = self.message.content.get_mut(index) else {
                return;
            };
            if let Some(text) = reasoning["text"].as_str() {
                thinking.push_str(text);
                out.push(StreamEvent::Delta(StreamDelta::Thinking { index, delta: text.to_owned() }));
            }
            for field in ["signature", "redactedContent"] {
                if let Some(part) = reasoning[field].as_str() {
                    signature.get_or_insert_with(String::new).push_str(part);
                }
            }
        } else if let Some(Value::Array(parts)) = delta.get("toolResult") {
            let index = self.block(payload, || Content::Opaque {
                provider: PROVIDER_ID.into(),
                data: serde_json::json!({"toolResult": {"content": []}}),
            });
            if let Some(Content::Opaque { data, .. }) = self.message.content.get_mut(index)
                && let Some(Value::Array(content)) = data.pointer_mut("/toolResult/content")
            {
                for part in parts {
                    append_result_part(content, part);
                }
            }
        }
        // Citations and deltas added later are not modelled.
    }

    fn stop_block(&mut self, payload: &Value) {
        let wire_index = payload["contentBlockIndex"].as_u64().unwrap_or(0);
        let Some(block) = self.blocks.iter_mut().find(|b| b.wire_index == wire_index) else { return };
        match self.message.content.get_mut(block.content_index) {
            Some(Content::ToolCall { arguments, .. }) => {
                *arguments = parse_input(&std::mem::take(&mut block.tool_input))
            }
            Some(Content::Opaque { data, .. }) => set_server_input(data, &std::mem::take(&mut block.tool_input)),
            _ => {}
        }
    }

    fn complete(&mut self, out: &mut Vec<StreamEvent>) {
        self.finished = true;
        let mut message = self.take_message();
        message.stop_reason = self.stop_reason.unwrap_or_default();
        out.push(StreamEvent::done(message));
    }

    fn take_message(&mut self) -> AssistantMessage {
        let mut message = std::mem::replace(&mut self.message, AssistantMessage::new(PROVIDER_ID, ""));
        for block in self.blocks.drain(..) {
            match message.content.get_mut(block.content_index) {
                Some(Content::ToolCall { arguments, .. }) if arguments.is_null() || !block.tool_input.is_empty() => {
                    *arguments = parse_input(&block.tool_input);
                }
                Some(Content::Opaque { data, .. }) => set_server_input(data, &block.tool_input),
                _ => {}
            }
        }
        message
    }
}

/// What the hot path reads of a `contentBlockDelta` event (the `p` padding is skipped).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta<'a> {
    #[serde(default)]
    content_block_index: Option<u64>,
    #[serde(default, borrow)]
    delta: Object<DeltaFields<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaFields<'a> {
    #[serde(default, borrow)]
    text: MaybeStr<'a>,
    #[serde(default, borrow)]
    tool_use: Object<ToolUseDelta<'a>>,
}

#[derive(Deserialize)]
struct ToolUseDelta<'a> {
    #[serde(default, borrow)]
    input: MaybeStr<'a>,
}

/// Sets a server tool call's input (kept in `data` as `{"toolUse": ...}`) from its streamed
/// fragments; a result block, or a call whose input is already set, is left alone.
fn set_server_input(data: &mut Value, input: &str) {
    if !input.is_empty()
        && let Some(slot) = data.pointer_mut("/toolUse/input")
    {
        *slot = parse_input(input);
    }
}

/// Adds one streamed part of a server tool's result: text runs join, other parts (`json`) are
/// kept as they came.
fn append_result_part(content: &mut Vec<Value>, part: &Value) {
    if let (Some(text), Some(Value::Object(last))) = (part["text"].as_str(), content.last_mut())
        && let Some(Value::String(buffer)) = last.get_mut("text")
    {
        buffer.push_str(text);
        return;
    }
    content.push(part.clone());
}

fn parse_input(input: &str) -> Value {
    if input.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(input).unwrap_or_else(|_| Value::String(input.to_owned()))
}

/// An exception frame as an error, by its `:exception-type`.
fn exception(kind: &str, payload: &Value) -> ProviderError {
    let message = payload["message"].as_str().or(payload["Message"].as_str()).unwrap_or("unknown error");
    let message = if kind.is_empty() { message.to_owned() } else { format!("{message} [{kind}]") };
    match kind {
        "throttlingException" => ProviderError::RateLimited { retry_after_ms: None, message },
        "internalServerException" | "modelStreamErrorException" => ProviderError::Unavailable { status: 500, message },
        "serviceUnavailableException" | "modelNotReadyException" => ProviderError::Unavailable { status: 503, message },
        "accessDeniedException" | "unrecognizedClientException" => ProviderError::Auth(message),
        "validationException" => ProviderError::classify(400, message),
        _ => ProviderError::Api { status: None, message },
    }
}

#[cfg(test)]
mod tests;
