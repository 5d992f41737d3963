//! The `/v1/messages` request, built from a [`StreamRequest`] (pure: no I/O).

use bytes::Bytes;
use std::fmt;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Value, json};
use sinew_core::{
    AssistantMessage, Content, Message, ProviderError, RequestOptions, ResponseFormat, StopReason, StreamRequest,
    ThinkingLevel, ToolChoice, WirePrefix,
};
use sinew_http::HttpRequest;

use crate::decode::PROVIDER_ID;

/// How requests authenticate. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub enum AnthropicAuth {
    /// `x-api-key`.
    ApiKey(String),
    /// A Claude OAuth access token (`Authorization: Bearer`), with the headers that path needs.
    OAuth(String),
}

impl fmt::Debug for AnthropicAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnthropicAuth::ApiKey(_) => f.write_str("ApiKey(\"****\")"),
            AnthropicAuth::OAuth(_) => f.write_str("OAuth(\"****\")"),
        }
    }
}

/// Where and how to call the Messages API. `Debug` hides the credentials and the values of
/// extra headers (see [`sinew_http::Redacted`]).
#[derive(Clone)]
pub struct AnthropicConfig {
    /// The API's root, without `/v1/messages`. Default `https://api.anthropic.com`.
    pub base_url: String,
    /// An API key or a Claude subscription's OAuth token.
    pub auth: AnthropicAuth,
    /// `max_tokens` when the request sets none (the API requires one).
    pub default_max_tokens: u32,
    /// Sent with every request (after the protocol's own headers).
    pub extra_headers: Vec<(String, String)>,
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &sinew_http::redact_url(&self.base_url))
            .field("auth", &self.auth)
            .field("default_max_tokens", &self.default_max_tokens)
            .field("extra_headers", &sinew_http::Redacted::headers(&self.extra_headers))
            .finish()
    }
}

impl AnthropicConfig {
    /// The public API with an API key.
    pub fn new(api_key: impl Into<String>) -> Self {
        AnthropicConfig {
            base_url: "https://api.anthropic.com".into(),
            auth: AnthropicAuth::ApiKey(api_key.into()),
            default_max_tokens: 8192,
            extra_headers: Vec::new(),
        }
    }
}

/// Thinking budgets by level. The API refuses budgets under 1,024 tokens, so `Minimal` and `Low`
/// (128 and 512 in the roadmap) ask for that floor.
pub fn thinking_budget(level: ThinkingLevel) -> Option<u32> {
    level.token_budget().map(|budget| budget.max(1024))
}

/// The headers and JSON body of a streaming `/v1/messages` call, every message written (the
/// provider resumes from what [`StreamRequest::history`] kept, and checks the inputs first).
pub fn build_request(config: &AnthropicConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(request)));
    http_request(config, body)
}

/// [`build_request`] for a request whose inputs are checked first ([`check_inputs`]): those of
/// the messages written again, the others were checked when they were first written.
pub(crate) fn checked_request(
    config: &AnthropicConfig,
    request: &StreamRequest<'_>,
) -> Result<HttpRequest, ProviderError> {
    let body = request.resume_messages(
        message_format(request),
        kept_messages(request),
        |first| check_inputs_from(request, first),
        |prefix| body_bytes(config, request, prefix),
    )?;
    Ok(http_request(config, body))
}

fn http_request(config: &AnthropicConfig, body: Bytes) -> HttpRequest {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "text/event-stream".to_owned()),
        ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
        // sinew says who it is, in both modes; it never presents itself as another product.
        ("user-agent".to_owned(), concat!("sinew/", env!("CARGO_PKG_VERSION")).to_owned()),
    ];
    match &config.auth {
        AnthropicAuth::ApiKey(key) => headers.push(("x-api-key".into(), key.clone())),
        AnthropicAuth::OAuth(token) => headers.extend([
            ("authorization".to_owned(), format!("Bearer {token}")),
            ("anthropic-beta".to_owned(), "oauth-2025-04-20,fine-grained-tool-streaming-2025-05-14".to_owned()),
        ]),
    }
    headers.extend(config.extra_headers.iter().cloned());
    HttpRequest {
        method: http::Method::POST,
        url: format!("{}/v1/messages", config.base_url.trim_end_matches('/')),
        headers,
        body,
    }
}

