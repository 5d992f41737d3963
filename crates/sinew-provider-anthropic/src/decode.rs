//! The streamed response of `/v1/messages`, decoded incrementally.
//!
//! Events: `message_start`, `content_block_start` / `_delta` / `_stop`, `message_delta`,
//! `message_stop`, `ping`, and `error` mid-stream. Blocks sinew models become their `Content`;
//! every other block (server tools, their results, whatever comes next) is kept whole as
//! `Content::Opaque` so it can be sent back unchanged.

use serde::Deserialize;
use serde_json::{Map, Value};
use sinew_core::{AssistantMessage, Content, ProviderError, StopReason, StreamDelta, StreamEvent, Usage};
use sinew_http::json::{self, MaybeStr, Object, Scan};
use sinew_http::sse::SseEvent;
use sinew_http::{SseHandler, SseMessageDecoder, excerpt};

/// The `provider_id` of Anthropic messages.
pub const PROVIDER_ID: &str = "anthropic";

/// Per content block: JSON fragments of a tool input, assembled when the block stops.
#[derive(Debug, Default)]
struct Block {
    partial_json: String,
}

/// Decodes one streamed response: feed it bytes as they arrive, then call `finish`.
pub type AnthropicDecoder = SseMessageDecoder<AnthropicEvents>;

/// A decoder for a response to a request for `model`.
pub fn decoder(model: &str) -> AnthropicDecoder {
    SseMessageDecoder::new(AnthropicEvents {
        message: AssistantMessage::new(PROVIDER_ID, model),
        blocks: Vec::new(),
        started: false,
    })
}

/// The Messages API's reading of server-sent events (see [`SseHandler`]).
#[derive(Debug)]
pub struct AnthropicEvents {
    message: AssistantMessage,
    blocks: Vec<Block>,
    started: bool,
}

impl SseHandler for AnthropicEvents {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        self.handle(event, out)
    }

    fn end(&mut self, _: &mut Vec<StreamEvent>) -> Result<AssistantMessage, ProviderError> {
        Err(ProviderError::Protocol("the stream ended before message_stop".into()))
    }

    fn partial(&mut self) -> AssistantMessage {
        std::mem::replace(&mut self.message, AssistantMessage::new(PROVIDER_ID, ""))
    }
}

