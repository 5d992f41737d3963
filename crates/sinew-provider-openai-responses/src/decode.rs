//! The streamed response of `/responses`, decoded incrementally.
//!
//! Output items map to content: `reasoning` → thinking (its `id` and `encrypted_content` kept
//! for the next turn), `message` → text (its item id kept as the text's signature),
//! `function_call` → a tool call (its `call_id` as the id, its item id as the signature); other
//! items (server tools, custom tools) are kept whole as `Content::Opaque`. Function-call argument
//! deltas are checked against `.done`, whose text wins if they differ.

use serde::Deserialize;
use serde_json::{Map, Value};
use sinew_core::{AssistantMessage, Content, ProviderError, StopReason, StreamDelta, StreamEvent, Usage};
use sinew_http::json::{self, MaybeStr, MaybeU64, Object, Scan};
use sinew_http::sse::SseEvent;
use sinew_http::{SseHandler, SseMessageDecoder, excerpt};

/// Decodes one streamed response: feed it bytes as they arrive, then call `finish`.
pub type ResponsesDecoder = SseMessageDecoder<ResponsesEvents>;

/// A decoder for a response to a request for `model`, stamping the message with `provider`.
pub fn decoder(provider: &str, model: &str) -> ResponsesDecoder {
    SseMessageDecoder::new(ResponsesEvents {
        message: AssistantMessage::new(provider, model),
        items: Vec::new(),
        started: false,
    })
}

/// An output item: where its content is, and the function-call arguments streamed so far.
#[derive(Debug)]
struct Item {
    output_index: u64,
    content_index: usize,
    arguments: String,
    /// Reasoning summary parts seen (a blank line goes between them).
    summary_parts: u64,
}

/// The Responses reading of server-sent events (see [`SseHandler`]).
#[derive(Debug)]
pub struct ResponsesEvents {
    message: AssistantMessage,
    items: Vec<Item>,
    started: bool,
}

impl SseHandler for ResponsesEvents {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        let data = event.data.trim();
        // OpenRouter ends with `[DONE]` after `response.completed`.
        if data.is_empty() || data == "[DONE]" {
            return Ok(None);
        }
        let invalid = |e: serde_json::Error| {
            ProviderError::Protocol(format!("invalid json in `{}` event: {e}: {}", event.event, excerpt(data)))
        };
        // Events are read into a typed head without a JSON tree: the deltas, one per streamed
        // token, and the response's lifecycle; output items, failures and any event whose head
        // is of another shape are read whole. Events with nothing to model are only checked.
        let typed = json::is_object(data.as_bytes())
            .then(|| scanned_head(data).or_else(|| serde_json::from_str::<Head<'_>>(data).ok()))
            .flatten();
        let whole: Value;
        let (head, payload) = match typed {
            Some(head) if !READ_WHOLE.contains(&head.kind.as_str().unwrap_or(event.event.as_str())) => (head, None),
            _ => {
                whole = serde_json::from_str(data).map_err(invalid)?;
                (Head::of(&whole), Some(&whole))
            }
        };
        let kind = head.kind.as_str().unwrap_or(event.event.as_str());
        if !std::mem::replace(&mut self.started, true) {
            out.push(StreamEvent::Start);
        }
        let delta = head.delta.as_str().unwrap_or_default();
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                let index = self.content_index(head.output_index, data)?;
                if let Some(Content::Text { text, .. }) = self.message.content.get_mut(index) {
                    text.push_str(delta);
                    out.push(StreamEvent::Delta(StreamDelta::Text { index, delta: delta.to_owned() }));
                }
            }
            "response.reasoning_summary_part.added" => {
                let index = self.content_index(head.output_index, data)?;
                if let Some(item) = self.items.iter_mut().find(|i| i.content_index == index) {
                    item.summary_parts += 1;
                    if item.summary_parts > 1
                        && let Some(Content::Thinking { thinking, .. }) = self.message.content.get_mut(index)
                    {
                        thinking.push_str("\n\n");
                        out.push(StreamEvent::Delta(StreamDelta::Thinking { index, delta: "\n\n".into() }));
                    }
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let index = self.content_index(head.output_index, data)?;
                if let Some(Content::Thinking { thinking, .. }) = self.message.content.get_mut(index) {
                    thinking.push_str(delta);
                    out.push(StreamEvent::Delta(StreamDelta::Thinking { index, delta: delta.to_owned() }));
                }
            }
            "response.function_call_arguments.delta" => {
                let index = self.content_index(head.output_index, data)?;
                if let Some(item) = self.items.iter_mut().find(|i| i.content_index == index) {
                    item.arguments.push_str(delta);
                    out.push(StreamEvent::Delta(StreamDelta::ToolCall {
                        index,
                        id: None,
                        name: None,
                        delta: delta.to_owned(),
                    }));
                }
            }
            "response.function_call_arguments.done" => {
                let index = self.content_index(head.output_index, data)?;
                if let (Some(done), Some(item)) =
                    (head.arguments.as_str(), self.items.iter_mut().find(|i| i.content_index == index))
                    && item.arguments != done
                {
                    tracing::debug!(index, "function-call argument deltas differ from .done; .done wins");
                    done.clone_into(&mut item.arguments);
                }
            }
            "response.created" | "response.in_progress" => self.response_model(head.response.0.as_ref()),
            "response.completed" | "response.incomplete" => return self.completed(head.response.0.as_ref()).map(Some),
            // Read whole above.
            kind => {
                if let Some(payload) = payload {
                    return self.whole_event(kind, payload, data, out);
                }
            }
        }
        Ok(None)
    }

