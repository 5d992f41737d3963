//! The streamed response of `streamGenerateContent?alt=sse`, decoded incrementally.
//!
//! Each chunk is a whole `GenerateContentResponse` whose parts extend the message: text parts
//! (`thought: true` ones are thinking) merge into the open block of their kind; a
//! `thoughtSignature` is kept on the part it came with (or, on an empty text part, on the block
//! it follows), since Gemini rejects the next turn without it. Function calls come whole, or on
//! Vertex streamed: a `functionCall` with `willContinue`, then `partialArgs` (values set at a
//! `jsonPath`, strings possibly in pieces), then an empty `functionCall` closing it (arguments
//! may still follow for it: the call ends for good when other content comes, and its arguments
//! go out as one delta then). Calls without an id get one (`google-fc-{index}-{suffix}`,
//! `vertex-fc-...`), unique across a conversation. There is no end marker: the message is
//! complete when the body ends after a `finishReason`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use sinew_core::{AssistantMessage, Content, ProviderError, StopReason, StreamDelta, StreamEvent, Usage};
use sinew_http::json::{self, MaybeStr, Object, Scan};
use sinew_http::sse::SseEvent;
use sinew_http::{SseHandler, SseMessageDecoder, TextBlocks, excerpt};

/// Decodes one streamed response: feed it bytes as they arrive, then call `finish`.
pub type GeminiDecoder = SseMessageDecoder<GeminiEvents>;

/// A decoder for a response to a request for `model`, stamping the message with `provider`
/// (`"google"` or `"google_vertex"`, which also picks the generated id prefix).
pub fn decoder(provider: &str, model: &str) -> GeminiDecoder {
    let id_prefix = if provider.contains("vertex") { "vertex-fc" } else { "google-fc" };
    SseMessageDecoder::new(GeminiEvents {
        message: AssistantMessage::new(provider, model),
        blocks: TextBlocks::default(),
        streaming_call: None,
        finish_reason: None,
        started: false,
        id_prefix,
    })
}

/// A Vertex function call whose arguments are still streaming.
#[derive(Debug)]
struct StreamingCall {
    content_index: usize,
    arguments: Value,
    /// A `{}` said the call ended, or it came whole; it ends for good when something else comes
    /// (Vertex may still send arguments for it), and its arguments go out as one delta then.
    closed: bool,
}

/// The Gemini reading of server-sent events (see [`SseHandler`]).
#[derive(Debug)]
pub struct GeminiEvents {
    message: AssistantMessage,
    blocks: TextBlocks,
    streaming_call: Option<StreamingCall>,
    finish_reason: Option<String>,
    started: bool,
    id_prefix: &'static str,
}

