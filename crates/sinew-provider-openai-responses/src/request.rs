//! The `/responses` request, built from a [`StreamRequest`] (pure: no I/O).
//!
//! Stateless by design (`store: false`): the whole history is sent each turn, with the
//! provider's own reasoning items (id, summary, `encrypted_content`) and item ids carried back
//! so reasoning models keep their chain of thought across tool calls.

use bytes::Bytes;
use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Value, json};
use sinew_core::{
    AssistantMessage, Content, Message, ProviderError, ResponseFormat, StopReason, StreamRequest, ToolChoice,
    WirePrefix,
};
use sinew_http::{Auth, HttpRequest, url_with_query};

/// Where and how to call a Responses endpoint: OpenAI, Azure OpenAI, or a compatible server.
#[derive(Clone)]
pub struct ResponsesConfig {
    /// `"openai_responses"` or `"azure_openai"`; reasoning and item ids go back only to the
    /// provider that produced them.
    pub provider_id: String,
    /// Up to the version segment: `https://api.openai.com/v1`.
    pub base_url: String,
    /// A bearer token for OpenAI; Azure's `api-key` header.
    pub auth: Auth,
    /// Query parameters on every request (Azure's `api-version`).
    pub query: Vec<(String, String)>,
    /// Sent with every request (after the protocol's own headers).
    pub extra_headers: Vec<(String, String)>,
    /// Reasoning summaries asked for with a thinking level (`"auto"`, `"concise"`, `"detailed"`).
    pub reasoning_summary: Option<String>,
    /// Sends the request's cache key as `prompt_cache_key`, which OpenAI routes by to hit its
    /// prompt cache (on for OpenAI, off for Azure).
    pub prompt_cache_key: bool,
}

/// `Debug` hides the credentials and the values of extra headers and query parameters (see
/// [`sinew_http::Redacted`]).
impl std::fmt::Debug for ResponsesConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponsesConfig")
            .field("provider_id", &self.provider_id)
            .field("base_url", &sinew_http::redact_url(&self.base_url))
            .field("auth", &self.auth)
            .field("query", &sinew_http::Redacted::query(&self.query))
            .field("extra_headers", &sinew_http::Redacted::headers(&self.extra_headers))
            .field("reasoning_summary", &self.reasoning_summary)
            .field("prompt_cache_key", &self.prompt_cache_key)
            .finish()
    }
}

impl ResponsesConfig {
    /// OpenAI's Responses API.
    pub fn openai(api_key: impl Into<String>) -> Self {
        ResponsesConfig {
            provider_id: "openai_responses".into(),
            base_url: "https://api.openai.com/v1".into(),
            auth: Auth::Bearer(api_key.into()),
            query: Vec::new(),
            extra_headers: Vec::new(),
            reasoning_summary: Some("auto".into()),
            prompt_cache_key: true,
        }
    }

    /// Azure OpenAI's v1 API of `resource` (`https://{resource}.openai.azure.com/openai/v1`),
    /// with its `api-key` header. The request's model is the deployment name.
    pub fn azure(resource: &str, api_key: impl Into<String>) -> Self {
        ResponsesConfig {
            provider_id: "azure_openai".into(),
            base_url: format!("https://{resource}.openai.azure.com/openai/v1"),
            auth: Auth::Header { name: "api-key".into(), value: api_key.into() },
            prompt_cache_key: false,
            ..ResponsesConfig::openai("")
        }
    }

    /// Azure OpenAI at an explicit endpoint (`https://host/openai`) with a dated `api-version`,
    /// for resources not on the v1 API yet.
    pub fn azure_versioned(endpoint: &str, api_version: &str, api_key: impl Into<String>) -> Self {
        ResponsesConfig {
            base_url: endpoint.trim_end_matches('/').to_owned(),
            query: vec![("api-version".into(), api_version.into())],
            ..ResponsesConfig::azure("", api_key)
        }
    }
}

/// The headers and JSON body of a streaming `/responses` call, every message written (the
/// provider resumes from what [`StreamRequest::history`] kept, and checks the inputs first).
pub fn build_request(config: &ResponsesConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(config)));
    http_request(config, request, body)
}

/// [`build_request`] for a request whose inputs are checked first ([`check_inputs`]): those of
/// the messages written again, the others were checked when they were first written.
pub(crate) fn checked_request(
    config: &ResponsesConfig,
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

fn http_request(config: &ResponsesConfig, request: &StreamRequest<'_>, body: Bytes) -> HttpRequest {
    if request.cache_config.has_manual_breakpoints() {
        tracing::debug!(
            service = "The Responses API",
            "the service caches by itself: the cache breakpoints are ignored"
        );
    }
    let url = url_with_query(&config.base_url, "/responses", &config.query);
    let mut http = HttpRequest::post_json(url, body).header("accept", "text/event-stream");
    config.auth.apply(&mut http);
    http.headers.extend(config.extra_headers.iter().cloned());
    http
}

/// What decides the bytes of a history message here: this builder, and the provider id (items
/// go back with their ids only to the service that made them).
fn message_format(config: &ResponsesConfig) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    ("openai-responses/1", &config.provider_id).hash(&mut hasher);
    hasher.finish()
}

