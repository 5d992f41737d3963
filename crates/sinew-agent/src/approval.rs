//! Human-in-the-loop: tool calls that wait for the host, and the decisions that resume them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sinew_core::{AgentMessage, AssistantMessage, PendingKind, ToolResult, ToolResultMessage};

use crate::error::{Error, Result};

/// A tool call that waits for the host.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingToolCall {
    /// The model's id for the call; decisions name the call by it.
    pub tool_call_id: String,
    /// The called tool's name.
    pub tool_name: String,
    /// The arguments the model gave, as JSON.
    pub arguments: Value,
    /// What the call waits for: a human's approval, the host's result, or nothing (`Ready`).
    pub kind: PendingKind,
}

/// A run stopped at a tool batch that needs the host: approvals, or client-side results.
///
/// It holds the assistant message that asked for the calls; that message enters the history
/// together with the results when the run resumes, so the stored history stays valid to send to
/// any provider while the run waits. Serializable: save it, load it in another process, resume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    /// The loop that suspended; the resuming loop names it as its parent.
    pub loop_id: String,
    /// The model's message that asked for the calls; it enters the history when the run resumes.
    pub assistant: AssistantMessage,
    /// Every call of the batch, in call order, including those that need nothing (`Ready`).
    pub calls: Vec<PendingToolCall>,
}

impl Suspension {
    /// The calls that wait for a decision.
    pub fn waiting(&self) -> impl Iterator<Item = &PendingToolCall> {
        self.calls.iter().filter(|c| c.kind != PendingKind::Ready)
    }

    /// The assistant message followed by an error result for every call: what the history gets
    /// when the suspended batch is abandoned.
    pub(crate) fn abandon(self, why: &str) -> Vec<AgentMessage> {
        let mut out = Vec::with_capacity(self.calls.len() + 1);
        out.push(AgentMessage::from(self.assistant));
        out.extend(
            self.calls
                .into_iter()
                .map(|c| AgentMessage::from(ToolResultMessage::error(c.tool_call_id, c.tool_name, why))),
        );
        out
    }
}

/// The host's answer for one pending tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
pub enum ToolDecision {
    /// Run the call as the model asked.
    Approve,
    /// Run the call with these arguments instead.
    Edit {
        /// The JSON arguments to run the call with, replacing the model's.
        arguments: Value,
    },
    /// Do not run it; the model is told why.
    Reject {
        /// Told to the model after "The user rejected this tool call: "; `None`: no reason given.
        reason: Option<String>,
    },
    /// The host ran the call itself; this is its result.
    #[serde(rename_all = "camelCase")]
    Result {
        /// The tool's output, as the model will see it.
        result: ToolResult,
        /// Whether the call failed; the model then sees the result as an error.
        is_error: bool,
    },
}

impl ToolDecision {
    fn name(&self) -> &'static str {
        match self {
            ToolDecision::Approve => "approve",
            ToolDecision::Edit { .. } => "edit",
            ToolDecision::Reject { .. } => "reject",
            ToolDecision::Result { .. } => "result",
        }
    }
}

/// Decisions for the pending calls of a [`Suspension`], by tool call id.
///
/// ```
/// use serde_json::json;
/// use sinew_agent::Decisions;
///
/// let decisions = Decisions::new()
///     .approve("call_1")
///     .reject("call_2", "do not delete files")
///     .edit("call_3", json!({"path": "notes.txt"}));
/// assert_eq!(decisions.len(), 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Decisions(HashMap<String, ToolDecision>);

impl Decisions {
    /// No decisions yet.
    pub fn new() -> Self {
        Decisions::default()
    }

    /// Sets the decision for one call.
    #[must_use]
    pub fn decide(mut self, tool_call_id: impl Into<String>, decision: ToolDecision) -> Self {
        self.0.insert(tool_call_id.into(), decision);
        self
    }

    /// Approves one call: it runs with the model's arguments.
    #[must_use]
    pub fn approve(self, tool_call_id: impl Into<String>) -> Self {
        self.decide(tool_call_id, ToolDecision::Approve)
    }

    /// Rejects one call; the model is told it was rejected, and why.
    #[must_use]
    pub fn reject(self, tool_call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        self.decide(tool_call_id, ToolDecision::Reject { reason: Some(reason.into()) })
    }

    /// Approves one call to run with `arguments` instead of the model's.
    #[must_use]
    pub fn edit(self, tool_call_id: impl Into<String>, arguments: Value) -> Self {
        self.decide(tool_call_id, ToolDecision::Edit { arguments })
    }

    /// The result of a call the host ran itself.
    #[must_use]
    pub fn result(self, tool_call_id: impl Into<String>, result: ToolResult, is_error: bool) -> Self {
        self.decide(tool_call_id, ToolDecision::Result { result, is_error })
    }

    /// How many calls have a decision.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no call has a decision yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Pairs every call of `suspension` with its decision, checking that each waiting call has a
    /// fitting one and no decision names a call that is not pending.
    pub(crate) fn plan(mut self, suspension: &Suspension) -> Result<Vec<Option<ToolDecision>>> {
        let mut plan = Vec::with_capacity(suspension.calls.len());
        for call in &suspension.calls {
            let decision = self.0.remove(&call.tool_call_id);
            match (&call.kind, &decision) {
                (PendingKind::Approval, None) | (PendingKind::ClientSide, None) => {
                    return Err(Error::MissingDecision(call.tool_call_id.clone()));
                }
                (PendingKind::Approval | PendingKind::Ready, Some(d @ ToolDecision::Result { .. })) => {
                    return Err(Error::InvalidDecision { tool_call_id: call.tool_call_id.clone(), decision: d.name() });
                }
                _ => {}
            }
            plan.push(decision);
        }
        match self.0.into_keys().next() {
            Some(unknown) => Err(Error::UnknownToolCall(unknown)),
            None => Ok(plan),
        }
    }
}