impl SseHandler for GeminiEvents {
    fn event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Option<AssistantMessage>, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(None);
        }
        // Read typed where the chunk has the expected shape; read whole (and looked up as before)
        // where it has not, such as Vertex's chunk wrapped in a one-element array.
        let whole: Value;
        let typed = || scanned_chunk(data).or_else(|| serde_json::from_str::<Chunk<'_>>(data).ok());
        let chunk = match json::is_object(data.as_bytes()).then(typed) {
            Some(Some(chunk)) => chunk,
            _ => {
                whole = match serde_json::from_str(data)
                    .map_err(|e| ProviderError::Protocol(format!("invalid json in chunk: {e}: {}", excerpt(data))))?
                {
                    Value::Array(mut items) if items.len() == 1 => items.swap_remove(0),
                    other => other,
                };
                Chunk::of(&whole)
            }
        };
        if chunk.error.0 {
            return Err(stream_error(data));
        }
        if !std::mem::replace(&mut self.started, true) {
            out.push(StreamEvent::Start);
        }
        if let Some(model) = chunk.model_version.as_str().filter(|m| !m.is_empty()) {
            model.clone_into(&mut self.message.model);
        }
        if let Some(usage) = &chunk.usage_metadata.0 {
            self.usage(usage);
        }
        if let Some(reason) = chunk.prompt_feedback.0.as_ref().and_then(|f| f.block_reason.as_str()) {
            return Err(ProviderError::Api { status: None, message: format!("the prompt was blocked: {reason}") });
        }
        let Some(candidate) = chunk.candidates.0 else { return Ok(None) };
        for part in candidate.content.0.map(|c| c.parts).unwrap_or_default() {
            self.part(part, out)?;
        }
        if let Some(reason) = candidate.finish_reason.as_str() {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(None)
    }

    fn end(&mut self, out: &mut Vec<StreamEvent>) -> Result<AssistantMessage, ProviderError> {
        let Some(reason) = self.finish_reason.clone() else {
            return Err(ProviderError::Protocol("the stream ended before a finishReason".into()));
        };
        self.close_streaming_call(out);
        let stop_reason = match reason.as_str() {
            "STOP" | "FINISH_REASON_UNSPECIFIED" => StopReason::Stop,
            "MAX_TOKENS" => StopReason::Length,
            other => {
                return Err(ProviderError::Api { status: None, message: format!("the answer was stopped: {other}") });
            }
        };
        let mut message = self.partial();
        message.stop_reason = if message.tool_calls().next().is_some() && stop_reason == StopReason::Stop {
            StopReason::ToolUse
        } else {
            stop_reason
        };
        Ok(message)
    }

    fn partial(&mut self) -> AssistantMessage {
        if let Some(call) = self.streaming_call.take()
            && let Some(Content::ToolCall { arguments, .. }) = self.message.content.get_mut(call.content_index)
        {
            *arguments = call.arguments;
        }
        std::mem::replace(&mut self.message, AssistantMessage::new("", ""))
    }
}

impl GeminiEvents {
    fn usage(&mut self, usage: &UsageMetadata) {
        let prompt = usage.prompt_token_count;
        let cached = usage.cached_content_token_count;
        if prompt == 0 && usage.total_token_count == 0 {
            return;
        }
        let output = usage.candidates_token_count.saturating_add(usage.thoughts_token_count);
        self.message.usage =
            Usage::new(prompt.saturating_sub(cached).saturating_add(usage.tool_use_prompt_token_count), output)
                .with_cache(cached.min(prompt), 0)
                .with_total(usage.total_token_count.max(prompt.saturating_add(output)));
    }

    fn part(&mut self, part: PartIn, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        let signature = part.thought_signature.as_ref().and_then(Value::as_str).map(str::to_owned);
        if let Some(call) = &part.function_call {
            return self.function_call(call, signature, out);
        }
        if let Some(text) = part.text {
            if text.is_empty() {
                // An empty part carrying a signature signs the block it follows.
                if let (Some(signature), Some(index)) = (signature, self.blocks.open_index()) {
                    set_signature(&mut self.message.content[index], signature);
                }
                return Ok(());
            }
            self.end_closed_call(out);
            let index = if part.thought.as_ref().and_then(Value::as_bool) == Some(true) {
                self.blocks.thinking(&mut self.message, text, out)
            } else {
                self.blocks.text(&mut self.message, text, out)
            };
            if let Some(signature) = signature {
                set_signature(&mut self.message.content[index], signature);
            }
        } else {
            // Code execution, inline data and parts added later: kept whole, sent back as is.
            let whole = part.into_object();
            if !whole.is_empty() && !whole.keys().all(|k| k == "thoughtSignature") {
                self.end_closed_call(out);
                self.blocks.close();
                self.message
                    .content
                    .push(Content::Opaque { provider: self.message.provider.clone(), data: Value::Object(whole) });
            }
        }
        Ok(())
    }

