//! ADK's workflow agents: [`SequentialAgent`], [`ParallelAgent`] and [`LoopAgent`]. They call no
//! model; they run their sub-agents in a fixed shape.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use crate::agent::Agent;
use crate::context::InvocationContext;
use crate::error::Result;
use serde_json::{Map, Value};

/// What every workflow agent is: a name, a description and its sub-agents.
#[derive(Clone)]
struct Workflow {
    name: String,
    description: String,
    sub_agents: Vec<Arc<dyn Agent>>,
}

impl Workflow {
    fn new(name: impl Into<String>, sub_agents: Vec<Arc<dyn Agent>>) -> Self {
        Workflow { name: name.into(), description: String::new(), sub_agents }
    }
}

/// The constructor, description setter, `Debug` and the `Agent` accessors a workflow agent has;
/// its `run_impl` is its own.
macro_rules! workflow_agent {
    ($agent:ident, $new_doc:literal) => {
        impl $agent {
            #[doc = $new_doc]
            pub fn new(name: impl Into<String>, sub_agents: Vec<Arc<dyn Agent>>) -> Self {
                $agent::from_workflow(Workflow::new(name, sub_agents))
            }

            /// With a description.
            #[must_use]
            pub fn with_description(mut self, description: impl Into<String>) -> Self {
                self.workflow.description = description.into();
                self
            }
        }

        impl std::fmt::Debug for $agent {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($agent)).field("name", &self.workflow.name).finish_non_exhaustive()
            }
        }
    };
}

/// The `Agent` accessors of a workflow agent, inside its `impl Agent`.
macro_rules! workflow_accessors {
    () => {
        fn name(&self) -> &str {
            &self.workflow.name
        }

        fn description(&self) -> &str {
            &self.workflow.description
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.workflow.sub_agents
        }
    };
}

/// Runs its sub-agents one after the other, all in the same history; stops when one suspends the
/// invocation (a long-running call) or ends it.
#[derive(Clone)]
pub struct SequentialAgent {
    workflow: Workflow,
}

impl SequentialAgent {
    fn from_workflow(workflow: Workflow) -> Self {
        SequentialAgent { workflow }
    }
}

workflow_agent!(SequentialAgent, "`name` running `sub_agents` in order.");

#[async_trait]
impl Agent for SequentialAgent {
    workflow_accessors!();

    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
        let name = &self.workflow.name;
        let sub_agents = &self.workflow.sub_agents;
        if sub_agents.is_empty() {
            return Ok(());
        }
        let state = if ctx.is_resumable() { ctx.agent_state(name) } else { None };
        // Resuming at the checkpoint's sub-agent: its checkpoint is already in the session.
        let mut resuming = state.is_some();
        let start = state.map_or(0, |state| start_index(name, sub_agents, &state));
        // Only this sequence's own sub-agents' pauses stop it, not a sibling branch's.
        let paused = Arc::new(AtomicBool::new(false));
        let sub_ctx = ctx.with_pause_flag(paused.clone());
        for sub_agent in &sub_agents[start..] {
            if ctx.is_resumable() && !resuming {
                ctx.checkpoint(name, current_sub_agent(sub_agent.name())).await?;
            }
            resuming = false;
            sub_ctx.run_sub_agent(sub_agent).await?;
            if paused.load(Ordering::SeqCst) || ctx.is_ended() {
                return Ok(());
            }
        }
        if ctx.is_resumable() {
            ctx.end_of_agent(name).await?;
        }
        Ok(())
    }
}

/// A workflow agent's checkpoint naming the sub-agent it runs (`SequentialAgentState`).
fn current_sub_agent(name: &str) -> Map<String, Value> {
    Map::from_iter([("current_sub_agent".to_owned(), Value::from(name))])
}

/// Where a workflow resumes: at the checkpoint's sub-agent; past the end when it names none
/// (the workflow had finished); from the start, with a warning, when that sub-agent is gone.
fn start_index(workflow: &str, sub_agents: &[Arc<dyn Agent>], state: &Map<String, Value>) -> usize {
    match state.get("current_sub_agent").and_then(Value::as_str).filter(|n| !n.is_empty()) {
        None => sub_agents.len(),
        Some(current) => sub_agents.iter().position(|a| a.name() == current).unwrap_or_else(|| {
            tracing::warn!(
                workflow,
                sub_agent = current,
                "the checkpoint's sub-agent is gone: restarting from the beginning"
            );
            0
        }),
    }
}

