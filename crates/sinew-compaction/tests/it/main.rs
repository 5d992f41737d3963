//! Integration tests of sinew-compaction.

mod cascade;
mod properties;
mod summarizing;
mod truncation;

use serde_json::json;
use sinew_core::{AgentMessage, AssistantMessage, Content, ExtensionMessage, Message, ToolResultMessage};

/// A user message with a known timestamp.
pub(crate) fn user(text: &str, timestamp: u64) -> AgentMessage {
    AgentMessage::Llm(Message::User(sinew_core::UserMessage { content: vec![Content::text(text)], timestamp }))
}

/// An assistant message with text.
pub(crate) fn said(text: &str, timestamp: u64) -> AgentMessage {
    let mut m = AssistantMessage::new("mock", "m");
    m.content = vec![Content::text(text)];
    m.timestamp = timestamp;
    m.into()
}

/// An assistant message calling `bash` once per id.
pub(crate) fn calls(ids: &[&str], timestamp: u64) -> AgentMessage {
    let mut m = AssistantMessage::new("mock", "m");
    m.content = ids.iter().map(|id| Content::tool_call(*id, "bash", json!({"command": format!("run {id}")}))).collect();
    m.timestamp = timestamp;
    m.into()
}

/// A tool result for `id`.
pub(crate) fn result(id: &str, text: &str, timestamp: u64) -> AgentMessage {
    ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: "bash".into(),
        content: vec![Content::text(text)],
        is_error: false,
        timestamp,
        details: serde_json::Value::Null,
    }
    .into()
}

pub(crate) fn note(timestamp: u64) -> AgentMessage {
    ExtensionMessage { kind: "note".into(), data: json!({"at": timestamp}) }.into()
}

/// The text of a message's blocks, joined.
pub(crate) fn text_of(message: &AgentMessage) -> String {
    message.as_llm().map(|m| sinew_core::join_text(m.content(), "\n")).unwrap_or_default()
}

/// The timestamps of the messages that came from the input (synthetic ones are stamped now).
pub(crate) fn original_stamps(messages: &[AgentMessage]) -> Vec<u64> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Llm(Message::User(u)) => Some(u.timestamp),
            AgentMessage::Llm(Message::Assistant(a)) => Some(a.timestamp),
            AgentMessage::Llm(Message::ToolResult(r)) => Some(r.timestamp),
            AgentMessage::Extension(e) => e.data["at"].as_u64(),
        })
        .filter(|&t| t < 1_000_000)
        .collect()
}