    fn function_call(
        &mut self,
        call: &Value,
        signature: Option<String>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProviderError> {
        self.blocks.close();
        let name = call["name"].as_str();
        let partial_args = call["partialArgs"].as_array();
        let will_continue = call["willContinue"] == true;
        if name.is_none() {
            match partial_args {
                // More arguments of the call being streamed.
                Some(args) => {
                    let streaming = self.reopen_streaming_call()?;
                    for arg in args {
                        apply_partial_arg(&mut streaming.arguments, arg).map_err(ProviderError::Protocol)?;
                    }
                }
                // `{}` closes a streamed call (for good once something else comes); one that says
                // it continues does not.
                None if !will_continue => {
                    if let Some(call) = &mut self.streaming_call {
                        call.closed = true;
                    }
                }
                None => {}
            }
            return Ok(());
        }
        self.close_streaming_call(out);
        let index = self.message.content.len();
        let id =
            call["id"].as_str().filter(|id| !id.is_empty()).map_or_else(|| self.generated_id(index), str::to_owned);
        let name = name.unwrap_or_default().to_owned();
        let arguments = match call.get("args") {
            Some(Value::Object(args)) => Value::Object(args.clone()),
            _ => Value::Object(Map::new()),
        };
        // The streamed call holds the arguments until it ends (see `close_streaming_call`).
        self.message.content.push(Content::ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: Value::Object(Map::new()),
            signature,
        });
        out.push(StreamEvent::Delta(StreamDelta::ToolCall {
            index,
            id: Some(id),
            name: Some(name),
            delta: String::new(),
        }));
        // A call that came whole is held as one a `{}` closed: arguments that still come for it
        // (they name no call) join it, and its arguments go out as one delta when it ends.
        let mut streaming = StreamingCall { content_index: index, arguments, closed: !will_continue };
        // The call's first chunk may already carry arguments.
        for arg in partial_args.into_iter().flatten() {
            apply_partial_arg(&mut streaming.arguments, arg).map_err(ProviderError::Protocol)?;
        }
        self.streaming_call = Some(streaming);
        Ok(())
    }

    /// The call being streamed, or one a `{}` closed or that came whole, until other content
    /// ends it. Arguments for no call are an error.
    fn reopen_streaming_call(&mut self) -> Result<&mut StreamingCall, ProviderError> {
        self.streaming_call
            .as_mut()
            .ok_or_else(|| ProviderError::Protocol("function call arguments for no open function call".into()))
    }

    /// Ends for good a streamed call a `{}` closed, before other content follows it (a part that
    /// adds nothing leaves it open to arguments that may still come).
    fn end_closed_call(&mut self, out: &mut Vec<StreamEvent>) {
        if self.streaming_call.as_ref().is_some_and(|c| c.closed) {
            self.close_streaming_call(out);
        }
    }

    /// Ends a streamed call: its arguments are complete, and go out as one delta.
    fn close_streaming_call(&mut self, out: &mut Vec<StreamEvent>) {
        let Some(call) = self.streaming_call.take() else { return };
        let delta = json::text(&call.arguments);
        if let Some(Content::ToolCall { arguments, .. }) = self.message.content.get_mut(call.content_index) {
            *arguments = call.arguments;
        }
        out.push(StreamEvent::Delta(StreamDelta::ToolCall { index: call.content_index, id: None, name: None, delta }));
    }

    fn generated_id(&self, index: usize) -> String {
        let suffix: String = std::iter::repeat_with(fastrand::alphanumeric).take(8).collect();
        format!("{}-{index}-{suffix}", self.id_prefix)
    }
}

/// One streamed `GenerateContentResponse`, read without building a JSON tree: only what the
/// decoder uses is read, texts borrowed from the chunk where they have no escapes. A field of
/// another shape than these fails the typed reading, and the chunk is read whole ([`Chunk::of`]).
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Chunk<'a> {
    #[serde(default)]
    error: Present,
    #[serde(default, borrow)]
    model_version: MaybeStr<'a>,
    #[serde(default)]
    usage_metadata: Object<UsageMetadata>,
    #[serde(default, borrow)]
    prompt_feedback: Object<PromptFeedback<'a>>,
    /// The first candidate: sinew asks for one.
    #[serde(default, borrow)]
    candidates: FirstCandidate<'a>,
}

