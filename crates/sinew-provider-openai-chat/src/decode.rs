//! The streamed response of `/chat/completions`, decoded incrementally.
//!
//! Chunks are parsed into borrowed structs (no intermediate `Value` tree). Tool calls are
//! assembled by their `index`: ids and names may come late or never, arguments in any number of
//! fragments. Reasoning comes as `reasoning_content` (DeepSeek, xAI, vLLM) or `reasoning`
//! (OpenRouter, Groq, Ollama), or as `thinking` parts of a `content` array (Mistral's reasoning
//! models, whose `content` is a string or a list of typed parts). Usage may arrive in a chunk
//! without choices after the finish reason, so the message completes at `[DONE]` or at the end of
//! the body.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde_json::{Map, Value};
use sinew_core::{AssistantMessage, Content, ProviderError, StopReason, StreamDelta, StreamEvent, Usage};
use sinew_http::json::Scan;
use sinew_http::sse::SseEvent;
use sinew_http::{SseHandler, SseMessageDecoder, TextBlocks, excerpt};

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Chunk<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    choices: Choices<'a>,
    #[serde(default)]
    usage: Option<WireUsage>,
    /// Groq reports usage here.
    #[serde(default)]
    x_groq: Option<XGroq>,
    /// Some servers send errors as a chunk.
    #[serde(default)]
    error: Option<Value>,
}

/// A chunk's choices, the first inline: a chunk almost always has one, and a token's chunk then
/// allocates nothing for it.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Choices<'a> {
    first: Option<Choice<'a>>,
    rest: Vec<Choice<'a>>,
}

impl<'a> Choices<'a> {
    fn push(&mut self, choice: Choice<'a>) {
        if self.first.is_none() {
            self.first = Some(choice);
        } else {
            self.rest.push(choice);
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Choice<'a>> {
        self.first.iter().chain(&self.rest)
    }
}

impl<'a> IntoIterator for Choices<'a> {
    type Item = Choice<'a>;
    type IntoIter = std::iter::Chain<std::option::IntoIter<Choice<'a>>, std::vec::IntoIter<Choice<'a>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

/// Through a `Vec`: serde reads only the chunks [`scanned_chunk`] leaves (tool calls, errors).
impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut choices = Choices::default();
        for choice in Vec::<Choice<'a>>::deserialize(deserializer)? {
            choices.push(choice);
        }
        Ok(choices)
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Choice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<DeltaContent<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

/// `delta.content`: a string, or (Mistral) a list of typed parts.
#[cfg_attr(test, derive(Debug, PartialEq))]
enum DeltaContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
}

/// A part of an array `content`: `{"type": "text", "text"}`, or `{"type": "thinking",
/// "thinking": [parts]}`; other kinds (`reference`...) carry nothing shown.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct ContentPart<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Vec<ContentPart<'a>>>,
}

/// By hand, so the common case (a string) stays a borrowed slice of the chunk.
impl<'de: 'a, 'a> Deserialize<'de> for DeltaContent<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for ContentVisitor<'a> {
            type Value = DeltaContent<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of content parts")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(DeltaContent::Text(Cow::Owned(text)))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(DeltaContent::Parts(parts))
            }
        }
        deserializer.deserialize_any(ContentVisitor(PhantomData))
    }
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct ToolCallDelta<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct XGroq {
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// The chunk of one streamed token or piece of a tool call read in place ([`Scan`]): text,
/// reasoning, a refusal or tool calls in the deltas, scalars or `null` elsewhere. `None` for
/// anything else (usage, errors, other nested objects, escapes outside texts and arguments, a
/// known key twice), which serde reads.
fn scanned_chunk(data: &str) -> Option<Chunk<'_>> {
    let mut scan = Scan::new(data);
    let mut chunk = Chunk { model: None, choices: Choices::default(), usage: None, x_groq: None, error: None };
    scan.fields::<3>(
        |key| match key {
            "choices" => Some(0),
            "model" => Some(1),
            "usage" => Some(2),
            _ => None,
        },
        |scan, slot| match slot {
            0 => scan.array(|scan| {
                chunk.choices.push(scanned_choice(scan)?);
                Some(())
            }),
            1 => {
                chunk.model = scan.string_or_null()?.map(Cow::Borrowed);
                Some(())
            }
            _ => scan.null().then_some(()),
        },
        |scan, key| match key {
            "x_groq" | "error" => None,
            _ => scan.skip_scalar(),
        },
    )?;
    scan.end()?;
    Some(chunk)
}

