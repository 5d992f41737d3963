//! What the facade's tests share.

use sinew::{AgentMessage, Message, ToolResultMessage};

/// The first tool result of a conversation.
pub(crate) fn first_tool_result(messages: &[AgentMessage]) -> ToolResultMessage {
    messages
        .iter()
        .find_map(|m| match m {
            AgentMessage::Llm(Message::ToolResult(result)) => Some(result.clone()),
            _ => None,
        })
        .expect("a tool result")
}
