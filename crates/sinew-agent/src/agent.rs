//! [`Agent`]: a conversation with a model, its tools and its history.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use sinew_core::{
    AgentEvent, AgentMessage, AgentTool, CacheConfig, CancellationToken, CompactionStrategy, ContextConfig,
    ContinuationKind, ExecutionLimits, InputFilter, QueueMode, RetryConfig, StreamProvider, ThinkingLevel, ToolCallRef,
    ToolExecution, TurnTrigger, now_ms,
};

use crate::agent_loop::{Entry, HistoryWire, LoopOutcome, check_continuable, new_id, prompt_loop, run};
use crate::approval::{Decisions, Suspension};
use crate::branches::{Branch, BranchOutcome, BranchSpec};
use crate::config::{AgentContext, AgentLoopConfig, Hooks, InstructionProvider};
use crate::emit::{EventQueue, EventSender, Sink};
use crate::error::{Error, Result};
use crate::snapshot::{AgentSnapshot, SNAPSHOT_FORMAT_VERSION};

/// The result text of calls that were waiting for approval when the user sent a new prompt.
pub const SUPERSEDED: &str = "Tool call was not executed: the user sent a new message instead of deciding.";

/// State shared between an [`Agent`] and its [`AgentHandle`]s.
#[derive(Default)]
struct Shared {
    steering: Mutex<VecDeque<AgentMessage>>,
    follow_up: Mutex<VecDeque<AgentMessage>>,
    cancel: Mutex<Option<CancellationToken>>,
    /// The parent of every running branch's token: an abort reaches branches too.
    branches: Mutex<CancellationToken>,
    running: AtomicBool,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn drain(queue: &Mutex<VecDeque<AgentMessage>>, mode: QueueMode) -> Vec<AgentMessage> {
    let mut queue = lock(queue);
    match mode {
        QueueMode::OneAtATime => queue.pop_front().into_iter().collect(),
        QueueMode::All => queue.drain(..).collect(),
    }
}

/// Steers, queues follow-ups for and aborts an agent from anywhere, also while it runs.
#[derive(Clone)]
pub struct AgentHandle {
    shared: Arc<Shared>,
}

impl AgentHandle {
    /// Queues a message to inject before the next model call; remaining tool calls of the current
    /// batch are skipped.
    pub fn steer(&self, message: impl Into<AgentMessage>) {
        lock(&self.shared.steering).push_back(message.into());
    }

    /// Queues a message to handle once the agent would otherwise stop.
    pub fn follow_up(&self, message: impl Into<AgentMessage>) {
        lock(&self.shared.follow_up).push_back(message.into());
    }

    /// Cancels the running run, if any: the model stream, every tool and retry sleeps; and every
    /// branch of [`Agent::explore_branches`] still running.
    pub fn abort(&self) {
        if let Some(token) = lock(&self.shared.cancel).as_ref() {
            token.cancel();
        }
        // Branches started later are not aborted by this call.
        std::mem::take(&mut *lock(&self.shared.branches)).cancel();
    }

    /// Whether a run is in progress.
    pub fn is_running(&self) -> bool {
        self.shared.running.load(Ordering::Acquire)
    }
}

impl fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentHandle").field("running", &self.is_running()).finish_non_exhaustive()
    }
}

/// Marks the agent running while a run future is alive; resets it however the future ends.
struct RunningGuard(Arc<Shared>);

impl RunningGuard {
    fn new(shared: &Arc<Shared>, cancel: CancellationToken) -> Self {
        *lock(&shared.cancel) = Some(cancel);
        shared.running.store(true, Ordering::Release);
        RunningGuard(Arc::clone(shared))
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Some(token) = lock(&self.0.cancel).take() {
            // A run dropped before it finished is over: stop whatever it left behind.
            token.cancel();
        }
        self.0.running.store(false, Ordering::Release);
    }
}

