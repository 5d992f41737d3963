//! What a session holds (REQ-211…REQ-213, REQ-218).

use serde::{Deserialize, Serialize};
use sinew_core::{AgentEvent, AgentMessage, ContinuationKind, EndReason, Usage};

/// The format version written into every saved session. Loading refuses newer versions.
pub const SESSION_FORMAT_VERSION: u32 = 1;

/// The record of one conversation: its runs ("loops") in the order they started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub format_version: u32,
    pub session_id: String,
    pub agent_id: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub updated_at: u64,
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

    pub fn get_loop(&self, loop_id: &str) -> Option<&LoopRecord> {
        self.loops.iter().find(|l| l.loop_id == loop_id)
    }

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
    #[default]
    Running,
    Completed,
    Aborted,
    Failed,
    LimitReached,
    Rejected,
    Stopped,
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
    pub loop_id: String,
    pub session_id: String,
    pub agent_id: String,
    pub status: LoopStatus,
    /// Milliseconds since the Unix epoch.
    pub started_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_kind: Option<ContinuationKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<LoopConfigSnapshot>,
    /// The messages the run appended (its `AgentEnd.messages`).
    #[serde(default)]
    pub messages: Vec<AgentMessage>,
    #[serde(default)]
    pub usage: Usage,
    /// The run's events, as far as the recorder keeps them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<LoopEvent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_loop_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children_loop_ids: Vec<String>,
    /// Sub-agent runs this run spawned (possibly in other sessions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_loop_refs: Vec<ChildLoopRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_group: Option<ParallelGroupRecord>,
}

/// An event of a loop, stamped when the recorder saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopEvent {
    pub at: u64,
    pub event: AgentEvent,
}

/// Which model ran a loop. Kept per loop because an agent may switch models between runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoopConfigSnapshot {
    pub model: String,
    pub provider: String,
    pub config_id: String,
}

/// Parent → child: a sub-agent run spawned by a tool call of this loop.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildLoopRef {
    pub tool_call_id: String,
    pub tool_name: String,
    pub child_session_id: String,
    pub child_loop_id: String,
}

/// Child → parent: the run and tool call that spawned this session's sub-agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnRef {
    pub parent_session_id: String,
    pub parent_loop_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
}

/// The parallel group a branch loop belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParallelGroupRecord {
    pub group_id: String,
    /// Every branch of the group, in order.
    pub branch_loop_ids: Vec<String>,
    /// The evaluation strategy's name.
    #[serde(default)]
    pub strategy: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_loop_id: Option<String>,
    /// Whether this branch was selected.
    #[serde(default)]
    pub is_selected: bool,
}
