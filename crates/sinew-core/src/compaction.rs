//! The seams of context compaction: token counting and compaction strategies.
//!
//! The strategies themselves live in `sinew-compaction`.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::message::AgentMessage;

/// Counts tokens of text. The default is [`HeuristicTokenCounter`].
pub trait TokenCounter: Send + Sync {
    /// The tokens of `text`.
    fn count(&self, text: &str) -> usize;

    /// The tokens of `value` serialized as compact JSON (tool-call arguments, opaque blocks).
    fn count_json(&self, value: &Value) -> usize {
        self.count(&value.to_string())
    }
}

/// `ceil(bytes / 4)`: cheap, and close enough for budgeting.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicTokenCounter;

impl TokenCounter for HeuristicTokenCounter {
    fn count(&self, text: &str) -> usize {
        estimate_tokens(text)
    }

    /// Measures the JSON without building the string.
    fn count_json(&self, value: &Value) -> usize {
        let mut bytes = ByteCount(0);
        // Writing to a counter cannot fail, and a `Value` always serializes.
        let _ = serde_json::to_writer(&mut bytes, value);
        bytes.0.div_ceil(4)
    }
}

/// An `io::Write` that only counts.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `ceil(bytes / 4)`.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// How much history to keep when compacting.
///
/// The history's budget is `max_context_tokens - system_prompt_tokens`
/// ([`ContextConfig::history_budget`]).
#[derive(Clone)]
#[non_exhaustive]
pub struct ContextConfig {
    /// The model's context window, in tokens. Default 100,000.
    pub max_context_tokens: usize,
    /// Tokens set aside for the system prompt, out of the window. Default 4,000.
    pub system_prompt_tokens: usize,
    /// Newest messages strategies keep as they are. Default 10.
    pub keep_recent: usize,
    /// Oldest messages strategies keep when dropping the middle of the history. Default 2.
    pub keep_first: usize,
    /// Lines a tool output keeps when strategies truncate it. Default 50.
    pub tool_output_max_lines: usize,
    /// Measures the history against the budget. Default [`HeuristicTokenCounter`].
    pub token_counter: Arc<dyn TokenCounter>,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            max_context_tokens: 100_000,
            system_prompt_tokens: 4_000,
            keep_recent: 10,
            keep_first: 2,
            tool_output_max_lines: 50,
            token_counter: Arc::new(HeuristicTokenCounter),
        }
    }
}

impl ContextConfig {
    /// Sets [`max_context_tokens`](Self::max_context_tokens).
    #[must_use]
    pub fn with_max_context_tokens(mut self, tokens: usize) -> Self {
        self.max_context_tokens = tokens;
        self
    }

    /// Sets [`system_prompt_tokens`](Self::system_prompt_tokens).
    #[must_use]
    pub fn with_system_prompt_tokens(mut self, tokens: usize) -> Self {
        self.system_prompt_tokens = tokens;
        self
    }

    /// Sets [`keep_recent`](Self::keep_recent).
    #[must_use]
    pub fn with_keep_recent(mut self, messages: usize) -> Self {
        self.keep_recent = messages;
        self
    }

    /// Sets [`keep_first`](Self::keep_first).
    #[must_use]
    pub fn with_keep_first(mut self, messages: usize) -> Self {
        self.keep_first = messages;
        self
    }

    /// Sets [`tool_output_max_lines`](Self::tool_output_max_lines).
    #[must_use]
    pub fn with_tool_output_max_lines(mut self, lines: usize) -> Self {
        self.tool_output_max_lines = lines;
        self
    }

    /// Sets [`token_counter`](Self::token_counter).
    #[must_use]
    pub fn with_token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.token_counter = counter;
        self
    }

    /// The tokens the history may take: the context window less the system prompt's share.
    pub fn history_budget(&self) -> usize {
        self.max_context_tokens.saturating_sub(self.system_prompt_tokens)
    }
}

impl fmt::Debug for ContextConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextConfig")
            .field("max_context_tokens", &self.max_context_tokens)
            .field("system_prompt_tokens", &self.system_prompt_tokens)
            .field("keep_recent", &self.keep_recent)
            .field("keep_first", &self.keep_first)
            .field("tool_output_max_lines", &self.tool_output_max_lines)
            .finish_non_exhaustive()
    }
}

/// Shrinks a history to fit a context budget.
///
/// The agent loop calls it before every model call. Implementations must keep the history valid:
/// never separate an assistant tool call from its tool results, never drop the first user
/// message.
#[async_trait]
pub trait CompactionStrategy: Send + Sync {
    /// The compacted history, or `None` to keep `messages` as they are (the common case, which
    /// then costs no copy).
    async fn compact(&self, messages: &[AgentMessage], config: &ContextConfig) -> Option<Vec<AgentMessage>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heuristic_rounds_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("hello"), 2);
        assert_eq!(estimate_tokens("four"), 1);
        assert_eq!(HeuristicTokenCounter.count("€"), 1);
    }

    #[test]
    fn heuristic_counts_json_as_its_serialization() {
        let value = serde_json::json!({"path": "src/main.rs", "lines": [1, 2, 3], "note": "é\n"});
        let text = value.to_string();
        assert_eq!(HeuristicTokenCounter.count_json(&value), estimate_tokens(&text));
    }

    #[test]
    fn history_budget_leaves_room_for_the_system_prompt() {
        let config = ContextConfig { max_context_tokens: 1_000, system_prompt_tokens: 300, ..ContextConfig::default() };
        assert_eq!(config.history_budget(), 700);
        let tiny = ContextConfig { max_context_tokens: 100, ..ContextConfig::default() };
        assert_eq!(tiny.history_budget(), 0);
    }

    #[test]
    fn context_defaults_are_documented_values() {
        let c = ContextConfig::default();
        assert_eq!(
            (c.max_context_tokens, c.system_prompt_tokens, c.keep_recent, c.keep_first, c.tool_output_max_lines),
            (100_000, 4_000, 10, 2, 50)
        );
    }
}
