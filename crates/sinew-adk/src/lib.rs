//! Google's Agent Development Kit (ADK) for sinew: ADK's data model, agents and runner, behaving
//! as adk-python 2.13 does.
//!
//! - The data model reads what adk-python writes and writes what it reads: events and sessions in
//!   the REST API's camelCase form (plain `serde`), and in the session stores' snake_case form
//!   ([`to_snake_value`]). adk-python's own pydantic models validate our output in CI.
//! - [`LlmAgent`], [`SequentialAgent`], [`ParallelAgent`], [`LoopAgent`] and custom [`Agent`]s,
//!   with ADK's callbacks and [`Plugin`]s; tools through the [`Tool`] trait ([`FunctionTool`], and
//!   any sinew tool through [`ToolAdapter`]); models through the [`Llm`] trait ([`ModelAdapter`]
//!   over any sinew provider).
//! - The [`Runner`] streams an invocation's events over a [`SessionService`]; the model requests
//!   it sends are adk-python's, checked against recordings of google-adk itself.
//!
//! ```
//! use sinew_adk::{Content, Event, to_snake_value};
//!
//! let event = Event::user("e-1", Content::user_text("hi"));
//! let wire = serde_json::to_value(&event).unwrap();
//! assert_eq!(wire["invocationId"], "e-1");
//! assert_eq!(to_snake_value(&event).unwrap()["invocation_id"], "e-1");
//! let back: Event = serde_json::from_value(wire).unwrap();
//! assert_eq!(back, event);
//! ```
//!
//! See `docs/concepts/adk.md` for how ADK's concepts map to sinew-adk.
//!
//! ## Feature flags
//! - `sqlite` (default): [`SqliteSessionService`], sessions in a SQLite file in adk-python's
//!   schema (SQLite is compiled in).
//! - `postgres`: `PostgresSessionService`, sessions in PostgreSQL in adk-python's schema.

pub mod adapter;
pub mod agent;
mod app;
pub mod artifact;
pub mod callbacks;
mod compaction;
mod context;
mod database;
mod error;
pub mod event;
mod flow;
pub mod genai;
mod handoff;
mod history;
mod json;
mod llm_agent;
pub mod memory;
pub mod model;
pub mod plugin;
mod pyrepr;
mod record;
mod resume;
mod runner;
pub mod session;
pub mod testing;
mod tool;
pub mod types;
mod workflow;

#[cfg(feature = "postgres")]
pub use adapter::PostgresMessageStore;
#[cfg(feature = "sqlite")]
pub use adapter::SqliteMessageStore;
pub use adapter::{
    ChatMessage, Conversation, ConversationKey, EventsAdapter, InMemoryMessageStore, MessageStore,
    SessionServiceAdapter, ToolCall, run_and_collect,
};
pub use agent::{Agent, AgentNames, check_agent_name};
pub use app::App;
pub use artifact::{ArtifactService, ArtifactVersion, FileArtifactService, InMemoryArtifactService};
pub use compaction::{DEFAULT_SUMMARY_PROMPT, EventsCompactionConfig, EventsSummarizer, LlmEventSummarizer};
pub use context::{CallbackContext, DEFAULT_MAX_LLM_CALLS, InvocationContext, RunConfig, StreamingMode, ToolContext};
#[cfg(feature = "postgres")]
pub use database::PostgresSessionService;
#[cfg(feature = "sqlite")]
pub use database::SqliteSessionService;
pub use error::{Error, Result};
pub use event::{
    ArcStr, Event, EventActions, EventCompaction, LlmResponse, NodeInfo, ToolConfirmation, new_event_id, now_seconds,
};
pub use flow::REQUEST_CONFIRMATION;
pub use genai::{
    Blob, CodeExecutionResult, Content, ExecutableCode, FileData, FunctionCall, FunctionDeclaration, FunctionResponse,
    GenerateContentConfig, MODEL, Part, SystemInstruction, ThinkingConfig, USER, UsageMetadata,
};
pub use history::OTHER_AGENT_PREAMBLE;
pub use json::to_snake_value;
pub use llm_agent::{
    IncludeContents, Instruction, InstructionProvider, LlmAgent, LlmAgentBuilder, ReadonlyContext, inject_state,
    template_state_keys,
};
pub use memory::{InMemoryMemoryService, MemoryEntry, MemoryService};
pub use model::{Llm, ModelAdapter};
pub use plugin::Plugin;
pub use record::to_sinew_session;
pub use runner::{Runner, agent_to_run, new_invocation_id};
pub use session::{GetSessionConfig, InMemorySessionService, SessionService, apply_event};
/// The error a tool fails with (sinew-core's, in the signatures of tools and tool callbacks).
pub use sinew_core::ToolError;
pub use tool::{FunctionTool, Tool, ToolAdapter, exit_loop, response_object};
pub use types::{LlmRequest, RunAgentRequest, Session};
pub use workflow::{LoopAgent, ParallelAgent, SequentialAgent};

/// The ADK guide's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/concepts/adk.md")]
struct AdkGuideDoctests;
