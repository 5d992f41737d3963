//! The model side: ADK's `BaseLlm` contract as the [`Llm`] trait, and [`ModelAdapter`], which makes
//! any sinew [`StreamProvider`] an [`Llm`].
//!
//! The contract (adk-python's `generate_content_async`): with `stream == false` a model yields
//! exactly one complete response; with `stream == true` it yields partial fragments
//! (`partial: true`) and then one final response holding the aggregated content, identical to the
//! non-streaming answer. A fragment is a display hint: nothing executes a tool, stores an event
//! or ends a turn on one. An error ends the stream: it is the last item.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};
use sinew_core::{
    AssistantMessage, CancellationToken, Content as Block, Message, RequestOptions, ResponseFormat, StopReason,
    StreamEvent, StreamProvider, StreamRequest, ThinkingLevel, ToolChoice, ToolDefinition, ToolResultMessage, Usage,
    UserMessage, now_ms,
};

use crate::error::{Error, Result};
use crate::event::LlmResponse;
use crate::genai::{
    Blob, Content, FileData, FunctionCall, FunctionResponse, GenerateContentConfig, MODEL, Part, ThinkingConfig,
    UsageMetadata,
};
use crate::types::LlmRequest;

/// A model ADK agents call (ADK's `BaseLlm`). Object-safe: agents hold an `Arc<dyn Llm>`.
pub trait Llm: Send + Sync {
    /// The model's name, sent as [`LlmRequest::model`].
    fn name(&self) -> &str;

    /// Answers `request`: one complete response when `stream` is false; fragments and then one
    /// aggregated final response when it is true. An `Err` is the last item.
    fn generate_content(&self, request: LlmRequest, stream: bool) -> BoxStream<'static, Result<LlmResponse>>;

    /// Whether the model wants the framework's `adk-` call ids in its history (adk-python keeps
    /// them for LiteLlm and Anthropic models, whose APIs pair calls and results by id; Gemini does
    /// not need them).
    fn preserves_function_call_ids(&self) -> bool {
        false
    }

    /// Whether the model takes a response schema and tools in one request. Without it, an agent
    /// with both asks for its structured answer through ADK's `set_model_response` tool.
    fn supports_output_schema_with_tools(&self) -> bool {
        false
    }
}

impl<L: Llm + ?Sized> Llm for Arc<L> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn generate_content(&self, request: LlmRequest, stream: bool) -> BoxStream<'static, Result<LlmResponse>> {
        (**self).generate_content(request, stream)
    }

    fn preserves_function_call_ids(&self) -> bool {
        (**self).preserves_function_call_ids()
    }

    fn supports_output_schema_with_tools(&self) -> bool {
        (**self).supports_output_schema_with_tools()
    }
}

/// A sinew [`StreamProvider`] as an ADK [`Llm`] (spec 000, "Model adapter streams LLM responses").
///
/// Like adk-python's Gemini and LiteLlm models, it gives the model a user turn to answer: empty
/// contents get [`EMPTY_CONTENTS_FILLER`], contents ending with a model turn [`CONTINUE_NUDGE`].
///
/// The request's system instruction becomes the system prompt (a content's text parts joined with
/// `\n`; none when absent), its contents become sinew messages (function-call ids kept, `call_<name>`
/// when empty; each function response a tool result), its function declarations the tools. The
/// answer comes back as one final response (`partial: false`, `turnComplete: true`), preceded in
/// streaming mode by one fragment per text or thought delta. A provider error is yielded at once
/// and ends the stream. Dropping the stream cancels the provider's request.
pub struct ModelAdapter {
    provider: Arc<dyn StreamProvider>,
    model: String,
    conversations: Conversations,
}

impl std::fmt::Debug for ModelAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelAdapter")
            .field("provider", &self.provider.provider_id())
            .field("model", &self.model)
            .finish()
    }
}

impl ModelAdapter {
    /// `model` served by `provider`, keeping the serialized histories of the last
    /// [`DEFAULT_CONVERSATIONS`] conversations it served
    /// (see [`ModelAdapter::with_history_cache`]).
    pub fn new(provider: Arc<dyn StreamProvider>, model: impl Into<String>) -> Self {
        ModelAdapter { provider, model: model.into(), conversations: Conversations::new(DEFAULT_CONVERSATIONS) }
    }

