//! Token-budget history truncation over stored messages (spec 000's `tokenBudgetTruncate`).

use sinew_compaction::{MESSAGE_OVERHEAD, TOOL_RESULT_OVERHEAD, TokenCounter};

use super::ChatMessage;

pub use sinew_compaction::DEFAULT_TOKEN_BUDGET;

/// The tokens `message` costs in a request, counted with `counter`.
fn tokens(message: &ChatMessage, counter: &dyn TokenCounter) -> usize {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|call| {
            counter.count(&call.name)
                + counter.count(&call.input)
                + call.output.as_deref().map_or(0, |output| counter.count(output) + TOOL_RESULT_OVERHEAD)
        })
        .sum();
    counter.count(&message.content) + calls + MESSAGE_OVERHEAD
}

/// The newest messages that fit `budget` tokens ([`DEFAULT_TOKEN_BUDGET`] when `0`), counted
/// from the newest back until the budget is spent (the newest message counts even when it alone
/// is over the budget).
///
/// When older messages were cut, the kept history never starts with a tool message or with an
/// assistant call whose responses are not all there: they are skipped, even when that leaves
/// nothing (the run's new message still goes to the model). When nothing was cut, the history is
/// kept whole, a trailing call still waiting for its response included.
pub fn truncate_to_budget<'a>(
    messages: &'a [ChatMessage],
    budget: usize,
    counter: &dyn TokenCounter,
) -> &'a [ChatMessage] {
    let budget = if budget == 0 { DEFAULT_TOKEN_BUDGET } else { budget };
    let mut start = messages.len();
    let mut spent = 0;
    for (index, message) in messages.iter().enumerate().rev() {
        let cost = tokens(message, counter);
        if spent + cost > budget && start < messages.len() {
            break;
        }
        spent += cost;
        start = index;
    }
    if start == 0 {
        return messages;
    }
    let mut kept = &messages[start..];
    loop {
        match kept.split_first() {
            Some((first, rest)) if first.is_tool() => kept = rest,
            Some((first, rest)) if first.has_calls() && !answered(first, rest) => kept = rest,
            _ => return kept,
        }
    }
}

/// Whether every call of `call` is answered by the tool messages right after it: by id, or, for
/// a legacy tool message without response metadata, by position.
fn answered(call: &ChatMessage, after: &[ChatMessage]) -> bool {
    let tools = &after[..after.iter().take_while(|m| m.is_tool()).count()];
    call.tool_calls.iter().enumerate().all(|(position, c)| {
        tools.iter().any(|m| m.tool_calls.iter().any(|r| r.output.is_some() && r.id == c.id))
            || tools.get(position).is_some_and(|m| m.tool_calls.iter().all(|r| r.output.is_none()))
    })
}
