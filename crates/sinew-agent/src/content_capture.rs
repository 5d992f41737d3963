//! Message content on the `chat` span, in the OpenTelemetry GenAI conventions' JSON shape
//! (`gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`): only when
//! [`crate::AgentLoopConfig::capture_message_content`] asks for it, as the conventions require.

use serde_json::{Value, json};
use sinew_core::{AssistantMessage, Content, Message, StopReason};

/// Content larger than this is replaced by a note: span attributes travel whole.
const MAX_CAPTURED_BYTES: usize = 256 * 1024;

/// The system prompt as the conventions' parts.
pub(crate) fn system_instructions(system_prompt: &str) -> String {
    bounded(json!([{"type": "text", "content": system_prompt}]))
}

/// The request's messages.
pub(crate) fn input_messages(messages: &[&Message]) -> String {
    bounded(Value::Array(messages.iter().map(|message| message_json(message)).collect()))
}

/// The answer, with its finish reason.
pub(crate) fn output_messages(message: &AssistantMessage) -> String {
    let finish_reason = match message.stop_reason {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "tool_call",
        StopReason::Error => "error",
        _ => "other",
    };
    bounded(json!([{"role": "assistant", "parts": parts(&message.content), "finish_reason": finish_reason}]))
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::User(user) => json!({"role": "user", "parts": parts(&user.content)}),
        Message::Assistant(assistant) => json!({"role": "assistant", "parts": parts(&assistant.content)}),
        Message::ToolResult(result) => {
            let text: Vec<&str> = result
                .content
                .iter()
                .filter_map(|c| match c {
                    Content::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": result.tool_call_id, "response": text.join("")}]})
        }
    }
}

fn parts(content: &[Content]) -> Vec<Value> {
    content
        .iter()
        .filter_map(|block| {
            Some(match block {
                Content::Text { text, .. } => json!({"type": "text", "content": text}),
                Content::Thinking { thinking, redacted: false, .. } => {
                    json!({"type": "reasoning", "content": thinking})
                }
                Content::ToolCall { id, name, arguments, .. } => {
                    json!({"type": "tool_call", "id": id, "name": name, "arguments": arguments})
                }
                // Media go by reference only: their bytes would swamp the span.
                Content::Image { mime_type, .. } => {
                    json!({"type": "blob", "modality": "image", "mime_type": mime_type})
                }
                Content::ImageUrl { url, .. } => json!({"type": "uri", "modality": "image", "uri": url}),
                Content::Document { mime_type, .. } => json!({"type": "blob", "mime_type": mime_type}),
                Content::DocumentUrl { url, mime_type, .. } => {
                    json!({"type": "uri", "mime_type": mime_type, "uri": url})
                }
                Content::Audio { mime_type, .. } => {
                    json!({"type": "blob", "modality": "audio", "mime_type": mime_type})
                }
                _ => return None,
            })
        })
        .collect()
}

fn bounded(value: Value) -> String {
    let text = value.to_string();
    if text.len() > MAX_CAPTURED_BYTES {
        format!("[{} bytes of content not captured: over the {MAX_CAPTURED_BYTES}-byte limit]", text.len())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sinew_core::{AssistantMessage, Content, Message, StopReason, ToolResultMessage};

    use super::*;

    #[test]
    fn messages_take_the_conventions_shape() {
        let user = Message::user("hi");
        let mut answer = AssistantMessage::new("p", "m");
        answer.content =
            vec![Content::thinking("hmm"), Content::text("ok"), Content::tool_call("c1", "echo", json!({"a": 1}))];
        answer.stop_reason = StopReason::ToolUse;
        let result = Message::ToolResult(ToolResultMessage {
            tool_call_id: "c1".into(),
            tool_name: "echo".into(),
            content: vec![Content::text("1")],
            is_error: false,
            timestamp: 0,
            details: serde_json::Value::Null,
        });
        let input: serde_json::Value = serde_json::from_str(&input_messages(&[&user, &result])).unwrap();
        assert_eq!(
            input,
            json!([{"role": "user", "parts": [{"type": "text", "content": "hi"}]},
                   {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "1"}]}])
        );
        let output: serde_json::Value = serde_json::from_str(&output_messages(&answer)).unwrap();
        assert_eq!(
            output,
            json!([{"role": "assistant", "finish_reason": "tool_call", "parts": [
                {"type": "reasoning", "content": "hmm"}, {"type": "text", "content": "ok"},
                {"type": "tool_call", "id": "c1", "name": "echo", "arguments": {"a": 1}}]}])
        );
        assert_eq!(system_instructions("be brief"), r#"[{"content":"be brief","type":"text"}]"#);
        let huge = Message::user("x".repeat(MAX_CAPTURED_BYTES));
        assert!(input_messages(&[&huge]).starts_with('['), "a note, not the content");
        assert!(input_messages(&[&huge]).contains("not captured"));
    }
}