/// The body, written straight from borrowed wire structs (the history is resent every turn, so no
/// `Value` tree is built for it), `input` resumed after the messages `prefix` holds (see
/// [`sinew_core::wire`]). Returns the body and the prefix of this request's messages.
fn body_bytes(config: &ResponsesConfig, request: &StreamRequest<'_>, mut prefix: WirePrefix) -> (Bytes, WirePrefix) {
    let head = Head { model: request.model, instructions: Some(request.system_prompt).filter(|s| !s.is_empty()) };
    prefix.open(&sinew_http::json::array_opening(&sinew_http::json::bytes(&head), "input"));
    write_input(config, request.messages, &mut prefix);
    let rest = sinew_http::json::bytes(&wire_body(config, request));
    let body = prefix.close(&sinew_http::json::array_closing(&rest));
    (body, prefix)
}

/// The request options the Responses API takes; it has no stop sequences, `top_k`, seed or
/// penalties.
pub const SUPPORTED_OPTIONS: &[&str] = &["tool_choice", "parallel_tool_calls", "top_p", "user", "response_format"];

/// Refuses options the Responses API has no equivalent for.
pub fn check_options(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    request.check_options("The Responses API", SUPPORTED_OPTIONS)
}

/// The JSON body (exposed for snapshot tests and hosts that bring their own transport), read
/// back from the bytes [`build_request`] sends (see [`sinew_http::json::read_body`]).
pub fn body(config: &ResponsesConfig, request: &StreamRequest<'_>) -> Value {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(config)));
    sinew_http::json::read_body(&body)
}

/// The body's fields before `input`.
#[derive(Serialize)]
struct Head<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
}

/// The body's fields after `input`.
#[derive(Serialize)]
struct Body<'a> {
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning<'a>>,
    #[serde(skip_serializing_if = "<[&str]>::is_empty")]
    include: &'static [&'static str],
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
struct Reasoning<'a> {
    effort: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

fn wire_body<'a>(config: &'a ResponsesConfig, request: &StreamRequest<'a>) -> Body<'a> {
    let options = request.options;
    let has_tools = !request.tools.is_empty();
    let effort = request.thinking_level.effort();
    Body {
        stream: true,
        store: false,
        tools: request
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
                strict: false,
            })
            .collect(),
        // Both are refused by the API when the request has no tools.
        tool_choice: match &options.tool_choice {
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool { name } => Some(json!({"type": "function", "name": name})),
            _ => None,
        }
        .filter(|_| has_tools),
        parallel_tool_calls: options.parallel_tool_calls.filter(|_| has_tools),
        top_p: options.top_p.map(sinew_http::json_f32),
        user: options.user.as_deref(),
        // OpenAI takes 64 bytes at most.
        prompt_cache_key: request.active_cache_key_within(64).filter(|_| config.prompt_cache_key),
        text: match &options.response_format {
            ResponseFormat::JsonObject => Some(json!({"format": {"type": "json_object"}})),
            ResponseFormat::JsonSchema { name, schema, strict } => {
                // Strict mode takes closed objects with every property required.
                let schema = if *strict { sinew_core::schema::strict(schema) } else { schema.clone() };
                Some(json!({"format": {"type": "json_schema", "name": name, "schema": schema, "strict": strict}}))
            }
            _ => None,
        },
        max_output_tokens: request.max_tokens,
        temperature: request.temperature.map(sinew_http::json_f32),
        reasoning: effort.map(|effort| Reasoning { effort, summary: config.reasoning_summary.as_deref() }),
        // Without storage, reasoning comes back encrypted so the next turn can carry it.
        include: if effort.is_some() { &["reasoning.encrypted_content"] } else { &[] },
    }
}