/// An agent: a model, tools, a system prompt and a history, with the loop that drives them.
///
/// A run borrows the agent mutably, so a second prompt while one runs does not compile; use
/// [`Agent::handle`] to steer, queue follow-ups or abort from elsewhere:
///
/// ```compile_fail,E0499
/// # use sinew_agent::Agent;
/// # use sinew_testing::MockProvider;
/// let mut agent = Agent::new(MockProvider::new([]), "m");
/// let first = agent.prompt("one");
/// let second = agent.prompt("two"); // error: `agent` is already borrowed by `first`
/// # drop((first, second));
/// ```
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use futures::StreamExt;
/// use sinew_agent::Agent;
/// use sinew_core::AgentEvent;
/// use sinew_testing::{MockProvider, MockResponse};
///
/// let provider = MockProvider::new([MockResponse::text("Hello!")]);
/// let mut agent = Agent::new(provider, "mock-model").with_system_prompt("Be brief.");
/// let mut run = agent.prompt("Hi");
/// let mut streamed = String::new();
/// while let Some(event) = run.next().await {
///     if let AgentEvent::MessageUpdate { delta: sinew_core::StreamDelta::Text { delta, .. }, .. } = event {
///         streamed.push_str(&delta);
///     }
/// }
/// drop(run);
/// assert_eq!(streamed, "Hello!");
/// assert_eq!(agent.messages().len(), 2);
/// # });
/// ```
pub struct Agent {
    pub(crate) config: AgentLoopConfig,
    /// The context budget was set by the caller; otherwise it follows the model's window.
    context_config_set: bool,
    pub(crate) context: AgentContext,
    /// What the provider kept of the history's serialized messages; forgotten whenever the agent
    /// rewrites the history rather than appending to it.
    wire: HistoryWire,
    steering_mode: QueueMode,
    follow_up_mode: QueueMode,
    shared: Arc<Shared>,
    loop_counters: BTreeMap<String, usize>,
    last_loop_id: Option<String>,
    suspension: Option<Suspension>,
    last_active_at: Option<u64>,
}

/// The guard against a second prompt while a run is going (REQ-107) is the borrow checker: a run
/// borrows its agent mutably, so this does not compile.
///
/// ```compile_fail,E0499
/// # use sinew_agent::Agent;
/// # use sinew_testing::MockProvider;
/// let mut agent = Agent::new(MockProvider::new([]), "m");
/// let first = agent.prompt("one");
/// let second = agent.prompt("two");
/// # drop((first, second));
/// ```
///
/// Once the first run is dropped (or finished), the agent takes the next prompt; this example
/// differs from the one above only there, so the one above fails on the borrow and nothing else
/// (stable rustdoc does not check the error code):
///
/// ```
/// # use sinew_agent::Agent;
/// # use sinew_testing::MockProvider;
/// let mut agent = Agent::new(MockProvider::new([]), "m");
/// drop(agent.prompt("one"));
/// drop(agent.prompt("two"));
/// ```
#[cfg(doctest)]
pub struct ConcurrentPromptDoctests;

impl Agent {
    /// An agent on `provider` and `model`, with the documented defaults: no tools, no system
    /// prompt, thinking off, parallel tools, one-at-a-time queues, default context config and
    /// execution limits, default retries.
    pub fn new(provider: impl StreamProvider + 'static, model: impl Into<String>) -> Self {
        Agent::with_provider_arc(Arc::new(provider), model)
    }

    /// Like [`Agent::new`] with a shared provider.
    pub fn with_provider_arc(provider: Arc<dyn StreamProvider>, model: impl Into<String>) -> Self {
        let mut agent = Agent {
            config: AgentLoopConfig::new(provider, model),
            context_config_set: false,
            context: AgentContext { agent_id: Some(new_id()), session_id: Some(new_id()), ..AgentContext::default() },
            wire: HistoryWire::default(),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            shared: Arc::default(),
            loop_counters: BTreeMap::new(),
            last_loop_id: None,
            suspension: None,
            last_active_at: None,
        };
        agent.fit_context_budget();
        agent
    }

    /// The default context budget follows the model: its window, as the provider knows it (the
    /// facade's registry from its model catalog), less room for the answer (`max_tokens`, else
    /// an eighth of the window). Nothing changes when the caller set a budget, or the window is
    /// unknown.
    fn fit_context_budget(&mut self) {
        if self.context_config_set {
            return;
        }
        let Some(window) = self.config.provider.context_window(&self.config.model) else { return };
        let window = usize::try_from(window).unwrap_or(usize::MAX);
        let answer = self.config.max_tokens.map_or(window / 8, |t| t as usize);
        if let Some(context) = &mut self.config.context_config {
            context.max_context_tokens = window.saturating_sub(answer).max(context.system_prompt_tokens);
        }
    }

