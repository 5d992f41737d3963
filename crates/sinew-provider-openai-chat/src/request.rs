//! The `/chat/completions` request, built from a [`StreamRequest`] (pure: no I/O), with the knobs
//! compatible servers need.

use bytes::Bytes;
use std::borrow::Cow;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Value, json};
use sinew_core::{
    AssistantMessage, Content, Message, ProviderError, ResponseFormat, StopReason, StreamRequest, ThinkingLevel,
    ToolChoice, WirePrefix,
};
use sinew_http::{Auth, HttpRequest, url_with_query};

/// The name of the output-token limit: OpenAI wants `max_completion_tokens` (and rejects
/// `max_tokens` for reasoning models); most compatible servers only know `max_tokens`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `"max_tokens"`, the field most compatible servers know.
    MaxTokens,
    /// `"max_completion_tokens"`, OpenAI's.
    MaxCompletionTokens,
}

/// The name a sampling seed is sent under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedField {
    /// `"seed"`, OpenAI's and most compatible servers'.
    Seed,
    /// `"random_seed"`, Mistral's.
    RandomSeed,
}

/// The role of the system prompt: `developer` is what OpenAI's reasoning models expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemRole {
    /// `"role": "system"`, understood everywhere.
    System,
    /// `"role": "developer"`, for OpenAI's reasoning models.
    Developer,
}

/// How a thinking level is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReasoningParam {
    /// Not sent: the server has no such knob (its models think or not by themselves).
    None,
    /// `"reasoning_effort": "low"` (OpenAI, xAI, Groq, vLLM).
    Effort,
    /// `"reasoning": {"effort": "low"}` (OpenRouter).
    OpenRouter,
}

/// Where and how to call a Chat Completions server. `Debug` hides the credentials and the
/// values of extra headers and query parameters (see [`sinew_http::Redacted`]).
#[derive(Clone)]
pub struct OpenAiChatConfig {
    /// Stamped on messages (`"openai"`, `"groq"`, `"ollama"`...); reasoning is sent back only to
    /// the provider that produced it.
    pub provider_id: String,
    /// Up to and including the version segment: `https://api.openai.com/v1`.
    pub base_url: String,
    /// Usually a bearer token; Azure's `api-key` header; none for a local server.
    pub auth: Auth,
    /// Query parameters on every request (Azure's `api-version`).
    pub query: Vec<(String, String)>,
    /// Sent with every request (OpenRouter's `HTTP-Referer` and `X-Title`, for instance).
    pub extra_headers: Vec<(String, String)>,
    /// The name the output-token limit is sent under.
    pub max_tokens_field: MaxTokensField,
    /// The name a sampling seed is sent under.
    pub seed_field: SeedField,
    /// The role the system prompt is sent with.
    pub system_role: SystemRole,
    /// How the request's thinking level is sent.
    pub reasoning: ReasoningParam,
    /// `stream_options.include_usage` (Mistral rejects the field).
    pub include_usage: bool,
    /// The assistant-message field that carries earlier reasoning back, for servers that want it
    /// (e.g. `reasoning_content`); `None` drops it.
    pub reasoning_in_history: Option<String>,
    /// Sends the request's cache key as `prompt_cache_key`, which OpenAI routes by to hit its
    /// prompt cache (on for OpenAI only: other servers may refuse the field).
    pub prompt_cache_key: bool,
}

impl std::fmt::Debug for OpenAiChatConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChatConfig")
            .field("provider_id", &self.provider_id)
            .field("base_url", &sinew_http::redact_url(&self.base_url))
            .field("auth", &self.auth)
            .field("query", &sinew_http::Redacted::query(&self.query))
            .field("extra_headers", &sinew_http::Redacted::headers(&self.extra_headers))
            .field("max_tokens_field", &self.max_tokens_field)
            .field("seed_field", &self.seed_field)
            .field("system_role", &self.system_role)
            .field("reasoning", &self.reasoning)
            .field("include_usage", &self.include_usage)
            .field("reasoning_in_history", &self.reasoning_in_history)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .finish()
    }
}

impl OpenAiChatConfig {
    /// OpenAI itself.
    pub fn openai(api_key: impl Into<String>) -> Self {
        OpenAiChatConfig {
            provider_id: "openai".into(),
            base_url: "https://api.openai.com/v1".into(),
            auth: Auth::Bearer(api_key.into()),
            query: Vec::new(),
            extra_headers: Vec::new(),
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            seed_field: SeedField::Seed,
            system_role: SystemRole::System,
            reasoning: ReasoningParam::Effort,
            include_usage: true,
            reasoning_in_history: None,
            prompt_cache_key: true,
        }
    }

