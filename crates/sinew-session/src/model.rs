//! What a session holds (REQ-211…REQ-213, REQ-218).

use serde::{Deserialize, Serialize};
use sinew_core::{AgentEvent, AgentMessage, ContinuationKind, EndReason, Usage};

/// The format version written into every saved session. Loading refuses newer versions.
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// The record of one conversation: its runs ("loops") in the order they started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The format version the session was saved with: [`SESSION_FORMAT_VERSION`] when this build
    /// wrote it.
    pub format_version: u32,
    /// The session's id, which names its file or row.
    pub session_id: String,
    /// The id of the agent whose run opened the session.
    pub agent_id: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    /// When a loop of the session last started or ended, in milliseconds since the Unix epoch.
    pub updated_at: u64,
    /// The session's runs, in the order they started.
    pub loops: Vec<LoopRecord>,
    /// For the session of a sub-agent: the parent run and tool call that spawned it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_spawn_ref: Option<SpawnRef>,
}

impl Session {
    /// An empty session.
    pub fn new(session_id: impl Into<String>, agent_id: impl Into<String>, now: u64) -> Self {
        Session {
            format_version: SESSION_FORMAT_VERSION,
            session_id: session_id.into(),
            agent_id: agent_id.into(),
            created_at: now,
            updated_at: now,
            loops: Vec::new(),
            parent_spawn_ref: None,
        }
    }

    /// The usage of every loop, summed.
    pub fn total_usage(&self) -> Usage {
        self.loops.iter().fold(Usage::default(), |sum, l| sum.combine(&l.usage))
    }

    /// The loop `loop_id`, if this session holds it.
    pub fn get_loop(&self, loop_id: &str) -> Option<&LoopRecord> {
        self.loops.iter().find(|l| l.loop_id == loop_id)
    }

    /// The loop `loop_id`, to change, if this session holds it.
    pub fn get_loop_mut(&mut self, loop_id: &str) -> Option<&mut LoopRecord> {
        self.loops.iter_mut().find(|l| l.loop_id == loop_id)
    }

    /// The metadata half of [`Session::merge`]: the later `updated_at` (and its spawn reference,
    /// if it has one), the earlier `created_at`.
    pub fn merge_header(&mut self, other: &Session) {
        if other.updated_at >= self.updated_at {
            self.updated_at = other.updated_at;
            if other.parent_spawn_ref.is_some() {
                self.parent_spawn_ref.clone_from(&other.parent_spawn_ref);
            }
        }
        self.created_at = self.created_at.min(other.created_at);
    }

    /// Loops without a parent in this session, in order.
    pub fn root_loops(&self) -> Vec<&LoopRecord> {
        self.loops.iter().filter(|l| l.parent_loop_id.as_deref().is_none_or(|p| self.get_loop(p).is_none())).collect()
    }

    /// The loops whose parent is `loop_id`, in order.
    pub fn children_of(&self, loop_id: &str) -> Vec<&LoopRecord> {
        self.loops.iter().filter(|l| l.parent_loop_id.as_deref() == Some(loop_id)).collect()
    }

    /// The other branches of the parallel group `loop_id` belongs to (empty if none).
    pub fn parallel_siblings(&self, loop_id: &str) -> Vec<&LoopRecord> {
        let Some(group) = self.get_loop(loop_id).and_then(|l| l.parallel_group.as_ref()) else { return Vec::new() };
        self.loops
            .iter()
            .filter(|l| l.loop_id != loop_id && l.parallel_group.as_ref().is_some_and(|g| g.group_id == group.group_id))
            .collect()
    }

    /// Adds `other`'s loops: a loop already here (same id) is replaced in place, a new one is
    /// appended. Metadata is taken from whichever session was updated last.
    pub fn merge(&mut self, other: Session) {
        self.merge_header(&other);
        for record in other.loops {
            match self.loops.iter_mut().find(|l| l.loop_id == record.loop_id) {
                Some(existing) => *existing = record,
                None => self.loops.push(record),
            }
        }
    }
}

/// Where a loop is in its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum LoopStatus {
    /// Registered ahead of its start (a branch of a parallel group).
    Pending,
    /// Started and not yet ended.
    #[default]
    Running,
    /// Ended normally: the model answered and nothing was left to do.
    Completed,
    /// Cancelled.
    Aborted,
    /// Ended because a model call failed for good.
    Failed,
    /// Ended at an execution limit.
    LimitReached,
    /// Ended because an input filter rejected the prompt.
    Rejected,
    /// Stopped by a `before_loop` or `before_turn` hook.
    Stopped,
    /// Waiting for tool approvals or client-side tool results.
    Suspended,
}