impl AnthropicEvents {
    fn handle(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        // Text, thinking and tool-input deltas (one per streamed token) are read into typed,
        // borrowed fields, in place where they can be; every other event, and a delta those do
        // not cover, whole. An event whose type is read in place and is no delta goes straight
        // to the whole reading.
        let typed = match scanned_event(&event.data) {
            Scanned::Delta(head) => Some(head),
            Scanned::Other => None,
            Scanned::Unread => serde_json::from_str::<DeltaEvent<'_>>(&event.data).ok(),
        };
        if json::is_object(event.data.as_bytes())
            && let Some(head) = typed
            && head.kind.as_str().unwrap_or(event.event.as_str()) == "content_block_delta"
            && let (Some(index), Some(delta)) = (head.index, &head.delta.0)
            && let Some(kind) = delta.kind.as_str()
            && let Some(piece) = delta.piece(kind)
            && self.piece(index as usize, kind, piece, out)?
        {
            return Ok(None);
        }
        let payload: Value = serde_json::from_str(&event.data).map_err(|e| {
            ProviderError::Protocol(format!("invalid json in `{}` event: {e}: {}", event.event, excerpt(&event.data)))
        })?;
        let kind = payload["type"].as_str().unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                let message = &payload["message"];
                if let Some(model) = message["model"].as_str() {
                    model.clone_into(&mut self.message.model);
                }
                apply_usage(&mut self.message.usage, &message["usage"]);
                self.start(out);
            }
            "content_block_start" => {
                self.start(out);
                let index = block_index(&payload)?;
                if index != self.message.content.len() {
                    return Err(ProviderError::Protocol(format!(
                        "content block {index} started, expected block {}",
                        self.message.content.len()
                    )));
                }
                self.message.content.push(block_content(&payload["content_block"]));
                self.blocks.push(Block::default());
            }
            "content_block_delta" => self.delta(&payload, out)?,
            "content_block_stop" => self.stop_block(block_index(&payload)?)?,
            "message_delta" => {
                if let Some(reason) = payload["delta"]["stop_reason"].as_str() {
                    self.message.stop_reason = stop_reason(reason);
                }
                apply_usage(&mut self.message.usage, &payload["usage"]);
            }
            "message_stop" => {
                // Blocks the stream never stopped (cut off): a tool call keeps its fragment.
                for (content, block) in self.message.content.iter_mut().zip(&mut self.blocks) {
                    if let Content::ToolCall { arguments, .. } = content
                        && !block.partial_json.is_empty()
                    {
                        *arguments = Value::String(std::mem::take(&mut block.partial_json));
                    }
                }
                return Ok(Some(self.partial()));
            }
            "error" => return Err(stream_error(&payload["error"])),
            // `ping`, and events added to the protocol later, change nothing.
            _ => {}
        }
        Ok(None)
    }

    fn start(&mut self, out: &mut Vec<StreamEvent>) {
        if !std::mem::replace(&mut self.started, true) {
            out.push(StreamEvent::Start);
        }
    }

    fn delta(&mut self, payload: &Value, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let index = block_index(payload)?;
        let delta = &payload["delta"];
        let kind = delta["type"].as_str().unwrap_or_default();
        let field = match kind {
            "text_delta" => "text",
            "thinking_delta" => "thinking",
            "input_json_delta" => "partial_json",
            _ => "",
        };
        if self.piece(index, kind, delta[field].as_str().unwrap_or_default(), out)? {
            return Ok(());
        }
        let Some(content) = self.message.content.get_mut(index) else {
            return Err(never_started(index));
        };
        match (kind, content) {
            ("signature_delta", Content::Thinking { signature, .. }) => {
                signature.get_or_insert_with(String::new).push_str(delta["signature"].as_str().unwrap_or_default());
            }
            // A block sinew does not model keeps every delta, so it goes back to the service whole
            // (a `compaction` block's summary arrives as `compaction_delta`s).
            (_, Content::Opaque { data, .. }) => accumulate(data, delta),
            // `citations_delta`, and delta types added to the protocol later, are not modelled.
            _ => {}
        }
        Ok(())
    }

    /// Adds a text, thinking or tool-input `piece` to block `index`; `false` when the delta is of
    /// another kind, or of a kind the block does not take.
    fn piece(
        &mut self,
        index: usize,
        kind: &str,
        piece: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        let (Some(content), Some(block)) = (self.message.content.get_mut(index), self.blocks.get_mut(index)) else {
            return Err(never_started(index));
        };
        match (kind, content) {
            ("text_delta", Content::Text { text: buffer, .. }) => {
                buffer.push_str(piece);
                out.push(StreamEvent::Delta(StreamDelta::Text { index, delta: piece.to_owned() }));
            }
            ("thinking_delta", Content::Thinking { thinking, .. }) => {
                thinking.push_str(piece);
                out.push(StreamEvent::Delta(StreamDelta::Thinking { index, delta: piece.to_owned() }));
            }
            ("input_json_delta", content) => {
                block.partial_json.push_str(piece);
                if let Content::ToolCall { id, name, .. } = content {
                    let first = block.partial_json.len() == piece.len();
                    out.push(StreamEvent::Delta(StreamDelta::ToolCall {
                        index,
                        id: first.then(|| id.clone()),
                        name: first.then(|| name.clone()),
                        delta: piece.to_owned(),
                    }));
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn stop_block(&mut self, index: usize) -> Result<(), ProviderError> {
        let (Some(content), Some(block)) = (self.message.content.get_mut(index), self.blocks.get_mut(index)) else {
            return Err(ProviderError::Protocol(format!("stop for content block {index}, which never started")));
        };
        let json = std::mem::take(&mut block.partial_json);
        let input = || -> Result<Value, ProviderError> {
            if json.trim().is_empty() {
                return Ok(Value::Object(Map::new()));
            }
            serde_json::from_str(&json).map_err(|e| {
                ProviderError::Protocol(format!("invalid tool input json in block {index}: {e}: {}", excerpt(&json)))
            })
        };
        match content {
            // Arguments that do not parse (cut off by the output limit) are kept as their raw
            // text, as every provider keeps them: the loop answers such a call instead of running it.
            Content::ToolCall { arguments, .. } => {
                *arguments = if json.is_empty() { arguments.take() } else { input().unwrap_or(Value::String(json)) }
            }
            Content::Opaque { data, .. } if !json.is_empty() => data["input"] = input()?,
            _ => {}
        }
        // A tool call whose start carried no input and got no fragments takes `{}`.
        if let Content::ToolCall { arguments, .. } = content
            && arguments.is_null()
        {
            *arguments = Value::Object(Map::new());
        }
        Ok(())
    }
}

fn never_started(index: usize) -> ProviderError {
    ProviderError::Protocol(format!("delta for content block {index}, which never started"))
}

/// What the hot path reads of a `content_block_delta` event.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct DeltaEvent<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: MaybeStr<'a>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Object<DeltaFields<'a>>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct DeltaFields<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: MaybeStr<'a>,
    #[serde(default, borrow)]
    text: MaybeStr<'a>,
    #[serde(default, borrow)]
    thinking: MaybeStr<'a>,
    #[serde(default, borrow)]
    partial_json: MaybeStr<'a>,
}

/// What reading an event in place found.
#[cfg_attr(test, derive(Debug, PartialEq))]
enum Scanned<'a> {
    /// A `content_block_delta`, read as the typed reading reads it.
    Delta(DeltaEvent<'a>),
    /// An event whose `type` is another: the typed reading would find no delta in it.
    Other,
    /// Something the reading in place does not take (escapes outside the delta's texts, fields
    /// of other types, a key twice): serde reads it.
    Unread,
}

/// Reads an event in place ([`Scan`]): a `content_block_delta` whose delta's fields are texts,
/// or, as soon as its `type` says so, another event.
fn scanned_event(data: &str) -> Scanned<'_> {
    let mut scan = Scan::new(data);
    let mut head = DeltaEvent { kind: MaybeStr(None), index: None, delta: Object(None) };
    let mut other = false;
    let read = scan.fields::<3>(
        |key| match key {
            "type" => Some(0),
            "index" => Some(1),
            "delta" => Some(2),
            _ => None,
        },
        |scan, slot| match slot {
            0 => {
                let kind = scan.string()?;
                // Stops here: the rest is read whole.
                other = kind != "content_block_delta";
                head.kind = MaybeStr(Some(std::borrow::Cow::Borrowed(kind)));
                (!other).then_some(())
            }
            1 if scan.null() => Some(()),
            1 => {
                head.index = Some(scan.u64()?);
                Some(())
            }
            _ => {
                head.delta = Object(Some(scanned_delta(scan)?));
                Some(())
            }
        },
        |scan, _| scan.skip_value(),
    );
    match (read, other) {
        (_, true) => Scanned::Other,
        (Some(()), false) if scan.end().is_some() => Scanned::Delta(head),
        _ => Scanned::Unread,
    }
}

fn scanned_delta<'a>(scan: &mut Scan<'a>) -> Option<DeltaFields<'a>> {
    let mut delta = DeltaFields {
        kind: MaybeStr(None),
        text: MaybeStr(None),
        thinking: MaybeStr(None),
        partial_json: MaybeStr(None),
    };
    scan.fields::<4>(
        |key| match key {
            "type" => Some(0),
            "text" => Some(1),
            "thinking" => Some(2),
            "partial_json" => Some(3),
            _ => None,
        },
        |scan, slot| {
            let text = MaybeStr(Some(scan.string_unescaped()?));
            *[&mut delta.kind, &mut delta.text, &mut delta.thinking, &mut delta.partial_json][slot] = text;
            Some(())
        },
        |scan, _| scan.skip_value(),
    )?;
    Some(delta)
}