    /// Keeps the serialized histories of the last `conversations` conversations served (0: none).
    ///
    /// ADK rebuilds a request's contents from the session's events on every call, so the
    /// adapter finds out itself what a request shares with an earlier one: the messages it starts
    /// with that are the same as those of the conversation it continues (the kept one sharing
    /// the most). The provider then writes only the messages after those (see
    /// [`sinew_core::wire`]); a history rewritten by compaction or a rewind shares less, and is
    /// written again from where it changed. Each conversation kept costs a copy of its messages and
    /// of their bytes.
    pub fn with_history_cache(mut self, conversations: usize) -> Self {
        self.conversations = Conversations::new(conversations);
        self
    }
}

/// How many conversations a [`ModelAdapter`] keeps the serialized histories of by default.
pub const DEFAULT_CONVERSATIONS: usize = 16;

/// The conversations a [`ModelAdapter`] keeps the serialized histories of, the most recently used
/// first.
struct Conversations {
    capacity: usize,
    kept: std::sync::Mutex<std::collections::VecDeque<Arc<Conversation>>>,
}

/// The messages of a conversation's last request, and the bytes the provider wrote for them.
#[derive(Default)]
struct Conversation {
    state: std::sync::Mutex<Sent>,
}

#[derive(Default)]
struct Sent {
    messages: Vec<Message>,
    wire: sinew_core::WireCache,
}

impl Conversations {
    fn new(capacity: usize) -> Self {
        Conversations { capacity, kept: std::sync::Mutex::default() }
    }

    /// The kept conversation `messages` continues: of those not in use by another call, the one
    /// whose last request shares the most first messages with them, at least half of that
    /// request's (a request that only starts like another, with a common opening prompt, does
    /// not take its place); or a new one in place of the least recently used. `None` when
    /// nothing is kept.
    fn continued_by(&self, messages: &[Message]) -> Option<Arc<Conversation>> {
        if self.capacity == 0 {
            return None;
        }
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let best = kept
            .iter()
            .enumerate()
            .filter_map(|(i, conversation)| {
                let state = conversation.state.try_lock().ok()?;
                let shared = shared_prefix(&state.messages, messages);
                (shared > 0 && shared * 2 >= state.messages.len()).then_some((i, shared))
            })
            .max_by_key(|&(_, shared)| shared);
        let conversation = match best {
            Some((i, _)) => kept.remove(i)?,
            None => {
                if kept.len() >= self.capacity {
                    kept.pop_back();
                }
                Arc::default()
            }
        };
        kept.push_front(Arc::clone(&conversation));
        Some(conversation)
    }
}

/// How many first messages `sent` and `messages` share, as a builder writes them (equal but for
/// their timestamps, which no builder sends; the adapter stamps them anew on every call).
fn shared_prefix(sent: &[Message], messages: &[Message]) -> usize {
    sent.iter().zip(messages).take_while(|(a, b)| same_but_time(a, b)).count()
}

fn same_but_time(a: &Message, b: &Message) -> bool {
    match (a, b) {
        (Message::User(a), Message::User(b)) => {
            let UserMessage { content, timestamp: _ } = a;
            *content == b.content
        }
        (Message::Assistant(a), Message::Assistant(b)) => {
            let AssistantMessage { content, stop_reason, model, provider, usage, timestamp: _, error_message } = a;
            *content == b.content
                && *stop_reason == b.stop_reason
                && *model == b.model
                && *provider == b.provider
                && *usage == b.usage
                && *error_message == b.error_message
        }
        (Message::ToolResult(a), Message::ToolResult(b)) => {
            let ToolResultMessage { tool_call_id, tool_name, content, is_error, timestamp: _, details } = a;
            *tool_call_id == b.tool_call_id
                && *tool_name == b.tool_name
                && *content == b.content
                && *is_error == b.is_error
                && *details == b.details
        }
        _ => false,
    }
}