    /// Any compatible server at `base_url` (up to `/v1`), with the most widely accepted settings:
    /// `max_tokens`, no reasoning parameter, usage requested.
    pub fn compatible(provider_id: impl Into<String>, base_url: impl Into<String>, auth: Auth) -> Self {
        OpenAiChatConfig {
            provider_id: provider_id.into(),
            base_url: base_url.into(),
            auth,
            max_tokens_field: MaxTokensField::MaxTokens,
            reasoning: ReasoningParam::None,
            prompt_cache_key: false,
            ..OpenAiChatConfig::openai("")
        }
    }

    /// A local Ollama (`http://localhost:11434/v1`).
    pub fn ollama() -> Self {
        OpenAiChatConfig::compatible("ollama", "http://localhost:11434/v1", Auth::None)
    }

    /// A vLLM server (`reasoning_content` streamed, `reasoning_effort` understood).
    pub fn vllm(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        let auth = api_key.map_or(Auth::None, Auth::Bearer);
        OpenAiChatConfig { reasoning: ReasoningParam::Effort, ..OpenAiChatConfig::compatible("vllm", base_url, auth) }
    }

    /// A llama.cpp server (`llama-server`).
    pub fn llama_cpp(base_url: impl Into<String>) -> Self {
        OpenAiChatConfig::compatible("llama.cpp", base_url, Auth::None)
    }

    /// DeepSeek (reasoning arrives as `reasoning_content` and must not be sent back).
    pub fn deepseek(api_key: impl Into<String>) -> Self {
        OpenAiChatConfig::compatible("deepseek", "https://api.deepseek.com/v1", Auth::Bearer(api_key.into()))
    }

    /// Groq.
    pub fn groq(api_key: impl Into<String>) -> Self {
        OpenAiChatConfig {
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            seed_field: SeedField::Seed,
            ..OpenAiChatConfig::compatible("groq", "https://api.groq.com/openai/v1", Auth::Bearer(api_key.into()))
        }
    }

    /// OpenRouter (reasoning asked for as `reasoning.effort`).
    pub fn openrouter(api_key: impl Into<String>) -> Self {
        OpenAiChatConfig {
            reasoning: ReasoningParam::OpenRouter,
            ..OpenAiChatConfig::compatible("openrouter", "https://openrouter.ai/api/v1", Auth::Bearer(api_key.into()))
        }
    }

    /// xAI (Grok).
    pub fn xai(api_key: impl Into<String>) -> Self {
        OpenAiChatConfig {
            reasoning: ReasoningParam::Effort,
            ..OpenAiChatConfig::compatible("xai", "https://api.x.ai/v1", Auth::Bearer(api_key.into()))
        }
    }

    /// Mistral (strict about unknown fields: no `stream_options`; the seed is `random_seed`).
    pub fn mistral(api_key: impl Into<String>) -> Self {
        OpenAiChatConfig {
            include_usage: false,
            seed_field: SeedField::RandomSeed,
            ..OpenAiChatConfig::compatible("mistral", "https://api.mistral.ai/v1", Auth::Bearer(api_key.into()))
        }
    }
}

/// The headers and JSON body of a streaming `/chat/completions` call, every message written (the
/// provider resumes from what [`StreamRequest::history`] kept, and checks the inputs first).
pub fn build_request(config: &OpenAiChatConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(config)));
    http_request(config, request, body)
}

/// [`build_request`] for a request whose inputs are checked first ([`check_inputs`]): those of
/// the messages written again, the others were checked when they were first written.
pub(crate) fn checked_request(
    config: &OpenAiChatConfig,
    request: &StreamRequest<'_>,
) -> Result<HttpRequest, ProviderError> {
    let body = request.resume_messages(
        message_format(config),
        request.messages.len(),
        |first| check_inputs_from(request, first),
        |prefix| body_bytes(config, request, prefix),
    )?;
    Ok(http_request(config, request, body))
}

fn http_request(config: &OpenAiChatConfig, request: &StreamRequest<'_>, body: Bytes) -> HttpRequest {
    if request.cache_config.has_manual_breakpoints() {
        tracing::debug!(
            service = "Chat Completions",
            "the service caches by itself: the cache breakpoints are ignored"
        );
    }
    let url = url_with_query(&config.base_url, "/chat/completions", &config.query);
    let mut http = HttpRequest::post_json(url, body).header("accept", "text/event-stream");
    config.auth.apply(&mut http);
    http.headers.extend(config.extra_headers.iter().cloned());
    http
}