impl DeltaFields<'_> {
    /// The piece a delta of `kind` carries, if it is one of the three the hot path takes.
    fn piece(&self, kind: &str) -> Option<&str> {
        match kind {
            "text_delta" => Some(self.text.as_str().unwrap_or_default()),
            "thinking_delta" => Some(self.thinking.as_str().unwrap_or_default()),
            "input_json_delta" => Some(self.partial_json.as_str().unwrap_or_default()),
            _ => None,
        }
    }
}

/// Folds a delta into an opaque block: text fields are appended, signatures and ciphertexts
/// (which each delta carries whole) replaced, anything else set.
fn accumulate(block: &mut Value, delta: &Value) {
    let (Some(block), Some(delta)) = (block.as_object_mut(), delta.as_object()) else { return };
    for (key, value) in delta.iter().filter(|(key, _)| *key != "type") {
        let whole = matches!(key.as_str(), "signature" | "encrypted_content");
        match (block.get_mut(key), value) {
            (Some(Value::String(text)), Value::String(more)) if !whole => text.push_str(more),
            _ => {
                block.insert(key.clone(), value.clone());
            }
        }
    }
}

fn block_index(payload: &Value) -> Result<usize, ProviderError> {
    payload["index"].as_u64().map(|i| i as usize).ok_or_else(|| {
        ProviderError::Protocol(format!("content block event without index: {}", excerpt(&payload.to_string())))
    })
}