impl<'a> Chunk<'a> {
    /// The chunk read from its JSON tree, as the typed reading reads it: what is missing or of
    /// another shape is nothing.
    fn of(value: &'a Value) -> Chunk<'a> {
        let text = |v: &'a Value| MaybeStr(v.as_str().map(Cow::Borrowed));
        let usage = value.get("usageMetadata").filter(|u| u.is_object()).map(|u| {
            let n = |k: &str| u[k].as_u64().unwrap_or(0);
            UsageMetadata {
                prompt_token_count: n("promptTokenCount"),
                cached_content_token_count: n("cachedContentTokenCount"),
                candidates_token_count: n("candidatesTokenCount"),
                thoughts_token_count: n("thoughtsTokenCount"),
                tool_use_prompt_token_count: n("toolUsePromptTokenCount"),
                total_token_count: n("totalTokenCount"),
            }
        });
        let candidate = &value["candidates"][0];
        Chunk {
            error: Present(value.get("error").is_some()),
            model_version: text(&value["modelVersion"]),
            usage_metadata: Object(usage),
            prompt_feedback: Object(Some(PromptFeedback {
                block_reason: text(&value["promptFeedback"]["blockReason"]),
            })),
            candidates: FirstCandidate(candidate.is_object().then(|| {
                Candidate {
                    content: Object(
                        candidate["content"]["parts"]
                            .as_array()
                            .map(|parts| CandidateContent { parts: parts.iter().map(PartIn::of).collect() }),
                    ),
                    finish_reason: text(&candidate["finishReason"]),
                }
            })),
        }
    }
}

/// The chunk of streamed text read in place ([`Scan`]), as the typed reading reads it: candidates
/// whose parts are texts (with `thought` and `thoughtSignature`), usage counts, the model version;
/// anything else of another shape, errors, prompt feedback and a known key given twice are `None`,
/// and serde reads them.
fn scanned_chunk(data: &str) -> Option<Chunk<'_>> {
    let mut scan = Scan::new(data);
    let mut chunk = Chunk::default();
    scan.fields::<3>(
        |key| match key {
            "candidates" => Some(0),
            "usageMetadata" => Some(1),
            "modelVersion" => Some(2),
            _ => None,
        },
        |scan, slot| {
            match slot {
                0 if scan.null() => {}
                0 => {
                    let mut first = true;
                    scan.array(|scan| {
                        if std::mem::replace(&mut first, false) {
                            chunk.candidates = FirstCandidate(Some(scanned_candidate(scan)?));
                            Some(())
                        } else {
                            scan.skip_value()
                        }
                    })?;
                }
                1 => chunk.usage_metadata = Object(Some(scanned_usage(scan)?)),
                _ => chunk.model_version = MaybeStr(scan.string_or_null()?.map(Cow::Borrowed)),
            }
            Some(())
        },
        |scan, key| match key {
            "error" | "promptFeedback" => None,
            _ => scan.skip_value(),
        },
    )?;
    scan.end()?;
    Some(chunk)
}

fn scanned_candidate<'a>(scan: &mut Scan<'a>) -> Option<Candidate<'a>> {
    let mut candidate = Candidate { content: Object(None), finish_reason: MaybeStr(None) };
    scan.fields::<2>(
        |key| match key {
            "content" => Some(0),
            "finishReason" => Some(1),
            _ => None,
        },
        |scan, slot| {
            if slot == 1 {
                candidate.finish_reason = MaybeStr(scan.string_or_null()?.map(Cow::Borrowed));
                return Some(());
            }
            let mut parts = Vec::new();
            scan.fields::<1>(
                |key| match key {
                    "parts" => Some(0),
                    _ => None,
                },
                |scan, _| {
                    scan.array(|scan| {
                        parts.push(scanned_part(scan)?);
                        Some(())
                    })
                },
                |scan, _| scan.skip_value(),
            )?;
            candidate.content = Object(Some(CandidateContent { parts }));
            Some(())
        },
        |scan, _| scan.skip_value(),
    )?;
    Some(candidate)
}

/// A part of text: its keys as [`PartIn::insert`] takes them (the last of a key given twice).
fn scanned_part(scan: &mut Scan<'_>) -> Option<PartIn> {
    let mut part = PartIn::default();
    scan.object(|scan, key| {
        let value = match key {
            "text" | "thoughtSignature" => Value::String(scan.string_unescaped()?.into_owned()),
            "thought" if scan.null() => Value::Null,
            "thought" => Value::Bool(scan.bool()?),
            _ => return None,
        };
        part.insert(key, value);
        Some(())
    })?;
    Some(part)
}

