//! How full the context is (REQ-136).

use std::sync::Arc;

use sinew_core::{AgentMessage, HeuristicTokenCounter, TokenCounter, Usage};

use crate::count::total_tokens;

/// The context's size, as the provider last reported it plus a local estimate of what was
/// appended since.
///
/// Providers count exactly; the local counter only estimates. After each model call, [`record`]
/// the assistant message's [`Usage`]; [`current_tokens`] then adds the estimate of the messages
/// appended after it. A report only counts while the history still holds the reported message at
/// the same place, so a history rewritten by compaction falls back to the estimate by itself.
///
/// [`record`]: ContextTracker::record
/// [`current_tokens`]: ContextTracker::current_tokens
#[derive(Clone)]
pub struct ContextTracker {
    counter: Arc<dyn TokenCounter>,
    reported: Option<Report>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Report {
    /// Prompt plus output tokens: the context after the reported message.
    tokens: usize,
    /// The reported message's index.
    index: usize,
    /// The reported message's timestamp, to tell it from a message that took its place.
    timestamp: u64,
}

impl Default for ContextTracker {
    fn default() -> Self {
        ContextTracker::new(Arc::new(HeuristicTokenCounter))
    }
}

impl std::fmt::Debug for ContextTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextTracker").field("reported", &self.reported).finish_non_exhaustive()
    }
}

impl ContextTracker {
    /// A tracker estimating with `counter`.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        ContextTracker { counter, reported: None }
    }

    /// Takes the usage of the assistant message at `messages[index]` as the exact size of the
    /// context up to and including it. A usage of zero (a provider that reports none) is ignored.
    pub fn record(&mut self, messages: &[AgentMessage], index: usize) {
        let Some(assistant) = messages.get(index).and_then(AgentMessage::as_assistant) else { return };
        let tokens = context_size(&assistant.usage);
        if tokens > 0 {
            self.reported = Some(Report { tokens, index, timestamp: assistant.timestamp });
        }
    }

    /// Records the newest assistant message of `messages`, if any.
    pub fn record_latest(&mut self, messages: &[AgentMessage]) {
        if let Some(index) = messages.iter().rposition(|m| m.as_assistant().is_some()) {
            self.record(messages, index);
        }
    }

    /// Forgets the last report.
    pub fn reset(&mut self) {
        self.reported = None;
    }

    /// The provider's last report plus the estimate of later messages; the estimate of the whole
    /// history when there is no report or the history no longer holds the reported message.
    pub fn current_tokens(&self, messages: &[AgentMessage]) -> usize {
        let counter = &*self.counter;
        match self.reported {
            Some(report) if self.still_there(messages, report) => {
                report.tokens.saturating_add(total_tokens(&messages[report.index + 1..], counter))
            }
            _ => total_tokens(messages, counter),
        }
    }

    /// Whether the last report still describes `messages`.
    pub fn is_current(&self, messages: &[AgentMessage]) -> bool {
        self.reported.is_some_and(|report| self.still_there(messages, report))
    }

    fn still_there(&self, messages: &[AgentMessage], report: Report) -> bool {
        messages
            .get(report.index)
            .and_then(AgentMessage::as_assistant)
            .is_some_and(|m| m.timestamp == report.timestamp && context_size(&m.usage) == report.tokens)
    }
}

/// The context a call's usage describes: every prompt token, cached or not, plus the output.
fn context_size(usage: &Usage) -> usize {
    usize::try_from(usage.all_tokens()).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use sinew_core::{AssistantMessage, Content};

    use super::*;

    fn answer(input: u64, output: u64, timestamp: u64) -> AgentMessage {
        let mut m = AssistantMessage::new("p", "m");
        m.content = vec![Content::text("x".repeat(40))];
        m.usage = Usage::new(input, output).with_cache(100, 0);
        m.timestamp = timestamp;
        m.into()
    }

    #[test]
    fn without_a_report_it_estimates() {
        let tracker = ContextTracker::default();
        let history = vec![AgentMessage::user("x".repeat(400))];
        assert_eq!(tracker.current_tokens(&history), 100 + 4);
        assert!(!tracker.is_current(&history));
    }

    #[test]
    fn a_report_plus_the_estimate_of_what_came_after() {
        let mut tracker = ContextTracker::default();
        let mut history = vec![AgentMessage::user("hi"), answer(5_000, 300, 1)];
        tracker.record_latest(&history);
        assert_eq!(tracker.current_tokens(&history), 5_400);
        history.push(AgentMessage::user("x".repeat(40))); // 10 + 4
        assert_eq!(tracker.current_tokens(&history), 5_414);
        assert!(tracker.is_current(&history));
    }

    #[test]
    fn a_rewritten_history_falls_back_to_the_estimate() {
        let mut tracker = ContextTracker::default();
        let history = vec![AgentMessage::user("hi"), answer(5_000, 300, 1), AgentMessage::user("next")];
        tracker.record(&history, 1);
        // Compaction replaced the start: the reported message moved.
        let compacted = vec![history[1].clone(), history[2].clone()];
        assert_eq!(tracker.current_tokens(&compacted), (10 + 4) + (1 + 4));
        // Another message now sits where the reported one was.
        let other = vec![AgentMessage::user("hi"), answer(5_000, 300, 2)];
        assert!(!tracker.is_current(&other));
        tracker.reset();
        assert!(!tracker.is_current(&history));
    }

    #[test]
    fn zero_usage_is_no_report() {
        let mut tracker = ContextTracker::default();
        let mut silent = AssistantMessage::new("p", "m");
        silent.content = vec![Content::text("abcd")];
        let history = vec![AgentMessage::user("hi"), silent.into()];
        tracker.record_latest(&history);
        assert!(!tracker.is_current(&history));
        assert_eq!(tracker.current_tokens(&history), (1 + 4) + (1 + 4));
    }
}
