//! What a loop runs on: the context it changes and the configuration it reads.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use sinew_core::{
    AgentEvent, AgentMessage, AgentTool, CacheConfig, CompactionStrategy, ContextConfig, ContinuationKind,
    ExecutionLimits, InputFilter, Message, RequestOptions, RetryConfig, StreamProvider, ThinkingLevel, ToolCallRef,
    ToolExecution, ToolResult, TurnTrigger, Usage,
};

/// The state a loop works on. `messages` grows in place as the loop runs.
#[derive(Clone, Default)]
pub struct AgentContext {
    /// Sent with every model call, unless the config's `instruction_provider` computes one per turn.
    pub system_prompt: String,
    /// The history, oldest first; the loop appends to it as the run goes.
    pub messages: Vec<AgentMessage>,
    /// The tools the model may call.
    pub tools: Vec<Arc<dyn AgentTool>>,
    /// Names the agent in events and traces; a prompt run generates one when `None`.
    pub agent_id: Option<String>,
    /// Groups the agent's runs into a conversation; a prompt run generates one when `None`.
    pub session_id: Option<String>,
    /// This run's id, `"{session_id}.{config_segment}.{N}"`; a prompt run sets one ending in `.1` when `None`.
    pub loop_id: Option<String>,
    /// The loop this run continues or branches from, reported in `AgentStart`; `None` for a new prompt.
    pub parent_loop_id: Option<String>,
    /// Why this run continues an existing context, reported in `AgentStart` and deciding the first
    /// turn's trigger; `None` for a new prompt.
    pub continuation_kind: Option<ContinuationKind>,
}

impl fmt::Debug for AgentContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentContext")
            .field("system_prompt", &self.system_prompt)
            .field("messages", &self.messages.len())
            .field("tools", &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>())
            .field("agent_id", &self.agent_id)
            .field("session_id", &self.session_id)
            .field("loop_id", &self.loop_id)
            .field("parent_loop_id", &self.parent_loop_id)
            .field("continuation_kind", &self.continuation_kind)
            .finish()
    }
}

/// What an [`InstructionProvider`] may look at.
#[derive(Clone, Copy, Debug)]
pub struct InstructionContext<'a> {
    /// The history so far, oldest first.
    pub messages: &'a [AgentMessage],
    /// 1-based number of the turn about to start.
    pub turn: usize,
    /// The running agent's id, as reported in `AgentStart`.
    pub agent_id: &'a str,
    /// The run's session id.
    pub session_id: &'a str,
    /// The running loop's id, `"{session_id}.{config_segment}.{N}"`.
    pub loop_id: &'a str,
}