/// The JSON body (exposed for snapshot tests and hosts that bring their own transport), read
/// back from the bytes [`build_request`] sends (see [`sinew_http::json::read_body`]).
pub fn body(config: &AnthropicConfig, request: &StreamRequest<'_>) -> Value {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(request)));
    sinew_http::json::read_body(&body)
}

/// What decides the bytes of a history message here: this builder, and whether messages get a
/// cache breakpoint (its message, which moves, is never kept; see [`write_messages`]).
fn message_format(request: &StreamRequest<'_>) -> u64 {
    const BUILDER: u64 = 0x616e_7468_726f_7069; // "anthropi"
    BUILDER ^ u64::from(request.cache_config.caches_messages())
}

/// The body, written straight from borrowed wire structs (the history is resent every turn, so no
/// `Value` tree is built for it), its messages resumed after those `prefix` holds (see
/// [`sinew_core::wire`]). Returns the body and the prefix of this request's messages.
fn body_bytes(config: &AnthropicConfig, request: &StreamRequest<'_>, mut prefix: WirePrefix) -> (Bytes, WirePrefix) {
    let (head, rest) = wire_body(config, request);
    let head = serde_json::to_vec(&head).unwrap_or_default();
    let rest = serde_json::to_vec(&rest).unwrap_or_default();
    prefix.open(&sinew_http::json::array_opening(&head, "messages"));
    write_messages(request.messages, request.cache_breakpoints().message, kept_messages(request), &mut prefix);
    let body = prefix.close(&sinew_http::json::array_closing(&rest));
    (body, prefix)
}

/// How many of the first messages may be written from, or kept for, another request: all but the
/// last two when they get a cache breakpoint (it goes on the second-to-last message, so a request
/// puts it no earlier than that: bytes kept of those never carry one, and none is reused where
/// this request puts it).
fn kept_messages(request: &StreamRequest<'_>) -> usize {
    let len = request.messages.len();
    if request.cache_config.caches_messages() { len.saturating_sub(2) } else { len }
}

/// The body's fields before `messages`.
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    max_tokens: u32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[Block<'a>; 1]>,
}

/// The body's fields after `messages`.
#[derive(Serialize)]
struct Rest<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<Value>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    user_id: &'a str,
}

/// The request options Anthropic Messages takes (the others are refused).
pub const SUPPORTED_OPTIONS: &[&str] =
    &["tool_choice", "parallel_tool_calls", "stop_sequences", "top_p", "top_k", "user", "response_format"];

/// Refuses options Anthropic Messages has no equivalent for, and a forced tool call together with
/// extended thinking, which the API rejects.
pub fn check_options(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    request.check_options("Anthropic Messages", SUPPORTED_OPTIONS)?;
    if request.options.response_format == ResponseFormat::JsonObject {
        return Err(sinew_core::options::unsupported(
            "Anthropic Messages",
            "response_format: JSON object (give a schema)",
        ));
    }
    if request.options.tool_choice.is_forced() && thinking_budget(request.thinking_level).is_some() {
        return Err(ProviderError::Other(
            "Anthropic Messages cannot force a tool call while thinking; set the thinking level to Off".into(),
        ));
    }
    Ok(())
}

