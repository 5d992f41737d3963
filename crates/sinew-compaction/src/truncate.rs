//! Token-budget truncation, newest first (the ADK layer's history management).

use std::borrow::Cow;

use async_trait::async_trait;
use sinew_core::{AgentMessage, CompactionStrategy, ContextConfig, Message, TokenCounter};

use crate::count::message_tokens;
use crate::groups::{first_user, groups, has_tool_calls};

/// The budget when none is given (`0`).
pub const DEFAULT_TOKEN_BUDGET: usize = 32_000;

/// Keeps the newest messages that fit a token budget and drops the older ones, without
/// summaries or markers.
///
/// When messages were dropped, the kept history never starts with a tool result or with an
/// assistant tool call whose results are not all there; when nothing was dropped, the history is
/// kept as it is, a pending tool call at its end included. The newest turn is always kept, and by
/// default so is the first user message (in front, counted against the budget): many providers
/// refuse a history that does not start with the user. [`keep_first_user_message(false)`] gives
/// the plain newest-first cut of ADK.
///
/// As a [`CompactionStrategy`] the budget is the smaller of its own and the configuration's.
///
/// [`keep_first_user_message(false)`]: TokenBudgetTruncation::keep_first_user_message
#[derive(Clone, Copy, Debug)]
pub struct TokenBudgetTruncation {
    budget: usize,
    keep_first_user: bool,
}

impl Default for TokenBudgetTruncation {
    fn default() -> Self {
        TokenBudgetTruncation::new(0)
    }
}

impl TokenBudgetTruncation {
    /// Truncation to `budget` tokens; `0` means [`DEFAULT_TOKEN_BUDGET`].
    pub fn new(budget: usize) -> Self {
        let budget = if budget == 0 { DEFAULT_TOKEN_BUDGET } else { budget };
        TokenBudgetTruncation { budget, keep_first_user: true }
    }

    /// Whether the first user message is kept in front of a truncated history (default `true`).
    #[must_use]
    pub fn keep_first_user_message(mut self, keep: bool) -> Self {
        self.keep_first_user = keep;
        self
    }

    /// The budget in tokens.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Where the kept suffix of `messages` starts (`0`: nothing dropped).
    pub fn start(&self, messages: &[AgentMessage], counter: &dyn TokenCounter) -> usize {
        self.plan(messages, self.budget, counter).1
    }

    /// The truncated history: borrowed when nothing was dropped.
    pub fn truncate<'a>(&self, messages: &'a [AgentMessage], counter: &dyn TokenCounter) -> Cow<'a, [AgentMessage]> {
        self.truncate_to(messages, self.budget, counter)
    }

    fn truncate_to<'a>(
        &self,
        messages: &'a [AgentMessage],
        budget: usize,
        counter: &dyn TokenCounter,
    ) -> Cow<'a, [AgentMessage]> {
        match self.plan(messages, budget, counter) {
            (_, 0) => Cow::Borrowed(messages),
            (None, start) => Cow::Borrowed(&messages[start..]),
            (Some(first), start) => {
                let mut kept = Vec::with_capacity(messages.len() - start + 1);
                kept.push(messages[first].clone());
                kept.extend_from_slice(&messages[start..]);
                Cow::Owned(kept)
            }
        }
    }

    /// The pinned first user message (if it must be put in front) and the suffix's start.
    fn plan(&self, messages: &[AgentMessage], budget: usize, counter: &dyn TokenCounter) -> (Option<usize>, usize) {
        let total: usize = messages.iter().map(|m| message_tokens(m, counter)).sum();
        if total <= budget {
            return (None, 0);
        }
        let pinned = if self.keep_first_user { first_user(messages) } else { None };
        let room = budget.saturating_sub(pinned.map_or(0, |i| message_tokens(&messages[i], counter)));
        let newest_turn = groups(messages).last().map_or(0, |g| g.start);
        let mut start = messages.len();
        let mut used = 0;
        while start > 0 {
            let cost = message_tokens(&messages[start - 1], counter);
            if used + cost > room {
                break;
            }
            used += cost;
            start -= 1;
        }
        let mut start = start.min(newest_turn);
        // A cut history must not open with results whose call was dropped, nor with a call whose
        // results are not all there.
        while start < newest_turn {
            match &messages[start] {
                AgentMessage::Llm(Message::ToolResult(_)) => start += 1,
                call if has_tool_calls(call) && !answered(messages, start) => start += 1,
                _ => break,
            }
        }
        match pinned {
            Some(first) if first < start => (Some(first), start),
            _ => (None, start),
        }
    }
}

/// Whether every tool call of the assistant message at `index` has its result after it.
fn answered(messages: &[AgentMessage], index: usize) -> bool {
    let Some(assistant) = messages[index].as_assistant() else { return true };
    assistant.tool_calls().all(|call| {
        messages[index + 1..].iter().filter_map(AgentMessage::as_tool_result).any(|r| r.tool_call_id == call.id)
    })
}

#[async_trait]
impl CompactionStrategy for TokenBudgetTruncation {
    async fn compact(&self, messages: &[AgentMessage], config: &ContextConfig) -> Option<Vec<AgentMessage>> {
        let budget = self.budget.min(config.history_budget());
        match self.truncate_to(messages, budget, &*config.token_counter) {
            Cow::Borrowed(kept) if kept.len() == messages.len() => None,
            kept => Some(kept.into_owned()),
        }
    }
}
