//! The `/v1/messages` request, built from a [`StreamRequest`] (pure: no I/O).

use std::fmt;

use serde_json::{Map, Value, json};
use sinew_core::{AssistantMessage, CacheStrategy, Content, Message, StopReason, StreamRequest, ThinkingLevel};
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

/// Where and how to call the Messages API.
#[derive(Clone, Debug)]
pub struct AnthropicConfig {
    pub base_url: String,
    pub auth: AnthropicAuth,
    /// `max_tokens` when the request sets none (the API requires one).
    pub default_max_tokens: u32,
    /// Sent with every request (after the protocol's own headers).
    pub extra_headers: Vec<(String, String)>,
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
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal | ThinkingLevel::Low => Some(1024),
        ThinkingLevel::Medium => Some(2048),
        ThinkingLevel::High => Some(8192),
    }
}

/// The headers and JSON body of a streaming `/v1/messages` call.
pub fn build_request(config: &AnthropicConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let mut headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("accept".to_owned(), "text/event-stream".to_owned()),
        ("anthropic-version".to_owned(), "2023-06-01".to_owned()),
    ];
    match &config.auth {
        AnthropicAuth::ApiKey(key) => headers.push(("x-api-key".into(), key.clone())),
        AnthropicAuth::OAuth(token) => headers.extend([
            ("authorization".to_owned(), format!("Bearer {token}")),
            (
                "anthropic-beta".to_owned(),
                "claude-code-20250219,oauth-2025-04-20,fine-grained-tool-streaming-2025-05-14".to_owned(),
            ),
            ("x-app".to_owned(), "cli".to_owned()),
            ("anthropic-dangerous-direct-browser-access".to_owned(), "true".to_owned()),
            ("user-agent".to_owned(), "claude-cli/2.1.2".to_owned()),
        ]),
    }
    headers.extend(config.extra_headers.iter().cloned());
    HttpRequest {
        method: http::Method::POST,
        url: format!("{}/v1/messages", config.base_url.trim_end_matches('/')),
        headers,
        body: body(config, request).to_string().into(),
    }
}

/// The JSON body (exposed for snapshot tests and hosts that bring their own transport).
pub fn body(config: &AnthropicConfig, request: &StreamRequest<'_>) -> Value {
    let cache = CacheBreakpoints::of(request);
    let budget = thinking_budget(request.thinking_level);
    let mut max_tokens = request.max_tokens.unwrap_or(config.default_max_tokens);
    if let Some(budget) = budget {
        // The API requires max_tokens above the thinking budget; keep room for the answer.
        max_tokens = max_tokens.max(budget + 1024);
    }
    let mut body = Map::new();
    body.insert("model".into(), request.model.into());
    body.insert("max_tokens".into(), max_tokens.into());
    body.insert("stream".into(), true.into());
    if !request.system_prompt.is_empty() {
        let mut block = json!({"type": "text", "text": request.system_prompt});
        if cache.system {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        body.insert("system".into(), json!([block]));
    }
    body.insert("messages".into(), messages(request.messages, cache.message));
    if !request.tools.is_empty() {
        let last = request.tools.len() - 1;
        let tools: Vec<Value> = request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut tool = json!({"name": t.name, "description": t.description, "input_schema": t.parameters});
                if cache.tools && i == last {
                    tool["cache_control"] = json!({"type": "ephemeral"});
                }
                tool
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    match budget {
        Some(budget) => {
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        // The API rejects a temperature together with thinking.
        None => {
            if let Some(t) = request.temperature {
                // Through its shortest decimal form: 0.2f32 must be sent as 0.2, not 0.20000000298023224.
                body.insert("temperature".into(), json!(t.to_string().parse::<f64>().unwrap_or(f64::from(t))));
            }
        }
    }
    Value::Object(body)
}

/// Which cache breakpoints to set: system prompt, last tool, and the second-to-last message.
struct CacheBreakpoints {
    system: bool,
    tools: bool,
    /// Index into the request's messages.
    message: Option<usize>,
}

impl CacheBreakpoints {
    fn of(request: &StreamRequest<'_>) -> Self {
        let second_to_last = request.messages.len().checked_sub(2);
        let (system, tools, messages) = match (request.cache_config.enabled, request.cache_config.strategy) {
            (false, _) | (true, CacheStrategy::Disabled) => (false, false, false),
            (true, CacheStrategy::Auto) => (true, true, true),
            (true, CacheStrategy::Manual { cache_system, cache_tools, cache_messages }) => {
                (cache_system, cache_tools, cache_messages)
            }
        };
        CacheBreakpoints { system, tools, message: if messages { second_to_last } else { None } }
    }
}

/// The API's message list: tool results go in user turns, consecutive results share one turn,
/// failed empty answers are left out.
fn messages(history: &[&Message], cache_at: Option<usize>) -> Value {
    let mut out: Vec<Value> = Vec::with_capacity(history.len());
    for (i, message) in history.iter().enumerate() {
        let (role, blocks) = match message {
            Message::User(user) => ("user", user.content.iter().filter_map(user_block).collect::<Vec<_>>()),
            Message::Assistant(assistant) => ("assistant", assistant_blocks(assistant)),
            Message::ToolResult(result) => {
                let content: Vec<Value> = result.content.iter().filter_map(user_block).collect();
                let mut block = json!({"type": "tool_result", "tool_use_id": tool_id(&result.tool_call_id)});
                if !content.is_empty() {
                    block["content"] = content.into();
                }
                if result.is_error {
                    block["is_error"] = true.into();
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        let mut blocks = blocks;
        if cache_at == Some(i)
            && let Some(last) = blocks.last_mut()
        {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        // Results of one batch go back together, in one user turn.
        let joins_previous = matches!(message, Message::ToolResult(_))
            && out.last().is_some_and(|m: &Value| {
                m["role"] == "user"
                    && m["content"].as_array().is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result"))
            });
        match out.last_mut() {
            Some(previous) if joins_previous => {
                if let Some(content) = previous["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    Value::Array(out)
}

fn user_block(content: &Content) -> Option<Value> {
    match content {
        Content::Text { text, .. } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
        Content::Image { data, mime_type } => {
            Some(json!({"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}}))
        }
        _ => None,
    }
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Value> {
    let ours = message.provider == PROVIDER_ID;
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    message
        .content
        .iter()
        .filter_map(|content| match content {
            Content::Text { text, .. } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
            // Signatures are only valid for the service that issued them; thinking cut short has none.
            Content::Thinking { signature: Some(data), redacted: true, .. } if ours => {
                Some(json!({"type": "redacted_thinking", "data": data}))
            }
            Content::Thinking { thinking, signature: Some(signature), redacted: false, .. } if ours && !failed => {
                Some(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
            }
            Content::ToolCall { id, name, arguments, .. } => {
                let input = if arguments.is_object() { arguments.clone() } else { json!({"value": arguments}) };
                Some(json!({"type": "tool_use", "id": tool_id(id), "name": name, "input": input}))
            }
            Content::Opaque { provider, data } if provider == PROVIDER_ID => Some(data.clone()),
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
