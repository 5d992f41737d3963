//! Agents (ADK's `BaseAgent`): the [`Agent`] trait every agent implements, the lifecycle the
//! framework runs around it ([`InvocationContext::run`]), and the naming rule.

use std::sync::Arc;

use async_trait::async_trait;

use crate::callbacks::{AfterAgentCallback, BeforeAgentCallback};
use crate::context::{CallbackContext, InvocationContext};
use crate::error::{Error, Result};
use crate::genai::Content;

/// An agent: a name, a description for the agents that may hand it the conversation, sub-agents,
/// and what it does when it runs. Object-safe; implement it for custom agents (ADK's
/// `BaseAgent._run_async_impl`).
#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// Its name, unique in the agent tree (see [`check_agent_name`]).
    fn name(&self) -> &str;

    /// What it does, for the model deciding on a transfer.
    fn description(&self) -> &str {
        ""
    }

    /// Its sub-agents.
    fn sub_agents(&self) -> &[Arc<dyn Agent>] {
        &[]
    }

    /// Its before-agent callbacks.
    fn before_agent_callbacks(&self) -> &[Arc<dyn BeforeAgentCallback>] {
        &[]
    }

    /// Its after-agent callbacks.
    fn after_agent_callbacks(&self) -> &[Arc<dyn AfterAgentCallback>] {
        &[]
    }

    /// What the agent does: its events go out through [`InvocationContext::emit`], its sub-agents
    /// run through [`InvocationContext::run`]. The framework runs the callbacks around it.
    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()>;

    /// This agent as an [`LlmAgent`](crate::LlmAgent), for the transfer rules.
    fn as_llm_agent(&self) -> Option<&crate::LlmAgent> {
        None
    }
}

/// Which agent names are accepted (spec 002 §6.3): ADK's identifier rule, or with hyphens too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentNames {
    /// A letter or `_`, then letters, digits and `_` (adk-python's `str.isidentifier()` on ASCII).
    #[default]
    Identifiers,
    /// Identifiers, and hyphens after the first character (`code-reviewer`).
    Hyphenated,
}

/// Checks `name` against `rule` and ADK's reserved name, with ADK's messages.
pub fn check_agent_name(name: &str, rule: AgentNames) -> Result<()> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (c == '-' && rule == AgentNames::Hyphenated));
    if !first_ok || !rest_ok {
        let hyphens = if rule == AgentNames::Hyphenated { ", underscores and hyphens" } else { ", and underscores" };
        return Err(Error::InvalidAgent(format!(
            "Found invalid agent name: `{name}`. Agent name must be a valid identifier. It should start with a letter (a-z, A-Z) or an underscore (_), and can only contain letters, digits (0-9){hyphens}."
        )));
    }
    if name == "user" {
        return Err(Error::InvalidAgent(
            "Agent name cannot be `user`. `user` is reserved for end-user's input.".into(),
        ));
    }
    Ok(())
}

/// Checks every name of the tree under `root` against `rule`, and that no name is used twice.
pub fn check_agent_tree(root: &dyn Agent, rule: AgentNames) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![root];
    while let Some(agent) = stack.pop() {
        check_agent_name(agent.name(), rule)?;
        if !seen.insert(agent.name().to_owned()) {
            return Err(Error::InvalidAgent(format!(
                "two agents are named `{}`: agent names must be unique",
                agent.name()
            )));
        }
        stack.extend(agent.sub_agents().iter().map(|a| a.as_ref()));
    }
    Ok(())
}

/// The agent named `name` in the tree under `root`.
pub fn find_agent(root: &Arc<dyn Agent>, name: &str) -> Option<Arc<dyn Agent>> {
    if root.name() == name {
        return Some(root.clone());
    }
    root.sub_agents().iter().find_map(|a| find_agent(a, name))
}

/// The parent of the agent named `name` in the tree under `root`.
pub fn find_parent(root: &Arc<dyn Agent>, name: &str) -> Option<Arc<dyn Agent>> {
    for child in root.sub_agents() {
        if child.name() == name {
            return Some(root.clone());
        }
        if let Some(parent) = find_parent(child, name) {
            return Some(parent);
        }
    }
    None
}

impl InvocationContext {
    /// Runs `agent` in this invocation with ADK's lifecycle: plugins' and then the agent's own
    /// before-agent callbacks (content answers for the agent and ends the invocation), the agent,
    /// then the after-agent callbacks (content is added as the agent's last event). State that
    /// callbacks change without answering rides on an event of its own.
    pub async fn run(&self, agent: &Arc<dyn Agent>) -> Result<()> {
        self.for_agent(agent.clone()).run_here(agent).await
    }

    /// Runs `agent` as a workflow agent's sub-agent, as [`InvocationContext::run`] does, but at the
    /// workflow's own node path: ADK runs a workflow's children inside it, not as nodes of their
    /// own, so their events carry the workflow's `nodeInfo.path`.
    pub async fn run_sub_agent(&self, agent: &Arc<dyn Agent>) -> Result<()> {
        self.for_agent_at(agent.clone(), self.node_path.clone()).run_here(agent).await
    }

    async fn run_here(&self, agent: &Arc<dyn Agent>) -> Result<()> {
        let ctx = self;
        let result = ctx.run_lifecycle(agent.as_ref()).await;
        if let Err(error) = &result {
            let callback = CallbackContext::new(ctx.clone());
            for plugin in &ctx.invocation.plugins {
                plugin.on_agent_error(agent.as_ref(), &callback, error).await;
            }
        }
        result
    }

    async fn run_lifecycle(&self, agent: &dyn Agent) -> Result<()> {
        let before = CallbackContext::new(self.clone());
        let mut content = None;
        for plugin in &self.invocation.plugins {
            if let Some(c) = plugin.before_agent(agent, &before).await {
                content = Some(c);
                break;
            }
        }
        if content.is_none() {
            for callback in agent.before_agent_callbacks() {
                if let Some(c) = callback.call(&before).await {
                    content = Some(c);
                    break;
                }
            }
        }
        let answered = content.is_some();
        self.emit_callback_event(&before, content).await?;
        if answered {
            self.end_invocation();
        }
        if self.is_ended() {
            return Ok(());
        }

        agent.run_impl(self).await?;
        if self.is_ended() {
            return Ok(());
        }

        let after = CallbackContext::new(self.clone());
        let mut content = None;
        for plugin in &self.invocation.plugins {
            if let Some(c) = plugin.after_agent(agent, &after).await {
                content = Some(c);
                break;
            }
        }
        if content.is_none() {
            for callback in agent.after_agent_callbacks() {
                if let Some(c) = callback.call(&after).await {
                    content = Some(c);
                    break;
                }
            }
        }
        self.emit_callback_event(&after, content).await
    }

    /// The event of an agent callback: its content and actions, or its actions alone when it
    /// changed state or artifacts; nothing otherwise.
    async fn emit_callback_event(&self, callback: &CallbackContext, content: Option<Content>) -> Result<()> {
        let actions = callback.take_actions();
        if content.is_none() && actions.state_delta.is_empty() && actions.artifact_delta.is_empty() {
            return Ok(());
        }
        let mut event = self.new_event();
        event.content = content;
        event.actions = actions;
        self.emit(event).await.map(drop)
    }
}