impl Llm for ModelAdapter {
    fn name(&self) -> &str {
        &self.model
    }

    /// Providers pair calls and results by id: two calls of one tool must not both become
    /// `call_<name>`.
    fn preserves_function_call_ids(&self) -> bool {
        true
    }

    fn generate_content(&self, request: LlmRequest, stream: bool) -> BoxStream<'static, Result<LlmResponse>> {
        let model = request.model.clone().filter(|m| !m.is_empty()).unwrap_or_else(|| self.model.clone());
        let provider_id = self.provider.provider_id_for(&model).to_owned();
        let system = request.system_instruction().unwrap_or_default();
        let tools = to_tools(&request);
        let filler = filler(&request.contents);
        let mut messages = to_messages(request.contents, &provider_id, &model);
        if let Some(filler) = filler {
            messages.push(Message::user(filler));
        }
        let options = request_options(&request.config);
        let conversation = self.conversations.continued_by(&messages);
        // Held while the provider writes the request (in `stream`, before it returns).
        let mut sent = conversation.as_ref().map(|c| c.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        // What is kept is cut to what this request shares with the last: it stays true whether
        // the provider writes this request or fails (or panics) before it does.
        let unchanged = sent.as_deref_mut().map(|sent| {
            let unchanged = shared_prefix(&sent.messages, &messages);
            sent.wire.cut(unchanged);
            sent.messages.truncate(unchanged);
            unchanged
        });
        let cancel = CancellationToken::new();
        let events = {
            let refs: Vec<&Message> = messages.iter().collect();
            let mut call = StreamRequest::new(&model, &system, &refs);
            call.tools = &tools;
            call.temperature = request.config.temperature.map(|t| t as f32);
            call.max_tokens = request.config.max_output_tokens;
            call.thinking_level = thinking_level(request.config.thinking_config.as_ref());
            call.options = &options;
            call.history = sent
                .as_deref()
                .zip(unchanged)
                .map(|(sent, unchanged)| sinew_core::HistoryCache { cache: &sent.wire, unchanged });
            self.provider.stream(&call, cancel.clone())
        };
        if let Some(sent) = sent.as_deref_mut() {
            sent.messages = messages;
        }
        Adapting { events, stream, done: false, _cancel: cancel.drop_guard() }.boxed()
    }
}

struct Adapting {
    events: BoxStream<'static, StreamEvent>,
    stream: bool,
    done: bool,
    /// Cancels the provider's request when the caller drops the stream.
    _cancel: tokio_util::sync::DropGuard,
}

/// The provider's events as responses, mapped as they come (a hand-written stream: it runs once
/// per streamed token, and moves nothing but the response).
impl futures::Stream for Adapting {
    type Item = Result<LlmResponse>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            let event = match self.events.poll_next_unpin(cx) {
                Poll::Ready(event) => event,
                Poll::Pending => return Poll::Pending,
            };
            let item = match event {
                Some(StreamEvent::Delta(delta)) if self.stream => match fragment(delta) {
                    Some(part) => {
                        Ok(LlmResponse { partial: Some(true), ..LlmResponse::new(Content::new(MODEL, vec![part])) })
                    }
                    None => continue,
                },
                Some(StreamEvent::Done(message)) => {
                    self.done = true;
                    Ok(to_response(*message))
                }
                Some(StreamEvent::Error { error, .. }) => {
                    self.done = true;
                    Err(Error::Model(error))
                }
                Some(_) => continue,
                None => {
                    self.done = true;
                    Err(Error::Model(sinew_core::ProviderError::Protocol(
                        "the provider's stream ended without a final message".into(),
                    )))
                }
            };
            return Poll::Ready(Some(item));
        }
    }
}

/// What adk-python's model classes (Gemini, LiteLlm) add so that the model has a user turn to
/// answer: the filler for empty contents, the nudge after a model turn.
pub const EMPTY_CONTENTS_FILLER: &str = "Handle the requests as specified in the System Instruction.";
/// See [`EMPTY_CONTENTS_FILLER`].
pub const CONTINUE_NUDGE: &str =
    "Continue processing previous requests as instructed. Exit or provide a summary if no more outputs are needed.";

