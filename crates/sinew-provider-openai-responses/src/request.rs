//! The `/responses` request, built from a [`StreamRequest`] (pure: no I/O).
//!
//! Stateless by design (`store: false`): the whole history is sent each turn, with the
//! provider's own reasoning items (id, summary, `encrypted_content`) and item ids carried back
//! so reasoning models keep their chain of thought across tool calls.

use serde_json::{Map, Value, json};
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

fn http_request(config: &ResponsesConfig, request: &StreamRequest<'_>, body: Vec<u8>) -> HttpRequest {
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

/// The body: `input` resumed after the messages `prefix` holds (see [`sinew_core::wire`]), among
/// the other fields in the order a JSON object writes its keys (sorted). Returns the body and the
/// prefix of this request's messages.
fn body_bytes(config: &ResponsesConfig, request: &StreamRequest<'_>, mut prefix: WirePrefix) -> (Vec<u8>, WirePrefix) {
    write_input(config, request.messages, &mut prefix);
    let body = sinew_http::json::sorted_object_with_array(other_fields(config, request), "input", &[prefix.bytes()]);
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

/// The body's fields but `input`.
fn other_fields(config: &ResponsesConfig, request: &StreamRequest<'_>) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("model".into(), request.model.into());
    if !request.system_prompt.is_empty() {
        body.insert("instructions".into(), request.system_prompt.into());
    }
    body.insert("stream".into(), true.into());
    body.insert("store".into(), false.into());
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": false})
            })
            .collect();
        body.insert("tools".into(), tools.into());
        // Both are refused by the API when the request has no tools.
        let choice = match &request.options.tool_choice {
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool { name } => Some(json!({"type": "function", "name": name})),
            _ => None,
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
        if let Some(parallel) = request.options.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), parallel.into());
        }
    }
    if let Some(top_p) = request.options.top_p {
        body.insert("top_p".into(), json!(sinew_http::json_f32(top_p)));
    }
    if let Some(user) = &request.options.user {
        body.insert("user".into(), user.as_str().into());
    }
    // OpenAI takes 64 bytes at most.
    if let Some(key) = request.active_cache_key_within(64).filter(|_| config.prompt_cache_key) {
        body.insert("prompt_cache_key".into(), key.into_owned().into());
    }
    let format = match &request.options.response_format {
        ResponseFormat::JsonObject => Some(json!({"type": "json_object"})),
        ResponseFormat::JsonSchema { name, schema, strict } => {
            // Strict mode takes closed objects with every property required.
            let schema = if *strict { sinew_core::schema::strict(schema) } else { schema.clone() };
            Some(json!({"type": "json_schema", "name": name, "schema": schema, "strict": strict}))
        }
        _ => None,
    };
    if let Some(format) = format {
        body.insert("text".into(), json!({"format": format}));
    }
    if let Some(max) = request.max_tokens {
        body.insert("max_output_tokens".into(), max.into());
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(sinew_http::json_f32(t)));
    }
    if let Some(effort) = request.thinking_level.effort() {
        let mut reasoning = json!({"effort": effort});
        if let Some(summary) = &config.reasoning_summary {
            reasoning["summary"] = summary.as_str().into();
        }
        body.insert("reasoning".into(), reasoning);
        // Without storage, reasoning comes back encrypted so the next turn can carry it.
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    body
}

