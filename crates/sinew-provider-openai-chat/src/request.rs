//! The `/chat/completions` request, built from a [`StreamRequest`] (pure: no I/O), with the knobs
//! compatible servers need.

use serde_json::{Map, Value, json};
use sinew_core::{AssistantMessage, Content, Message, StopReason, StreamRequest, ThinkingLevel};
use sinew_http::{Auth, HttpRequest, url_with_query};

/// The name of the output-token limit: OpenAI wants `max_completion_tokens` (and rejects
/// `max_tokens` for reasoning models); most compatible servers only know `max_tokens`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

/// The role of the system prompt: `developer` is what OpenAI's reasoning models expect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemRole {
    System,
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

/// Where and how to call a Chat Completions server.
#[derive(Clone, Debug)]
pub struct OpenAiChatConfig {
    /// Stamped on messages (`"openai"`, `"groq"`, `"ollama"`...); reasoning is sent back only to
    /// the provider that produced it.
    pub provider_id: String,
    /// Up to and including the version segment: `https://api.openai.com/v1`.
    pub base_url: String,
    pub auth: Auth,
    /// Query parameters on every request (Azure's `api-version`).
    pub query: Vec<(String, String)>,
    /// Sent with every request (OpenRouter's `HTTP-Referer` and `X-Title`, for instance).
    pub extra_headers: Vec<(String, String)>,
    pub max_tokens_field: MaxTokensField,
    pub system_role: SystemRole,
    pub reasoning: ReasoningParam,
    /// `stream_options.include_usage` (Mistral rejects the field).
    pub include_usage: bool,
    /// The assistant-message field that carries earlier reasoning back, for servers that want it
    /// (e.g. `reasoning_content`); `None` drops it.
    pub reasoning_in_history: Option<String>,
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
            system_role: SystemRole::System,
            reasoning: ReasoningParam::Effort,
            include_usage: true,
            reasoning_in_history: None,
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

    /// Mistral (strict about unknown fields: no `stream_options`).
    pub fn mistral(api_key: impl Into<String>) -> Self {
        OpenAiChatConfig {
            include_usage: false,
            ..OpenAiChatConfig::compatible("mistral", "https://api.mistral.ai/v1", Auth::Bearer(api_key.into()))
        }
    }
}

/// The headers and JSON body of a streaming `/chat/completions` call.
pub fn build_request(config: &OpenAiChatConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let url = url_with_query(&config.base_url, "/chat/completions", &config.query);
    let mut http = HttpRequest::post_json(url, body(config, request).to_string()).header("accept", "text/event-stream");
    config.auth.apply(&mut http);
    http.headers.extend(config.extra_headers.iter().cloned());
    http
}

/// The JSON body (exposed for snapshot tests and hosts that bring their own transport).
pub fn body(config: &OpenAiChatConfig, request: &StreamRequest<'_>) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), request.model.into());
    body.insert("messages".into(), messages(config, request).into());
    body.insert("stream".into(), true.into());
    if config.include_usage {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    if let Some(max) = request.max_tokens {
        let field = match config.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body.insert(field.into(), max.into());
    }
    if let Some(t) = request.temperature {
        // Through its shortest decimal form: 0.2f32 must be sent as 0.2, not 0.20000000298023224.
        body.insert("temperature".into(), json!(t.to_string().parse::<f64>().unwrap_or(f64::from(t))));
    }
    if let Some(effort) = effort(request.thinking_level) {
        match config.reasoning {
            ReasoningParam::None => {}
            ReasoningParam::Effort => {
                body.insert("reasoning_effort".into(), effort.into());
            }
            ReasoningParam::OpenRouter => {
                body.insert("reasoning".into(), json!({"effort": effort}));
            }
        }
    }
    Value::Object(body)
}

fn effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High => Some("high"),
    }
}

fn messages(config: &OpenAiChatConfig, request: &StreamRequest<'_>) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    if !request.system_prompt.is_empty() {
        let role = match config.system_role {
            SystemRole::System => "system",
            SystemRole::Developer => "developer",
        };
        out.push(json!({"role": role, "content": request.system_prompt}));
    }
    // Images returned by tools cannot go in `tool` messages; they follow the batch as a user turn.
    let mut tool_images: Vec<Value> = Vec::new();
    for message in request.messages {
        if !matches!(message, Message::ToolResult(_)) && !tool_images.is_empty() {
            out.push(images_turn(&mut tool_images));
        }
        match message {
            Message::User(user) => {
                if let Some(content) = user_content(&user.content) {
                    out.push(json!({"role": "user", "content": content}));
                }
            }
            Message::Assistant(assistant) => {
                if let Some(turn) = assistant_turn(config, assistant) {
                    out.push(turn);
                }
            }
            Message::ToolResult(result) => {
                let text = sinew_core::join_text(&result.content, "\n");
                let text = if text.is_empty() { "(no output)".to_owned() } else { text };
                tool_images.extend(result.content.iter().filter_map(image_part));
                out.push(json!({"role": "tool", "tool_call_id": result.tool_call_id, "content": text}));
            }
        }
    }
    if !tool_images.is_empty() {
        out.push(images_turn(&mut tool_images));
    }
    out
}

fn images_turn(images: &mut Vec<Value>) -> Value {
    let mut content = vec![json!({"type": "text", "text": "Images returned by the tools above:"})];
    content.append(images);
    json!({"role": "user", "content": content})
}

fn image_part(content: &Content) -> Option<Value> {
    match content {
        Content::Image { data, mime_type } => {
            Some(json!({"type": "image_url", "image_url": {"url": format!("data:{mime_type};base64,{data}")}}))
        }
        _ => None,
    }
}

/// A plain string when the message is only text, else an array of parts; `None` when empty.
fn user_content(content: &[Content]) -> Option<Value> {
    if content.iter().all(|c| matches!(c, Content::Text { .. })) {
        let text = sinew_core::join_text(content, "\n");
        return (!text.is_empty()).then(|| text.into());
    }
    let parts: Vec<Value> = content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text, .. } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
            other => image_part(other),
        })
        .collect();
    (!parts.is_empty()).then(|| parts.into())
}

fn assistant_turn(config: &OpenAiChatConfig, message: &AssistantMessage) -> Option<Value> {
    let text: String = message.content.iter().filter_map(Content::as_text).collect();
    let calls: Vec<Value> = message
        .tool_calls()
        .map(|c| {
            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect();
    if text.is_empty() && calls.is_empty() {
        // A failed or empty answer: servers reject an assistant turn with nothing in it.
        return None;
    }
    let mut turn = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { text.into() }});
    if !calls.is_empty() {
        turn["tool_calls"] = calls.into();
    }
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
            turn[field.as_str()] = thinking.into();
        }
    }
    Some(turn)
}

#[cfg(test)]
mod tests;