    // ----- builders -----

    /// Sets the system prompt (default: none), replacing any earlier one.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.context.system_prompt = prompt.into();
        self
    }

    /// Appends the skills' `<available_skills>` block to the system prompt (nothing when the set
    /// is empty). Call it after [`Agent::with_system_prompt`], which replaces the prompt.
    #[must_use]
    pub fn with_skills(mut self, skills: &crate::SkillSet) -> Self {
        let block = skills.format_for_prompt();
        if !block.is_empty() {
            if !self.context.system_prompt.is_empty() {
                self.context.system_prompt.push_str("\n\n");
            }
            self.context.system_prompt.push_str(&block);
        }
        self
    }

    /// Sets the model runs ask for; a default context budget follows its window.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.config.model = model.into();
        self.fit_context_budget();
        self
    }

    /// Names the agent (default: a random id). Session records group runs by agent id.
    #[must_use]
    pub fn with_agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.context.agent_id = Some(agent_id.into());
        self
    }

    /// Records the messages of each model call on its `chat` span, for telemetry (default off;
    /// the OpenTelemetry GenAI conventions' `gen_ai.input.messages` and
    /// `gen_ai.output.messages`).
    #[must_use]
    pub fn with_message_content_capture(mut self, capture: bool) -> Self {
        self.config.capture_message_content = capture;
        self
    }

    /// Replaces the provider.
    #[must_use]
    pub fn with_provider(mut self, provider: impl StreamProvider + 'static) -> Self {
        self.config.provider = Arc::new(provider);
        self.fit_context_budget();
        self
    }

    /// Caps each model answer at `max_tokens` (default: the provider's); a default context budget
    /// leaves this much room for the answer.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.config.max_tokens = Some(max_tokens);
        self.fit_context_budget();
        self
    }

    /// Sets the sampling temperature (default: the provider's).
    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.config.temperature = Some(temperature);
        self
    }

    /// Tool choice, stop sequences, sampling, seed, penalties and end-user id for every model
    /// call (see [`AgentLoopConfig::request_options`]: a forced tool choice holds until the model
    /// has called a tool in a run). A provider refuses an option its service lacks, and the run
    /// then ends with [`sinew_core::EndReason::Failed`] naming it.
    #[must_use]
    pub fn with_request_options(mut self, options: sinew_core::RequestOptions) -> Self {
        self.config.request_options = options;
        self
    }

    /// Sets how much the model reasons before answering (default: [`ThinkingLevel::Off`]).
    #[must_use]
    pub fn with_thinking(mut self, level: ThinkingLevel) -> Self {
        self.config.thinking_level = level;
        self
    }

    /// Adds tools. Names must follow the providers' rule and be unique
    /// ([`sinew_core::check_tool_names`]): a run with two tools of one name, or a name a provider
    /// would refuse, fails before its first model call, saying which.
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = Arc<dyn AgentTool>>) -> Self {
        self.context.tools.extend(tools);
        self
    }

    /// Adds one tool.
    #[must_use]
    pub fn with_tool(self, tool: impl AgentTool + 'static) -> Self {
        self.with_tools([Arc::new(tool) as Arc<dyn AgentTool>])
    }

    /// `None` disables compaction.
    #[must_use]
    pub fn with_context_config(mut self, config: Option<ContextConfig>) -> Self {
        self.config.context_config = config;
        self.context_config_set = true;
        self
    }

    /// Replaces the compaction strategy (default: [`sinew_compaction::TieredCompaction`]).
    #[must_use]
    pub fn with_compaction_strategy(mut self, strategy: impl CompactionStrategy + 'static) -> Self {
        self.config.compaction_strategy = Some(Arc::new(strategy));
        self
    }

    /// `None` removes every limit.
    #[must_use]
    pub fn with_execution_limits(mut self, limits: Option<ExecutionLimits>) -> Self {
        self.config.execution_limits = limits;
        self
    }

    /// Sets how failed model calls are retried (default: 3 retries, from 1 s doubling up to 30 s).
    #[must_use]
    pub fn with_retry_config(mut self, config: RetryConfig) -> Self {
        self.config.retry_config = config;
        self
    }

    /// Sets prompt caching (default: enabled, [`sinew_core::CacheStrategy::Auto`]).
    #[must_use]
    pub fn with_cache_config(mut self, config: CacheConfig) -> Self {
        self.config.cache_config = config;
        self
    }

    /// Sets how the tool calls of one response run (default: [`ToolExecution::Parallel`]).
    #[must_use]
    pub fn with_tool_execution(mut self, strategy: ToolExecution) -> Self {
        self.config.tool_execution = strategy;
        self
    }

    /// Sets how steering messages are taken from their queue (default: [`QueueMode::OneAtATime`]).
    #[must_use]
    pub fn with_steering_mode(mut self, mode: QueueMode) -> Self {
        self.steering_mode = mode;
        self
    }

    /// Sets how follow-up messages are taken from their queue (default: [`QueueMode::OneAtATime`]).
    #[must_use]
    pub fn with_follow_up_mode(mut self, mode: QueueMode) -> Self {
        self.follow_up_mode = mode;
        self
    }

    /// Adds a filter over each prompt's user text. Filters run in the order added; a rejection ends
    /// the run before any model call.
    #[must_use]
    pub fn with_input_filter(mut self, filter: impl InputFilter + 'static) -> Self {
        self.config.input_filters.push(Arc::new(filter));
        self
    }

    /// Replaces the run's callbacks (default: none).
    #[must_use]
    pub fn with_hooks(mut self, hooks: Hooks) -> Self {
        self.config.hooks = hooks;
        self
    }

    /// Computes the system prompt before every turn instead of using a fixed one.
    #[must_use]
    pub fn with_instruction_provider(mut self, provider: impl InstructionProvider + 'static) -> Self {
        self.config.instruction_provider = Some(Arc::new(provider));
        self
    }

    /// Calls for which `policy` returns `true` wait for approval.
    #[must_use]
    pub fn with_approval_policy(mut self, policy: impl Fn(ToolCallRef<'_>) -> bool + Send + Sync + 'static) -> Self {
        self.config.approval_policy = Some(Arc::new(policy));
        self
    }

    /// Calls of the named tools wait for approval.
    #[must_use]
    pub fn with_approval_required_for<I, S>(self, tool_names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names: Vec<String> = tool_names.into_iter().map(Into::into).collect();
        self.with_approval_policy(move |call| names.iter().any(|n| n == call.name))
    }

    /// Suspends on every tool call so the host runs the tools (client-side execution).
    #[must_use]
    pub fn with_pause_on_tool_calls(mut self, pause: bool) -> Self {
        self.config.pause_on_tool_calls = pause;
        self
    }

    /// The middle segment of this agent's loop ids.
    #[must_use]
    pub fn with_config_id(mut self, config_id: impl Into<String>) -> Self {
        self.config.config_id = Some(config_id.into());
        self
    }

    /// The trigger reported on the first turn of a prompt (`SubAgent` for sub-agents).
    #[must_use]
    pub fn with_first_turn_trigger(mut self, trigger: TurnTrigger) -> Self {
        self.config.first_turn_trigger = trigger;
        self
    }

    // ----- accessors -----

    /// The model the next run asks for.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// Switches models between runs; the history is kept.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.config.model = model.into();
        self.fit_context_budget();
    }

    /// The history, oldest first.
    pub fn messages(&self) -> &[AgentMessage] {
        &self.context.messages
    }

    /// The fixed system prompt; empty when none is set. An instruction provider overrides it per turn.
    pub fn system_prompt(&self) -> &str {
        &self.context.system_prompt
    }

    /// The tools offered to the model, in the order added.
    pub fn tools(&self) -> &[Arc<dyn AgentTool>] {
        &self.context.tools
    }

    /// The loop configuration runs are made with.
    pub fn config(&self) -> &AgentLoopConfig {
        &self.config
    }

    /// How steering messages are taken from their queue.
    pub fn steering_mode(&self) -> QueueMode {
        self.steering_mode
    }

    /// How follow-up messages are taken from their queue.
    pub fn follow_up_mode(&self) -> QueueMode {
        self.follow_up_mode
    }

    /// Stable for the agent's lifetime.
    pub fn agent_id(&self) -> &str {
        self.context.agent_id.as_deref().unwrap_or_default()
    }

    /// The current session's id: random at creation, replaced by [`Agent::new_session`].
    pub fn session_id(&self) -> &str {
        self.context.session_id.as_deref().unwrap_or_default()
    }

    /// The loop id of the latest run; `None` before the first run and after [`Agent::new_session`].
    pub fn last_loop_id(&self) -> Option<&str> {
        self.last_loop_id.as_deref()
    }

    /// When the agent was last prompted (ms since the epoch).
    pub fn last_active_at(&self) -> Option<u64> {
        self.last_active_at
    }

    /// The suspended run waiting for decisions, if any.
    pub fn suspension(&self) -> Option<&Suspension> {
        self.suspension.as_ref()
    }

    /// Whether a run is in progress (always `false` where `&self` is available outside a run).
    pub fn is_streaming(&self) -> bool {
        self.shared.running.load(Ordering::Acquire)
    }

    /// A handle to steer, queue follow-ups and abort, usable while a run borrows the agent.
    pub fn handle(&self) -> AgentHandle {
        AgentHandle { shared: Arc::clone(&self.shared) }
    }

    /// Queues a message to inject before the next model call; see [`AgentHandle::steer`].
    pub fn steer(&self, message: impl Into<AgentMessage>) {
        self.handle().steer(message);
    }

    /// Queues a message to handle once the agent would otherwise stop; see [`AgentHandle::follow_up`].
    pub fn follow_up(&self, message: impl Into<AgentMessage>) {
        self.handle().follow_up(message);
    }

    /// Cancels the running run and its branches, if any; see [`AgentHandle::abort`].
    pub fn abort(&self) {
        self.handle().abort();
    }

    /// The next loop id: `"{session_id}.{config_segment}.{N}"`, counting per session and config.
    pub fn next_loop_id(&mut self) -> String {
        self.next_loop_id_for(&self.config.config_segment())
    }

    /// The next loop id of a run with configuration segment `segment`.
    fn next_loop_id_for(&mut self, segment: &str) -> String {
        let key = format!("{}.{segment}", self.session_id());
        let counter = self.loop_counters.entry(key.clone()).or_insert(0);
        *counter += 1;
        format!("{key}.{counter}")
    }

    // ----- history -----

    /// The history as a JSON array.
    pub fn save_messages(&self) -> Result<String> {
        serde_json::to_string(&self.context.messages).map_err(Error::Json)
    }

    /// Replaces the history with a JSON array from [`Agent::save_messages`].
    pub fn restore_messages(&mut self, json: &str) -> Result<()> {
        self.context.messages = serde_json::from_str(json).map_err(Error::Json)?;
        self.wire.forget();
        Ok(())
    }

    /// Replaces the history.
    pub fn set_messages(&mut self, messages: Vec<AgentMessage>) {
        self.context.messages = messages;
        self.wire.forget();
    }

    /// Clears the history and both queues, cancels any run and drops a pending suspension.
    pub fn reset(&mut self) {
        self.context.messages.clear();
        self.wire.forget();
        lock(&self.shared.steering).clear();
        lock(&self.shared.follow_up).clear();
        if let Some(token) = lock(&self.shared.cancel).take() {
            token.cancel();
        }
        self.shared.running.store(false, Ordering::Release);
        self.suspension = None;
    }

    /// Starts a new session (REQ-215): a fresh session id, loop counters and the last loop id
    /// cleared, so the next run's loop id ends in `.1` again. The history is kept; [`Agent::reset`]
    /// clears it. Returns the new session id.
    pub fn new_session(&mut self) -> &str {
        self.context.session_id = Some(crate::agent_loop::new_id());
        self.loop_counters.clear();
        self.last_loop_id = None;
        self.session_id()
    }

    /// Starts a new session if the agent has been idle for longer than `threshold` since its last
    /// prompt. Returns whether it rotated. An agent never prompted does not rotate.
    pub fn check_and_rotate(&mut self, threshold: std::time::Duration) -> bool {
        let idle = self.last_active_at.is_some_and(|at| now_ms().saturating_sub(at) > threshold.as_millis() as u64);
        if idle {
            self.new_session();
        }
        idle
    }

    /// Everything needed to resume this agent elsewhere; no provider configuration or secrets.
    pub fn snapshot(&self) -> AgentSnapshot {
        AgentSnapshot {
            format_version: SNAPSHOT_FORMAT_VERSION,
            agent_id: self.agent_id().to_owned(),
            session_id: self.session_id().to_owned(),
            last_loop_id: self.last_loop_id.clone(),
            loop_counters: self.loop_counters.clone(),
            system_prompt: self.context.system_prompt.clone(),
            messages: self.context.messages.clone(),
            suspension: self.suspension.clone(),
            created_at: now_ms(),
        }
    }

    /// Takes over the state of a snapshot: identity, loop counters, system prompt, history and
    /// any suspended run. Configuration (provider, tools, hooks) stays as built.
    pub fn restore(&mut self, snapshot: AgentSnapshot) {
        self.context.agent_id = Some(snapshot.agent_id);
        self.context.session_id = Some(snapshot.session_id);
        self.last_loop_id = snapshot.last_loop_id;
        self.loop_counters = snapshot.loop_counters;
        self.context.system_prompt = snapshot.system_prompt;
        self.context.messages = snapshot.messages;
        self.wire.forget();
        self.suspension = snapshot.suspension;
    }

    // ----- runs -----

    /// Sends a user prompt. The returned [`AgentRun`] streams the run's events; nothing happens
    /// until it is polled.
    pub fn prompt(&mut self, text: impl Into<String>) -> AgentRun<'_> {
        self.prompt_messages(vec![AgentMessage::user(text)])
    }

    /// Sends several messages as one prompt.
    pub fn prompt_messages(&mut self, messages: Vec<AgentMessage>) -> AgentRun<'_> {
        let queue = Arc::new(EventQueue::default());
        AgentRun::new(Box::pin(self.run_entry(Entry::Prompt(messages), Sink::Queue(Arc::clone(&queue)))), queue)
    }

    /// Sends a user prompt, streaming events to `tx` (one sender can serve many prompts).
    pub async fn prompt_with_sender(&mut self, text: impl Into<String>, tx: EventSender) -> LoopOutcome {
        self.run_entry(Entry::Prompt(vec![AgentMessage::user(text)]), Sink::Channel(tx)).await
    }

    /// Sends messages as one prompt, streaming events to `tx`.
    pub async fn prompt_messages_with_sender(&mut self, messages: Vec<AgentMessage>, tx: EventSender) -> LoopOutcome {
        self.run_entry(Entry::Prompt(messages), Sink::Channel(tx)).await
    }

    /// Lets the model answer the history as it stands (it must not end with an assistant message).
    pub fn continue_run(&mut self, kind: ContinuationKind) -> Result<AgentRun<'_>> {
        if self.suspension.is_some() {
            return Err(Error::InvalidContext("a run is suspended; resume it with decisions".into()));
        }
        check_continuable(&self.context.messages)?;
        self.context.continuation_kind = Some(kind);
        let queue = Arc::new(EventQueue::default());
        Ok(AgentRun::new(Box::pin(self.run_entry(Entry::Continue(Vec::new()), Sink::Queue(Arc::clone(&queue)))), queue))
    }

    /// Sends `message`, choosing the call by the history: a new prompt when it is empty or ends
    /// with the model's answer, otherwise a continuation that includes `message`.
    pub fn send(&mut self, message: impl Into<AgentMessage>) -> AgentRun<'_> {
        let message = message.into();
        let awaiting_model =
            self.suspension.is_none() && self.context.messages.last().is_some_and(|m| m.as_assistant().is_none());
        if awaiting_model {
            self.context.continuation_kind = Some(ContinuationKind::Default);
            let queue = Arc::new(EventQueue::default());
            AgentRun::new(
                Box::pin(self.run_entry(Entry::Continue(vec![message]), Sink::Queue(Arc::clone(&queue)))),
                queue,
            )
        } else {
            self.prompt_messages(vec![message])
        }
    }

    /// Resumes the suspended run with the host's decisions.
    pub fn resume(&mut self, decisions: Decisions) -> Result<AgentRun<'_>> {
        let suspension = self.suspension.as_ref().ok_or(Error::NotSuspended)?;
        let plan = decisions.plan(suspension)?;
        let suspension = self.suspension.take().ok_or(Error::NotSuspended)?;
        self.context.continuation_kind = Some(ContinuationKind::Default);
        let queue = Arc::new(EventQueue::default());
        let future = self.run_entry(Entry::Resume(suspension, plan), Sink::Queue(Arc::clone(&queue)));
        Ok(AgentRun::new(Box::pin(future), queue))
    }

    /// Runs `text` on a fresh context (same configuration, tools and system prompt, a new
    /// session) and leaves this agent's history untouched. Abort it with
    /// [`AgentRun::cancel_token`].
    pub fn run_stateless(&self, text: impl Into<String>) -> AgentRun<'_> {
        let mut context = AgentContext {
            system_prompt: self.context.system_prompt.clone(),
            tools: self.context.tools.clone(),
            agent_id: self.context.agent_id.clone(),
            ..AgentContext::default()
        };
        let config = self.config.clone();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let queue = Arc::new(EventQueue::default());
        let sink = Sink::Queue(Arc::clone(&queue));
        let prompt = AgentMessage::user(text);
        let future = async move { prompt_loop(vec![prompt], &mut context, &config, sink, &cancel).await };
        let mut run = AgentRun::new(Box::pin(future), queue);
        run.cancel = Some(token);
        run
    }

    /// Continues the history in several ways at once: each [`BranchSpec`] appends its messages
    /// (and may change the system prompt or model), and its branch runs on a task of its own with
    /// its own events and cancel token. Each branch's `parent_loop_id` is this agent's last loop,
    /// its continuation a branch tagged with the spec's tag. The agent's own history is not
    /// touched; [`Agent::adopt_branch`] takes one branch's.
    ///
    /// Fails, starting nothing, when the agent is suspended or a branch's history cannot be
    /// continued (empty, or ending with the model's answer). Must be called within a tokio runtime.
    pub fn explore_branches(&mut self, specs: Vec<BranchSpec>) -> Result<Vec<Branch>> {
        if self.suspension.is_some() {
            return Err(Error::InvalidContext("a run is suspended; resume it with decisions".into()));
        }
        let mut prepared = Vec::with_capacity(specs.len());
        for spec in &specs {
            let (context, config) = spec.apply(&self.context, &self.config);
            check_continuable(&context.messages)
                .map_err(|error| Error::InvalidContext(format!("branch {}: {error}", spec.tag)))?;
            prepared.push((spec.tag.clone(), context, config));
        }
        let parent = self.last_loop_id.clone();
        let aborts = lock(&self.shared.branches).clone();
        Ok(prepared
            .into_iter()
            .map(|(tag, mut context, config)| {
                context.loop_id = Some(self.next_loop_id_for(&config.config_segment()));
                context.parent_loop_id.clone_from(&parent);
                context.continuation_kind = Some(ContinuationKind::Branch { tag: tag.clone() });
                Branch::spawn(tag, context, config, aborts.child_token())
            })
            .collect())
    }

    /// Makes a branch's history the agent's, and its loop the agent's last.
    pub fn adopt_branch(&mut self, branch: &BranchOutcome) {
        self.context.messages.clone_from(&branch.messages);
        self.wire.forget();
        self.last_loop_id = Some(branch.outcome.loop_id.clone());
        self.last_active_at = Some(now_ms());
    }

    fn run_entry(&mut self, entry: Entry, sink: Sink) -> BoxFuture<'_, LoopOutcome> {
        Box::pin(async move {
            let continuation = !matches!(entry, Entry::Prompt(_));
            if let (Entry::Prompt(_), Some(suspension)) = (&entry, self.suspension.take()) {
                // A new prompt answers the pending calls: none of them runs.
                self.context.messages.extend(suspension.abandon(SUPERSEDED));
            }
            let loop_id = self.next_loop_id();
            self.context.parent_loop_id = if continuation { self.last_loop_id.clone() } else { None };
            if !continuation {
                self.context.continuation_kind = None;
            }
            self.context.loop_id = Some(loop_id.clone());
            self.last_loop_id = Some(loop_id);
            self.last_active_at = Some(now_ms());

            let cancel = CancellationToken::new();
            let _running = RunningGuard::new(&self.shared, cancel.clone());
            let mut config = self.config.clone();
            let (shared, mode) = (Arc::clone(&self.shared), self.steering_mode);
            config.get_steering_messages = Some(Arc::new(move || drain(&shared.steering, mode)));
            let (shared, mode) = (Arc::clone(&self.shared), self.follow_up_mode);
            config.get_follow_up_messages = Some(Arc::new(move || drain(&shared.follow_up, mode)));

            let outcome = run(&mut self.context, &config, sink, &cancel, entry, Some(&mut self.wire)).await;
            self.suspension.clone_from(&outcome.suspension);
            outcome
        })
    }
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("config", &self.config)
            .field("context", &self.context)
            .field("steering_mode", &self.steering_mode)
            .field("follow_up_mode", &self.follow_up_mode)
            .field("last_loop_id", &self.last_loop_id)
            .field("suspended", &self.suspension.is_some())
            .finish_non_exhaustive()
    }
}

