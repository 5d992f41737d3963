//! What an invocation shares: the session, the run's configuration, the event channel to the
//! runner, and the contexts callbacks and tools see (ADK's `InvocationContext`,
//! `CallbackContext`, `ToolContext`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as StdMutex};

use serde_json::{Map, Value};
use sinew_core::CancellationToken;
use tokio::sync::{Mutex, oneshot};

use crate::agent::Agent;
use crate::error::{Error, Result};
use crate::event::{Event, EventActions, ToolConfirmation};
use crate::genai::Content;
use crate::plugin::Plugin;
use crate::session::SessionService;
use crate::types::Session;

/// How the model's answers reach the caller (ADK's `StreamingMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamingMode {
    /// One complete event per model answer.
    #[default]
    None,
    /// Partial fragments as the model writes, then the complete event.
    Sse,
}

/// The default of [`RunConfig::max_llm_calls`], ADK's.
pub const DEFAULT_MAX_LLM_CALLS: usize = 500;

/// How a run goes (ADK's `RunConfig`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunConfig {
    /// Whether the model's answers come whole or also as partial fragments (`StreamingMode::None` by
    /// default).
    pub streaming_mode: StreamingMode,
    /// The most model calls one invocation may make; 0 means no limit.
    pub max_llm_calls: usize,
    /// Suspend on any tool call instead of running it: the host runs the tools and resumes the
    /// invocation with their function responses (adk-js's `pauseOnToolCalls`).
    pub pause_on_tool_calls: bool,
    /// Copied onto every event of the invocation.
    pub custom_metadata: Option<Map<String, Value>>,
    /// Show the model other agents' thoughts too.
    pub include_thoughts_from_other_agents: bool,
    /// Labels added to every model request of the run (`config.labels`), for billing and tracing.
    pub labels: Option<Map<String, Value>>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            streaming_mode: StreamingMode::None,
            max_llm_calls: DEFAULT_MAX_LLM_CALLS,
            pause_on_tool_calls: false,
            custom_metadata: None,
            include_thoughts_from_other_agents: false,
            labels: None,
        }
    }
}

impl RunConfig {
    /// Partial fragments as the model writes.
    #[must_use]
    pub fn sse(mut self) -> Self {
        self.streaming_mode = StreamingMode::Sse;
        self
    }

    /// Suspend on any tool call (see [`RunConfig::pause_on_tool_calls`]).
    #[must_use]
    pub fn pausing_on_tool_calls(mut self) -> Self {
        self.pause_on_tool_calls = true;
        self
    }

    /// With `metadata` on every event.
    #[must_use]
    pub fn with_custom_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.custom_metadata = Some(metadata);
        self
    }

    /// With `labels` on every model request.
    #[must_use]
    pub fn with_labels(mut self, labels: Map<String, Value>) -> Self {
        self.labels = Some(labels);
        self
    }

    /// Shows the model other agents' thoughts too.
    #[must_use]
    pub fn with_other_agents_thoughts(mut self) -> Self {
        self.include_thoughts_from_other_agents = true;
        self
    }

    /// At most `n` model calls per invocation.
    #[must_use]
    pub fn with_max_llm_calls(mut self, n: usize) -> Self {
        self.max_llm_calls = n;
        self
    }
}

/// An event on its way to the runner, and where the runner answers once it has stored it (nowhere
/// for a streaming fragment, which is never stored).
pub(crate) type Emitted = (Box<Event>, Option<oneshot::Sender<Event>>);

/// What the whole invocation shares.
pub(crate) struct Invocation {
    pub(crate) invocation_id: String,
    pub(crate) session: Mutex<Session>,
    pub(crate) service: Arc<dyn SessionService>,
    pub(crate) artifacts: Option<Arc<dyn crate::artifact::ArtifactService>>,
    pub(crate) app_name: String,
    pub(crate) user_id: String,
    pub(crate) session_id: String,
    pub(crate) run_config: RunConfig,
    pub(crate) plugins: Vec<Arc<dyn Plugin>>,
    pub(crate) root: Arc<dyn Agent>,
    pub(crate) user_content: Option<Content>,
    pub(crate) llm_calls: AtomicUsize,
    pub(crate) ended: AtomicBool,
    pub(crate) paused: AtomicBool,
    /// Whether events carry node paths: ADK 2.x gives them when the root is an LLM agent.
    pub(crate) node_paths: bool,
    /// How often each node (`parent_path/name`) ran in this invocation.
    pub(crate) node_runs: StdMutex<std::collections::HashMap<String, u32>>,
    /// The agents whose latest model request offered `set_model_response` (decided on the model
    /// the request went to, a plugin's replacement included).
    pub(crate) set_model_response_agents: StdMutex<std::collections::HashSet<String>>,
    pub(crate) cancel: CancellationToken,
    pub(crate) events: crate::handoff::Sender<Emitted>,
    /// The app's event compaction.
    pub(crate) compaction: Option<Arc<crate::compaction::Compactor>>,
    /// Whether agents write checkpoints (ADK's resumability).
    pub(crate) resumable: bool,
    /// Whether the message answers calls of an earlier run of this invocation.
    pub(crate) resumed: bool,
    /// The agents' checkpoints in this invocation.
    pub(crate) checkpoints: StdMutex<crate::resume::Checkpoints>,
}