    fn end(&mut self, _: &mut Vec<StreamEvent>) -> Result<AssistantMessage, ProviderError> {
        Err(ProviderError::Protocol("the stream ended before response.completed".into()))
    }

    fn partial(&mut self) -> AssistantMessage {
        let mut message = std::mem::replace(&mut self.message, AssistantMessage::new("", ""));
        for item in self.items.drain(..) {
            if let Some(Content::ToolCall { arguments, .. }) = message.content.get_mut(item.content_index) {
                *arguments = parse_arguments(&item.arguments);
            }
        }
        message
    }
}

impl ResponsesEvents {
    /// An event other than a delta, read whole.
    fn whole_event(
        &mut self,
        kind: &str,
        payload: &Value,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        match kind {
            "response.output_item.added" => self.item_added(payload, out),
            "response.output_item.done" => self.item_done(payload, data)?,
            "response.failed" => {
                let response = &payload["response"];
                return Err(failure(&response["error"]));
            }
            "error" => {
                let error = if payload["error"].is_object() { &payload["error"] } else { payload };
                return Err(failure(error));
            }
            // Lifecycle events of server tools, annotations, content parts: nothing to model.
            _ => {}
        }
        Ok(None)
    }

    fn response_model(&mut self, response: Option<&ResponseFields<'_>>) {
        if let Some(model) = response.and_then(|r| r.model.as_str()).filter(|m| !m.is_empty()) {
            model.clone_into(&mut self.message.model);
        }
    }

    /// Where the content of output item `output_index` is; `data`, the event, names it otherwise.
    fn content_index(&self, output_index: Option<u64>, data: &str) -> Result<usize, ProviderError> {
        self.items.iter().find(|i| Some(i.output_index) == output_index).map(|i| i.content_index).ok_or_else(|| {
            ProviderError::Protocol(format!("event for an output item that was never added: {}", excerpt(data)))
        })
    }

    fn item_added(&mut self, payload: &Value, out: &mut Vec<StreamEvent>) {
        let item = &payload["item"];
        let str_of = |field: &str| item[field].as_str().unwrap_or_default().to_owned();
        let content = match item["type"].as_str().unwrap_or_default() {
            "reasoning" => Content::Thinking {
                thinking: String::new(),
                signature: item["encrypted_content"].as_str().map(str::to_owned),
                redacted: false,
                id: Some(str_of("id")),
            },
            "message" => Content::Text { text: String::new(), signature: item["id"].as_str().map(str::to_owned) },
            "function_call" => Content::ToolCall {
                id: str_of("call_id"),
                name: str_of("name"),
                arguments: Value::Null,
                signature: item["id"].as_str().map(str::to_owned),
            },
            _ => Content::Opaque { provider: self.message.provider.clone(), data: item.clone() },
        };
        let content_index = self.message.content.len();
        if let Content::ToolCall { id, name, .. } = &content {
            // The call is announced with its id and name; its arguments follow as deltas.
            out.push(StreamEvent::Delta(StreamDelta::ToolCall {
                index: content_index,
                id: Some(id.clone()),
                name: Some(name.clone()),
                delta: String::new(),
            }));
        }
        self.message.content.push(content);
        self.items.push(Item {
            output_index: payload["output_index"].as_u64().unwrap_or(content_index as u64),
            content_index,
            arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
            summary_parts: 0,
        });
    }