/// `tool_choice`: `auto`, `none`, `any` (required) or one `tool`; `disable_parallel_tool_use`
/// when parallel calls are off.
fn tool_choice(options: &RequestOptions) -> Option<Value> {
    let mut choice = match &options.tool_choice {
        ToolChoice::Tool { name } => json!({"type": "tool", "name": name}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::None => json!({"type": "none"}),
        _ if options.parallel_tool_calls == Some(false) => json!({"type": "auto"}),
        _ => return None,
    };
    if options.parallel_tool_calls == Some(false) && options.tool_choice != ToolChoice::None {
        choice["disable_parallel_tool_use"] = json!(true);
    }
    Some(choice)
}

#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Clone, Copy, Serialize)]
struct Ephemeral {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: Ephemeral = Ephemeral { kind: "ephemeral" };

#[derive(Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

/// A content block, with an optional cache breakpoint.
struct Block<'a> {
    kind: BlockKind<'a>,
    cache: bool,
}

enum BlockKind<'a> {
    Text(&'a str),
    Image(Source<'a>),
    Document(Source<'a>, Option<&'a str>),
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking(&'a str),
    ToolUse {
        id: String,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: String,
        content: Vec<Block<'a>>,
        is_error: bool,
    },
    /// A block kept verbatim (server tools), sent back as it came.
    Raw(&'a Value),
}

/// Where an image's or a document's bytes come from.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Source<'a> {
    Base64 {
        media_type: &'a str,
        data: &'a str,
    },
    Url {
        url: &'a str,
    },
    /// A plain-text document, decoded.
    Text {
        media_type: &'static str,
        data: String,
    },
}

impl<'a> Block<'a> {
    fn new(kind: BlockKind<'a>) -> Self {
        Block { kind, cache: false }
    }
}

impl Serialize for Block<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let BlockKind::Raw(value) = &self.kind {
            if !self.cache {
                return value.serialize(serializer);
            }
            let mut value = (*value).clone();
            // A block is an object; anything else (a caller's own opaque data) goes as it is.
            if let Value::Object(block) = &mut value {
                block.insert("cache_control".into(), json!({"type": "ephemeral"}));
            }
            return value.serialize(serializer);
        }
        let mut map = serializer.serialize_map(None)?;
        match &self.kind {
            BlockKind::Text(text) => {
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
            }
            BlockKind::Image(source) => {
                map.serialize_entry("type", "image")?;
                map.serialize_entry("source", source)?;
            }
            BlockKind::Document(source, title) => {
                map.serialize_entry("type", "document")?;
                map.serialize_entry("source", source)?;
                if let Some(title) = title {
                    map.serialize_entry("title", title)?;
                }
            }
            BlockKind::Thinking { thinking, signature } => {
                map.serialize_entry("type", "thinking")?;
                map.serialize_entry("thinking", thinking)?;
                map.serialize_entry("signature", signature)?;
            }
            BlockKind::RedactedThinking(data) => {
                map.serialize_entry("type", "redacted_thinking")?;
                map.serialize_entry("data", data)?;
            }
            BlockKind::ToolUse { id, name, input } => {
                map.serialize_entry("type", "tool_use")?;
                map.serialize_entry("id", id)?;
                map.serialize_entry("name", name)?;
                if input.is_object() {
                    map.serialize_entry("input", input)?;
                } else {
                    map.serialize_entry("input", &json!({"value": input}))?;
                }
            }
            BlockKind::ToolResult { tool_use_id, content, is_error } => {
                map.serialize_entry("type", "tool_result")?;
                map.serialize_entry("tool_use_id", tool_use_id)?;
                if !content.is_empty() {
                    map.serialize_entry("content", content)?;
                }
                if *is_error {
                    map.serialize_entry("is_error", &true)?;
                }
            }
            BlockKind::Raw(_) => {}
        }
        if self.cache {
            map.serialize_entry("cache_control", &EPHEMERAL)?;
        }
        map.end()
    }
}

fn wire_body<'a>(config: &AnthropicConfig, request: &StreamRequest<'a>) -> (Head<'a>, Rest<'a>) {
    let cache = request.cache_breakpoints();
    let budget = thinking_budget(request.thinking_level);
    let mut max_tokens = request.max_tokens.unwrap_or(config.default_max_tokens);
    if let Some(budget) = budget {
        // The API requires max_tokens above the thinking budget; keep room for the answer.
        max_tokens = max_tokens.max(budget + 1024);
    }
    let last_tool = request.tools.len().saturating_sub(1);
    let head = Head {
        model: request.model,
        max_tokens,
        stream: true,
        system: (!request.system_prompt.is_empty())
            .then_some([Block { kind: BlockKind::Text(request.system_prompt), cache: cache.system }]),
    };
    let rest = Rest {
        tools: request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| Tool {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
                cache_control: (cache.tools && i == last_tool).then_some(EPHEMERAL),
            })
            .collect(),
        thinking: budget.map(|budget_tokens| Thinking { kind: "enabled", budget_tokens }),
        // The API rejects a temperature together with thinking. Through its shortest decimal
        // form: 0.2f32 must be sent as 0.2, not 0.20000000298023224.
        temperature: request.temperature.filter(|_| budget.is_none()).map(sinew_http::json_f32),
        tool_choice: tool_choice(request.options).filter(|_| !request.tools.is_empty()),
        stop_sequences: &request.options.stop_sequences,
        top_p: request.options.top_p.map(sinew_http::json_f32),
        top_k: request.options.top_k,
        metadata: request.options.user.as_deref().map(|user_id| Metadata { user_id }),
        // Structured outputs: the answer's JSON fits the schema.
        output_config: match &request.options.response_format {
            ResponseFormat::JsonSchema { schema, .. } => {
                Some(json!({"format": {"type": "json_schema", "schema": sinew_core::schema::closed(schema)}}))
            }
            _ => None,
        },
    };
    (head, rest)
}

