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
    /// The first event of a run that gets past its `before_loop` hook and tool-name check.
    #[serde(rename_all = "camelCase")]
    AgentStart {
        /// The agent's id; empty when the context has none.
        agent_id: Arc<str>,
        /// The session's id; empty when the context has none.
        session_id: Arc<str>,
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The run this one continues or was started from (a sub-agent's caller, a branch's
        /// origin); `None` for a run of its own.
        parent_loop_id: Option<String>,
        /// Why the run continues an existing context; `None` when it starts from a prompt.
        continuation_kind: Option<ContinuationKind>,
        /// The model asked, the provider's `provider_id` and the configuration id (the middle
        /// segment of the run's loop ids), for session records.
        #[serde(default)]
        model: String,
        /// The `provider_id` of the provider serving `model`.
        #[serde(default)]
        provider: String,
        /// The configuration id: the middle segment of the run's loop ids.
        #[serde(default)]
        config_id: String,
    },
    /// Always the last event of a run, whatever ended it. `messages` are the run's new messages.
    #[serde(rename_all = "camelCase")]
    AgentEnd {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// Every message the run appended to the history, in order.
        messages: Vec<AgentMessage>,
        /// Why the run ended.
        reason: EndReason,
    },
    /// A turn (one model call and the tool calls it asks for) begins.
    #[serde(rename_all = "camelCase")]
    TurnStart {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The turn's number within the run, from 1.
        turn: usize,
        /// What started the turn.
        triggered_by: TurnTrigger,
    },
    /// A turn is over: its answer is in and its tool calls have run (or wait, if the run suspends).
    #[serde(rename_all = "camelCase")]
    TurnEnd {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The turn's number within the run, from 1.
        turn: usize,
        /// The model's answer for the turn.
        message: AssistantMessage,
        /// The results of the answer's tool calls, in call order; empty when it made none or the
        /// run suspends for them.
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message enters the history. An assistant message starts empty and is streamed through
    /// `MessageUpdate`s; other messages arrive whole.
    #[serde(rename_all = "camelCase")]
    MessageStart {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The message so far: empty for a streamed assistant message, complete otherwise.
        message: AgentMessage,
    },
    /// A streamed increment of the assistant message. Carries the delta only.
    #[serde(rename_all = "camelCase")]
    MessageUpdate {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The increment, to apply to the message started by the last `MessageStart`.
        delta: StreamDelta,
    },
    /// A message is complete; closes the last `MessageStart`.
    #[serde(rename_all = "camelCase")]
    MessageEnd {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The complete message.
        message: AgentMessage,
    },
    /// A tool call is about to run (after any approval and the `before_tool_execution` hook).
    #[serde(rename_all = "camelCase")]
    ToolExecutionStart {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The model's id for the call, matching its tool result.
        tool_call_id: String,
        /// The called tool's name.
        tool_name: String,
        /// The arguments the tool runs with (an approver's edit, if any, applied).
        args: Value,
    },
    /// A running tool reported a partial result.
    #[serde(rename_all = "camelCase")]
    ToolExecutionUpdate {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The model's id for the call, matching its tool result.
        tool_call_id: String,
        /// The called tool's name.
        tool_name: String,
        /// The result so far.
        partial_result: ToolResult,
    },
    /// A tool call finished, failed or was cancelled.
    #[serde(rename_all = "camelCase")]
    ToolExecutionEnd {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The model's id for the call, matching its tool result.
        tool_call_id: String,
        /// The called tool's name.
        tool_name: String,
        /// The tool's result; the error text when `is_error`.
        result: ToolResult,
        /// Whether the call failed: the tool erred, was not found or was cancelled.
        is_error: bool,
        /// The loop id of the sub-agent run the tool started; `None` for other tools.
        child_loop_id: Option<String>,
    },
    /// A running tool's progress note, for display; not part of its result.
    #[serde(rename_all = "camelCase")]
    ProgressMessage {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The model's id for the call, matching its tool result.
        tool_call_id: String,
        /// The called tool's name.
        tool_name: String,
        /// The note.
        text: String,
    },
    /// An input filter rejected the prompt; the run ends with [`EndReason::Rejected`].
    #[serde(rename_all = "camelCase")]
    InputRejected {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The filter's reason.
        reason: String,
    },
    /// A tool call waits for the host; the run suspends after emitting these.
    #[serde(rename_all = "camelCase")]
    ToolApprovalRequest {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The model's id for the call; the host answers with it.
        tool_call_id: String,
        /// The called tool's name.
        tool_name: String,
        /// The arguments the model gave.
        args: Value,
        /// What the call waits for.
        kind: PendingKind,
    },
    /// A failed model call will be retried after `delay_ms`.
    #[serde(rename_all = "camelCase")]
    ProviderRetry {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// The retry's number, from 1.
        attempt: u32,
        /// The retries the run's retry policy allows.
        max_retries: u32,
        /// The wait before the retry, in milliseconds.
        delay_ms: u64,
        /// The failed call's error message.
        error: String,
    },
    /// The history was compacted before a model call. Token counts are the local estimate.
    #[serde(rename_all = "camelCase")]
    ContextCompacted {
        /// The run that emitted the event.
        loop_id: Arc<str>,
        /// Messages in the history before compaction.
        messages_before: usize,
        /// Messages in the history after compaction.
        messages_after: usize,
        /// Estimated tokens of the history before compaction.
        tokens_before: usize,
        /// Estimated tokens of the history after compaction.
        tokens_after: usize,
    },
    /// Branch runs of one parallel group are about to start (`agent_loop_parallel`). `loop_id`
    /// is the group's id; `loop_ids` are the branches' loop ids, in configuration order.
    #[serde(rename_all = "camelCase")]
    ParallelLoopStart {
        /// The group's id (`{session_id}.parallel.{group}`).
        loop_id: Arc<str>,
        /// The agent running the group.
        agent_id: Arc<str>,
        /// The session the group belongs to.
        session_id: Arc<str>,
        /// The branches' loop ids, in configuration order.
        loop_ids: Vec<String>,
        /// The evaluation strategy's name.
        strategy: String,
    },
    /// Every branch of the group ended and the strategy decided. `selected_index` is the
    /// winner's configuration index, `None` when the strategy selected none.
    #[serde(rename_all = "camelCase")]
    ParallelLoopEnd {
        /// The group's id, as in its `ParallelLoopStart`.
        loop_id: Arc<str>,
        /// The session the group belongs to.
        session_id: Arc<str>,
        /// The winning branch's loop id; `None` when the strategy selected none.
        selected_loop_id: Option<String>,
        /// The winner's configuration index; `None` when the strategy selected none.
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