fn filler(contents: &[Content]) -> Option<&'static str> {
    match contents.last() {
        None => Some(EMPTY_CONTENTS_FILLER),
        Some(last) if last.role() != crate::genai::USER => Some(CONTINUE_NUDGE),
        Some(_) => None,
    }
}

/// A streaming fragment for a text or thought delta; tool-call deltas are not shown.
fn fragment(delta: sinew_core::StreamDelta) -> Option<Part> {
    match delta {
        sinew_core::StreamDelta::Text { delta, .. } => Some(Part::text(delta)),
        sinew_core::StreamDelta::Thinking { delta, .. } => Some(Part::thought(delta, None)),
        _ => None,
    }
}

/// The sampling and tool-choice settings of a `GenerateContentConfig` as request options; the
/// provider refuses those its service lacks.
fn request_options(config: &GenerateContentConfig) -> RequestOptions {
    let mut options = RequestOptions::default();
    options.top_p = config.top_p.map(|p| p as f32);
    // genai types `topK` as a float; a service takes a count.
    options.top_k = config.top_k.filter(|k| k.is_finite() && *k >= 1.0).map(|k| k.min(f64::from(u32::MAX)) as u32);
    options.stop_sequences = config.stop_sequences.clone().unwrap_or_default();
    options.presence_penalty = config.presence_penalty.map(|p| p as f32);
    options.frequency_penalty = config.frequency_penalty.map(|p| p as f32);
    options.seed = config.seed;
    // `output_schema` (set as `responseJsonSchema`), or JSON mode, as the service's structured
    // output. Not strict: schemas written for ADK need not follow OpenAI's strict rules.
    let json = config.response_mime_type.as_deref() == Some("application/json");
    options.response_format = match &config.response_json_schema {
        Some(schema) => ResponseFormat::JsonSchema { name: "response".into(), schema: schema.clone(), strict: false },
        None if json => ResponseFormat::JsonObject,
        None => ResponseFormat::Text,
    };
    // `toolConfig.functionCallingConfig`: AUTO, ANY (with one allowed name: that tool), NONE.
    let calling = config.tool_config.as_ref().and_then(|c| c.get("functionCallingConfig"));
    if let Some(calling) = calling {
        let allowed = calling.get("allowedFunctionNames").and_then(Value::as_array).map(Vec::as_slice);
        options.tool_choice = match (calling.get("mode").and_then(Value::as_str), allowed) {
            (Some("ANY"), Some([name])) => name.as_str().map_or(ToolChoice::Required, ToolChoice::tool),
            (Some("ANY"), _) => ToolChoice::Required,
            (Some("NONE"), _) => ToolChoice::None,
            _ => ToolChoice::Auto,
        };
    }
    options
}

fn thinking_level(config: Option<&ThinkingConfig>) -> ThinkingLevel {
    let Some(config) = config else { return ThinkingLevel::Off };
    match (config.thinking_level.as_deref(), config.thinking_budget) {
        (Some("MINIMAL"), _) => ThinkingLevel::Minimal,
        (Some("LOW"), _) => ThinkingLevel::Low,
        (Some("MEDIUM"), _) => ThinkingLevel::Medium,
        (Some("HIGH"), _) => ThinkingLevel::High,
        (_, Some(0)) => ThinkingLevel::Off,
        (_, Some(budget)) if budget > 0 && budget <= 1024 => ThinkingLevel::Low,
        (_, Some(budget)) if budget > 0 && budget <= 8192 => ThinkingLevel::Medium,
        (_, Some(_)) => ThinkingLevel::High,
        (_, None) if config.include_thoughts == Some(true) => ThinkingLevel::Medium,
        _ => ThinkingLevel::Off,
    }
}

fn to_tools(request: &LlmRequest) -> Vec<ToolDefinition> {
    request
        .config
        .function_declarations()
        .map(|d| ToolDefinition {
            name: d.name.clone().unwrap_or_default(),
            description: d.description.clone().unwrap_or_default(),
            parameters: d
                .parameters_json_schema
                .clone()
                .or_else(|| d.parameters.clone())
                .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        })
        .collect()
}