/// The JSON body (exposed for snapshot tests and hosts that bring their own transport), read
/// back from the bytes [`build_request`] sends (see [`sinew_http::json::read_body`]).
pub fn body(config: &OpenAiChatConfig, request: &StreamRequest<'_>) -> Value {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(config)));
    sinew_http::json::read_body(&body)
}

/// The body, written straight from borrowed wire structs (the history is resent every turn, so no
/// `Value` tree is built for it), its messages resumed after those `prefix` holds: a long
/// conversation is not serialized again whole. Returns the body and the prefix of this request's
/// messages, for the history's cache.
fn body_bytes(config: &OpenAiChatConfig, request: &StreamRequest<'_>, mut prefix: WirePrefix) -> (Bytes, WirePrefix) {
    // Every field but the model and the messages; it always holds `"stream"`.
    let rest = serde_json::to_vec(&wire_body(config, request)).unwrap_or_default();
    let model = serde_json::to_vec(&json!({"model": request.model})).unwrap_or_default();
    // The system message opens the array, before the history.
    let mut opening = sinew_http::json::array_opening(&model, "messages");
    if !request.system_prompt.is_empty() {
        let role = match config.system_role {
            SystemRole::System => "system",
            SystemRole::Developer => "developer",
        };
        write_json(&mut opening, &WireMessage::new(role, WireContent::Text(Cow::Borrowed(request.system_prompt))));
        opening.push(b',');
    }
    prefix.open(&opening);
    write_messages(config, request.messages, &mut prefix);
    let body = prefix.close(&sinew_http::json::array_closing(&rest));
    (body, prefix)
}

/// `value` as JSON at the end of `out`. The wire structs always serialize: their keys are
/// strings, their numbers finite.
fn write_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    let _ = serde_json::to_writer(out, value);
}

/// What decides the bytes of a history message here: this builder, and the settings it reads.
fn message_format(config: &OpenAiChatConfig) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    ("openai-chat/1", &config.provider_id, &config.reasoning_in_history).hash(&mut hasher);
    hasher.finish()
}

/// The body's fields after `model` and `messages`, which [`body_bytes`] writes itself.
#[derive(Serialize)]
struct Body<'a> {
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    random_seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

/// The longest `prompt_cache_key` OpenAI takes.
const MAX_CACHE_KEY: usize = 64;

/// The request options Chat Completions takes (`top_k` is refused: OpenAI has none).
pub const SUPPORTED_OPTIONS: &[&str] = &[
    "tool_choice",
    "parallel_tool_calls",
    "stop_sequences",
    "top_p",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "user",
    "response_format",
];

/// Refuses options Chat Completions has no equivalent for.
pub fn check_options(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    request.check_options("Chat Completions", SUPPORTED_OPTIONS)
}

/// `tool_choice`: `"auto"`, `"none"`, `"required"`, or one function.
fn tool_choice(choice: &ToolChoice) -> Option<Value> {
    match choice {
        ToolChoice::None => Some(json!("none")),
        ToolChoice::Required => Some(json!("required")),
        ToolChoice::Tool { name } => Some(json!({"type": "function", "function": {"name": name}})),
        _ => None,
    }
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Message content: a string, parts, or `null` (an assistant turn with only tool calls).
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
    Null(Option<()>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl<'a> },
    File { file: WireFile<'a> },
    InputAudio { input_audio: InputAudio<'a> },
}

#[derive(Serialize)]
struct ImageUrl<'a> {
    /// The URL, or the image as a `data:` URL.
    url: Cow<'a, str>,
}

#[derive(Serialize)]
struct WireFile<'a> {
    filename: &'a str,
    /// The file as a `data:` URL.
    file_data: String,
}

#[derive(Serialize)]
struct InputAudio<'a> {
    data: &'a str,
    format: &'static str,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireCallFunction<'a>,
}

#[derive(Serialize)]
struct WireCallFunction<'a> {
    name: &'a str,
    arguments: String,
}

struct WireMessage<'a> {
    role: &'static str,
    content: WireContent<'a>,
    tool_calls: Vec<WireCall<'a>>,
    tool_call_id: Option<&'a str>,
    /// Earlier reasoning, under the configured field name.
    reasoning: Option<(&'a str, String)>,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", self.role)?;
        map.serialize_entry("content", &self.content)?;
        if !self.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &self.tool_calls)?;
        }
        if let Some(id) = self.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        if let Some((field, text)) = &self.reasoning {
            map.serialize_entry(field, text)?;
        }
        map.end()
    }
}