/// Writes the input items of the history's messages after those `prefix` holds, each followed by
/// a comma, and marks where a later request may resume: after every message but a tool result
/// whose attachments still wait for the user message that follows the batch.
fn write_input(config: &ResponsesConfig, history: &[&Message], prefix: &mut WirePrefix) {
    let mut items: Vec<Value> = Vec::new();
    // Images returned by tools cannot go in `function_call_output`; they follow the batch.
    let mut tool_images: Vec<Value> = Vec::new();
    let start = prefix.messages();
    for (index, message) in history.iter().enumerate().skip(start) {
        if !matches!(message, Message::ToolResult(_)) && !tool_images.is_empty() {
            items.push(images_turn(&mut tool_images));
        }
        match message {
            Message::User(user) => {
                let content: Vec<Value> = user.content.iter().filter_map(input_part).collect();
                if !content.is_empty() {
                    items.push(json!({"role": "user", "content": content}));
                }
            }
            Message::Assistant(assistant) => assistant_items(config, assistant, &mut items),
            Message::ToolResult(result) => {
                let text = sinew_core::join_text(&result.content, "\n");
                let output = if text.is_empty() { "(no output)".to_owned() } else { text };
                // The output is text; images and files follow the batch in a user message.
                tool_images.extend(
                    result.content.iter().filter(|c| !matches!(c, Content::Text { .. })).filter_map(input_part),
                );
                items.push(json!({"type": "function_call_output", "call_id": result.tool_call_id, "output": output}));
            }
        }
        write_items(prefix, &mut items);
        if tool_images.is_empty() {
            prefix.mark(index + 1);
        }
    }
    if !tool_images.is_empty() {
        items.push(images_turn(&mut tool_images));
        write_items(prefix, &mut items);
    }
}

fn write_items(prefix: &mut WirePrefix, items: &mut Vec<Value>) {
    let bytes = prefix.bytes_mut();
    for item in items.drain(..) {
        // A `Value` always serializes: its keys are strings, its numbers finite.
        let _ = serde_json::to_writer(&mut *bytes, &item);
        bytes.push(b',');
    }
}

fn images_turn(images: &mut Vec<Value>) -> Value {
    let mut content = vec![json!({"type": "input_text", "text": "Files returned by the tools above:"})];
    content.append(images);
    json!({"role": "user", "content": content})
}

fn input_part(content: &Content) -> Option<Value> {
    match content {
        Content::Text { text, .. } if !text.is_empty() => Some(json!({"type": "input_text", "text": text})),
        Content::Image { data, mime_type } => {
            Some(json!({"type": "input_image", "image_url": format!("data:{mime_type};base64,{data}")}))
        }
        Content::ImageUrl { url, .. } => Some(json!({"type": "input_image", "image_url": url})),
        Content::Document { data, mime_type, name } => Some(json!({
            "type": "input_file",
            "filename": name.as_deref().unwrap_or("document"),
            "file_data": format!("data:{mime_type};base64,{data}"),
        })),
        Content::DocumentUrl { url, .. } => Some(json!({"type": "input_file", "file_url": url})),
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

fn assistant_items(config: &ResponsesConfig, message: &AssistantMessage, items: &mut Vec<Value>) {
    let ours = message.provider == config.provider_id;
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    for content in &message.content {
        match content {
            // A reasoning item is only valid back on the service that made it, complete, with
            // the item that followed it.
            Content::Thinking { thinking, signature, id: Some(id), redacted: false } if ours && !failed => {
                let summary: Vec<Value> = if thinking.is_empty() {
                    Vec::new()
                } else {
                    vec![json!({"type": "summary_text", "text": thinking})]
                };
                let mut item = json!({"type": "reasoning", "id": id, "summary": summary});
                if let Some(encrypted) = signature {
                    item["encrypted_content"] = encrypted.as_str().into();
                }
                items.push(item);
            }
            Content::Text { text, signature } if !text.is_empty() => {
                let mut item = json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                    "status": "completed",
                });
                if let Some(id) = signature.as_ref().filter(|id| ours && id.starts_with("msg")) {
                    item["id"] = id.as_str().into();
                }
                items.push(item);
            }
            Content::ToolCall { id, name, arguments, signature } => {
                let arguments = sinew_http::json::text(arguments);
                let mut item = json!({"type": "function_call", "call_id": id, "name": name, "arguments": arguments});
                if let Some(item_id) = signature.as_ref().filter(|id| ours && id.starts_with("fc")) {
                    item["id"] = item_id.as_str().into();
                }
                items.push(item);
            }
            Content::Opaque { provider, data } if *provider == config.provider_id && !failed => {
                items.push(data.clone())
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
