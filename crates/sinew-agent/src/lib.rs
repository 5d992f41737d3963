//! The sinew agent loop and the [`Agent`] API.
//!
//! An [`Agent`] holds a model (any [`sinew_core::StreamProvider`]), tools, a system prompt and a
//! history. Each prompt starts a run: the model answers, asks for tools, the tools run, the model
//! answers again, until it is done. A run is a [`futures::Stream`] of [`sinew_core::AgentEvent`]s.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use serde_json::json;
//! use sinew_agent::Agent;
//! use sinew_core::EndReason;
//! use sinew_testing::{EchoTool, MockProvider, MockResponse};
//!
//! let provider = MockProvider::new([
//!     MockResponse::new().tool_call("call_1", "echo", json!({"text": "ping"})),
//!     MockResponse::text("The tool said ping."),
//! ]);
//! let mut agent = Agent::new(provider, "mock-model").with_tool(EchoTool);
//! let outcome = agent.prompt("Use the tool").finish().await;
//! assert_eq!(outcome.reason, EndReason::Completed);
//! assert_eq!(outcome.final_text().as_deref(), Some("The tool said ping."));
//! // prompt, tool call, tool result, answer
//! assert_eq!(agent.messages().len(), 4);
//! # });
//! ```
//!
//! What the loop guarantees:
//! - `AgentEnd` is the last event of every run, however it ends ([`sinew_core::EndReason`] says how).
//! - The history is always valid to send to any provider: an assistant tool call enters it only
//!   together with its result; calls that never ran get an error result saying why.
//! - Cancellation ([`Agent::abort`], [`AgentHandle::abort`]) reaches the model stream, every tool
//!   and retry sleeps.
//! - Hooks fire in the order documented on [`Hooks`].
//! - Runs emit `tracing` spans `invoke_agent`, `chat` and `execute_tool` with OpenTelemetry GenAI
//!   attributes (`gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.usage.input_tokens`,
//!   `gen_ai.tool.name`...); a `chat` span also records `sinew.time_to_first_chunk`, and the
//!   messages themselves only when [`AgentLoopConfig::capture_message_content`] is set.
//!
//! Context: before each model call the history is compacted to the [`sinew_core::ContextConfig`]'s
//! budget (on by default, [`Agent::with_context_config`]`(None)` turns it off) by the
//! tiered cascade of `sinew-compaction`, or by [`Agent::with_compaction_strategy`]'s strategy.
//! [`Agent::with_skills`] lists a [`SkillSet`] of Agent Skills in the system prompt.
//!
//! Human-in-the-loop: tools can require approval ([`Agent::with_approval_required_for`], or
//! [`sinew_core::AgentTool::requires_approval`]), or every call can be handed to the host
//! ([`Agent::with_pause_on_tool_calls`]). The run then suspends: it emits
//! `ToolApprovalRequest` events, ends, and keeps a [`Suspension`] (serializable through
//! [`AgentSnapshot`]) until [`Agent::resume`] is called with [`Decisions`].
//!
//! Composition: [`SubAgentTool`] makes an agent a tool of another (cancellation, streamed text and
//! loop ids carried across); [`agent_loop_parallel`] runs one prompt under several
//! configurations and lets an [`EvaluationStrategy`] pick the winner;
//! [`Agent::explore_branches`] continues one history in several ways at once.
//!
//! Typed tools and structured answers (feature `schema`): [`typed::TypedTool`] makes a tool of
//! an `async fn(Args) -> Result<Output, E>`, and [`extract::Extractor`] makes an agent answer with
//! a Rust value, checked against its schema and corrected by the model when it does not fit.
//!
//! ## Feature flags
//! - `schema`: the `typed` and `extract` modules (adds `schemars` and `jsonschema`).

mod agent;
mod agent_loop;
mod approval;
mod branches;
mod config;
mod content_capture;
mod emit;
mod error;
mod evaluation;
mod execution;
#[cfg(feature = "schema")]
pub mod extract;
mod parallel;
pub mod skills;
mod snapshot;
mod sub_agent;
#[cfg(feature = "schema")]
pub mod typed;

pub use agent::{Agent, AgentHandle, AgentRun, SUPERSEDED};
pub use agent_loop::{CUT_OFF, LoopOutcome, NOT_EXECUTED, agent_loop, agent_loop_continue, agent_loop_resume};
pub use approval::{Decisions, PendingToolCall, Suspension, ToolDecision};
pub use branches::{Branch, BranchOutcome, BranchSpec};
pub use config::{
    AfterLoopFn, AfterToolExecutionFn, AfterToolUpdateFn, AfterTurnFn, AgentContext, AgentLoopConfig, ApprovalPolicyFn,
    BeforeLoopFn, BeforeToolExecutionFn, BeforeToolUpdateFn, BeforeTurnFn, ConvertToLlmFn, EventObserver, Hooks,
    InstructionContext, InstructionProvider, OnErrorFn, QueueFn, TransformContextFn,
};
pub use emit::{EventReceiver, EventSender, event_channel};
pub use error::{Error, Result};
pub use evaluation::{
    DEFAULT_JUDGE_PROMPT, ElaborateEvaluation, JudgeFit, LlmJudgeEvaluation, PickFirstEvaluation,
    TokenEfficientEvaluation, TransparentEvaluation,
};
pub use execution::{ABORTED, SKIPPED_BY_HOOK, SKIPPED_FOR_STEERING};
pub use parallel::{
    Evaluation, EvaluationDecision, EvaluationInput, EvaluationStrategy, ParallelLoopOutcome, ParallelLoopResult,
    agent_loop_parallel,
};
pub use skills::{Skill, SkillError, SkillSet};
pub use snapshot::{AgentSnapshot, SNAPSHOT_FORMAT_VERSION};
pub use sub_agent::{DEFAULT_SUB_AGENT_MAX_TURNS, NO_TEXT_OUTPUT, SubAgentTool, extract_final_text};
