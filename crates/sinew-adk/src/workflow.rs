//! ADK's workflow agents: [`SequentialAgent`], [`ParallelAgent`] and [`LoopAgent`]. They call no
//! model; they run their sub-agents in a fixed shape.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;

use crate::agent::Agent;
use crate::context::InvocationContext;
use crate::error::Result;

/// Runs its sub-agents one after the other, all in the same history; stops when one suspends the
/// invocation (a long-running call) or ends it.
#[derive(Clone)]
pub struct SequentialAgent {
    name: String,
    description: String,
    sub_agents: Vec<Arc<dyn Agent>>,
}

impl std::fmt::Debug for SequentialAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SequentialAgent").field("name", &self.name).finish_non_exhaustive()
    }
}

impl SequentialAgent {
    /// `name` running `sub_agents` in order.
    pub fn new(name: impl Into<String>, sub_agents: Vec<Arc<dyn Agent>>) -> Self {
        SequentialAgent { name: name.into(), description: String::new(), sub_agents }
    }

    /// With a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

#[async_trait]
impl Agent for SequentialAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn sub_agents(&self) -> &[Arc<dyn Agent>] {
        &self.sub_agents
    }

    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
        for sub_agent in &self.sub_agents {
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
    name: String,
    description: String,
    sub_agents: Vec<Arc<dyn Agent>>,
}

impl std::fmt::Debug for ParallelAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParallelAgent").field("name", &self.name).finish_non_exhaustive()
    }
}

impl ParallelAgent {
    /// `name` running `sub_agents` at the same time.
    pub fn new(name: impl Into<String>, sub_agents: Vec<Arc<dyn Agent>>) -> Self {
        ParallelAgent { name: name.into(), description: String::new(), sub_agents }
    }

    /// With a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

#[async_trait]
impl Agent for ParallelAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn sub_agents(&self) -> &[Arc<dyn Agent>] {
        &self.sub_agents
    }

    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
        let runs = self.sub_agents.iter().map(|sub_agent| {
            let suffix = format!("{}.{}", self.name, sub_agent.name());
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
    name: String,
    description: String,
    sub_agents: Vec<Arc<dyn Agent>>,
    max_iterations: Option<usize>,
}

impl std::fmt::Debug for LoopAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopAgent")
            .field("name", &self.name)
            .field("max_iterations", &self.max_iterations)
            .finish_non_exhaustive()
    }
}

impl LoopAgent {
    /// `name` looping over `sub_agents` until one escalates.
    pub fn new(name: impl Into<String>, sub_agents: Vec<Arc<dyn Agent>>) -> Self {
        LoopAgent { name: name.into(), description: String::new(), sub_agents, max_iterations: None }
    }

    /// At most `n` rounds.
    #[must_use]
    pub fn with_max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = Some(n);
        self
    }

    /// With a description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }
}

#[async_trait]
impl Agent for LoopAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn sub_agents(&self) -> &[Arc<dyn Agent>] {
        &self.sub_agents
    }

    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
        if self.sub_agents.is_empty() {
            return Ok(());
        }
        let mut rounds = 0;
        while self.max_iterations.is_none_or(|max| rounds < max) {
            let escalated = Arc::new(AtomicBool::new(false));
            let round_ctx = ctx.with_escalation_flag(escalated.clone());
            for sub_agent in &self.sub_agents {
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