/// One agent's view of a running invocation (ADK's `InvocationContext`): cheap to clone.
#[derive(Clone)]
pub struct InvocationContext {
    pub(crate) invocation: Arc<Invocation>,
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) branch: Option<String>,
    /// The agent's place in the run (`root@1/helper@1`), ADK 2.x's `nodeInfo.path`.
    pub(crate) node_path: String,
    /// Set by an escalating event: one flag per enclosing loop.
    pub(crate) escalations: Vec<Arc<AtomicBool>>,
    /// Raised by an event under this context that pauses the invocation: one flag per enclosing
    /// agent that stops for its own sub-agents' pauses only (ADK's `should_pause_invocation` on the
    /// events it yields).
    pub(crate) pause_flags: Vec<Arc<AtomicBool>>,
}

impl std::fmt::Debug for InvocationContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvocationContext")
            .field("invocation_id", &self.invocation.invocation_id)
            .field("agent", &self.agent.name())
            .field("branch", &self.branch)
            .finish_non_exhaustive()
    }
}

impl InvocationContext {
    /// The app the invocation runs in.
    pub fn app_name(&self) -> &str {
        &self.invocation.app_name
    }

    /// The user the invocation runs for.
    pub fn user_id(&self) -> &str {
        &self.invocation.user_id
    }

    /// The session's id (without copying the session, as [`InvocationContext::session`] does).
    pub fn session_id(&self) -> &str {
        &self.invocation.session_id
    }

    /// The invocation's id (`e-<uuid>`).
    pub fn invocation_id(&self) -> &str {
        &self.invocation.invocation_id
    }

    /// The agent this context runs.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// The root of the agent tree.
    pub fn root_agent(&self) -> &Arc<dyn Agent> {
        &self.invocation.root
    }

    /// The branch (`parent.child`) isolating this agent's history in a parallel run.
    pub fn branch(&self) -> Option<&str> {
        self.branch.as_deref()
    }

    /// The run's configuration.
    pub fn run_config(&self) -> &RunConfig {
        &self.invocation.run_config
    }

    /// The message that started the invocation.
    pub fn user_content(&self) -> Option<&Content> {
        self.invocation.user_content.as_ref()
    }

    /// The session as it stands (a copy).
    pub async fn session(&self) -> Session {
        self.invocation.session.lock().await.clone()
    }

    /// The session's state as it stands (a copy).
    pub async fn state(&self) -> Map<String, Value> {
        self.invocation.session.lock().await.state.clone()
    }

