//! The units compaction keeps or drops whole.

use std::ops::Range;

use sinew_core::{AgentMessage, Content, Message};

/// Splits a history into consecutive index ranges that must not be separated: an assistant
/// message with tool calls together with the tool results that follow it (and extension messages
/// among them); every other message alone. The ranges cover `0..messages.len()` in order.
pub(crate) fn groups(messages: &[AgentMessage]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let mut end = i + 1;
        if has_tool_calls(&messages[i]) {
            let mut j = i + 1;
            while let Some(next) = messages.get(j) {
                match next {
                    AgentMessage::Llm(Message::ToolResult(_)) => {
                        j += 1;
                        end = j;
                    }
                    AgentMessage::Extension(_) => j += 1,
                    AgentMessage::Llm(_) => break,
                }
            }
        }
        out.push(i..end);
        i = end;
    }
    out
}

pub(crate) fn has_tool_calls(message: &AgentMessage) -> bool {
    message.as_assistant().is_some_and(|m| m.content.iter().any(|c| matches!(c, Content::ToolCall { .. })))
}

/// Where the kept tail starts: the earliest group boundary leaving at most `keep` messages after
/// it, but never after the start of the last group (the newest turn is always kept whole).
pub(crate) fn tail_start(groups: &[Range<usize>], len: usize, keep: usize) -> usize {
    let Some(last) = groups.last() else { return 0 };
    let mut start = last.start;
    for group in groups.iter().rev().skip(1) {
        if len - group.start > keep {
            break;
        }
        start = group.start;
    }
    start
}

/// Where the kept head ends: the latest group boundary leaving at most `keep` messages before it.
pub(crate) fn head_end(groups: &[Range<usize>], keep: usize) -> usize {
    groups.iter().map(|g| g.end).take_while(|&end| end <= keep).last().unwrap_or(0)
}

/// The index of the first user message, which compaction never drops.
pub(crate) fn first_user(messages: &[AgentMessage]) -> Option<usize> {
    messages.iter().position(AgentMessage::is_user)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sinew_core::{AssistantMessage, ExtensionMessage, ToolResultMessage};

    use super::*;

    fn calls(ids: &[&str]) -> AgentMessage {
        let mut m = AssistantMessage::new("p", "m");
        m.content = ids.iter().map(|id| Content::tool_call(*id, "echo", json!({}))).collect();
        m.into()
    }

    fn result(id: &str) -> AgentMessage {
        ToolResultMessage::error(id, "echo", "r").into()
    }

    fn note() -> AgentMessage {
        ExtensionMessage { kind: "note".into(), data: json!(null) }.into()
    }

    #[test]
    fn a_call_groups_with_its_results_and_the_notes_among_them() {
        let history = vec![
            AgentMessage::user("u"),
            calls(&["a", "b"]),
            result("a"),
            note(),
            result("b"),
            note(),
            AgentMessage::user("v"),
            calls(&["c"]),
        ];
        // The trailing note belongs to no batch; the pending call at the end stands alone.
        assert_eq!(groups(&history), vec![0..1, 1..5, 5..6, 6..7, 7..8]);
    }

    #[test]
    fn tail_and_head_respect_groups() {
        let history =
            vec![AgentMessage::user("u"), calls(&["a", "b"]), result("a"), result("b"), AgentMessage::user("v")];
        let g = groups(&history);
        assert_eq!(tail_start(&g, history.len(), 1), 4);
        assert_eq!(tail_start(&g, history.len(), 3), 4, "the batch does not fit in 3");
        assert_eq!(tail_start(&g, history.len(), 4), 1);
        assert_eq!(tail_start(&g, history.len(), 0), 4, "the newest group is always kept");
        assert_eq!(head_end(&g, 2), 1, "the head does not cut into the batch");
        assert_eq!(head_end(&g, 4), 4);
        assert_eq!(head_end(&g, 0), 0);
        assert_eq!(first_user(&history[1..]), Some(3));
    }
}
