//! Resumability (ADK's `ResumabilityConfig(is_resumable=True)`): agents write checkpoints into
//! the session as they run, and a message answering a paused invocation's long-running call
//! resumes the workflow where it paused instead of running only the agent that made the call.
//!
//! A workflow agent writes an event whose `actions.agentState` names the sub-agent it is about to
//! run (`{"current_sub_agent": ...}`, a loop adds `times_looped`; a parallel agent writes `{}`),
//! and every agent that finished writes one with `actions.endOfAgent`. On resumption the runner
//! reads them back from the invocation's events (keyed by node path, else author); a workflow
//! agent with a checkpoint starts at the sub-agent it names, and a parallel agent runs only the
//! branches that did not finish.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::context::InvocationContext;
use crate::event::Event;

/// The checkpoints of one invocation: each agent's state, and which agents finished (ADK's
/// `agent_states` and `end_of_agents`).
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    states: HashMap<String, Map<String, Value>>,
    ended: HashMap<String, bool>,
}

impl Checkpoints {
    /// The checkpoints the events of `invocation_id` recorded (ADK's
    /// `populate_invocation_agent_states`): an agent that wrote content without a checkpoint of
    /// its own has an empty one.
    pub(crate) fn read(events: &[Event], invocation_id: &str) -> Checkpoints {
        let mut checkpoints = Checkpoints::default();
        for event in events.iter().filter(|e| e.invocation_id == invocation_id) {
            let key = if event.node_info.path.is_empty() { &*event.author } else { &*event.node_info.path };
            if event.actions.end_of_agent == Some(true) {
                checkpoints.ended.insert(key.to_owned(), true);
                checkpoints.states.remove(key);
            } else if let Some(state) = &event.actions.agent_state {
                checkpoints.states.insert(key.to_owned(), state.clone());
                checkpoints.ended.insert(key.to_owned(), false);
            } else if event.author != "user"
                && event.content.is_some()
                && checkpoints.states.get(key).is_none_or(Map::is_empty)
            {
                checkpoints.states.insert(key.to_owned(), Map::new());
                checkpoints.ended.insert(key.to_owned(), false);
            }
        }
        checkpoints
    }

    /// Whether `key` has a checkpoint or finished (ADK's `key in end_of_agents`).
    pub(crate) fn knows(&self, key: &str) -> bool {
        self.ended.contains_key(key)
    }
}

impl InvocationContext {
    /// Whether the app is resumable: agents write checkpoints, and an answered long-running call
    /// resumes the workflow where it paused.
    pub fn is_resumable(&self) -> bool {
        self.invocation.resumable
    }

    /// Whether the invocation's checkpoints name `key` (ADK's `key in end_of_agents`).
    pub(crate) fn checkpoints_know(&self, key: &str) -> bool {
        self.checkpoints().knows(key)
    }

    /// The key `name`'s checkpoint is kept under: this context's node path when it is the path
    /// of `name`, else the name (ADK's `_agent_state_key`).
    fn checkpoint_key(&self, name: &str) -> String {
        let last = self.node_path.rsplit('/').next().unwrap_or_default();
        let node = last.rsplit_once('@').map_or(last, |(node, _)| node);
        if !self.node_path.is_empty() && node == name { self.node_path.clone() } else { name.to_owned() }
    }

