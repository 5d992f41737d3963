//! A history holding everything a request builder must convert, for round-trip snapshot tests.

use serde_json::{Value, json};
use sinew_core::{
    AssistantMessage, Content, Message, StopReason, StreamRequest, ToolDefinition, ToolResultMessage, Usage,
    UserMessage,
};

fn assistant(provider: &str, stop_reason: StopReason, content: Vec<Content>) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        stop_reason,
        model: "model-x".into(),
        provider: provider.into(),
        usage: Usage::default(),
        timestamp: 0,
        error_message: None,
    })
}

fn result(id: &str, content: Vec<Content>, is_error: bool) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "read".into(),
        content,
        is_error,
        timestamp: 0,
        details: Value::Null,
    })
}

/// A conversation as sinew records it, with `own` as the provider under test: a user message
/// with an image; an answer of `own` with thinking (signature and `id`), redacted thinking,
/// text, two parallel tool calls and an opaque block; their results (one failed, one with an
/// image); a failed empty answer; an answer of another provider with its own opaque data; and a
/// last user message.
pub fn round_trip_history(own: &str, opaque: Value) -> Vec<Message> {
    vec![
        Message::User(UserMessage {
            content: vec![Content::text("What is in this picture?"), Content::image("iVBORw0K", "image/png")],
            timestamp: 0,
        }),
        assistant(
            own,
            StopReason::ToolUse,
            vec![
                Content::Thinking {
                    thinking: "Let me look.".into(),
                    signature: Some("sig-1".into()),
                    redacted: false,
                    id: Some("rs_1".into()),
                },
                Content::Thinking {
                    thinking: String::new(),
                    signature: Some("REDACTED==".into()),
                    redacted: true,
                    id: None,
                },
                Content::Text { text: "Reading two files.".into(), signature: Some("text-sig".into()) },
                Content::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"}),
                    signature: Some("call-sig".into()),
                },
                Content::tool_call("call_2", "read", json!({"path": "b.png"})),
                Content::Opaque { provider: own.into(), data: opaque },
            ],
        ),
        result("call_1", vec![Content::text("no such file")], true),
        result("call_2", vec![Content::text("an image:"), Content::image("R0lGOD", "image/gif")], false),
        assistant(own, StopReason::Error, vec![]),
        assistant(
            "someone-else",
            StopReason::Stop,
            vec![
                Content::Thinking {
                    thinking: "foreign thoughts".into(),
                    signature: Some("foreign-sig".into()),
                    redacted: false,
                    id: None,
                },
                Content::text("From another model."),
                Content::Opaque { provider: "someone-else".into(), data: json!({"type": "foreign"}) },
            ],
        ),
        Message::user("Thanks, go on."),
    ]
}

/// Two tool definitions for request builders.
pub fn round_trip_tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
        ToolDefinition {
            name: "write".into(),
            description: "Write a file.".into(),
            parameters: json!({"type": "object"}),
        },
    ]
}

/// Runs `build` on the request every builder's snapshot test sends: `history`, the
/// [`round_trip_tools`], `model`, the system prompt `"You are terse."`, then `adjust`.
pub fn with_round_trip_request<T>(
    history: &[Message],
    model: &str,
    adjust: impl FnOnce(&mut StreamRequest<'_>),
    build: impl FnOnce(&StreamRequest<'_>) -> T,
) -> T {
    let refs: Vec<&Message> = history.iter().collect();
    let tools = round_trip_tools();
    let mut request = StreamRequest::new(model, "You are terse.", &refs);
    request.tools = &tools;
    adjust(&mut request);
    build(&request)
}

/// One block of each kind of attachment, for the input tests of request builders: an image URL
/// (with its media type), a named PDF, a plain-text document (`"hello"`), a PDF by URL, and WAV
/// audio. Each builder sends those its service takes and refuses the others by name.
pub fn attachments() -> Vec<Content> {
    vec![
        Content::ImageUrl { url: "https://example.com/cat.png".into(), mime_type: Some("image/png".into()) },
        Content::Document {
            data: "JVBERi0x".into(),
            mime_type: "application/pdf".into(),
            name: Some("spec.pdf".into()),
        },
        Content::document("aGVsbG8=", "text/plain"),
        Content::document_url("https://example.com/paper.pdf", "application/pdf"),
        Content::audio("UklGRg==", "audio/wav"),
    ]
}

/// A user message with `asked`, `provider`'s call of tool `fetch` (id `call_1`), and its result
/// holding `returned`: a history for the input tests of request builders.
pub fn tool_round(provider: &str, asked: Vec<Content>, returned: Vec<Content>) -> Vec<Message> {
    vec![
        Message::User(UserMessage { content: asked, timestamp: 0 }),
        assistant(provider, StopReason::ToolUse, vec![Content::tool_call("call_1", "fetch", json!({}))]),
        Message::ToolResult(ToolResultMessage {
            tool_call_id: "call_1".into(),
            tool_name: "fetch".into(),
            content: returned,
            is_error: false,
            timestamp: 0,
            details: Value::Null,
        }),
    ]
}

/// The error `check` gives a user message holding `block` alone.
pub fn input_refusal<E: std::fmt::Display>(
    check: impl FnOnce(&StreamRequest<'_>) -> Result<(), E>,
    block: Content,
) -> String {
    let history = [Message::User(UserMessage { content: vec![block], timestamp: 0 })];
    match with_messages(&history, check) {
        Ok(()) => panic!("the block was taken"),
        Err(error) => error.to_string(),
    }
}

/// A request over `messages` alone (no tools, no system prompt, no caching), for input checks.
pub fn with_messages<T>(messages: &[Message], build: impl FnOnce(&StreamRequest<'_>) -> T) -> T {
    let refs: Vec<&Message> = messages.iter().collect();
    let mut request = StreamRequest::new("model-x", "", &refs);
    request.cache_config.enabled = false;
    build(&request)
}
