//! Assertions on events and histories.

use sinew_core::history::{orphaned_tool_results, unmatched_tool_calls};
use sinew_core::{AgentEvent, AgentMessage, StreamDelta};

/// The kinds of `events` (`"agent_start"`, `"message_update"`...), in order.
pub fn kinds(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(AgentEvent::kind).collect()
}

/// The kinds of `events` without `message_update`s: the shape of a run.
pub fn shape(events: &[AgentEvent]) -> Vec<&'static str> {
    events.iter().map(AgentEvent::kind).filter(|k| *k != "message_update").collect()
}

/// Panics unless `expected` appears in `events` in order (other events may come between).
pub fn assert_subsequence(events: &[AgentEvent], expected: &[&str]) {
    let mut wanted = expected.iter().peekable();
    for kind in kinds(events) {
        if wanted.peek() == Some(&&kind) {
            wanted.next();
        }
    }
    let missing: Vec<&&str> = wanted.collect();
    assert!(missing.is_empty(), "events {:?} lack, in order, {missing:?}", shape(events));
}

/// The concatenated text deltas of `events`.
pub fn streamed_text(events: &[AgentEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// Panics unless every assistant tool call in `messages` has a result and every result answers
/// an earlier call: the history is valid to send to any provider.
pub fn assert_history_valid(messages: &[AgentMessage]) {
    let unmatched = unmatched_tool_calls(messages);
    assert!(unmatched.is_empty(), "tool calls without a result: {unmatched:?}");
    let orphans = orphaned_tool_results(messages);
    assert!(orphans.is_empty(), "tool results without a call: {orphans:?}");
}