    fn item_done(&mut self, payload: &Value, data: &str) -> Result<(), ProviderError> {
        let index = self.content_index(payload["output_index"].as_u64(), data)?;
        let item = &payload["item"];
        let provider = self.message.provider.clone();
        match self.message.content.get_mut(index) {
            Some(Content::Thinking { thinking, signature, .. }) => {
                if let Some(encrypted) = item["encrypted_content"].as_str() {
                    *signature = Some(encrypted.to_owned());
                }
                if thinking.is_empty() {
                    *thinking = reasoning_text(item);
                }
            }
            Some(Content::Text { text, .. }) if text.is_empty() => *text = message_text(item),
            Some(Content::ToolCall { .. }) => {
                if let (Some(done), Some(state)) =
                    (item["arguments"].as_str(), self.items.iter_mut().find(|i| i.content_index == index))
                {
                    done.clone_into(&mut state.arguments);
                }
            }
            Some(content @ Content::Opaque { .. }) => *content = Content::Opaque { provider, data: item.clone() },
            _ => {}
        }
        Ok(())
    }

    fn completed(&mut self, response: Option<&ResponseFields<'_>>) -> Result<AssistantMessage, ProviderError> {
        self.response_model(response);
        let usage = response.and_then(|r| r.usage.0.as_ref());
        let count = |field: fn(&UsageFields) -> MaybeU64| usage.and_then(|u| field(u).0);
        let input = count(|u| u.input_tokens).unwrap_or(0);
        let cached =
            count(|u| u.input_tokens_details.0.map_or(MaybeU64(None), |d| d.cached_tokens)).unwrap_or(0).min(input);
        let output = count(|u| u.output_tokens).unwrap_or(0);
        self.message.usage = Usage::new(input - cached, output)
            .with_cache(cached, 0)
            .with_total(count(|u| u.total_tokens).unwrap_or(input.saturating_add(output)));
        let reason = response.and_then(|r| r.incomplete_details.0.as_ref()).and_then(|d| d.reason.as_str());
        if reason == Some("content_filter") {
            return Err(ProviderError::Api {
                status: None,
                message: "the answer was blocked by the content filter".into(),
            });
        }
        let mut message = self.partial();
        message.stop_reason = match (response.and_then(|r| r.status.as_str()), reason) {
            (Some("incomplete"), _) | (_, Some("max_output_tokens")) => StopReason::Length,
            _ if message.tool_calls().next().is_some() => StopReason::ToolUse,
            _ => StopReason::Stop,
        };
        Ok(message)
    }
}

/// The events read whole: output items (kept as they came when sinew does not model them) and
/// failures. Every other event is read from its typed head alone.
const READ_WHOLE: [&str; 4] = ["response.output_item.added", "response.output_item.done", "response.failed", "error"];

/// What every event is read for first: its type, the fields of the deltas, and the response's
/// model, status and usage in its lifecycle events.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Head<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: MaybeStr<'a>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default, borrow)]
    delta: MaybeStr<'a>,
    #[serde(default, borrow)]
    arguments: MaybeStr<'a>,
    #[serde(default, borrow)]
    response: Object<ResponseFields<'a>>,
}

/// What the decoder reads of the response in `response.created`, `.in_progress`, `.completed`
/// and `.incomplete`.
#[derive(Default, Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct ResponseFields<'a> {
    #[serde(default, borrow)]
    model: MaybeStr<'a>,
    #[serde(default, borrow)]
    status: MaybeStr<'a>,
    #[serde(default)]
    usage: Object<UsageFields>,
    #[serde(default, borrow)]
    incomplete_details: Object<IncompleteDetails<'a>>,
}

#[derive(Default, Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct UsageFields {
    #[serde(default)]
    input_tokens: MaybeU64,
    #[serde(default)]
    output_tokens: MaybeU64,
    #[serde(default)]
    total_tokens: MaybeU64,
    #[serde(default)]
    input_tokens_details: Object<CachedTokens>,
}