fn scanned_choice<'a>(scan: &mut Scan<'a>) -> Option<Choice<'a>> {
    let mut choice = Choice { index: 0, delta: None, finish_reason: None };
    scan.fields::<3>(
        |key| match key {
            "index" => Some(0),
            "delta" => Some(1),
            "finish_reason" => Some(2),
            _ => None,
        },
        |scan, slot| {
            match slot {
                0 => choice.index = u32::try_from(scan.u64()?).ok()?,
                1 if scan.null() => choice.delta = None,
                1 => choice.delta = Some(scanned_delta(scan)?),
                _ => choice.finish_reason = scan.string_or_null()?.map(Cow::Borrowed),
            }
            Some(())
        },
        |scan, key| match key {
            "logprobs" => scan.null().then_some(()),
            _ => scan.skip_scalar(),
        },
    )?;
    Some(choice)
}

fn scanned_delta<'a>(scan: &mut Scan<'a>) -> Option<Delta<'a>> {
    let mut delta = Delta { content: None, reasoning_content: None, reasoning: None, refusal: None, tool_calls: None };
    scan.fields::<5>(
        |key| match key {
            "content" => Some(0),
            "reasoning_content" => Some(1),
            "reasoning" => Some(2),
            "refusal" => Some(3),
            "tool_calls" => Some(4),
            _ => None,
        },
        |scan, slot| {
            if slot == 4 {
                if !scan.null() {
                    let mut calls = Vec::new();
                    scan.array(|scan| {
                        calls.push(scanned_tool_call(scan)?);
                        Some(())
                    })?;
                    delta.tool_calls = Some(calls);
                }
                return Some(());
            }
            let text = scan.string_unescaped_or_null()?;
            match slot {
                0 => delta.content = text.map(DeltaContent::Text),
                1 => delta.reasoning_content = text,
                2 => delta.reasoning = text,
                _ => delta.refusal = text,
            }
            Some(())
        },
        |scan, _| scan.skip_scalar(),
    )?;
    Some(delta)
}

/// A piece of a tool call: its index, id and function's name as plain strings, its arguments
/// (JSON in a string, so escaped) decoded.
fn scanned_tool_call<'a>(scan: &mut Scan<'a>) -> Option<ToolCallDelta<'a>> {
    let mut call = ToolCallDelta { index: None, id: None, function: None };
    scan.fields::<3>(
        |key| match key {
            "index" => Some(0),
            "id" => Some(1),
            "function" => Some(2),
            _ => None,
        },
        |scan, slot| {
            match slot {
                0 if scan.null() => call.index = None,
                0 => call.index = Some(usize::try_from(scan.u64()?).ok()?),
                1 => call.id = scan.string_or_null()?.map(Cow::Borrowed),
                _ if scan.null() => call.function = None,
                _ => call.function = Some(scanned_function(scan)?),
            }
            Some(())
        },
        |scan, _| scan.skip_scalar(),
    )?;
    Some(call)
}

/// A tool call's `function`: its name plain, its arguments decoded.
fn scanned_function<'a>(scan: &mut Scan<'a>) -> Option<FunctionDelta<'a>> {
    let mut function = FunctionDelta { name: None, arguments: None };
    scan.fields::<2>(
        |key| match key {
            "name" => Some(0),
            "arguments" => Some(1),
            _ => None,
        },
        |scan, slot| {
            if slot == 0 {
                function.name = scan.string_or_null()?.map(Cow::Borrowed);
            } else {
                function.arguments = scan.string_unescaped_or_null()?;
            }
            Some(())
        },
        |scan, _| scan.skip_scalar(),
    )?;
    Some(function)
}

/// A tool call being assembled.
#[derive(Debug)]
struct Call {
    /// The `index` the server gave it.
    wire_index: usize,
    /// Its position in the message's content.
    content_index: usize,
    arguments: String,
}

/// Decodes one streamed response: feed it bytes as they arrive, then call `finish`.
pub type OpenAiChatDecoder = SseMessageDecoder<ChatEvents>;

/// A decoder for a response to a request for `model`, stamping the message with `provider`.
pub fn decoder(provider: &str, model: &str) -> OpenAiChatDecoder {
    SseMessageDecoder::new(ChatEvents {
        message: AssistantMessage::new(provider, model),
        blocks: TextBlocks::default(),
        calls: Vec::new(),
        finish_reason: None,
        started: false,
        usage_seen: false,
        extra_choices_warned: false,
    })
}