fn scanned_usage(scan: &mut Scan<'_>) -> Option<UsageMetadata> {
    let mut usage = UsageMetadata::default();
    scan.fields::<6>(
        |key| match key {
            "promptTokenCount" => Some(0),
            "cachedContentTokenCount" => Some(1),
            "candidatesTokenCount" => Some(2),
            "thoughtsTokenCount" => Some(3),
            "toolUsePromptTokenCount" => Some(4),
            "totalTokenCount" => Some(5),
            _ => None,
        },
        |scan, slot| {
            let count = scan.u64()?;
            *[
                &mut usage.prompt_token_count,
                &mut usage.cached_content_token_count,
                &mut usage.candidates_token_count,
                &mut usage.thoughts_token_count,
                &mut usage.tool_use_prompt_token_count,
                &mut usage.total_token_count,
            ][slot] = count;
            Some(())
        },
        |scan, _| scan.skip_value(),
    )?;
    Some(usage)
}

/// The first element of `candidates`, the others skipped; `null` is none.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct FirstCandidate<'a>(Option<Candidate<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstCandidate<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct First;
        impl<'de> Visitor<'de> for First {
            type Value = FirstCandidate<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of candidates")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<Object<Candidate<'de>>>()?.and_then(|c| c.0);
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstCandidate(first))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(FirstCandidate(None))
            }
        }
        deserializer.deserialize_any(First)
    }
}

/// Whether a key is there, whatever its value (`null` included).
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct PromptFeedback<'a> {
    #[serde(default, borrow)]
    block_reason: MaybeStr<'a>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    tool_use_prompt_token_count: u64,
    #[serde(default)]
    total_token_count: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct Candidate<'a> {
    #[serde(default)]
    content: Object<CandidateContent>,
    #[serde(default, borrow)]
    finish_reason: MaybeStr<'a>,
}

#[derive(Deserialize)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct CandidateContent {
    #[serde(default)]
    parts: Vec<PartIn>,
}

/// One part, read key by key: a text (moved out of the chunk, as the blocks keep it), a function
/// call, and everything else kept as JSON, so that a kind the decoder does not know is sent back
/// whole.
#[derive(Default)]
#[cfg_attr(test, derive(Debug, PartialEq))]
struct PartIn {
    text: Option<String>,
    function_call: Option<Value>,
    thought: Option<Value>,
    thought_signature: Option<Value>,
    other: Map<String, Value>,
}

impl PartIn {
    /// A part read from its JSON tree: a part that is no object is an empty one.
    fn of(value: &Value) -> PartIn {
        let mut part = PartIn::default();
        for (key, value) in value.as_object().into_iter().flatten() {
            part.insert(key, value.clone());
        }
        part
    }

    /// Takes one key of the part; a key given twice keeps its last value, as a JSON tree does.
    fn insert(&mut self, key: &str, value: Value) {
        match (key, value) {
            ("text", Value::String(text)) => {
                self.text = Some(text);
                self.other.remove("text");
            }
            ("text", value) => {
                self.text = None;
                self.other.insert("text".to_owned(), value);
            }
            ("functionCall", value) => self.function_call = Some(value),
            ("thought", value) => self.thought = Some(value),
            ("thoughtSignature", value) => self.thought_signature = Some(value),
            (key, value) => drop(self.other.insert(key.to_owned(), value)),
        }
    }

    /// The part as it came (for one without a text or a function call).
    fn into_object(self) -> Map<String, Value> {
        let mut object = self.other;
        for (key, value) in [("thought", self.thought), ("thoughtSignature", self.thought_signature)] {
            if let Some(value) = value {
                object.insert(key.to_owned(), value);
            }
        }
        object
    }
}

