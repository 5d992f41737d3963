//! Token counting, context tracking and context compaction for sinew agents.
//!
//! - Counting (REQ-054, REQ-055): [`message_tokens`] and [`total_tokens`] measure a history with
//!   any [`TokenCounter`]: [`HeuristicTokenCounter`] (4 bytes a token) by default, or a real BPE
//!   tokenizer with the `tiktoken` feature (`TiktokenCounter`).
//! - Tracking (REQ-136): [`ContextTracker`] combines the provider's reported usage with an
//!   estimate of what was appended since.
//! - Strategies, all [`CompactionStrategy`]s:
//!   - [`TieredCompaction`], the agent's default: the cascade of [`compact_messages`];
//!   - [`TokenBudgetTruncation`]: the newest messages within a budget (ADK's history management);
//!   - [`SummarizingCompaction`]: a model summarises what is dropped, the cascade as fallback.
//!
//! Every strategy keeps a history valid: an assistant tool call is never separated from its
//! results, the first user message is kept, and order never changes. The system prompt is not
//! part of the history; its share of the window is [`ContextConfig::system_prompt_tokens`].
//!
//! ```
//! use sinew_compaction::{compact_messages, total_tokens};
//! use sinew_core::{AgentMessage, ContextConfig};
//!
//! let config = ContextConfig::default().with_max_context_tokens(600).with_system_prompt_tokens(100).with_keep_recent(4);
//! let history: Vec<AgentMessage> = (0..100).map(|i| AgentMessage::user(format!("message {i}: {}", "x".repeat(40)))).collect();
//! let compacted = compact_messages(&history, &config);
//! assert!(total_tokens(&compacted, &*config.token_counter) <= config.history_budget());
//! assert_eq!(compacted[0], history[0]); // the first user message stays
//! ```

mod count;
mod groups;
mod summarize;
mod tiered;
#[cfg(feature = "tiktoken")]
mod tiktoken;
mod tracker;
mod truncate;

pub use count::{
    DOCUMENT_URL_TOKENS, IMAGE_URL_TOKENS, MESSAGE_OVERHEAD, TOOL_RESULT_OVERHEAD, audio_tokens, content_tokens,
    document_tokens, image_tokens, message_tokens, total_tokens,
};
pub use sinew_core::{CompactionStrategy, ContextConfig, HeuristicTokenCounter, TokenCounter, estimate_tokens};
pub use summarize::{DEFAULT_SUMMARY_PROMPT, SummarizingCompaction};
pub use tiered::{
    SUMMARY_HEADER, TieredCompaction, compact_messages, drop_middle, keep_within_budget, shorten_texts,
    summarize_old_turns, truncate_tool_outputs,
};
#[cfg(feature = "tiktoken")]
pub use tiktoken::TiktokenCounter;
pub use tracker::ContextTracker;
pub use truncate::{DEFAULT_TOKEN_BUDGET, TokenBudgetTruncation};