/// Writes the API's message list after the messages `prefix` holds, each turn followed by a
/// comma: tool results go in user turns, consecutive results share one turn, failed empty answers
/// are left out, the cache breakpoint's message (`cache_at`) ends with `cache_control`. Marks
/// where a later request may resume: after a message that leaves no results turn open, among the
/// first `keep_before` messages (before any a later breakpoint may fall on).
fn write_messages(history: &[&Message], cache_at: Option<usize>, keep_before: usize, prefix: &mut WirePrefix) {
    let start = prefix.messages();
    // A turn of tool results is open: the next result joins it.
    let mut open_results = false;
    for (i, message) in history.iter().copied().enumerate().skip(start) {
        let (role, mut blocks) = match message {
            Message::User(user) => ("user", user.content.iter().filter_map(user_block).collect::<Vec<_>>()),
            Message::Assistant(assistant) => ("assistant", assistant_blocks(assistant)),
            Message::ToolResult(result) => {
                let content: Vec<Block<'_>> = result.content.iter().filter_map(user_block).collect();
                let block = BlockKind::ToolResult {
                    tool_use_id: tool_id(&result.tool_call_id),
                    content,
                    is_error: result.is_error,
                };
                ("user", vec![Block::new(block)])
            }
        };
        if !blocks.is_empty() {
            if cache_at == Some(i)
                && let Some(last) = blocks.last_mut()
            {
                last.cache = true;
            }
            let is_results = matches!(message, Message::ToolResult(_));
            let bytes = prefix.bytes_mut();
            if is_results && open_results {
                // Results of one batch go back together, in one user turn.
                bytes.push(b',');
            } else {
                if open_results {
                    bytes.extend_from_slice(b"]},");
                }
                bytes.extend_from_slice(b"{\"role\":\"");
                bytes.extend_from_slice(role.as_bytes());
                bytes.extend_from_slice(b"\",\"content\":[");
            }
            for (n, block) in blocks.iter().enumerate() {
                if n > 0 {
                    bytes.push(b',');
                }
                // A block always serializes: its keys are strings, its numbers finite.
                let _ = serde_json::to_writer(&mut *bytes, block);
            }
            open_results = is_results;
            if !is_results {
                bytes.extend_from_slice(b"]},");
            }
        }
        if !open_results && i < keep_before {
            prefix.mark(i + 1);
        }
    }
    if open_results {
        prefix.bytes_mut().extend_from_slice(b"]},");
    }
}

