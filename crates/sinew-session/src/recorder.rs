//! Building sessions from agent events (REQ-214, REQ-221).

use std::collections::HashMap;

use sinew_core::{AgentEvent, AgentMessage, Usage, now_ms};

use crate::model::{
    ChildLoopRef, LoopConfigSnapshot, LoopEvent, LoopRecord, LoopStatus, ParallelGroupRecord, Session, SpawnRef,
};

/// Which session a loop is recorded into.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Formation {
    /// One session per `session_id` of the events (the agent's own sessions, rotation included).
    #[default]
    PerSessionId,
    /// One session per agent: all its runs, across rotations, under the first session id seen.
    PerAgent,
    /// Every run of every agent in one session with this id.
    Single(String),
}

/// Which events a [`LoopRecord`] keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventRecording {
    /// None: the record keeps messages, usage and links only.
    None,
    /// Everything but streamed deltas and partial tool results (the default).
    #[default]
    Lifecycle,
    /// Every event, deltas included.
    All,
}

/// Turns the events of any number of agents and runs into [`Session`]s.
///
/// Feed it every event ([`on_event`]); events of interleaved runs are told apart by their
/// `loop_id`. A session is *completed* once all its loops ended; [`flush`] hands completed sessions
/// over (for a [`SessionStore`](crate::SessionStore), with `merge`, since a later run of the same
/// session starts a new record holding only the new loops).
///
/// A sub-agent's session waits for its parent's `ToolExecutionEnd` (which names the tool call
/// that spawned it) before it counts as completed, so a `flush` between the child's end and the
/// parent's tool result never leaves its [`SpawnRef`] without the tool call (REQ-221).
/// Likewise, a `ParallelLoopStart` registers the group's branches as pending, and their session
/// waits for the group's `ParallelLoopEnd`, which marks the selected branch.
///
/// [`on_event`]: SessionRecorder::on_event
/// [`flush`]: SessionRecorder::flush
#[derive(Debug, Default)]
pub struct SessionRecorder {
    formation: Formation,
    recording: EventRecording,
    open: HashMap<String, Session>,
    completed: Vec<Session>,
    /// loop id → the id of the session holding it, for every loop seen.
    loops: HashMap<String, String>,
    /// agent id → its session under [`Formation::PerAgent`].
    agents: HashMap<String, String>,
    /// Parallel groups not yet decided → the session holding their branches, which stays open
    /// until the decision is recorded.
    groups: HashMap<String, String>,
}

impl SessionRecorder {
    /// A recorder grouping loops into sessions by `formation`, keeping lifecycle events
    /// ([`EventRecording::Lifecycle`]).
    pub fn new(formation: Formation) -> Self {
        SessionRecorder { formation, ..SessionRecorder::default() }
    }

    /// Keeps `recording`'s events in each [`LoopRecord`].
    #[must_use]
    pub fn with_event_recording(mut self, recording: EventRecording) -> Self {
        self.recording = recording;
        self
    }

