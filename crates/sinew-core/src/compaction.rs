//! The seams of context compaction: token counting and compaction strategies.
//!
//! The strategies themselves live in `sinew-compaction`.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::message::AgentMessage;

/// Counts tokens of text. The default is [`HeuristicTokenCounter`].
pub trait TokenCounter: Send + Sync {
    fn count(&self, text: &str) -> usize;
}

/// `ceil(bytes / 4)`: cheap, and close enough for budgeting.
#[derive(Clone, Copy, Debug, Default)]
pub struct HeuristicTokenCounter;

impl TokenCounter for HeuristicTokenCounter {
    fn count(&self, text: &str) -> usize {
        estimate_tokens(text)
    }
}

/// `ceil(bytes / 4)`.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// How much history to keep when compacting.
#[derive(Clone)]
pub struct ContextConfig {
    pub max_context_tokens: usize,
    pub system_prompt_tokens: usize,
    pub keep_recent: usize,
    pub keep_first: usize,
    pub tool_output_max_lines: usize,
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
/// Implementations must keep the history valid: never separate an assistant tool call from its
/// tool result, never drop the first user message.
#[async_trait]
pub trait CompactionStrategy: Send + Sync {
    async fn compact(&self, messages: Vec<AgentMessage>, config: &ContextConfig) -> Vec<AgentMessage>;
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
    fn context_defaults_are_documented_values() {
        let c = ContextConfig::default();
        assert_eq!(
            (c.max_context_tokens, c.system_prompt_tokens, c.keep_recent, c.keep_first, c.tool_output_max_lines),
            (100_000, 4_000, 10, 2, 50)
        );
    }
}