/// An input item.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    User {
        role: &'static str,
        content: Vec<InputPart<'a>>,
    },
    Typed(TypedItem<'a>),
    /// An item of the service's own, as it sent it.
    Opaque(&'a Value),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TypedItem<'a> {
    Reasoning {
        id: &'a str,
        summary: Vec<SummaryText<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
    },
    Message {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        role: &'static str,
        content: [OutputText<'a>; 1],
        status: &'static str,
    },
    FunctionCall {
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a str>,
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Cow<'a, str>,
    },
}

#[derive(Serialize)]
struct SummaryText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct OutputText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    annotations: [(); 0],
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum InputPart<'a> {
    #[serde(rename = "input_text")]
    Text { text: &'a str },
    #[serde(rename = "input_image")]
    Image { image_url: Cow<'a, str> },
    /// A file sent whole, as a `data:` URL.
    #[serde(rename = "input_file")]
    FileData { filename: &'a str, file_data: String },
    #[serde(rename = "input_file")]
    FileUrl { file_url: &'a str },
}

/// Writes the input items of the history's messages after those `prefix` holds, each followed by
/// a comma, and marks where a later request may resume: after every message but a tool result
/// whose attachments still wait for the user message that follows the batch.
fn write_input(config: &ResponsesConfig, history: &[&Message], prefix: &mut WirePrefix) {
    // Images returned by tools cannot go in `function_call_output`; they follow the batch.
    let mut tool_images: Vec<InputPart<'_>> = Vec::new();
    let start = prefix.messages();
    for (index, message) in history.iter().copied().enumerate().skip(start) {
        if !matches!(message, Message::ToolResult(_)) && !tool_images.is_empty() {
            write_item(prefix, &images_turn(&mut tool_images));
        }
        match message {
            Message::User(user) => {
                let content: Vec<InputPart<'_>> = user.content.iter().filter_map(input_part).collect();
                if !content.is_empty() {
                    write_item(prefix, &Item::User { role: "user", content });
                }
            }
            Message::Assistant(assistant) => assistant_items(config, assistant, prefix),
            Message::ToolResult(result) => {
                let text = sinew_core::joined_text(&result.content, "\n");
                let output = if text.is_empty() { Cow::Borrowed("(no output)") } else { text };
                // The output is text; images and files follow the batch in a user message.
                tool_images.extend(
                    result.content.iter().filter(|c| !matches!(c, Content::Text { .. })).filter_map(input_part),
                );
                write_item(
                    prefix,
                    &Item::Typed(TypedItem::FunctionCallOutput { call_id: &result.tool_call_id, output }),
                );
            }
        }
        if tool_images.is_empty() {
            prefix.mark(index + 1);
        }
    }
    if !tool_images.is_empty() {
        write_item(prefix, &images_turn(&mut tool_images));
    }
}

fn write_item(prefix: &mut WirePrefix, item: &Item<'_>) {
    let bytes = prefix.bytes_mut();
    sinew_http::json::write(bytes, item);
    bytes.push(b',');
}

fn images_turn<'a>(images: &mut Vec<InputPart<'a>>) -> Item<'a> {
    let mut content = vec![InputPart::Text { text: "Files returned by the tools above:" }];
    content.append(images);
    Item::User { role: "user", content }
}

fn input_part(content: &Content) -> Option<InputPart<'_>> {
    match content {
        Content::Text { text, .. } if !text.is_empty() => Some(InputPart::Text { text }),
        Content::Image { data, mime_type } => {
            Some(InputPart::Image { image_url: Cow::Owned(format!("data:{mime_type};base64,{data}")) })
        }
        Content::ImageUrl { url, .. } => Some(InputPart::Image { image_url: Cow::Borrowed(url) }),
        Content::Document { data, mime_type, name } => Some(InputPart::FileData {
            filename: name.as_deref().unwrap_or("document"),
            file_data: format!("data:{mime_type};base64,{data}"),
        }),
        Content::DocumentUrl { url, .. } => Some(InputPart::FileUrl { file_url: url }),
        _ => None,
    }
}

/// Refuses what the Responses API cannot carry in a user message or tool result: audio.
pub fn check_inputs(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    check_inputs_from(request, 0)
}

fn check_inputs_from(request: &StreamRequest<'_>, first: usize) -> Result<(), ProviderError> {
    request.check_inputs_from(first, "The Responses API", |content| match content {
        Content::Audio { .. } => Err("it takes no audio input".into()),
        _ => Ok(()),
    })
}

fn assistant_items(config: &ResponsesConfig, message: &AssistantMessage, prefix: &mut WirePrefix) {
    let ours = message.provider == config.provider_id;
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    for content in &message.content {
        let item = match content {
            // A reasoning item is only valid back on the service that made it, complete, with
            // the item that followed it.
            Content::Thinking { thinking, signature, id: Some(id), redacted: false } if ours && !failed => {
                let summary = if thinking.is_empty() {
                    Vec::new()
                } else {
                    vec![SummaryText { kind: "summary_text", text: thinking }]
                };
                Item::Typed(TypedItem::Reasoning { id, summary, encrypted_content: signature.as_deref() })
            }
            Content::Text { text, signature } if !text.is_empty() => Item::Typed(TypedItem::Message {
                id: signature.as_deref().filter(|id| ours && id.starts_with("msg")),
                role: "assistant",
                content: [OutputText { kind: "output_text", text, annotations: [] }],
                status: "completed",
            }),
            Content::ToolCall { id, name, arguments, signature } => Item::Typed(TypedItem::FunctionCall {
                id: signature.as_deref().filter(|id| ours && id.starts_with("fc")),
                call_id: id,
                name,
                arguments: sinew_http::json::text(arguments),
            }),
            Content::Opaque { provider, data } if *provider == config.provider_id && !failed => Item::Opaque(data),
            _ => continue,
        };
        write_item(prefix, &item);
    }
}

#[cfg(test)]
mod tests;