/// The Chat Completions reading of server-sent events (see [`SseHandler`]).
#[derive(Debug)]
pub struct ChatEvents {
    message: AssistantMessage,
    blocks: TextBlocks,
    calls: Vec<Call>,
    finish_reason: Option<String>,
    started: bool,
    /// A chunk carried usage.
    usage_seen: bool,
    /// Choices beyond the first were reported once.
    extra_choices_warned: bool,
}

impl SseHandler for ChatEvents {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        self.handle(event, out)
    }

    /// A body that ends after a finish reason but without `[DONE]` is complete (several servers
    /// omit it); one that ends before is incomplete.
    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<AssistantMessage, ProviderError> {
        if self.finish_reason.is_none() {
            return Err(ProviderError::Protocol("the stream ended before a finish reason".into()));
        }
        // Many servers never send `[DONE]`; but one that also sent no usage may have been cut
        // before the usage chunk it was asked for. The answer is whole; its usage may not be.
        if !self.usage_seen {
            tracing::warn!(
                model = %self.message.model,
                "the stream ended after its finish reason without [DONE] or usage: the usage may be missing"
            );
        }
        self.complete(out)
    }

    fn partial(&mut self) -> AssistantMessage {
        let mut partial = std::mem::replace(&mut self.message, AssistantMessage::new("", ""));
        finish_arguments(&mut partial, &mut self.calls);
        partial
    }
}

impl ChatEvents {
    fn handle(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return self.complete(out).map(Some);
        }
        if data.is_empty() {
            return Ok(None);
        }
        if event.event == "error" {
            return Err(stream_error(data));
        }
        let chunk = match scanned_chunk(data) {
            Some(chunk) => chunk,
            None => serde_json::from_str(data)
                .map_err(|e| ProviderError::Protocol(format!("invalid json in chunk: {e}: {}", excerpt(data))))?,
        };
        if chunk.error.is_some() {
            // What the failed call cost is still worth keeping.
            if let Some(usage) = &chunk.usage {
                self.message.usage = usage_of(usage);
            }
            return Err(stream_error(data));
        }
        if !std::mem::replace(&mut self.started, true) {
            out.push(StreamEvent::Start);
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty())
            && self.message.model != model
        {
            self.message.model = model.into_owned();
        }
        if let Some(usage) = chunk.usage.as_ref().or(chunk.x_groq.as_ref().and_then(|x| x.usage.as_ref())) {
            self.message.usage = usage_of(usage);
            self.usage_seen = true;
        }
        // Only the first choice is modelled (sinew never asks for `n` > 1); a server that sends
        // more anyway is reported once.
        if !self.extra_choices_warned && chunk.choices.iter().any(|c| c.index != 0) {
            self.extra_choices_warned = true;
            tracing::warn!(model = %self.message.model, "the server sent more than one choice; only the first is kept");
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(delta) = choice.delta {
                self.delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.into_owned());
            }
        }
        Ok(None)
    }

    fn delta(&mut self, delta: Delta<'_>, out: &mut Vec<StreamEvent>) {
        let reasoning = delta.reasoning_content.or(delta.reasoning);
        if let Some(piece) = reasoning.filter(|r| !r.is_empty()) {
            self.blocks.thinking(&mut self.message, piece.into_owned(), out);
        }
        match delta.content {
            Some(DeltaContent::Text(piece)) if !piece.is_empty() => {
                self.blocks.text(&mut self.message, piece.into_owned(), out);
            }
            Some(DeltaContent::Parts(parts)) => self.parts(parts, out),
            _ => {}
        }
        // A refusal is what the user gets to read: it becomes text.
        if let Some(piece) = delta.refusal.filter(|p| !p.is_empty()) {
            self.blocks.text(&mut self.message, piece.into_owned(), out);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            self.tool_call(call, out);
        }
    }

    /// The parts of an array `content`, in order: text parts as text, thinking parts' texts as
    /// thinking.
    fn parts(&mut self, parts: Vec<ContentPart<'_>>, out: &mut Vec<StreamEvent>) {
        for part in parts {
            match part.kind.as_ref() {
                "text" => {
                    if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                        self.blocks.text(&mut self.message, text.into_owned(), out);
                    }
                }
                "thinking" => {
                    let texts = part.thinking.into_iter().flatten().filter_map(|p| p.text).filter(|t| !t.is_empty());
                    for text in texts {
                        self.blocks.thinking(&mut self.message, text.into_owned(), out);
                    }
                }
                _ => {}
            }
        }
    }

    fn tool_call(&mut self, call: ToolCallDelta<'_>, out: &mut Vec<StreamEvent>) {
        let (name, arguments) = match call.function {
            Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments),
            None => (None, None),
        };
        let id = call.id.filter(|id| !id.is_empty());
        // Servers that omit `index` send one call per id.
        let wire_index = call.index.unwrap_or_else(|| match (&id, self.calls.last()) {
            (Some(_), Some(last)) => last.wire_index.saturating_add(1),
            (None, Some(last)) => last.wire_index,
            (_, None) => 0,
        });
        let position = match self.calls.iter().position(|c| c.wire_index == wire_index) {
            Some(position) => position,
            None => {
                self.blocks.close();
                let content_index = self.message.content.len();
                self.message.content.push(Content::tool_call("", "", Value::Null));
                self.calls.push(Call { wire_index, content_index, arguments: String::new() });
                self.calls.len() - 1
            }
        };
        let slot = &mut self.calls[position];
        let index = slot.content_index;
        if let Some(Content::ToolCall { id: call_id, name: call_name, .. }) = self.message.content.get_mut(index) {
            if let Some(id) = &id {
                id.as_ref().clone_into(call_id);
            }
            if let Some(name) = &name {
                call_name.push_str(name);
            }
        }
        let fragment = arguments.map(Cow::into_owned).unwrap_or_default();
        slot.arguments.push_str(&fragment);
        if id.is_some() || name.is_some() || !fragment.is_empty() {
            out.push(StreamEvent::Delta(StreamDelta::ToolCall {
                index,
                id: id.map(Cow::into_owned),
                name: name.map(Cow::into_owned),
                delta: fragment,
            }));
        }
    }

    fn complete(&mut self, out: &mut Vec<StreamEvent>) -> Result<AssistantMessage, ProviderError> {
        if self.finish_reason.as_deref() == Some("content_filter") {
            return Err(ProviderError::Api {
                status: None,
                message: "the answer was blocked by the content filter".into(),
            });
        }
        let mut message = self.partial();
        message.stop_reason = match self.finish_reason.as_deref() {
            Some("length") => StopReason::Length,
            // Some servers (Ollama, older vLLM) say `stop` after tool calls.
            _ if message.tool_calls().next().is_some() => StopReason::ToolUse,
            _ => StopReason::Stop,
        };
        if !self.started {
            out.push(StreamEvent::Start);
        }
        Ok(message)
    }
}