/// A run in progress: a [`Stream`] of its events, driven by polling it.
///
/// The run makes progress only while polled. Dropping it before the end stops the run; the
/// agent's history stays valid (a turn whose tools had not all finished is not recorded).
#[must_use = "a run makes progress only while it is polled: await `finish()`, `collect()`, or read it as a stream"]
pub struct AgentRun<'a> {
    future: Option<BoxFuture<'a, LoopOutcome>>,
    queue: Arc<EventQueue>,
    /// Events taken from the queue, not yet yielded.
    ready: VecDeque<AgentEvent>,
    outcome: Option<LoopOutcome>,
    cancel: Option<CancellationToken>,
}

impl<'a> AgentRun<'a> {
    fn new(future: BoxFuture<'a, LoopOutcome>, queue: Arc<EventQueue>) -> Self {
        AgentRun { future: Some(future), queue, ready: VecDeque::new(), outcome: None, cancel: None }
    }

    /// Drives the run to its end, discarding events, and returns its outcome. Events no hook
    /// observes are then not built at all (the run copies no message into them).
    pub async fn finish(mut self) -> LoopOutcome {
        use futures::StreamExt;
        self.queue.discard();
        self.ready.clear();
        while self.next().await.is_some() {}
        self.outcome.take().expect("a finished run has an outcome")
    }