fn user_block(content: &Content) -> Option<Block<'_>> {
    let kind = match content {
        Content::Text { text, .. } if !text.is_empty() => BlockKind::Text(text),
        Content::Image { data, mime_type } => BlockKind::Image(Source::Base64 { media_type: mime_type, data }),
        Content::ImageUrl { url, .. } => BlockKind::Image(Source::Url { url }),
        Content::Document { data, mime_type, name } if mime_type == TEXT => {
            // `check_inputs` refused text that is not base64 UTF-8.
            let text = decode_text(data).unwrap_or_default();
            BlockKind::Document(Source::Text { media_type: TEXT, data: text }, name.as_deref())
        }
        Content::Document { data, mime_type, name } => {
            BlockKind::Document(Source::Base64 { media_type: mime_type, data }, name.as_deref())
        }
        Content::DocumentUrl { url, name, .. } => BlockKind::Document(Source::Url { url }, name.as_deref()),
        _ => return None,
    };
    Some(Block::new(kind))
}

const PDF: &str = "application/pdf";
const TEXT: &str = "text/plain";

/// A plain-text document's text.
fn decode_text(data: &str) -> Option<String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).ok()?;
    String::from_utf8(bytes).ok()
}

/// Refuses what Anthropic Messages cannot take in a user message or tool result: audio, and
/// documents other than PDF (base64 or URL) and plain text (base64 UTF-8).
pub fn check_inputs(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    check_inputs_from(request, 0)
}

fn check_inputs_from(request: &StreamRequest<'_>, first: usize) -> Result<(), ProviderError> {
    request.check_inputs_from(first, "Anthropic Messages", |content| match content {
        Content::Audio { .. } => Err("the Messages API takes no audio".into()),
        Content::Document { mime_type, .. } | Content::DocumentUrl { mime_type, .. }
            if mime_type != PDF && mime_type != TEXT =>
        {
            Err(format!("documents are PDF or plain text, not {mime_type}"))
        }
        Content::DocumentUrl { mime_type, .. } if mime_type == TEXT => {
            Err("a plain-text document goes as data, not a URL".into())
        }
        Content::Document { data, mime_type, .. } if mime_type == TEXT && decode_text(data).is_none() => {
            Err("a plain-text document must be base64 of UTF-8 text".into())
        }
        _ => Ok(()),
    })
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Block<'_>> {
    let ours = message.provider == PROVIDER_ID;
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    message
        .content
        .iter()
        .filter_map(|content| match content {
            Content::Text { text, .. } if !text.is_empty() => Some(Block::new(BlockKind::Text(text))),
            // Signatures are only valid for the service that issued them; thinking cut short has none.
            Content::Thinking { signature: Some(data), redacted: true, .. } if ours => {
                Some(Block::new(BlockKind::RedactedThinking(data)))
            }
            Content::Thinking { thinking, signature: Some(signature), redacted: false, .. } if ours && !failed => {
                Some(Block::new(BlockKind::Thinking { thinking, signature }))
            }
            Content::ToolCall { id, name, arguments, .. } => {
                Some(Block::new(BlockKind::ToolUse { id: tool_id(id), name, input: arguments }))
            }
            // A server tool's blocks of an answer cut short may be incomplete.
            Content::Opaque { provider, data } if provider == PROVIDER_ID && !failed => {
                Some(Block::new(BlockKind::Raw(data)))
            }
            _ => None,
        })
        .collect()
}

/// Tool ids must match `^[a-zA-Z0-9_-]+$`; ids made by other providers are mapped the same way
/// for the call and its result.
fn tool_id(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

#[cfg(test)]
mod tests;
