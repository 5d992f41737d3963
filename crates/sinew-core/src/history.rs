//! Checks and repairs that keep a history valid to send to any provider.

use std::collections::HashSet;

use crate::message::{AgentMessage, ToolResultMessage};

/// The tool calls (id, name) of assistant messages that have no tool result after them.
pub fn unmatched_tool_calls(messages: &[AgentMessage]) -> Vec<(String, String)> {
    let answered: HashSet<&str> =
        messages.iter().filter_map(AgentMessage::as_tool_result).map(|r| r.tool_call_id.as_str()).collect();
    messages
        .iter()
        .filter_map(AgentMessage::as_assistant)
        .flat_map(|m| m.tool_calls())
        .filter(|call| !answered.contains(call.id))
        .map(|call| (call.id.to_owned(), call.name.to_owned()))
        .collect()
}

/// Tool results that answer no earlier tool call.
pub fn orphaned_tool_results(messages: &[AgentMessage]) -> Vec<String> {
    let mut called = HashSet::new();
    let mut orphans = Vec::new();
    for message in messages {
        if let Some(a) = message.as_assistant() {
            called.extend(a.tool_calls().map(|c| c.id));
        } else if let Some(r) = message.as_tool_result()
            && !called.contains(r.tool_call_id.as_str())
        {
            orphans.push(r.tool_call_id.clone());
        }
    }
    orphans
}

/// Error results for every unmatched tool call, explaining why it never ran.
pub fn synthesize_missing_results(messages: &[AgentMessage], why: &str) -> Vec<ToolResultMessage> {
    unmatched_tool_calls(messages).into_iter().map(|(id, name)| ToolResultMessage::error(id, name, why)).collect()
}