/// The content a started block becomes.
fn block_content(block: &Value) -> Content {
    let str_of = |field: &str| block[field].as_str().unwrap_or_default().to_owned();
    match block["type"].as_str().unwrap_or_default() {
        // Citations on text blocks are not kept: the service does not need them on the next turn.
        "text" => Content::text(str_of("text")),
        "thinking" => Content::Thinking {
            thinking: str_of("thinking"),
            signature: block["signature"].as_str().filter(|s| !s.is_empty()).map(str::to_owned),
            redacted: false,
            id: None,
        },
        "redacted_thinking" => {
            Content::Thinking { thinking: String::new(), signature: Some(str_of("data")), redacted: true, id: None }
        }
        "tool_use" => {
            // The input arrives in fragments; a start that already carries one keeps it.
            let input = block["input"].as_object().filter(|o| !o.is_empty()).map(|o| Value::Object(o.clone()));
            Content::tool_call(str_of("id"), str_of("name"), input.unwrap_or(Value::Null))
        }
        _ => Content::Opaque { provider: PROVIDER_ID.to_owned(), data: block.clone() },
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "max_tokens" | "model_context_window_exceeded" => StopReason::Length,
        "tool_use" => StopReason::ToolUse,
        "refusal" => StopReason::Refusal,
        "pause_turn" => StopReason::PauseTurn,
        // end_turn, stop_sequence: the model is done for this turn.
        _ => StopReason::Stop,
    }
}

/// Usage fields present in `usage` overwrite ours (`message_delta` repeats them cumulatively).
fn apply_usage(usage: &mut Usage, json: &Value) {
    let field = |name: &str| json[name].as_u64();
    if let Some(n) = field("input_tokens") {
        usage.input = n;
    }
    if let Some(n) = field("output_tokens") {
        usage.output = n;
    }
    if let Some(n) = field("cache_read_input_tokens") {
        usage.cache_read = n;
    }
    if let Some(n) = field("cache_creation_input_tokens") {
        usage.cache_write = n;
    }
    usage.total_tokens = usage.all_tokens();
}

/// An `error` event's payload as a [`ProviderError`].
fn stream_error(error: &Value) -> ProviderError {
    let message = error["message"].as_str().unwrap_or("unknown error").to_owned();
    match error["type"].as_str().unwrap_or_default() {
        "overloaded_error" => ProviderError::Unavailable { status: 529, message },
        "api_error" => ProviderError::Unavailable { status: 500, message },
        "rate_limit_error" => ProviderError::RateLimited { retry_after_ms: None, message },
        "authentication_error" | "permission_error" => ProviderError::Auth(message),
        "request_too_large" => ProviderError::classify(413, message),
        "invalid_request_error" => ProviderError::classify(400, message),
        _ => ProviderError::Api { status: None, message },
    }
}

#[cfg(test)]
mod tests;