/// The id a call goes by: its own, else `call_<name>` (spec 000, "convertMessages forwards
/// FunctionCall ID").
pub fn call_id(id: Option<&str>, name: &str) -> String {
    match id {
        Some(id) if !id.is_empty() => id.to_owned(),
        _ => format!("call_{name}"),
    }
}

/// A signature as sinew carries it (the provider's base64 text) from ADK's bytes.
fn signature_text(bytes: Option<&Vec<u8>>) -> Option<String> {
    bytes.map(|b| STANDARD.encode(b))
}

/// ADK's signature bytes from sinew's text: the decoded base64, or the text's bytes when it is
/// not canonical base64.
fn signature_bytes(text: Option<String>) -> Option<Vec<u8>> {
    let text = text?;
    match STANDARD.decode(&text) {
        Ok(bytes) if STANDARD.encode(&bytes) == text => Some(bytes),
        _ => Some(text.into_bytes()),
    }
}

/// The key under which an opaque provider block rides in a part's `partMetadata`.
const OPAQUE_KEY: &str = "sinew_opaque";

/// ADK contents as sinew messages: model turns are assistant messages, function responses tool
/// results, every other role a user turn. The contents are taken: texts and arguments move into the
/// messages rather than being copied.
pub fn to_messages(contents: Vec<Content>, provider: &str, model: &str) -> Vec<Message> {
    let mut messages = Vec::with_capacity(contents.len());
    for content in contents {
        let model_turn = content.role() == MODEL;
        let parts = content.parts.unwrap_or_default();
        if model_turn {
            let mut message = AssistantMessage::new(provider, model);
            message.content = parts.into_iter().filter_map(to_block).collect();
            if message.tool_calls().next().is_some() {
                message.stop_reason = StopReason::ToolUse;
            }
            messages.push(Message::Assistant(message));
            continue;
        }
        let mut blocks = Vec::new();
        for mut part in parts {
            if let Some(response) = part.function_response.take() {
                let FunctionResponse { id, name, response, .. } = *response;
                let name = name.unwrap_or_default();
                let response = Value::Object(response.unwrap_or_default());
                let is_error = response.get("error").is_some_and(|e| !e.is_null());
                messages.push(Message::ToolResult(ToolResultMessage {
                    tool_call_id: call_id(id.as_deref(), &name),
                    tool_name: name,
                    content: vec![Block::text(response.to_string())],
                    is_error,
                    timestamp: now_ms(),
                    details: Value::Null,
                }));
            } else if let Some(block) = to_block(part) {
                blocks.push(block);
            }
        }
        if !blocks.is_empty() {
            messages.push(Message::User(UserMessage { content: blocks, timestamp: now_ms() }));
        }
    }
    messages
}

fn to_block(mut part: Part) -> Option<Block> {
    if let Some(call) = part.function_call.take() {
        let FunctionCall { id, name, args, .. } = *call;
        let name = name.unwrap_or_default();
        return Some(Block::ToolCall {
            id: call_id(id.as_deref(), &name),
            name,
            arguments: Value::Object(args.unwrap_or_default()),
            signature: signature_text(part.thought_signature.as_ref()),
        });
    }
    if let Some(text) = part.text.take() {
        let signature = signature_text(part.thought_signature.as_ref());
        return Some(if part.is_thought() {
            Block::Thinking { thinking: text, signature, redacted: false, id: None }
        } else {
            Block::Text { text, signature }
        });
    }
    if let Some(blob) = part.inline_data.take() {
        let Blob { data, mime_type, display_name, .. } = *blob;
        let data = STANDARD.encode(data.unwrap_or_default());
        let mime_type = mime_type.unwrap_or_default();
        return Some(match mime_type.split('/').next() {
            Some("image") => Block::image(data, mime_type),
            Some("audio") => Block::audio(data, mime_type),
            _ => Block::Document { data, mime_type, name: display_name },
        });
    }
    if let Some(file) = part.file_data.take() {
        let FileData { file_uri, mime_type, display_name, .. } = *file;
        let url = file_uri?;
        return Some(match mime_type {
            Some(mime_type) if !mime_type.starts_with("image/") => {
                Block::DocumentUrl { url, mime_type, name: display_name }
            }
            mime_type => Block::ImageUrl { url, mime_type },
        });
    }
    if let Some(mut opaque) = part.part_metadata.take().and_then(|mut m| m.remove(OPAQUE_KEY)) {
        return Some(Block::Opaque {
            provider: opaque["provider"].as_str().unwrap_or_default().to_owned(),
            data: opaque.get_mut("data").map(Value::take).unwrap_or_default(),
        });
    }
    // A redacted thought: only its signature is there.
    if part.is_thought() && part.thought_signature.is_some() {
        return Some(Block::Thinking {
            thinking: String::new(),
            signature: signature_text(part.thought_signature.as_ref()),
            redacted: true,
            id: None,
        });
    }
    None
}

