//! ADK's workflow agents: [`SequentialAgent`], [`ParallelAgent`] and [`LoopAgent`]. They call no
//! model; they run their sub-agents in a fixed shape.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use crate::agent::Agent;
use crate::context::InvocationContext;
use crate::error::Result;

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
        for sub_agent in &self.workflow.sub_agents {
            ctx.run(sub_agent).await?;
            if ctx.is_paused() || ctx.is_ended() {
                break;
            }
        }
        Ok(())
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
        let runs = self.workflow.sub_agents.iter().map(|sub_agent| {
            let suffix = format!("{}.{}", self.workflow.name, sub_agent.name());
            let branch = Some(match ctx.branch() {
                Some(branch) => format!("{branch}.{suffix}"),
                None => suffix,
            });
            let branch_ctx = ctx.with_branch(branch);
            async move { branch_ctx.run(sub_agent).await }
        });
        // Every branch runs to its end; the first error cancels the others and is the result.
        futures::future::try_join_all(runs).await.map(drop)
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
        if self.workflow.sub_agents.is_empty() {
            return Ok(());
        }
        let mut rounds = 0;
        while self.max_iterations.is_none_or(|max| rounds < max) {
            let escalated = Arc::new(AtomicBool::new(false));
            let round_ctx = ctx.with_escalation_flag(escalated.clone());
            for sub_agent in &self.workflow.sub_agents {
                round_ctx.run(sub_agent).await?;
                if escalated.load(Ordering::SeqCst) || ctx.is_paused() || ctx.is_ended() {
                    return Ok(());
                }
            }
            rounds += 1;
        }
        Ok(())
    }
}
