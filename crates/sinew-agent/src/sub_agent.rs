//! Sub-agents: an agent that another agent calls as a tool (REQ-141, REQ-148…REQ-151, REQ-163,
//! REQ-194, REQ-195).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use sinew_core::{
    AgentEvent, AgentMessage, AgentTool, EndReason, ExecutionLimits, StreamDelta, StreamProvider, ThinkingLevel,
    ToolContext, ToolError, ToolResult, TurnTrigger,
};

use crate::agent_loop::{LoopOutcome, agent_loop};
use crate::config::{AgentContext, AgentLoopConfig};
use crate::emit::event_channel;

/// What [`extract_final_text`] returns when the sub-agent said nothing.
pub const NO_TEXT_OUTPUT: &str = "(sub-agent produced no text output)";

/// The answer of a sub-agent run: the text blocks of the last assistant message that has any,
/// joined. Without one, [`NO_TEXT_OUTPUT`], followed by the error of the last failed assistant
/// message if there is one, so the calling model sees why (AMB-003).
pub fn extract_final_text(messages: &[AgentMessage]) -> String {
    let assistants = || messages.iter().rev().filter_map(AgentMessage::as_assistant);
    if let Some(text) = assistants().map(|m| m.text()).find(|text| !text.is_empty()) {
        return text;
    }
    match assistants().find_map(|m| m.error_message.as_deref()) {
        Some(error) => format!("{NO_TEXT_OUTPUT}: error: {error}"),
        None => NO_TEXT_OUTPUT.to_owned(),
    }
}

/// An agent run as a tool: each call starts a fresh run of the sub-agent (its own system prompt,
/// tools, model and limits, an empty history) on the call's `task`, and returns its final answer.
///
/// - Cancelling the parent run cancels the child (REQ-141): the call then fails as cancelled.
/// - The child's streamed text reaches the parent as `ToolExecutionUpdate`s, its tools' progress
///   as `ProgressMessage`s (REQ-150). Every child event also goes to
///   [`with_event_observer`](SubAgentTool::with_event_observer), e.g. to record it.
/// - The child's `AgentStart` names the calling run as `parent_loop_id`, and the result carries
///   the child's loop id as `child_loop_id` (REQ-194, REQ-195): a
///   `sinew_session::SessionRecorder` fed both runs' events links them both ways.
/// - A child that fails, hits a limit or says nothing still returns `Ok`: the text says what
///   happened, so the calling model can react (AMB-003). `details` holds the sub-agent's name
///   (`subAgent`), its turns (model calls), the child's loop and session ids, end reason, error
///   and usage.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use serde_json::json;
/// use sinew_agent::{Agent, SubAgentTool};
/// use sinew_testing::{MockProvider, MockResponse};
///
/// let researcher = SubAgentTool::new("researcher", MockProvider::new([MockResponse::text("Paris.")]), "small")
///     .with_system_prompt("Answer in one word.")
///     .with_max_turns(5);
/// let parent = MockProvider::new([
///     MockResponse::new().tool_call("call_1", "researcher", json!({"task": "Capital of France?"})),
///     MockResponse::text("It is Paris."),
/// ]);
/// let mut agent = Agent::new(parent, "large").with_tool(researcher);
/// let outcome = agent.prompt("Find out the capital of France").finish().await;
/// assert_eq!(outcome.final_text().as_deref(), Some("It is Paris."));
/// # });
/// ```
pub struct SubAgentTool {
    name: String,
    description: String,
    system_prompt: String,
    tools: Vec<Arc<dyn AgentTool>>,
    config: AgentLoopConfig,
    max_turns: usize,
    parent_loop_id: Option<String>,
}

/// The default turn limit of a sub-agent run.
pub const DEFAULT_SUB_AGENT_MAX_TURNS: usize = 10;

impl SubAgentTool {
    /// A sub-agent called `name` (the tool's name, and the child runs' agent id) on `model` of
    /// `provider`.
    pub fn new(name: impl Into<String>, provider: impl StreamProvider + 'static, model: impl Into<String>) -> Self {
        Self::with_config(name, AgentLoopConfig::new(Arc::new(provider), model))
    }

    /// A sub-agent whose runs use `config` (its provider, model, limits, compaction, hooks...).
    /// Steering and follow-up queues and input filters are never used: a sub-agent answers one
    /// task.
    pub fn with_config(name: impl Into<String>, mut config: AgentLoopConfig) -> Self {
        let name = name.into();
        config.get_steering_messages = None;
        config.get_follow_up_messages = None;
        config.input_filters.clear();
        config.first_turn_trigger = TurnTrigger::SubAgent;
        SubAgentTool {
            description: format!("Delegates a task to the {name} sub-agent and returns its answer."),
            name,
            system_prompt: String::new(),
            tools: Vec::new(),
            config,
            max_turns: DEFAULT_SUB_AGENT_MAX_TURNS,
            parent_loop_id: None,
        }
    }

    /// Replaces the tool description the parent model sees (default: "Delegates a task to the {name}
    /// sub-agent and returns its answer.").
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Sets the child runs' system prompt (default: none).
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// Adds tools the sub-agent may call; it does not see the parent's tools.
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn AgentTool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Adds one tool the sub-agent may call.
    #[must_use]
    pub fn with_tool(self, tool: impl AgentTool + 'static) -> Self {
        self.with_tools([Arc::new(tool) as Arc<dyn AgentTool>])
    }