/// A sinew content block as an ADK part.
pub fn to_part(block: Block) -> Option<Part> {
    Some(match block {
        Block::Text { text, signature } => Part { thought_signature: signature_bytes(signature), ..Part::text(text) },
        Block::Thinking { thinking, signature, .. } => Part::thought(thinking, signature_bytes(signature)),
        Block::ToolCall { id, name, arguments, signature } => {
            let args = match arguments {
                Value::Object(map) => map,
                Value::Null => Map::new(),
                other => Map::from_iter([("value".to_owned(), other)]),
            };
            let id = Some(id).filter(|id| !id.is_empty());
            Part {
                thought_signature: signature_bytes(signature),
                ..Part::function_call(FunctionCall::new(id, name, args))
            }
        }
        Block::Image { data, mime_type } | Block::Audio { data, mime_type } => {
            Part::inline_data(mime_type, STANDARD.decode(data.as_bytes()).ok()?)
        }
        Block::Document { data, mime_type, name } => {
            let mut part = Part::inline_data(mime_type, STANDARD.decode(data.as_bytes()).ok()?);
            if let Some(blob) = part.inline_data.as_mut() {
                blob.display_name = name;
            }
            part
        }
        Block::ImageUrl { url, mime_type } => file_part(url, mime_type, None),
        Block::DocumentUrl { url, mime_type, name } => file_part(url, Some(mime_type), name),
        Block::Opaque { provider, data } => Part {
            part_metadata: Some(Map::from_iter([(OPAQUE_KEY.to_owned(), json!({"provider": provider, "data": data}))])),
            ..Part::default()
        },
        _ => return None,
    })
}

/// A part that points at a file (`fileData`).
fn file_part(url: String, mime_type: Option<String>, name: Option<String>) -> Part {
    Part {
        file_data: Some(Box::new(FileData { display_name: name, file_uri: Some(url), mime_type })),
        ..Part::default()
    }
}

fn finish_reason(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Length => "MAX_TOKENS",
        StopReason::Refusal => "SAFETY",
        StopReason::Error | StopReason::Aborted => "OTHER",
        _ => "STOP",
    }
}

fn usage_metadata(usage: &Usage) -> UsageMetadata {
    UsageMetadata {
        prompt_token_count: Some(usage.prompt_tokens()),
        candidates_token_count: Some(usage.output),
        total_token_count: Some(usage.all_tokens()),
        cached_content_token_count: Some(usage.cache_read).filter(|&n| n > 0),
        ..UsageMetadata::default()
    }
}

/// A provider's final message as ADK's final response.
fn to_response(message: AssistantMessage) -> LlmResponse {
    let parts: Vec<Part> = message.content.into_iter().filter_map(to_part).collect();
    let mut response = LlmResponse::new(Content::new(MODEL, parts));
    response.partial = Some(false);
    response.turn_complete = Some(true);
    response.finish_reason = Some(finish_reason(message.stop_reason).to_owned());
    response.usage_metadata = Some(Box::new(usage_metadata(&message.usage)));
    response.model_version = Some(message.model).filter(|m| !m.is_empty());
    if message.stop_reason == StopReason::Error {
        response.error_code = Some("MODEL_ERROR".into());
        response.error_message = message.error_message;
    }
    response
}