    /// Cancelled when the caller drops the run.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.invocation.cancel
    }

    /// Ends the invocation after the current step (ADK's `end_invocation`).
    pub fn end_invocation(&self) {
        self.invocation.ended.store(true, Ordering::SeqCst);
    }

    /// Whether the invocation was ended.
    pub fn is_ended(&self) -> bool {
        self.invocation.ended.load(Ordering::SeqCst)
    }

    /// The same invocation, run by `agent` below this context's agent.
    pub(crate) fn for_agent(&self, agent: Arc<dyn Agent>) -> InvocationContext {
        let node_path = if self.invocation.node_paths {
            let key = format!("{}/{}", self.node_path, agent.name());
            let mut runs = self.invocation.node_runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let run = runs.entry(key).and_modify(|n| *n += 1).or_insert(1);
            let node = format!("{}@{run}", agent.name());
            if self.node_path.is_empty() { node } else { format!("{}/{node}", self.node_path) }
        } else {
            String::new()
        };
        self.for_agent_at(agent, node_path)
    }

    /// The same invocation, run by `agent` at `node_path`.
    pub(crate) fn for_agent_at(&self, agent: Arc<dyn Agent>, node_path: String) -> InvocationContext {
        InvocationContext {
            invocation: self.invocation.clone(),
            agent,
            branch: self.branch.clone(),
            node_path,
            escalations: self.escalations.clone(),
            pause_flags: self.pause_flags.clone(),
        }
    }

    /// The same invocation on `branch`.
    pub fn with_branch(&self, branch: Option<String>) -> InvocationContext {
        InvocationContext { branch, ..self.clone() }
    }

    /// This context, with `flag` raised by any escalating event emitted under it: what a loop
    /// agent of your own runs its rounds with, to stop when a sub-agent escalates.
    pub fn with_escalation_flag(&self, flag: Arc<AtomicBool>) -> InvocationContext {
        let mut ctx = self.clone();
        ctx.escalations.push(flag);
        ctx
    }

    /// This context, with `flag` raised by any event emitted under it that pauses the invocation
    /// (a long-running call awaiting the client's answer): how a workflow agent of your own stops
    /// for its own sub-agents' pauses, not a sibling branch's.
    pub fn with_pause_flag(&self, flag: Arc<AtomicBool>) -> InvocationContext {
        let mut ctx = self.clone();
        ctx.pause_flags.push(flag);
        ctx
    }

    /// Whether an event suspended the invocation: a long-running call awaits the client's answer.
    pub fn is_paused(&self) -> bool {
        self.invocation.paused.load(Ordering::SeqCst)
    }

    /// Counts a model call; fails past [`RunConfig::max_llm_calls`] with ADK's message.
    pub fn count_llm_call(&self) -> Result<()> {
        let calls = self.invocation.llm_calls.fetch_add(1, Ordering::SeqCst) + 1;
        let max = self.invocation.run_config.max_llm_calls;
        if max > 0 && calls > max {
            return Err(Error::LlmCallsLimitExceeded(max));
        }
        Ok(())
    }

    /// An event by this context's agent, in this invocation and branch.
    pub fn new_event(&self) -> Event {
        let mut event = Event::from_response(self.invocation_id(), self.agent.name(), Default::default());
        event.branch = self.branch.clone();
        event.node_info = crate::event::NodeInfo::at(self.node_path.clone());
        event
    }

    /// Hands `event` to the runner and waits until it is stored (partial events are not): the
    /// event as stored comes back. Fails when the caller dropped the run.
    pub async fn emit(&self, event: Event) -> Result<Event> {
        if event.actions.escalate == Some(true) {
            for flag in &self.escalations {
                flag.store(true, Ordering::SeqCst);
            }
        }
        if pauses(&event) {
            self.invocation.paused.store(true, Ordering::SeqCst);
            for flag in &self.pause_flags {
                flag.store(true, Ordering::SeqCst);
            }
        }
        let (done, stored) = oneshot::channel();
        self.invocation.events.send((Box::new(event), Some(done))).await.map_err(|_| Error::Cancelled)?;
        stored.await.map_err(|_| Error::Cancelled)
    }

    /// Hands a streaming fragment to the runner, which yields it and stores nothing; no answer is
    /// awaited (the agent still waits while the runner holds an earlier one, so it stays in step with
    /// the caller).
    pub async fn emit_fragment(&self, fragment: Box<Event>) -> Result<()> {
        self.invocation.events.send((fragment, None)).await.map_err(|_| Error::Cancelled)
    }
}

fn no_artifact_service() -> Error {
    Error::InvalidRequest("Artifact service is not initialized.".into())
}

/// ADK's `should_pause_invocation`: the event calls a function whose answer the client gives.
pub(crate) fn pauses(event: &Event) -> bool {
    let Some(ids) = event.long_running_tool_ids.as_ref().filter(|ids| !ids.is_empty()) else { return false };
    event.function_calls().any(|call| call.id.as_ref().is_some_and(|id| ids.contains(id)))
}

/// What a callback sees (ADK's `CallbackContext`): the invocation, and state it can change. State
/// changes ride on the next event the agent writes. Clones share the changes.
#[derive(Clone, Debug)]
pub struct CallbackContext {
    ctx: InvocationContext,
    actions: Arc<StdMutex<EventActions>>,
}

impl CallbackContext {
    pub(crate) fn new(ctx: InvocationContext) -> Self {
        CallbackContext { ctx, actions: Arc::new(StdMutex::new(EventActions::default())) }
    }

    /// The invocation.
    pub fn invocation(&self) -> &InvocationContext {
        &self.ctx
    }

    /// The invocation's id.
    pub fn invocation_id(&self) -> &str {
        self.ctx.invocation_id()
    }

    /// The name of the agent running.
    pub fn agent_name(&self) -> &str {
        self.ctx.agent.name()
    }