impl From<EndReason> for LoopStatus {
    fn from(reason: EndReason) -> Self {
        match reason {
            EndReason::Aborted => LoopStatus::Aborted,
            EndReason::Failed => LoopStatus::Failed,
            EndReason::LimitReached => LoopStatus::LimitReached,
            EndReason::Rejected => LoopStatus::Rejected,
            EndReason::Stopped => LoopStatus::Stopped,
            EndReason::Suspended => LoopStatus::Suspended,
            _ => LoopStatus::Completed,
        }
    }
}

impl LoopStatus {
    /// Whether the loop has ended.
    pub fn is_closed(self) -> bool {
        !matches!(self, LoopStatus::Pending | LoopStatus::Running)
    }
}

/// One run of an agent: from `AgentStart` to `AgentEnd`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopRecord {
    /// The run's id, as its events carry it.
    pub loop_id: String,
    /// The id of the session holding the record, as the recorder's formation chose it.
    pub session_id: String,
    /// The agent that ran.
    pub agent_id: String,
    /// Where the run is in its life, and how it ended once closed.
    pub status: LoopStatus,
    /// Milliseconds since the Unix epoch.
    pub started_at: u64,
    /// When the run ended, in milliseconds since the Unix epoch; `None` while it is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    /// How the run continues an earlier one (a rerun, a branch), as its start said; `None` when it
    /// said nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_kind: Option<ContinuationKind>,
    /// The model that ran the loop; `None` when its start named no model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<LoopConfigSnapshot>,
    /// The messages the run appended (its `AgentEnd.messages`).
    #[serde(default)]
    pub messages: Vec<AgentMessage>,
    /// The tokens the run used: its assistant messages' usage summed, zero until it ends.
    #[serde(default)]
    pub usage: Usage,
    /// The run's events, as far as the recorder keeps them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<LoopEvent>,
    /// The run this one continues, resumes, branches from or was called by (a sub-agent's
    /// parent); `None` for a run that starts afresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_loop_id: Option<String>,
    /// The runs that name this one as their parent, in the order they were seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children_loop_ids: Vec<String>,
    /// Sub-agent runs this run spawned (possibly in other sessions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_loop_refs: Vec<ChildLoopRef>,
    /// For a branch of a parallel group: the group, and whether this branch was selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_group: Option<ParallelGroupRecord>,
}

/// An event of a loop, stamped when the recorder saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopEvent {
    /// When the recorder saw the event, in milliseconds since the Unix epoch.
    pub at: u64,
    /// The event, as the agent emitted it.
    pub event: AgentEvent,
}

/// Which model ran a loop. Kept per loop because an agent may switch models between runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopConfigSnapshot {
    /// The model asked for.
    pub model: String,
    /// The provider's id (its `provider_id`).
    pub provider: String,
    /// The configuration id: the middle segment of the run's loop ids.
    pub config_id: String,
}

/// Parent → child: a sub-agent run spawned by a tool call of this loop.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildLoopRef {
    /// The id of the tool call that spawned the child run.
    pub tool_call_id: String,
    /// The name of that tool.
    pub tool_name: String,
    /// The session holding the child run.
    pub child_session_id: String,
    /// The child run's loop id.
    pub child_loop_id: String,
}

/// Child → parent: the run and tool call that spawned this session's sub-agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnRef {
    /// The session holding the parent run.
    pub parent_session_id: String,
    /// The parent run's loop id.
    pub parent_loop_id: String,
    /// The id of the parent's tool call that spawned this session; empty until its result is seen.
    pub tool_call_id: String,
    /// The name of that tool; empty until the call's result is seen.
    pub tool_name: String,
}

/// The parallel group a branch loop belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParallelGroupRecord {
    /// The group's id (the `loop_id` of its `ParallelLoopStart` event).
    pub group_id: String,
    /// Every branch of the group, in order.
    pub branch_loop_ids: Vec<String>,
    /// The evaluation strategy's name.
    #[serde(default)]
    pub strategy: String,
    /// The branch the strategy selected; `None` until the group ends, or when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_loop_id: Option<String>,
    /// Whether this branch was selected.
    #[serde(default)]
    pub is_selected: bool,
}
