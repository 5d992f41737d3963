//! Agent events: what a running agent tells its host.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{ContinuationKind, TurnTrigger};
use crate::message::{AgentMessage, AssistantMessage, ToolResultMessage};
use crate::provider::StreamDelta;
use crate::tool::ToolResult;

/// Why a run ended, as reported by [`AgentEvent::AgentEnd`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum EndReason {
    /// The model answered and nothing was left to do.
    #[default]
    Completed,
    /// The run was cancelled.
    Aborted,
    /// The model call failed for good.
    Failed,
    /// An execution limit was reached.
    LimitReached,
    /// An input filter rejected the prompt.
    Rejected,
    /// A `before_loop` or `before_turn` hook stopped the run.
    Stopped,
    /// The run waits for tool approvals or client-side tool results.
    Suspended,
}

/// Why a tool call waits for the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PendingKind {
    /// A human must approve, reject or edit the call.
    Approval,
    /// The host runs the tool and resumes with its result (`pause_on_tool_calls`).
    ClientSide,
    /// Needs nothing; runs when the batch resumes.
    Ready,
}

/// One event of an agent run. Every variant carries the `loop_id` of the run that emitted it, so
/// events of interleaved runs can be told apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum AgentEvent {
    #[serde(rename_all = "camelCase")]
    AgentStart {
        agent_id: Arc<str>,
        session_id: Arc<str>,
        loop_id: Arc<str>,
        parent_loop_id: Option<String>,
        continuation_kind: Option<ContinuationKind>,
        /// The model asked, the provider's `provider_id` and the configuration id (the middle
        /// segment of the run's loop ids), for session records.
        #[serde(default)]
        model: String,
        #[serde(default)]
        provider: String,
        #[serde(default)]
        config_id: String,
    },
    /// Always the last event of a run, whatever ended it. `messages` are the run's new messages.
    #[serde(rename_all = "camelCase")]
    AgentEnd { loop_id: Arc<str>, messages: Vec<AgentMessage>, reason: EndReason },
    #[serde(rename_all = "camelCase")]
    TurnStart { loop_id: Arc<str>, turn: usize, triggered_by: TurnTrigger },
    #[serde(rename_all = "camelCase")]
    TurnEnd { loop_id: Arc<str>, turn: usize, message: AssistantMessage, tool_results: Vec<ToolResultMessage> },
    #[serde(rename_all = "camelCase")]
    MessageStart { loop_id: Arc<str>, message: AgentMessage },
    /// A streamed increment of the assistant message. Carries the delta only.
    #[serde(rename_all = "camelCase")]
    MessageUpdate { loop_id: Arc<str>, delta: StreamDelta },
    #[serde(rename_all = "camelCase")]
    MessageEnd { loop_id: Arc<str>, message: AgentMessage },
    #[serde(rename_all = "camelCase")]
    ToolExecutionStart { loop_id: Arc<str>, tool_call_id: String, tool_name: String, args: Value },
    #[serde(rename_all = "camelCase")]
    ToolExecutionUpdate { loop_id: Arc<str>, tool_call_id: String, tool_name: String, partial_result: ToolResult },
    #[serde(rename_all = "camelCase")]
    ToolExecutionEnd {
        loop_id: Arc<str>,
        tool_call_id: String,
        tool_name: String,
        result: ToolResult,
        is_error: bool,
        child_loop_id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    ProgressMessage { loop_id: Arc<str>, tool_call_id: String, tool_name: String, text: String },
    #[serde(rename_all = "camelCase")]
    InputRejected { loop_id: Arc<str>, reason: String },
    /// A tool call waits for the host; the run suspends after emitting these.
    #[serde(rename_all = "camelCase")]
    ToolApprovalRequest { loop_id: Arc<str>, tool_call_id: String, tool_name: String, args: Value, kind: PendingKind },
    /// A failed model call will be retried after `delay_ms`.
    #[serde(rename_all = "camelCase")]
    ProviderRetry { loop_id: Arc<str>, attempt: u32, max_retries: u32, delay_ms: u64, error: String },
    /// The history was compacted before a model call. Token counts are the local estimate.
    #[serde(rename_all = "camelCase")]
    ContextCompacted {
        loop_id: Arc<str>,
        messages_before: usize,
        messages_after: usize,
        tokens_before: usize,
        tokens_after: usize,
    },
    /// Branch runs of one parallel group are about to start (`agent_loop_parallel`). `loop_id`
    /// is the group's id; `loop_ids` are the branches' loop ids, in configuration order.
    #[serde(rename_all = "camelCase")]
    ParallelLoopStart {
        loop_id: Arc<str>,
        agent_id: Arc<str>,
        session_id: Arc<str>,
        loop_ids: Vec<String>,
        /// The evaluation strategy's name.
        strategy: String,
    },
    /// Every branch of the group ended and the strategy decided. `selected_index` is the
    /// winner's configuration index, `None` when the strategy selected none.
    #[serde(rename_all = "camelCase")]
    ParallelLoopEnd {
        loop_id: Arc<str>,
        session_id: Arc<str>,
        selected_loop_id: Option<String>,
        selected_index: Option<usize>,
        /// What the evaluation itself used (a judge model's calls).
        evaluation_usage: crate::Usage,
    },
}

impl AgentEvent {
    /// The run this event belongs to.
    pub fn loop_id(&self) -> &str {
        match self {
            AgentEvent::AgentStart { loop_id, .. }
            | AgentEvent::AgentEnd { loop_id, .. }
            | AgentEvent::TurnStart { loop_id, .. }
            | AgentEvent::TurnEnd { loop_id, .. }
            | AgentEvent::MessageStart { loop_id, .. }
            | AgentEvent::MessageUpdate { loop_id, .. }
            | AgentEvent::MessageEnd { loop_id, .. }
            | AgentEvent::ToolExecutionStart { loop_id, .. }
            | AgentEvent::ToolExecutionUpdate { loop_id, .. }
            | AgentEvent::ToolExecutionEnd { loop_id, .. }
            | AgentEvent::ProgressMessage { loop_id, .. }
            | AgentEvent::InputRejected { loop_id, .. }
            | AgentEvent::ToolApprovalRequest { loop_id, .. }
            | AgentEvent::ProviderRetry { loop_id, .. }
            | AgentEvent::ContextCompacted { loop_id, .. }
            | AgentEvent::ParallelLoopStart { loop_id, .. }
            | AgentEvent::ParallelLoopEnd { loop_id, .. } => loop_id,
        }
    }

    /// The variant's name in snake case (`"agent_start"`, `"message_update"`...), for logs and
    /// assertions on event sequences.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart { .. } => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart { .. } => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::ProgressMessage { .. } => "progress_message",
            AgentEvent::InputRejected { .. } => "input_rejected",
            AgentEvent::ToolApprovalRequest { .. } => "tool_approval_request",
            AgentEvent::ProviderRetry { .. } => "provider_retry",
            AgentEvent::ContextCompacted { .. } => "context_compacted",
            AgentEvent::ParallelLoopStart { .. } => "parallel_loop_start",
            AgentEvent::ParallelLoopEnd { .. } => "parallel_loop_end",
        }
    }
}