/// Runs its sub-agents at the same time, each on its own branch (`parallel.sub`), so that none
/// sees the others' turns; their events interleave, and every branch runs to its end unless one
/// fails, which stops the others.
#[derive(Clone)]
pub struct ParallelAgent {
    workflow: Workflow,
}

impl ParallelAgent {
    fn from_workflow(workflow: Workflow) -> Self {
        ParallelAgent { workflow }
    }
}

workflow_agent!(ParallelAgent, "`name` running `sub_agents` at the same time.");

#[async_trait]
impl Agent for ParallelAgent {
    workflow_accessors!();

    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
        let name = &self.workflow.name;
        if self.workflow.sub_agents.is_empty() {
            return Ok(());
        }
        if ctx.is_resumable() && ctx.agent_state(name).is_none() {
            ctx.checkpoint(name, Map::new()).await?;
        }
        let paused = Arc::new(AtomicBool::new(false));
        let group_ctx = ctx.with_pause_flag(paused.clone());
        // Resuming, only the branches that did not finish run again.
        let unfinished =
            self.workflow.sub_agents.iter().filter(|a| !(ctx.is_resumable() && ctx.is_end_of_agent(a.name())));
        let runs = unfinished.map(|sub_agent| {
            let suffix = format!("{}.{}", self.workflow.name, sub_agent.name());
            let branch = Some(match ctx.branch() {
                Some(branch) => format!("{branch}.{suffix}"),
                None => suffix,
            });
            let branch_ctx = group_ctx.with_branch(branch);
            async move { branch_ctx.run_sub_agent(sub_agent).await }
        });
        // Every branch runs to its end; the first error cancels the others and is the result.
        futures::future::try_join_all(runs).await?;
        if ctx.is_resumable()
            && !paused.load(Ordering::SeqCst)
            && self.workflow.sub_agents.iter().all(|a| ctx.is_end_of_agent(a.name()))
        {
            ctx.end_of_agent(name).await?;
        }
        Ok(())
    }
}

/// Runs its sub-agents in order, again and again, until an event under it escalates (after the
/// sub-agent that wrote it finished), `max_iterations` rounds are done, or the invocation
/// suspends or ends.
#[derive(Clone)]
pub struct LoopAgent {
    workflow: Workflow,
    max_iterations: Option<usize>,
}

impl LoopAgent {
    fn from_workflow(workflow: Workflow) -> Self {
        LoopAgent { workflow, max_iterations: None }
    }

    /// At most `n` rounds.
    #[must_use]
    pub fn with_max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = Some(n);
        self
    }
}

workflow_agent!(LoopAgent, "`name` looping over `sub_agents` until one escalates.");

#[async_trait]
impl Agent for LoopAgent {
    workflow_accessors!();

    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
        let name = &self.workflow.name;
        let sub_agents = &self.workflow.sub_agents;
        if sub_agents.is_empty() {
            return Ok(());
        }
        let state = if ctx.is_resumable() { ctx.agent_state(name) } else { None };
        let mut resuming = state.is_some();
        let (mut rounds, mut start) = state.map_or((0, 0), |state| {
            let rounds = state.get("times_looped").and_then(Value::as_u64).unwrap_or(0);
            let start = match state.get("current_sub_agent").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                Some(_) => start_index(name, sub_agents, &state),
                None => 0,
            };
            (usize::try_from(rounds).unwrap_or(usize::MAX), start)
        });
        let paused = Arc::new(AtomicBool::new(false));
        let mut escalated = false;
        while self.max_iterations.is_none_or(|max| rounds < max) && !escalated {
            let escalation = Arc::new(AtomicBool::new(false));
            let round_ctx = ctx.with_escalation_flag(escalation.clone()).with_pause_flag(paused.clone());
            for sub_agent in &sub_agents[start..] {
                if ctx.is_resumable() && !resuming {
                    let mut state = current_sub_agent(sub_agent.name());
                    state.insert("times_looped".into(), Value::from(rounds));
                    ctx.checkpoint(name, state).await?;
                }
                resuming = false;
                round_ctx.run_sub_agent(sub_agent).await?;
                if paused.load(Ordering::SeqCst) || ctx.is_ended() {
                    return Ok(());
                }
                if escalation.load(Ordering::SeqCst) {
                    escalated = true;
                    break;
                }
            }
            start = 0;
            rounds = rounds.saturating_add(1);
            // The next round runs every sub-agent afresh.
            ctx.reset_sub_agent_states(self);
        }
        if ctx.is_resumable() {
            ctx.end_of_agent(name).await?;
        }
        Ok(())
    }
}