/// A system prompt computed before every turn (working directory, time, session state...).
#[async_trait]
pub trait InstructionProvider: Send + Sync {
    /// The system prompt for the turn `ctx` describes; called before every turn.
    async fn instruction(&self, ctx: InstructionContext<'_>) -> String;
}

#[async_trait]
impl<F: Fn(InstructionContext<'_>) -> String + Send + Sync> InstructionProvider for F {
    async fn instruction(&self, ctx: InstructionContext<'_>) -> String {
        self(ctx)
    }
}

/// Fires before `AgentStart`; `false` ends the run at once.
pub type BeforeLoopFn = Arc<dyn Fn(&AgentContext) -> bool + Send + Sync>;
/// Fires after `AgentEnd` with the run's new messages and usage.
pub type AfterLoopFn = Arc<dyn Fn(&[AgentMessage], &Usage) + Send + Sync>;
/// Fires before `TurnStart` with the history and the 1-based turn number; `false` ends the run.
pub type BeforeTurnFn = Arc<dyn Fn(&[AgentMessage], usize) -> bool + Send + Sync>;
/// Fires after `TurnEnd` with the history and the run's usage so far.
pub type AfterTurnFn = Arc<dyn Fn(&[AgentMessage], &Usage) + Send + Sync>;
/// Fires when a model call failed after its retries (not when aborted), with its error message;
/// also for a context overflow the loop then recovers from by compacting.
pub type OnErrorFn = Arc<dyn Fn(&str) + Send + Sync>;
/// Fires before `ToolExecutionStart`; `false` skips the call with an error result.
pub type BeforeToolExecutionFn = Arc<dyn Fn(ToolCallRef<'_>) -> bool + Send + Sync>;
/// Fires after `ToolExecutionEnd` with the call, its result and whether it failed.
pub type AfterToolExecutionFn = Arc<dyn Fn(ToolCallRef<'_>, &ToolResult, bool) + Send + Sync>;
/// Fires before each `ToolExecutionUpdate` with (tool call id, tool name, partial result); `false`
/// suppresses the event (the tool keeps running).
pub type BeforeToolUpdateFn = Arc<dyn Fn(&str, &str, &ToolResult) -> bool + Send + Sync>;
/// Fires after each `ToolExecutionUpdate` that was emitted.
pub type AfterToolUpdateFn = Arc<dyn Fn(&str, &str, &ToolResult) + Send + Sync>;
/// Rewrites the history before each model call (the stored history is unchanged).
pub type TransformContextFn = Arc<dyn Fn(&[AgentMessage]) -> Vec<AgentMessage> + Send + Sync>;
/// Turns the history into model messages before each model call (default: drop extensions).
pub type ConvertToLlmFn = Arc<dyn Fn(&[AgentMessage]) -> Vec<Message> + Send + Sync>;
/// Sees every event synchronously, in emission order, before it is sent.
pub type EventObserver = Arc<dyn Fn(&AgentEvent) + Send + Sync>;
/// Supplies queued messages (steering or follow-ups).
pub type QueueFn = Arc<dyn Fn() -> Vec<AgentMessage> + Send + Sync>;
/// Decides whether a tool call needs human approval.
pub type ApprovalPolicyFn = Arc<dyn Fn(ToolCallRef<'_>) -> bool + Send + Sync>;

/// Callbacks around a run. They fire in this order, and never out of it:
///
/// `before_loop → AgentStart … before_turn → TurnStart … before_tool_execution →
/// ToolExecutionStart … (before_tool_execution_update → ToolExecutionUpdate →
/// after_tool_execution_update)* … ToolExecutionEnd → after_tool_execution … TurnEnd → after_turn
/// … AgentEnd → after_loop`
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Hooks {
    /// Runs before `AgentStart`; returning `false` ends the run at once.
    pub before_loop: Option<BeforeLoopFn>,
    /// Runs after `AgentEnd` with the run's new messages and usage.
    pub after_loop: Option<AfterLoopFn>,
    /// Runs before each `TurnStart` with the history and 1-based turn number; `false` ends the run.
    pub before_turn: Option<BeforeTurnFn>,
    /// Runs after each `TurnEnd` with the history and the run's usage so far.
    pub after_turn: Option<AfterTurnFn>,
    /// Runs when a model call failed after its retries (not when aborted), with its error message;
    /// also for a context overflow the loop then recovers from by compacting.
    pub on_error: Option<OnErrorFn>,
    /// Runs before each tool call; returning `false` skips it with a [`crate::SKIPPED_BY_HOOK`] error result.
    pub before_tool_execution: Option<BeforeToolExecutionFn>,
    /// Runs after each tool call with its result and whether it failed.
    pub after_tool_execution: Option<AfterToolExecutionFn>,
    /// Runs before each `ToolExecutionUpdate`; returning `false` suppresses the event, not the tool.
    pub before_tool_execution_update: Option<BeforeToolUpdateFn>,
    /// Runs after each `ToolExecutionUpdate` that was emitted.
    pub after_tool_execution_update: Option<AfterToolUpdateFn>,
    /// Rewrites the history sent to each model call; the stored history is unchanged.
    pub transform_context: Option<TransformContextFn>,
    /// Turns the history into model messages before each call; `None`: extension messages are dropped.
    pub convert_to_llm: Option<ConvertToLlmFn>,
    /// Sees every event synchronously, in emission order, before it is sent.
    pub on_event: Option<EventObserver>,
}

impl fmt::Debug for Hooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = [
            ("before_loop", self.before_loop.is_some()),
            ("after_loop", self.after_loop.is_some()),
            ("before_turn", self.before_turn.is_some()),
            ("after_turn", self.after_turn.is_some()),
            ("on_error", self.on_error.is_some()),
            ("before_tool_execution", self.before_tool_execution.is_some()),
            ("after_tool_execution", self.after_tool_execution.is_some()),
            ("before_tool_execution_update", self.before_tool_execution_update.is_some()),
            ("after_tool_execution_update", self.after_tool_execution_update.is_some()),
            ("transform_context", self.transform_context.is_some()),
            ("convert_to_llm", self.convert_to_llm.is_some()),
            ("on_event", self.on_event.is_some()),
        ];
        f.debug_list().entries(set.iter().filter(|(_, on)| *on).map(|(name, _)| name)).finish()
    }
}

/// Everything a loop reads and never changes. Cheap to clone: shared parts are behind `Arc`s.
#[derive(Clone)]
#[non_exhaustive]
pub struct AgentLoopConfig {
    /// The provider every model call goes to.
    pub provider: Arc<dyn StreamProvider>,
    /// The model id sent to the provider.
    pub model: String,
    /// How much the model reasons before answering (default: `Off`).
    pub thinking_level: ThinkingLevel,
    /// Cap on each model answer, in tokens; `None`: the provider's default.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; `None`: the provider's default.
    pub temperature: Option<f32>,
    /// Prompt caching settings (default: enabled, automatic breakpoints).
    pub cache_config: CacheConfig,
    /// Tool choice, stop sequences, sampling, seed, penalties and end-user id of every model call
    /// (default: none set). A forced tool choice holds until the model has called a tool in the
    /// run; later turns are `Auto`, or every turn would call a tool and only a limit would end it.
    pub request_options: RequestOptions,
    /// The middle segment of loop ids; derived from provider and model when `None`.
    pub config_id: Option<String>,
    /// Compaction runs before each model call when this is set (the default); `None` disables it.
    pub context_config: Option<ContextConfig>,
    /// The compaction strategy; `None` means `sinew_compaction::TieredCompaction`.
    pub compaction_strategy: Option<Arc<dyn CompactionStrategy>>,
    /// Turn, token and duration limits of a run (default: 50 turns, 1,000,000 tokens, 600 s); `None`:
    /// no limits.
    pub execution_limits: Option<ExecutionLimits>,
    /// How the tool calls of one model response run (default: all in parallel).
    pub tool_execution: ToolExecution,
    /// How failed model calls are retried (default: 3 retries, from 1 s doubling up to 30 s).
    pub retry_config: RetryConfig,
    /// Filters over each prompt's user text, run in order; a rejection ends the run before any model call.
    pub input_filters: Vec<Arc<dyn InputFilter>>,
    /// Callbacks around the run (default: none).
    pub hooks: Hooks,
    /// Supplies steering messages, checked at the start of a run, after each group of tool calls
    /// and after a turn without them; `None`: no steering.
    /// [`crate::Agent`] sets it to drain its own queue.
    pub get_steering_messages: Option<QueueFn>,
    /// Supplies follow-up messages once the model is done; `None` or nothing queued ends the run.
    /// [`crate::Agent`] sets it to drain its own queue.
    pub get_follow_up_messages: Option<QueueFn>,
    /// Computes the system prompt before every turn; `None`: the context's fixed `system_prompt`.
    pub instruction_provider: Option<Arc<dyn InstructionProvider>>,
    /// Calls for which this returns `true` wait for approval (as do calls whose tool says so).
    pub approval_policy: Option<ApprovalPolicyFn>,
    /// Suspend on every tool call and let the host run it (client-side tool execution).
    pub pause_on_tool_calls: bool,
    /// The trigger of the first turn of an origin call (`SubAgent` for sub-agents).
    pub first_turn_trigger: TurnTrigger,
    /// Record the system prompt, the messages sent and the answer on each `chat` span
    /// (`gen_ai.system_instructions`, `gen_ai.input.messages`, `gen_ai.output.messages`), for
    /// telemetry. Off by default: message content is sensitive.
    pub capture_message_content: bool,
}

impl AgentLoopConfig {
    /// A configuration with defaults for everything but the model.
    pub fn new(provider: Arc<dyn StreamProvider>, model: impl Into<String>) -> Self {
        AgentLoopConfig {
            provider,
            model: model.into(),
            thinking_level: ThinkingLevel::Off,
            max_tokens: None,
            temperature: None,
            cache_config: CacheConfig::default(),
            request_options: RequestOptions::default(),
            config_id: None,
            context_config: Some(ContextConfig::default()),
            compaction_strategy: None,
            execution_limits: Some(ExecutionLimits::default()),
            tool_execution: ToolExecution::default(),
            retry_config: RetryConfig::default(),
            input_filters: Vec::new(),
            hooks: Hooks::default(),
            get_steering_messages: None,
            get_follow_up_messages: None,
            instruction_provider: None,
            approval_policy: None,
            pause_on_tool_calls: false,
            first_turn_trigger: TurnTrigger::User,
            capture_message_content: false,
        }
    }

    /// The middle segment of loop ids: `config_id`, or `"{provider_id}.{model_slug}[.thinking]"`.
    pub fn config_segment(&self) -> String {
        if let Some(id) = &self.config_id {
            return id.clone();
        }
        let slug: String = self
            .model
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
            .collect();
        let mut segment = format!("{}.{slug}", self.provider.provider_id());
        if self.thinking_level != ThinkingLevel::Off {
            segment.push_str(".thinking");
        }
        segment
    }
}

impl fmt::Debug for AgentLoopConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentLoopConfig")
            .field("provider", &self.provider.provider_id())
            .field("model", &self.model)
            .field("thinking_level", &self.thinking_level)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("request_options", &self.request_options)
            .field("config_id", &self.config_id)
            .field("context_config", &self.context_config)
            .field("compaction_strategy", &self.compaction_strategy.is_some())
            .field("execution_limits", &self.execution_limits)
            .field("tool_execution", &self.tool_execution)
            .field("retry_config", &self.retry_config)
            .field("input_filters", &self.input_filters.len())
            .field("hooks", &self.hooks)
            .field("pause_on_tool_calls", &self.pause_on_tool_calls)
            .finish_non_exhaustive()
    }
}