    /// Drives the run to its end and returns its events and outcome.
    pub async fn collect(mut self) -> (Vec<AgentEvent>, LoopOutcome) {
        use futures::StreamExt;
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        (events, self.outcome.take().expect("a finished run has an outcome"))
    }

    /// The outcome, once the stream has ended.
    pub fn outcome(&self) -> Option<&LoopOutcome> {
        self.outcome.as_ref()
    }

    /// The token that aborts a stateless run.
    pub fn cancel_token(&self) -> Option<CancellationToken> {
        self.cancel.clone()
    }
}

impl Stream for AgentRun<'_> {
    type Item = AgentEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.ready.pop_front() {
                return Poll::Ready(Some(event));
            }
            this.queue.take_all(&mut this.ready);
            if !this.ready.is_empty() {
                continue;
            }
            let Some(future) = this.future.as_mut() else {
                // The run is over and every event was yielded.
                return Poll::Ready(None);
            };
            // Registered before polling, so an event pushed from another thread while the run
            // waits (a tool's own thread) wakes us.
            this.queue.register(cx.waker());
            match future.as_mut().poll(cx) {
                Poll::Ready(outcome) => {
                    this.outcome = Some(outcome);
                    this.future = None;
                }
                Poll::Pending => {
                    this.queue.take_all(&mut this.ready);
                    if this.ready.is_empty() {
                        return Poll::Pending;
                    }
                }
            }
        }
    }
}

impl fmt::Debug for AgentRun<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRun").field("finished", &self.future.is_none()).finish_non_exhaustive()
    }
}