    /// Records one event.
    pub fn on_event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart {
                agent_id,
                session_id,
                loop_id,
                parent_loop_id,
                continuation_kind,
                model,
                provider,
                config_id,
            } => {
                let key = self.session_key(agent_id, session_id);
                let now = now_ms();
                let session = self.open_session(&key, agent_id, now);
                let record = LoopRecord {
                    loop_id: loop_id.to_string(),
                    session_id: key.clone(),
                    agent_id: agent_id.to_string(),
                    status: LoopStatus::Running,
                    started_at: now,
                    continuation_kind: continuation_kind.clone(),
                    config: (!model.is_empty()).then(|| LoopConfigSnapshot {
                        model: model.clone(),
                        provider: provider.clone(),
                        config_id: config_id.clone(),
                    }),
                    parent_loop_id: parent_loop_id.clone(),
                    ..LoopRecord::default()
                };
                match session.get_loop_mut(loop_id) {
                    // Registered ahead as a pending branch.
                    Some(pending) => {
                        let group = pending.parallel_group.take();
                        *pending = LoopRecord { parallel_group: group, ..record };
                    }
                    None => session.loops.push(record),
                }
                session.updated_at = now;
                self.loops.insert(loop_id.to_string(), key.clone());
                if let Some(parent) = parent_loop_id {
                    self.link_parent(&key, loop_id, parent);
                }
                self.record_event(loop_id, event);
            }
            AgentEvent::AgentEnd { loop_id, messages, reason } => {
                self.record_event(loop_id, event);
                let now = now_ms();
                if let Some(record) = self.loop_mut(loop_id) {
                    record.status = (*reason).into();
                    record.ended_at = Some(now);
                    record.usage = usage_of(messages);
                    record.messages.clone_from(messages);
                }
                if let Some(key) = self.loops.get(loop_id.as_ref()).cloned() {
                    if let Some(session) = self.open.get_mut(&key) {
                        session.updated_at = now;
                    }
                    self.promote(&key);
                    // Sub-agent sessions waiting for this parent can go now.
                    let waiting: Vec<String> = self
                        .open
                        .iter()
                        .filter(|(_, s)| s.parent_spawn_ref.as_ref().is_some_and(|r| *r.parent_loop_id == **loop_id))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for key in waiting {
                        self.promote(&key);
                    }
                }
            }
            AgentEvent::ToolExecutionEnd { loop_id, tool_call_id, tool_name, child_loop_id: Some(child), .. } => {
                self.record_event(loop_id, event);
                let child_session = self.loops.get(child).cloned().unwrap_or_default();
                let parent_session = self.loops.get(loop_id.as_ref()).cloned().unwrap_or_default();
                if let Some(record) = self.loop_mut(loop_id) {
                    if !record.child_loop_refs.iter().any(|r| r.child_loop_id == *child) {
                        record.child_loop_refs.push(ChildLoopRef {
                            tool_call_id: tool_call_id.clone(),
                            tool_name: tool_name.clone(),
                            child_session_id: child_session.clone(),
                            child_loop_id: child.clone(),
                        });
                    }
                    // The child may have started before this run was recorded (its events were
                    // fed first): link it now.
                    if !record.children_loop_ids.contains(child) {
                        record.children_loop_ids.push(child.clone());
                    }
                }
                // Complete the child session's spawn reference, wherever it is now.
                let enrich = |session: &mut Session| match &mut session.parent_spawn_ref {
                    Some(spawn) if spawn.parent_loop_id == **loop_id => {
                        spawn.tool_call_id.clone_from(tool_call_id);
                        spawn.tool_name.clone_from(tool_name);
                    }
                    None if !parent_session.is_empty() && parent_session != session.session_id => {
                        session.parent_spawn_ref = Some(SpawnRef {
                            parent_session_id: parent_session.clone(),
                            parent_loop_id: loop_id.to_string(),
                            tool_call_id: tool_call_id.clone(),
                            tool_name: tool_name.clone(),
                        });
                    }
                    _ => {}
                };
                if let Some(session) = self.open.get_mut(&child_session) {
                    enrich(session);
                    self.promote(&child_session);
                } else if let Some(session) = self.completed.iter_mut().find(|s| s.session_id == child_session) {
                    enrich(session);
                }
            }
            AgentEvent::ParallelLoopStart { loop_id: group_id, agent_id, session_id, loop_ids, strategy } => {
                let key = self.session_key(agent_id, session_id);
                for branch in loop_ids {
                    self.register_pending(agent_id, session_id, branch).parallel_group = Some(ParallelGroupRecord {
                        group_id: group_id.to_string(),
                        branch_loop_ids: loop_ids.clone(),
                        strategy: strategy.clone(),
                        selected_loop_id: None,
                        is_selected: false,
                    });
                }
                self.groups.insert(group_id.to_string(), key);
            }
            AgentEvent::ParallelLoopEnd { loop_id: group_id, selected_loop_id, .. } => {
                let Some(key) = self.groups.remove(group_id.as_ref()) else { return };
                let session = match self.open.get_mut(&key) {
                    Some(session) => session,
                    None => match self.completed.iter_mut().find(|s| s.session_id == key) {
                        Some(session) => session,
                        None => return,
                    },
                };
                for record in &mut session.loops {
                    if let Some(group) = record.parallel_group.as_mut().filter(|g| *g.group_id == **group_id) {
                        group.selected_loop_id.clone_from(selected_loop_id);
                        group.is_selected = selected_loop_id.as_deref() == Some(record.loop_id.as_str());
                    }
                }
                self.promote(&key);
            }
            other => {
                let keep = match self.recording {
                    EventRecording::None => false,
                    EventRecording::All => true,
                    EventRecording::Lifecycle => {
                        !matches!(other, AgentEvent::MessageUpdate { .. } | AgentEvent::ToolExecutionUpdate { .. })
                    }
                };
                if keep {
                    self.record_event(other.loop_id(), other);
                }
            }
        }
    }

    /// Hands over the completed sessions, oldest completion first. The recorder then forgets
    /// their loops, so a long-lived recorder holds only what is still running.
    pub fn flush(&mut self) -> Vec<Session> {
        let flushed = std::mem::take(&mut self.completed);
        for record in flushed.iter().flat_map(|s| &s.loops) {
            self.loops.remove(&record.loop_id);
        }
        flushed
    }

    /// A session still being recorded, or completed and not yet flushed.
    pub fn session(&self, session_id: &str) -> Option<&Session> {
        self.open.get(session_id).or_else(|| self.completed.iter().find(|s| s.session_id == session_id))
    }

    /// Every session not yet flushed: the open ones, then the completed ones.
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.open.values().chain(&self.completed)
    }

    /// Registers a branch loop before it starts, as [`LoopStatus::Pending`].
    pub fn register_pending(&mut self, agent_id: &str, session_id: &str, loop_id: &str) -> &mut LoopRecord {
        let key = self.session_key(agent_id, session_id);
        self.loops.insert(loop_id.to_owned(), key.clone());
        let session = self.open_session(&key, agent_id, now_ms());
        if session.get_loop(loop_id).is_none() {
            session.loops.push(LoopRecord {
                loop_id: loop_id.to_owned(),
                session_id: key,
                agent_id: agent_id.to_owned(),
                status: LoopStatus::Pending,
                ..LoopRecord::default()
            });
        }
        session.loops.iter_mut().rev().find(|l| l.loop_id == loop_id).expect("the loop was just registered")
    }

    fn session_key(&mut self, agent_id: &str, session_id: &str) -> String {
        match &self.formation {
            Formation::PerSessionId => session_id.to_owned(),
            Formation::PerAgent => {
                self.agents.entry(agent_id.to_owned()).or_insert_with(|| session_id.to_owned()).clone()
            }
            Formation::Single(id) => id.clone(),
        }
    }

    /// The open session `key`, reopened (with only new loops) if it was completed before.
    fn open_session(&mut self, key: &str, agent_id: &str, now: u64) -> &mut Session {
        if !self.open.contains_key(key) {
            let session = match self.completed.iter().position(|s| s.session_id == key) {
                Some(i) => self.completed.remove(i),
                None => Session::new(key, agent_id, now),
            };
            self.open.insert(key.to_owned(), session);
        }
        self.open.get_mut(key).expect("inserted above")
    }

    fn loop_mut(&mut self, loop_id: &str) -> Option<&mut LoopRecord> {
        let key = self.loops.get(loop_id)?;
        let session = match self.open.get_mut(key) {
            Some(session) => session,
            None => self.completed.iter_mut().find(|s| s.session_id == *key)?,
        };
        session.get_loop_mut(loop_id)
    }

    fn record_event(&mut self, loop_id: &str, event: &AgentEvent) {
        if self.recording == EventRecording::None {
            return;
        }
        if let Some(record) = self.loop_mut(loop_id) {
            record.events.push(LoopEvent { at: now_ms(), event: event.clone() });
        }
    }

    /// Links a new loop to its parent: `children_loop_ids` on the parent, and a [`SpawnRef`] on
    /// the child's session when the parent lives in another session.
    fn link_parent(&mut self, child_session: &str, loop_id: &str, parent: &str) {
        let parent_session = self.loops.get(parent).cloned();
        if let Some(record) = self.loop_mut(parent)
            && !record.children_loop_ids.iter().any(|c| c == loop_id)
        {
            record.children_loop_ids.push(loop_id.to_owned());
        }
        if let Some(parent_session) = parent_session
            && parent_session != child_session
            && let Some(session) = self.open.get_mut(child_session)
            && session.parent_spawn_ref.is_none()
        {
            session.parent_spawn_ref = Some(SpawnRef {
                parent_session_id: parent_session,
                parent_loop_id: parent.to_owned(),
                tool_call_id: String::new(),
                tool_name: String::new(),
            });
        }
    }

    /// Moves session `key` to the completed ones if all its loops ended and, for a sub-agent's
    /// session, its spawn reference is complete or its parent ended.
    fn promote(&mut self, key: &str) {
        let Some(session) = self.open.get(key) else { return };
        let loops_done = session.loops.iter().all(|l| l.status.is_closed());
        let spawn_done = session.parent_spawn_ref.as_ref().is_none_or(|spawn| {
            !spawn.tool_call_id.is_empty()
                || self.loops.get(&spawn.parent_loop_id).is_none_or(|parent_key| {
                    self.open
                        .get(parent_key)
                        .and_then(|s| s.get_loop(&spawn.parent_loop_id))
                        .is_none_or(|l| l.status.is_closed())
                })
        });
        let groups_done = !self.groups.values().any(|group_session| group_session == key);
        if loops_done && spawn_done && groups_done {
            let session = self.open.remove(key).expect("checked above");
            self.completed.push(session);
        }
    }
}

/// The usage of a run: its assistant messages' usage, summed.
fn usage_of(messages: &[AgentMessage]) -> Usage {
    messages.iter().filter_map(AgentMessage::as_assistant).fold(Usage::default(), |sum, m| sum.combine(&m.usage))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn flushing_forgets_the_flushed_loops() {
        let mut recorder = SessionRecorder::default();
        for (session, loop_id) in [("a", "a.1"), ("b", "b.1")] {
            recorder.on_event(&AgentEvent::AgentStart {
                agent_id: "agent".into(),
                session_id: session.into(),
                loop_id: loop_id.into(),
                parent_loop_id: None,
                continuation_kind: None,
                model: String::new(),
                provider: String::new(),
                config_id: String::new(),
            });
        }
        let loop_id: Arc<str> = "a.1".into();
        recorder.on_event(&AgentEvent::AgentEnd {
            loop_id,
            messages: Vec::new(),
            reason: sinew_core::EndReason::Completed,
        });
        assert_eq!(recorder.flush().len(), 1);
        assert_eq!(recorder.loops.keys().collect::<Vec<_>>(), ["b.1"], "only the running loop is tracked");
    }
}