impl<'a> WireMessage<'a> {
    fn new(role: &'static str, content: WireContent<'a>) -> Self {
        WireMessage { role, content, tool_calls: Vec::new(), tool_call_id: None, reasoning: None }
    }
}

fn wire_body<'a>(config: &'a OpenAiChatConfig, request: &StreamRequest<'a>) -> Body<'a> {
    let (max_tokens, max_completion_tokens) = match config.max_tokens_field {
        MaxTokensField::MaxTokens => (request.max_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, request.max_tokens),
    };
    let effort = effort(request.thinking_level);
    let options = request.options;
    Body {
        stream: true,
        stream_options: config.include_usage.then(|| json!({"include_usage": true})),
        tools: request
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction { name: &t.name, description: &t.description, parameters: &t.parameters },
            })
            .collect(),
        max_tokens,
        max_completion_tokens,
        temperature: request.temperature.map(sinew_http::json_f32),
        reasoning_effort: effort.filter(|_| config.reasoning == ReasoningParam::Effort),
        reasoning: effort.filter(|_| config.reasoning == ReasoningParam::OpenRouter).map(|e| json!({"effort": e})),
        // Both are refused by the API when the request has no tools.
        tool_choice: tool_choice(&options.tool_choice).filter(|_| !request.tools.is_empty()),
        parallel_tool_calls: options.parallel_tool_calls.filter(|_| !request.tools.is_empty()),
        stop: &options.stop_sequences,
        top_p: options.top_p.map(sinew_http::json_f32),
        seed: options.seed.filter(|_| config.seed_field == SeedField::Seed),
        random_seed: options.seed.filter(|_| config.seed_field == SeedField::RandomSeed),
        presence_penalty: options.presence_penalty.map(sinew_http::json_f32),
        frequency_penalty: options.frequency_penalty.map(sinew_http::json_f32),
        user: options.user.as_deref(),
        prompt_cache_key: request.active_cache_key_within(MAX_CACHE_KEY).filter(|_| config.prompt_cache_key),
        response_format: match &options.response_format {
            ResponseFormat::JsonObject => Some(json!({"type": "json_object"})),
            ResponseFormat::JsonSchema { name, schema, strict } => {
                // Strict mode takes closed objects with every property required.
                let schema = if *strict { sinew_core::schema::strict(schema) } else { schema.clone() };
                Some(json!({"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": strict}}))
            }
            _ => None,
        },
    }
}

/// The effort a thinking level asks Chat Completions servers for (REQ-130): `Minimal` and `Low`
/// are `"low"`, since many of them (o-series models, Groq, xAI) take only low, medium and high;
/// the Responses API, where `"minimal"` exists, keeps it.
fn effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Minimal => Some("low"),
        level => level.effort(),
    }
}

/// Writes the history's messages after those `prefix` holds, each followed by a comma, and marks
/// where a later request may resume: after every message but a tool result whose attachments
/// still wait for the user turn that follows the batch.
fn write_messages(config: &OpenAiChatConfig, messages: &[&Message], prefix: &mut WirePrefix) {
    let start = prefix.messages();
    // Images returned by tools cannot go in `tool` messages; they follow the batch as a user turn.
    let mut tool_images: Vec<Part<'_>> = Vec::new();
    for (index, message) in messages.iter().copied().enumerate().skip(start) {
        if !matches!(message, Message::ToolResult(_)) && !tool_images.is_empty() {
            write_message(prefix, &images_turn(&mut tool_images));
        }
        match message {
            Message::User(user) => {
                if let Some(content) = user_content(&user.content) {
                    write_message(prefix, &WireMessage::new("user", content));
                }
            }
            Message::Assistant(assistant) => {
                if let Some(turn) = assistant_turn(config, assistant) {
                    write_message(prefix, &turn);
                }
            }
            Message::ToolResult(result) => {
                tool_images.extend(result.content.iter().filter_map(attachment_part));
                let text = text_of(&result.content);
                let text = if text.is_empty() { Cow::Borrowed("(no output)") } else { text };
                let mut turn = WireMessage::new("tool", WireContent::Text(text));
                turn.tool_call_id = Some(&result.tool_call_id);
                write_message(prefix, &turn);
            }
        }
        if tool_images.is_empty() {
            prefix.mark(index + 1);
        }
    }
    if !tool_images.is_empty() {
        write_message(prefix, &images_turn(&mut tool_images));
    }
}

fn write_message(prefix: &mut WirePrefix, message: &WireMessage<'_>) {
    let bytes = prefix.bytes_mut();
    write_json(bytes, message);
    bytes.push(b',');
}