/// Parses each call's assembled arguments into its content: empty means `{}`; text that is not
/// JSON is kept as a string, so the tool reports it to the model instead of the turn failing.
fn finish_arguments(message: &mut AssistantMessage, calls: &mut Vec<Call>) {
    for (n, call) in calls.drain(..).enumerate() {
        if let Some(Content::ToolCall { id, arguments, .. }) = message.content.get_mut(call.content_index) {
            if id.is_empty() {
                *id = format!("call_{n}");
            }
            *arguments = if call.arguments.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments))
            };
        }
    }
}

fn usage_of(wire: &WireUsage) -> Usage {
    let prompt = wire.prompt_tokens.unwrap_or(0);
    let cached = wire
        .prompt_tokens_details
        .as_ref()
        .and_then(|d| d.cached_tokens)
        .or(wire.prompt_cache_hit_tokens)
        .unwrap_or(0)
        .min(prompt);
    let output = wire.completion_tokens.unwrap_or(0);
    Usage::new(prompt - cached, output)
        .with_cache(cached, 0)
        .with_total(wire.total_tokens.unwrap_or(prompt.saturating_add(output)))
}

/// An error sent in the stream (`event: error`, or a chunk with an `error` field).
fn stream_error(data: &str) -> ProviderError {
    let message = sinew_http::error_message(data.as_bytes());
    let value: Value = serde_json::from_str(data).unwrap_or_default();
    let error = value.get("error").unwrap_or(&value);
    let status = ["status_code", "status", "code"].iter().find_map(|k| error[*k].as_u64()).map(|s| s as u16);
    match status {
        Some(status) if (400..600).contains(&status) => ProviderError::classify(status, message),
        _ if sinew_core::is_context_overflow(0, &message) => ProviderError::ContextOverflow { message },
        _ => ProviderError::Api { status: None, message },
    }
}

#[cfg(test)]
mod tests;