    /// The message that started the invocation.
    pub fn user_content(&self) -> Option<&Content> {
        self.ctx.user_content()
    }

    fn actions(&self) -> std::sync::MutexGuard<'_, EventActions> {
        self.actions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The value of state `key`: this context's own change, else the session's.
    pub async fn get_state(&self, key: &str) -> Option<Value> {
        if let Some(value) = self.actions().state_delta.get(key) {
            return Some(value.clone());
        }
        self.ctx.invocation.session.lock().await.state.get(key).cloned()
    }

    /// The session's state with this context's changes applied.
    pub async fn state(&self) -> Map<String, Value> {
        let mut state = self.ctx.state().await;
        state.extend(self.actions().state_delta.clone());
        state
    }

    /// Sets state `key` (`app:`, `user:` and `temp:` keys are routed as ADK does).
    pub fn set_state(&self, key: impl Into<String>, value: Value) {
        self.actions().state_delta.insert(key.into(), value);
    }

    /// Saves `artifact` as the next version of `filename`, recorded in the event's
    /// `artifactDelta`; gives the version.
    pub async fn save_artifact(&self, filename: &str, artifact: crate::genai::Part) -> Result<i64> {
        let invocation = &self.ctx.invocation;
        let service = invocation.artifacts.as_ref().ok_or_else(no_artifact_service)?;
        let version = service
            .save_artifact(&invocation.app_name, &invocation.user_id, &invocation.session_id, filename, artifact)
            .await?;
        self.actions().artifact_delta.insert(filename.to_owned(), version);
        Ok(version)
    }

    /// The given version of artifact `filename`, or its latest.
    pub async fn load_artifact(&self, filename: &str, version: Option<i64>) -> Result<Option<crate::genai::Part>> {
        let invocation = &self.ctx.invocation;
        let service = invocation.artifacts.as_ref().ok_or_else(no_artifact_service)?;
        service
            .load_artifact(&invocation.app_name, &invocation.user_id, &invocation.session_id, filename, version)
            .await
    }

    /// Changes the actions of the event this context's changes ride on. The closure runs under
    /// the context's lock: it must not call back into this context.
    pub fn update_actions(&self, change: impl FnOnce(&mut EventActions)) {
        change(&mut self.actions());
    }

    /// The actions gathered so far, taken.
    pub(crate) fn take_actions(&self) -> EventActions {
        std::mem::take(&mut *self.actions())
    }
}

/// What a tool sees (ADK's `ToolContext`): a [`CallbackContext`] for one function call, which can
/// also request a confirmation, transfer, escalate and skip the summarizing model call.
#[derive(Clone, Debug)]
pub struct ToolContext {
    callback: CallbackContext,
    function_call_id: String,
    confirmation: Option<ToolConfirmation>,
}

impl std::ops::Deref for ToolContext {
    type Target = CallbackContext;
    fn deref(&self) -> &CallbackContext {
        &self.callback
    }
}

impl ToolContext {
    pub(crate) fn new(
        ctx: InvocationContext,
        function_call_id: String,
        confirmation: Option<ToolConfirmation>,
    ) -> Self {
        ToolContext { callback: CallbackContext::new(ctx), function_call_id, confirmation }
    }

    /// The id of the call being run.
    pub fn function_call_id(&self) -> &str {
        &self.function_call_id
    }

    /// The confirmation the user gave for this call, when the call was resumed after one.
    pub fn tool_confirmation(&self) -> Option<&ToolConfirmation> {
        self.confirmation.as_ref()
    }

    /// Asks the user to confirm this call (ADK's `request_confirmation`): the tool should return
    /// at once; the call runs again once the user answered.
    pub fn request_confirmation(&self, hint: Option<&str>, payload: Option<Value>) {
        let mut confirmation = ToolConfirmation::request(hint.unwrap_or_default());
        confirmation.payload = payload;
        let id = self.function_call_id.clone();
        self.update_actions(|a| {
            a.requested_tool_confirmations.insert(id, confirmation);
        });
    }

    /// Hands the conversation to agent `name` after this call.
    pub fn transfer_to_agent(&self, name: impl Into<String>) {
        let name = name.into();
        self.update_actions(|a| a.transfer_to_agent = Some(name));
    }

    /// Ends the enclosing loop (ADK's `escalate`).
    pub fn escalate(&self) {
        self.update_actions(|a| a.escalate = Some(true));
    }

    /// Shows this call's result to the user without another model call.
    pub fn skip_summarization(&self) {
        self.update_actions(|a| a.skip_summarization = Some(true));
    }
}