    /// The most turns a child run may take (default 10).
    #[must_use]
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// Sets how much the sub-agent's model reasons (default: the config's; `Off` for [`SubAgentTool::new`]).
    #[must_use]
    pub fn with_thinking(mut self, level: ThinkingLevel) -> Self {
        self.config.thinking_level = level;
        self
    }

    /// The `parent_loop_id` of the child runs. By default it is the loop id of the calling run.
    #[must_use]
    pub fn with_parent_loop_id(mut self, loop_id: impl Into<String>) -> Self {
        self.parent_loop_id = Some(loop_id.into());
        self
    }

    /// Receives every event of every child run, in order, from start to end (also when the
    /// parent is aborted). Added to the configuration's `hooks.on_event`, if it has one.
    #[must_use]
    pub fn with_event_observer(mut self, observer: impl Fn(&AgentEvent) + Send + Sync + 'static) -> Self {
        self.config.hooks.on_event = Some(match self.config.hooks.on_event.take() {
            Some(first) => Arc::new(move |event: &AgentEvent| {
                first(event);
                observer(event);
            }),
            None => Arc::new(observer),
        });
        self
    }

    /// Runs the sub-agent on `task`, forwarding its events through `ctx`; returns how the run
    /// ended and its session id.
    ///
    /// The child runs as a task of its own, so that when the parent is aborted (and drops this
    /// call at once) the child still sees the cancellation and ends its run properly, its
    /// `AgentEnd` included. Dropping the call cancels the child.
    async fn run(&self, task: &str, ctx: &ToolContext) -> Result<(LoopOutcome, String), ToolError> {
        let mut context = AgentContext {
            system_prompt: self.system_prompt.clone(),
            tools: self.tools.clone(),
            agent_id: Some(self.name.clone()),
            parent_loop_id: self.parent_loop_id.clone().or_else(|| ctx.loop_id.as_deref().map(str::to_owned)),
            ..AgentContext::default()
        };
        let mut config = self.config.clone();
        config.execution_limits.get_or_insert_with(ExecutionLimits::default).max_turns = self.max_turns;
        let cancel = ctx.cancel.child_token();
        let _cancel_child_if_dropped = cancel.clone().drop_guard();
        let (tx, mut rx) = event_channel();
        let prompt = vec![AgentMessage::user(task)];
        let child = tokio::spawn(async move {
            let outcome = agent_loop(prompt, &mut context, &config, &tx, &cancel).await;
            (outcome, context.session_id.unwrap_or_default())
        });
        if ctx.on_update.is_none() && ctx.on_progress.is_none() {
            // Nothing would receive what is forwarded: with its channel closed, the child builds
            // no events (an observer of its own still gets them).
            drop(rx);
        } else {
            // The channel closes when the child task ends.
            while let Some(event) = rx.recv().await {
                forward(&event, ctx);
            }
        }
        child.await.map_err(|error| ToolError::Failed(format!("the sub-agent {} crashed: {error}", self.name).into()))
    }
}

/// Child text streams to the parent as tool updates, child progress as progress.
fn forward(event: &AgentEvent, ctx: &ToolContext) {
    match event {
        AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } => {
            ctx.update(ToolResult::text(delta.clone()));
        }
        AgentEvent::ProgressMessage { text, .. } => ctx.progress(text),
        _ => {}
    }
}

impl fmt::Debug for SubAgentTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubAgentTool")
            .field("name", &self.name)
            .field("model", &self.config.model)
            .field("tools", &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>())
            .field("max_turns", &self.max_turns)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl AgentTool for SubAgentTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "task": {"type": "string", "description": "The task for the sub-agent, with everything it needs to know."}
            },
            "required": ["task"]
        })
    }

    async fn execute(&self, args: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let task = args.get("task").and_then(Value::as_str).map(str::trim).unwrap_or_default();
        if task.is_empty() {
            return Err(ToolError::InvalidArgs("`task` must be a non-empty string".into()));
        }
        let (outcome, session_id) = self.run(task, &ctx).await?;
        if outcome.reason == EndReason::Aborted && ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let mut text = extract_final_text(&outcome.messages);
        match outcome.reason {
            EndReason::Completed => {}
            EndReason::LimitReached => text.push_str("\n\n(the sub-agent stopped at its limits before finishing)"),
            other => {
                let why = outcome.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default();
                let reason = serde_json::to_value(other).ok().and_then(|v| v.as_str().map(str::to_owned));
                text.push_str(&format!("\n\n(the sub-agent ended: {}{why})", reason.unwrap_or_default()));
            }
        }
        // Each model call of the child is one turn.
        let turns = outcome.messages.iter().filter(|m| m.as_assistant().is_some()).count();
        let details = json!({
            "subAgent": self.name,
            "turns": turns,
            "loopId": outcome.loop_id,
            "sessionId": session_id,
            "reason": outcome.reason,
            "error": outcome.error,
            "usage": outcome.usage,
        });
        Ok(ToolResult { content: vec![sinew_core::Content::text(text)], details, child_loop_id: Some(outcome.loop_id) })
    }
}