impl<'de> Deserialize<'de> for PartIn {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = PartIn;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a part object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PartIn, A::Error> {
                let mut part = PartIn::default();
                while let Some(key) = map.next_key::<MaybeStr<'de>>()? {
                    let value: Value = map.next_value()?;
                    part.insert(key.as_str().unwrap_or_default(), value);
                }
                Ok(part)
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

fn set_signature(content: &mut Content, value: String) {
    match content {
        Content::Text { signature, .. } | Content::Thinking { signature, .. } | Content::ToolCall { signature, .. } => {
            *signature = Some(value);
        }
        _ => {}
    }
}

/// How deep a `partialArgs` path may reach, the largest array index it may name, and how far past
/// an array's end it may set (the gap is filled with nulls): paths come from the wire, and an
/// index sizes an allocation.
const MAX_PATH_DEPTH: usize = 64;
const MAX_ARRAY_INDEX: usize = 100_000;
const MAX_ARRAY_GAP: usize = 16;

/// Sets (or, for strings that continue, extends) the value at a `partialArgs` `jsonPath`:
/// `$.a.b`, `$.items[2]`, `$['key']`. A path deeper than [`MAX_PATH_DEPTH`], or an index past
/// [`MAX_ARRAY_INDEX`] or more than [`MAX_ARRAY_GAP`] past the array's end, is an error.
fn apply_partial_arg(arguments: &mut Value, arg: &Value) -> Result<(), String> {
    let Some(path) = arg["jsonPath"].as_str() else { return Ok(()) };
    let value = if let Some(s) = arg.get("stringValue").and_then(Value::as_str) {
        Value::String(s.to_owned())
    } else if let Some(n) = arg.get("numberValue") {
        n.clone()
    } else if let Some(b) = arg.get("boolValue") {
        b.clone()
    } else if arg.get("nullValue").is_some() {
        Value::Null
    } else {
        return Ok(());
    };
    let segments = path_segments(path)?;
    let mut target = arguments;
    for segment in segments {
        target = match segment {
            Segment::Key(key) => {
                if !target.is_object() {
                    *target = Value::Object(Map::new());
                }
                let Value::Object(object) = target else { unreachable!("made an object above") };
                object.entry(key).or_insert(Value::Null)
            }
            Segment::Index(i) => {
                if !target.is_array() {
                    *target = Value::Array(Vec::new());
                }
                let Value::Array(items) = target else { unreachable!("made an array above") };
                if i > items.len() + MAX_ARRAY_GAP {
                    return Err(format!("partialArgs path `{}` skips too many array elements", excerpt(path)));
                }
                if items.len() <= i {
                    items.resize(i + 1, Value::Null);
                }
                &mut items[i]
            }
        };
    }
    match (target, value) {
        (Value::String(existing), Value::String(more)) => existing.push_str(&more),
        (target, value) => *target = value,
    }
    Ok(())
}

#[derive(Debug, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

fn path_segments(path: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if segments.len() == MAX_PATH_DEPTH {
            return Err(format!("partialArgs path deeper than {MAX_PATH_DEPTH}: `{}`", excerpt(path)));
        }
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            segments.push(Segment::Key(after[..end].to_owned()));
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let end = after.find("']").unwrap_or(after.len());
            segments.push(Segment::Key(after[..end].to_owned()));
            rest = after.get(end + 2..).unwrap_or("");
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']').unwrap_or(after.len());
            let inside = &after[..end];
            if !inside.is_empty() && inside.bytes().all(|b| b.is_ascii_digit()) {
                match inside.parse::<usize>() {
                    Ok(i) if i <= MAX_ARRAY_INDEX => segments.push(Segment::Index(i)),
                    _ => return Err(format!("partialArgs index out of range: `{}`", excerpt(path))),
                }
            } else {
                segments.push(Segment::Key(inside.to_owned()));
            }
            rest = after.get(end + 1..).unwrap_or("");
        } else {
            segments.push(Segment::Key(rest.to_owned()));
            break;
        }
    }
    Ok(segments)
}

fn stream_error(data: &str) -> ProviderError {
    let message = sinew_http::error_message(data.as_bytes());
    let value: Value = serde_json::from_str(data).unwrap_or_default();
    let value = match &value {
        Value::Array(items) if !items.is_empty() => items[0].clone(),
        _ => value,
    };
    match value["error"]["code"].as_u64() {
        Some(status) if (400..600).contains(&status) => ProviderError::classify(status as u16, message),
        _ => ProviderError::Api { status: None, message },
    }
}

#[cfg(test)]
mod tests;
