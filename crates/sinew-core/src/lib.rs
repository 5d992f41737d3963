//! The vocabulary of sinew: messages, content, events, tools, provider traits and errors.
//!
//! Every other sinew crate builds on these types; this crate does no I/O, spawns nothing and
//! names no vendor.
//!
//! ```
//! use sinew_core::{AgentMessage, Content, Message};
//!
//! let history = vec![AgentMessage::user("What is 2 + 2?")];
//! let json = serde_json::to_string(&history).unwrap();
//! assert_eq!(serde_json::from_str::<Vec<AgentMessage>>(&json).unwrap(), history);
//! assert_eq!(history[0].as_llm().map(Message::content), Some(&[Content::text("What is 2 + 2?")][..]));
//! ```
//!
//! ## Feature flags
//! None: the crate is always the same small vocabulary.

pub mod compaction;
pub mod config;
pub mod content;
pub mod error;
pub mod event;
pub mod filter;
pub mod history;
pub mod message;
pub mod options;
pub mod provider;
pub mod retry;
pub mod schema;
pub mod tool;
pub mod usage;
pub mod wire;

pub use compaction::{CompactionStrategy, ContextConfig, HeuristicTokenCounter, TokenCounter, estimate_tokens};
pub use config::{
    CacheConfig, CacheStrategy, ContinuationKind, ExecutionLimits, ExecutionTracker, QueueMode, ThinkingLevel,
    ToolExecution, TurnTrigger,
};
pub use content::{Content, ToolCallRef, join_text, joined_text};
pub use error::{Failure, ProviderError, ToolError, is_context_overflow};
pub use event::{AgentEvent, EndReason, PendingKind};
pub use filter::{FilterResult, InputFilter};
pub use message::{
    AgentMessage, AssistantMessage, ExtensionMessage, Message, StopReason, ToolResultMessage, UserMessage, now_ms,
};
pub use options::{RequestOptions, ResponseFormat, ToolChoice};
pub use provider::{CacheBreakpoints, StreamDelta, StreamEvent, StreamProvider, StreamRequest};
pub use retry::{MAX_SERVER_DELAY, RetryConfig, delay_for_attempt};
/// Cancellation shared by the loop, providers and tools; cancelling a token cancels its children.
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    AgentTool, MAX_TOOL_NAME_LEN, ProgressFn, ToolContext, ToolDefinition, ToolResult, ToolUpdateFn, check_tool_names,
    is_valid_tool_name, valid_tool_name,
};
pub use usage::Usage;
pub use wire::{HistoryCache, WireCache, WirePrefix};