#[derive(Clone, Copy, Default, Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct CachedTokens {
    #[serde(default)]
    cached_tokens: MaybeU64,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct IncompleteDetails<'a> {
    #[serde(default, borrow)]
    reason: MaybeStr<'a>,
}

/// The head of a delta read in place ([`Scan`]), as the typed reading reads it: a type, an output
/// index, a delta or arguments of text, and scalars or nesting elsewhere. `None` for anything
/// else (a response, fields of other types, escapes in keys or other strings, a known key
/// twice), which serde reads.
fn scanned_head(data: &str) -> Option<Head<'_>> {
    let mut scan = Scan::new(data);
    let mut head = Head {
        kind: MaybeStr(None),
        output_index: None,
        delta: MaybeStr(None),
        arguments: MaybeStr(None),
        response: Object(None),
    };
    scan.fields::<4>(
        |key| match key {
            "type" => Some(0),
            "output_index" => Some(1),
            "delta" => Some(2),
            "arguments" => Some(3),
            _ => None,
        },
        |scan, slot| {
            match slot {
                1 if scan.null() => {}
                1 => head.output_index = Some(scan.u64()?),
                _ => {
                    let text = MaybeStr(Some(scan.string_unescaped()?));
                    match slot {
                        0 => head.kind = text,
                        2 => head.delta = text,
                        _ => head.arguments = text,
                    }
                }
            }
            Some(())
        },
        |scan, key| match key {
            "response" => None,
            _ => scan.skip_value(),
        },
    )?;
    scan.end()?;
    Some(head)
}

impl<'a> Head<'a> {
    /// The head of an event read whole, as the typed reading reads it.
    fn of(payload: &'a Value) -> Head<'a> {
        let text = |value: &'a Value| MaybeStr(value.as_str().map(std::borrow::Cow::Borrowed));
        let count = |value: &Value| MaybeU64(value.as_u64());
        let object = |value: &'a Value| value.is_object().then_some(value);
        let response = object(&payload["response"]).map(|response| ResponseFields {
            model: text(&response["model"]),
            status: text(&response["status"]),
            usage: Object(object(&response["usage"]).map(|usage| {
                UsageFields {
                    input_tokens: count(&usage["input_tokens"]),
                    output_tokens: count(&usage["output_tokens"]),
                    total_tokens: count(&usage["total_tokens"]),
                    input_tokens_details: Object(
                        object(&usage["input_tokens_details"])
                            .map(|details| CachedTokens { cached_tokens: count(&details["cached_tokens"]) }),
                    ),
                }
            })),
            incomplete_details: Object(
                object(&response["incomplete_details"])
                    .map(|details| IncompleteDetails { reason: text(&details["reason"]) }),
            ),
        });
        Head {
            kind: text(&payload["type"]),
            output_index: payload["output_index"].as_u64(),
            delta: text(&payload["delta"]),
            arguments: text(&payload["arguments"]),
            response: Object(response),
        }
    }
}

fn reasoning_text(item: &Value) -> String {
    let parts = |field: &str| -> Vec<&str> {
        item[field].as_array().map(|a| a.iter().filter_map(|p| p["text"].as_str()).collect()).unwrap_or_default()
    };
    let summary = parts("summary");
    if summary.is_empty() { parts("content").concat() } else { summary.join("\n\n") }
}

fn message_text(item: &Value) -> String {
    item["content"]
        .as_array()
        .map(|parts| parts.iter().filter_map(|p| p["text"].as_str().or(p["refusal"].as_str())).collect())
        .unwrap_or_default()
}

fn parse_arguments(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Map::new());
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// `response.failed`'s or an `error` event's error.
fn failure(error: &Value) -> ProviderError {
    let message = error["message"].as_str().unwrap_or("the response failed").to_owned();
    let code = error["code"].as_str().or(error["type"].as_str()).unwrap_or_default();
    let message = if code.is_empty() || message.contains(code) { message } else { format!("{message} [{code}]") };
    match code {
        "context_length_exceeded" => ProviderError::ContextOverflow { message },
        "rate_limit_exceeded" => ProviderError::RateLimited { retry_after_ms: None, message },
        "server_error" | "server_is_overloaded" => ProviderError::Unavailable { status: 500, message },
        _ if sinew_core::is_context_overflow(0, &message) => ProviderError::ContextOverflow { message },
        _ => ProviderError::Api { status: None, message },
    }
}

#[cfg(test)]
mod tests;