/// The text of `content`, borrowed when it is one block.
fn text_of(content: &[Content]) -> Cow<'_, str> {
    let mut texts = content.iter().filter_map(Content::as_text).filter(|t| !t.is_empty());
    match (texts.next(), texts.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(only), None) => Cow::Borrowed(only),
        _ => Cow::Owned(sinew_core::join_text(content, "\n")),
    }
}

fn images_turn<'a>(images: &mut Vec<Part<'a>>) -> WireMessage<'a> {
    let mut parts = vec![Part::Text { text: "Files returned by the tools above:" }];
    parts.append(images);
    WireMessage::new("user", WireContent::Parts(parts))
}

/// An image, document or audio block as a content part (a tool message carries only text, so
/// those of tool results go in a user message after the batch).
fn attachment_part(content: &Content) -> Option<Part<'_>> {
    Some(match content {
        Content::Image { data, mime_type } => {
            Part::ImageUrl { image_url: ImageUrl { url: Cow::Owned(format!("data:{mime_type};base64,{data}")) } }
        }
        Content::ImageUrl { url, .. } => Part::ImageUrl { image_url: ImageUrl { url: Cow::Borrowed(url) } },
        Content::Document { data, mime_type, name } => Part::File {
            file: WireFile {
                filename: name.as_deref().unwrap_or("document"),
                file_data: format!("data:{mime_type};base64,{data}"),
            },
        },
        Content::Audio { data, mime_type } => {
            Part::InputAudio { input_audio: InputAudio { data, format: audio_format(mime_type)? } }
        }
        _ => return None,
    })
}

/// The `input_audio` format of a media type: Chat Completions takes WAV and MP3.
fn audio_format(mime_type: &str) -> Option<&'static str> {
    match mime_type {
        "audio/wav" | "audio/x-wav" | "audio/wave" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    }
}

/// Refuses what Chat Completions cannot carry in a user message or tool result: documents by
/// URL or other than PDF (its `file` part takes PDFs; send text as text), and audio other than
/// WAV and MP3.
pub fn check_inputs(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    check_inputs_from(request, 0)
}

fn check_inputs_from(request: &StreamRequest<'_>, first: usize) -> Result<(), ProviderError> {
    request.check_inputs_from(first, "Chat Completions", |content| match content {
        Content::DocumentUrl { .. } => Err("documents go as data, not URLs".into()),
        Content::Document { mime_type, .. } if mime_type != "application/pdf" => {
            Err(format!("documents are PDF, not {mime_type} (send text as text)"))
        }
        Content::Audio { mime_type, .. } if audio_format(mime_type).is_none() => {
            Err(format!("audio is WAV or MP3, not {mime_type}"))
        }
        _ => Ok(()),
    })
}

/// A plain string when the message is only text, else an array of parts; `None` when empty.
fn user_content(content: &[Content]) -> Option<WireContent<'_>> {
    if content.iter().all(|c| matches!(c, Content::Text { .. })) {
        let text = text_of(content);
        return (!text.is_empty()).then_some(WireContent::Text(text));
    }
    let parts: Vec<Part<'_>> = content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text, .. } if !text.is_empty() => Some(Part::Text { text }),
            other => attachment_part(other),
        })
        .collect();
    (!parts.is_empty()).then_some(WireContent::Parts(parts))
}

fn assistant_turn<'a>(config: &'a OpenAiChatConfig, message: &'a AssistantMessage) -> Option<WireMessage<'a>> {
    let text = text_of(&message.content);
    let calls: Vec<WireCall<'a>> = message
        .tool_calls()
        .map(|c| WireCall {
            id: c.id,
            kind: "function",
            function: WireCallFunction { name: c.name, arguments: sinew_http::json::text(c.arguments) },
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        // A failed or empty answer: servers reject an assistant turn with nothing in it.
        return None;
    }
    let content = if text.is_empty() { WireContent::Null(None) } else { WireContent::Text(text) };
    let mut turn = WireMessage::new("assistant", content);
    turn.tool_calls = calls;
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    if let Some(field) = &config.reasoning_in_history
        && message.provider == config.provider_id
        && !failed
    {
        let thinking: String = message
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Thinking { thinking, redacted: false, .. } => Some(thinking.as_str()),
                _ => None,
            })
            .collect();
        if !thinking.is_empty() {
            turn.reasoning = Some((field.as_str(), thinking));
        }
    }
    Some(turn)
}

#[cfg(test)]
mod tests;