    fn checkpoints(&self) -> std::sync::MutexGuard<'_, Checkpoints> {
        self.invocation.checkpoints.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The checkpoint agent `name` left in this invocation, when it is resuming (ADK's
    /// `_load_agent_state`).
    pub fn agent_state(&self, name: &str) -> Option<Map<String, Value>> {
        let key = self.checkpoint_key(name);
        let checkpoints = self.checkpoints();
        match checkpoints.states.get(&key) {
            Some(state) => Some(state.clone()),
            None if key != name && !checkpoints.ended.contains_key(&key) => checkpoints.states.get(name).cloned(),
            None => None,
        }
    }

    /// Whether agent `name` finished in this invocation.
    pub fn is_end_of_agent(&self, name: &str) -> bool {
        let key = self.checkpoint_key(name);
        self.checkpoints().ended.get(&key).copied().unwrap_or(false)
    }

    /// Records `state` as agent `name`'s checkpoint and writes it into the session (ADK's
    /// `set_agent_state` and `_create_agent_state_event`).
    pub async fn checkpoint(&self, name: &str, state: Map<String, Value>) -> crate::Result<()> {
        let key = self.checkpoint_key(name);
        {
            let mut checkpoints = self.checkpoints();
            checkpoints.states.insert(key.clone(), state.clone());
            checkpoints.ended.insert(key, false);
        }
        let mut event = self.checkpoint_event(name);
        event.actions.agent_state = Some(state);
        self.emit(event).await.map(drop)
    }

    /// Records that agent `name` finished, in the session too.
    pub async fn end_of_agent(&self, name: &str) -> crate::Result<()> {
        let key = self.checkpoint_key(name);
        {
            let mut checkpoints = self.checkpoints();
            checkpoints.states.remove(&key);
            checkpoints.ended.insert(key, true);
        }
        let mut event = self.checkpoint_event(name);
        event.actions.end_of_agent = Some(true);
        self.emit(event).await.map(drop)
    }

    /// Forgets the checkpoints of every agent below `agent`, so that a loop's next round runs
    /// them afresh (ADK's `reset_sub_agent_states`); nothing is written.
    pub(crate) fn reset_sub_agent_states(&self, agent: &dyn crate::Agent) {
        let mut stack: Vec<&dyn crate::Agent> = agent.sub_agents().iter().map(|a| a.as_ref()).collect();
        while let Some(sub) = stack.pop() {
            let key = self.checkpoint_key(sub.name());
            let mut checkpoints = self.checkpoints();
            checkpoints.states.remove(&key);
            checkpoints.ended.remove(&key);
            drop(checkpoints);
            stack.extend(sub.sub_agents().iter().map(|a| a.as_ref()));
        }
    }

    /// An event of agent `name` with no content, for a checkpoint.
    fn checkpoint_event(&self, name: &str) -> Event {
        let mut event = self.new_event();
        event.author = name.into();
        event
    }

    /// Whether one of the last two events of this invocation on this branch paused it (ADK's
    /// test before an LLM agent declares itself finished).
    pub(crate) async fn recently_paused(&self) -> bool {
        let session = self.invocation.session.lock().await;
        session
            .events
            .iter()
            .rev()
            .filter(|e| e.invocation_id == self.invocation_id() && e.branch.as_deref() == self.branch())
            .take(2)
            .any(crate::context::pauses)
    }
}

impl InvocationContext {
    /// Whether a resumed step must not call the model yet: a call that paused the invocation
    /// earlier in this branch still waits for an answer (ADK's `decide_step_resume` pausing on
    /// `_pause_left_calls_unanswered`).
    pub(crate) async fn waits_for_answers(&self) -> bool {
        if !self.is_resumable() {
            return false;
        }
        let session = self.invocation.session.lock().await;
        let events: Vec<&Event> = session
            .events
            .iter()
            .filter(|e| e.invocation_id == self.invocation_id() && e.branch.as_deref() == self.branch())
            .collect();
        let Some((last, earlier)) = events.split_last() else { return false };
        if earlier.is_empty() || crate::context::pauses(last) {
            return false;
        }
        let mut awaited: Vec<&str> = Vec::new();
        for event in earlier.iter().filter(|e| crate::context::pauses(e)) {
            awaited.extend(event.function_calls().filter_map(|c| c.id.as_deref()).filter(|id| !id.is_empty()));
            awaited.extend(event.long_running_tool_ids.iter().flatten().map(String::as_str));
        }
        let answered: std::collections::HashSet<&str> =
            events.iter().flat_map(|e| e.function_responses()).filter_map(|r| r.id.as_deref()).collect();
        !awaited.is_empty() && !awaited.iter().all(|id| answered.contains(id))
    }
}

impl crate::LlmAgent {
    /// The sub-agent a resumed agent hands on to (ADK's `_get_subagent_to_resume`): the target of
    /// the agent's last transfer, when the invocation's latest event on this branch is that
    /// transfer, or when it is another agent's, or the client's answer to another agent's call.
    pub(crate) async fn subagent_to_resume(
        &self,
        ctx: &InvocationContext,
    ) -> crate::Result<Option<std::sync::Arc<dyn crate::Agent>>> {
        let target = {
            let session = ctx.invocation.session.lock().await;
            let invocation: Vec<&Event> =
                session.events.iter().filter(|e| e.invocation_id == ctx.invocation_id()).collect();
            let branch: Vec<&Event> =
                invocation.iter().copied().filter(|e| e.branch.as_deref() == ctx.branch()).collect();
            let Some(last) = branch.last() else { return Ok(None) };
            let transfer_of =
                |event: &Event| (event.author == self.name).then(|| event.actions.transfer_to_agent.clone()).flatten();
            if last.author == self.name {
                transfer_of(last)
            } else {
                if last.author == "user" {
                    let id = last.function_responses().next().and_then(|r| r.id.as_deref()).filter(|id| !id.is_empty());
                    let call = id.and_then(|id| {
                        invocation
                            .iter()
                            .rev()
                            .filter(|e| e.id != last.id)
                            .find(|e| e.function_calls().any(|c| c.id.as_deref() == Some(id)))
                    });
                    match call {
                        None => {
                            return Err(crate::Error::InvalidRequest(format!(
                                "No agent to transfer to for resuming agent from function response {}",
                                self.name
                            )));
                        }
                        // The client answers this agent's own call: it goes on itself.
                        Some(call) if call.author == self.name => return Ok(None),
                        Some(_) => {}
                    }
                }
                branch.iter().rev().find_map(|e| transfer_of(e))
            }
        };
        let Some(target) = target else { return Ok(None) };
        let root = ctx.root_agent();
        let agent = self
            .transfer_targets(root)
            .into_iter()
            .find(|a| a.name() == target)
            .or_else(|| crate::agent::find_agent(root, &target))
            .ok_or_else(|| crate::Error::AgentNotFound(format!("Agent '{target}' not found.")))?;
        Ok(Some(agent))
    }
}
