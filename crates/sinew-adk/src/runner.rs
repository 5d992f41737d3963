//! The runner (ADK's `Runner`): runs an agent tree over a session service, one invocation per
//! message, and streams its events (the `runStream` of spec 002).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use std::task::Poll;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt as _, StreamExt as _};
use serde_json::{Map, Value};
use sinew_core::CancellationToken;
use tokio::sync::{Mutex, oneshot};

use crate::agent::{Agent, AgentNames, check_agent_tree, find_agent, find_parent};
use crate::artifact::ArtifactService;
use crate::compaction::{Compactor, EventsCompactionConfig};
use crate::context::{Emitted, Invocation, InvocationContext, RunConfig};
use crate::error::{Error, Result};
use crate::event::{Event, EventActions};
use crate::genai::Content;
use crate::genai::Part;
use crate::plugin::Plugin;
use crate::session::{APP_PREFIX, GetSessionConfig, InMemorySessionService, SessionService, TEMP_PREFIX, USER_PREFIX};
use crate::types::Session;

/// A new invocation id: `e-` and a uuid4, as ADK makes them.
pub fn new_invocation_id() -> String {
    format!("e-{}", crate::event::uuid4())
}

/// Runs `agent` for the sessions of app `app_name` in `session_service`.
///
/// ```
/// # use std::sync::Arc;
/// # use sinew_adk::{Content, InMemorySessionService, LlmAgent, Runner, RunConfig, SessionService};
/// # use sinew_adk::testing::ScriptedLlm;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use futures::StreamExt as _;
///
/// let model = Arc::new(ScriptedLlm::texts(["Hello!"]));
/// let agent = LlmAgent::builder("greeter").model(model).instruction("Greet the user.").build().unwrap();
/// let sessions = Arc::new(InMemorySessionService::new());
/// let runner = Runner::new("demo", Arc::new(agent), sessions.clone()).unwrap();
/// sessions.create_session("demo", "u1", Some("s1"), Default::default()).await.unwrap();
/// let events: Vec<_> = runner.run("u1", "s1", Some(Content::user_text("hi")), None, RunConfig::default()).collect().await;
/// let answer = events.last().unwrap().as_ref().unwrap();
/// assert_eq!(answer.content.as_ref().unwrap().text(), "Hello!");
/// # });
/// ```
#[derive(Clone)]
pub struct Runner {
    app_name: String,
    agent: Arc<dyn Agent>,
    sessions: Arc<dyn SessionService>,
    plugins: Vec<Arc<dyn Plugin>>,
    artifacts: Option<Arc<dyn ArtifactService>>,
    auto_create_session: bool,
    compaction: Option<Arc<Compactor>>,
    resumable: bool,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("app_name", &self.app_name)
            .field("agent", &self.agent.name())
            .field("plugins", &self.plugins.iter().map(|p| p.name().to_owned()).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Runner {
    /// A runner of `agent`, whose tree must follow ADK's naming rule (see
    /// [`Runner::with_agent_names`]).
    pub fn new(app_name: impl Into<String>, agent: Arc<dyn Agent>, sessions: Arc<dyn SessionService>) -> Result<Self> {
        Runner::with_agent_names(app_name, agent, sessions, AgentNames::Identifiers)
    }

    /// A runner whose agents' names follow `rule` (hyphenated names are opt-in, spec 002 §6.3).
    pub fn with_agent_names(
        app_name: impl Into<String>,
        agent: Arc<dyn Agent>,
        sessions: Arc<dyn SessionService>,
        rule: AgentNames,
    ) -> Result<Self> {
        check_agent_tree(agent.as_ref(), rule)?;
        Ok(Runner {
            app_name: app_name.into(),
            agent,
            sessions,
            plugins: Vec::new(),
            artifacts: None,
            auto_create_session: false,
            compaction: None,
            resumable: false,
        })
    }

    /// Adds a plugin; plugins run in the order they were added.
    #[must_use]
    pub fn with_plugin(mut self, plugin: Arc<dyn Plugin>) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Keeps the agents' artifacts in `artifacts`.
    #[must_use]
    pub fn with_artifact_service(mut self, artifacts: Arc<dyn ArtifactService>) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    /// Summarizes older events as `config` says (ADK's `events_compaction_config`); without a
    /// summarizer of its own, the root agent's model summarizes, so the root must then be an
    /// [`LlmAgent`](crate::LlmAgent) with a model.
    pub fn with_events_compaction(mut self, config: &EventsCompactionConfig) -> Result<Self> {
        self.compaction = Some(Arc::new(config.resolve(&self.agent)?));
        Ok(self)
    }

    /// Makes the runner resumable (ADK's `ResumabilityConfig(is_resumable=True)`): agents write
    /// checkpoints into the session, and a message answering a paused invocation's long-running
    /// call resumes the workflow where it paused.
    #[must_use]
    pub fn resumable(mut self) -> Self {
        self.resumable = true;
        self
    }

    /// Creates a missing session instead of failing (ADK's `auto_create_session`).
    #[must_use]
    pub fn auto_create_session(mut self) -> Self {
        self.auto_create_session = true;
        self
    }

    /// Closes the runner (ADK's `Runner.close`): every plugin's `close` runs, in order.
    pub async fn close(&self) {
        for plugin in &self.plugins {
            plugin.close().await;
        }
    }

    /// The app's name.
    pub fn app_name(&self) -> &str {
        &self.app_name
    }

    /// The root agent.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// The session service.
    pub fn sessions(&self) -> &Arc<dyn SessionService> {
        &self.sessions
    }

    /// The session, or a new one with `state` (adk-js's `getOrCreateSession`).
    pub async fn get_or_create_session(
        &self,
        user_id: &str,
        session_id: &str,
        state: Map<String, Value>,
    ) -> Result<Session> {
        self.sessions.get_or_create_session(&self.app_name, user_id, session_id, state).await
    }

    /// Runs one invocation: `new_message` (with `state_delta`) is stored as the user's event, the
    /// agent that should answer runs, and every event comes out as it happens — partial fragments
    /// too, which are never stored. A message answering the function calls of a suspended
    /// invocation (a confirmation, a long-running call, a paused tool call) resumes that
    /// invocation under its id. An error is the last item. Dropping the stream cancels the run
    /// between two events; what was stored stays a valid session.
    pub fn run(
        &self,
        user_id: &str,
        session_id: &str,
        new_message: Option<Content>,
        state_delta: Option<Map<String, Value>>,
        run_config: RunConfig,
    ) -> BoxStream<'static, Result<Event>> {
        let runner = self.clone();
        let (user_id, session_id) = (user_id.to_owned(), session_id.to_owned());
        let start = async move { runner.start(&user_id, &session_id, new_message, state_delta, run_config).await };
        RunStream::Starting(start.boxed()).boxed()
    }

    /// Runs `new_message` on a fresh session of its own, forgotten afterwards: a clean slate,
    /// nothing read from or left in the runner's sessions (spec 002 §3.4, `runStateless`).
    pub fn run_stateless(
        &self,
        user_id: &str,
        new_message: Content,
        run_config: RunConfig,
    ) -> BoxStream<'static, Result<Event>> {
        // Nothing is summarized: the session is forgotten with the run.
        let ephemeral = Runner { sessions: Arc::new(InMemorySessionService::new()), compaction: None, ..self.clone() }
            .auto_create_session();
        ephemeral.run(user_id, &crate::event::uuid4(), Some(new_message), None, run_config)
    }

    /// Rewinds the session to before invocation `rewind_before_invocation_id` (ADK's
    /// `rewind_async`): a user event records the rewind, with the state delta and the artifact
    /// versions that restore what stood before; the model no longer sees the rewound turns.
    pub async fn rewind(&self, user_id: &str, session_id: &str, rewind_before_invocation_id: &str) -> Result<()> {
        let mut session = self
            .sessions
            .get_session(&self.app_name, user_id, session_id, GetSessionConfig::default())
            .await?
            .ok_or_else(|| Error::SessionNotFound(session_id.to_owned()))?;
        let Some(index) = session.events.iter().position(|e| e.invocation_id == rewind_before_invocation_id) else {
            return Err(Error::InvalidRequest(format!("Invocation ID not found: {rewind_before_invocation_id}")));
        };
        let scoped = |k: &str| [APP_PREFIX, USER_PREFIX, TEMP_PREFIX].iter().any(|p| k.starts_with(p));
        let mut before: Map<String, Value> = Map::new();
        for event in &session.events[..index] {
            for (key, value) in event.actions.state_delta.iter().filter(|(k, _)| !scoped(k)) {
                if value.is_null() {
                    before.remove(key);
                } else {
                    before.insert(key.clone(), value.clone());
                }
            }
        }
        let mut delta = Map::new();
        for (key, value) in &before {
            if session.state.get(key) != Some(value) {
                delta.insert(key.clone(), value.clone());
            }
        }
        for key in session.state.keys().filter(|k| !scoped(k) && !before.contains_key(*k)) {
            delta.insert(key.clone(), Value::Null);
        }
        let mut artifacts = std::collections::BTreeMap::new();
        if let Some(service) = &self.artifacts {
            let versions_at = |events: &[Event]| {
                let mut versions = std::collections::BTreeMap::new();
                for event in events {
                    versions.extend(event.actions.artifact_delta.clone());
                }
                versions
            };
            let then = versions_at(&session.events[..index]);
            for (file, now) in versions_at(&session.events) {
                let was = then.get(&file).copied();
                if file.starts_with("user:") || was == Some(now) {
                    continue;
                }
                let restored = match was {
                    Some(version) => {
                        service.load_artifact(&self.app_name, user_id, session_id, &file, Some(version)).await?
                    }
                    None => None,
                };
                // A file that did not exist then is replaced by an empty one, as ADK's tombstone.
                let restored = restored.unwrap_or_else(|| Part::inline_data("application/octet-stream", Vec::new()));
                let version = service.save_artifact(&self.app_name, user_id, session_id, &file, restored).await?;
                artifacts.insert(file, version);
            }
        }
        let mut event = Event::from_response(new_invocation_id(), "user", crate::event::LlmResponse::default());
        event.actions.rewind_before_invocation_id = Some(rewind_before_invocation_id.to_owned());
        event.actions.state_delta = delta;
        event.actions.artifact_delta = artifacts;
        self.sessions.append_event(&mut session, event).await?;
        Ok(())
    }

    async fn start(
        self,
        user_id: &str,
        session_id: &str,
        new_message: Option<Content>,
        state_delta: Option<Map<String, Value>>,
        run_config: RunConfig,
    ) -> Result<Running> {
        let session =
            match self.sessions.get_session(&self.app_name, user_id, session_id, GetSessionConfig::default()).await? {
                Some(session) => session,
                None if self.auto_create_session => {
                    self.sessions.create_session(&self.app_name, user_id, Some(session_id), Map::new()).await?
                }
                None => return Err(Error::SessionNotFound(session_id.to_owned())),
            };
        let Some(message) = new_message else {
            return Err(Error::InvalidRequest(format!(
                "Running an agent requires a new_message. Session: {session_id}, User: {user_id}"
            )));
        };
        if message.parts().is_empty() {
            return Err(Error::InvalidRequest("No parts in the new_message.".into()));
        }
        if message.function_calls().next().is_some() {
            return Err(Error::InvalidRequest("User message cannot contain function calls.".into()));
        }
        let resumed = resumed_invocation(&session, &message);
        // ADK reads checkpoints back under a workflow root only: under an LLM root the runner goes
        // to the paused agent directly.
        let checkpoints = match &resumed {
            Some(invocation) if self.resumable && self.agent.as_llm_agent().is_none() => {
                crate::resume::Checkpoints::read(&session.events, invocation)
            }
            _ => crate::resume::Checkpoints::default(),
        };
        let invocation_id = resumed.clone().unwrap_or_else(new_invocation_id);
        let (events, inbox) = crate::handoff::handoff::<Emitted>();
        let invocation = Arc::new(Invocation {
            invocation_id,
            session: Mutex::new(session),
            service: self.sessions.clone(),
            artifacts: self.artifacts.clone(),
            app_name: self.app_name.clone(),
            user_id: user_id.to_owned(),
            session_id: session_id.to_owned(),
            run_config,
            plugins: self.plugins.clone(),
            root: self.agent.clone(),
            user_content: Some(message.clone()),
            llm_calls: AtomicUsize::new(0),
            ended: AtomicBool::new(false),
            paused: AtomicBool::new(false),
            node_paths: self.agent.as_llm_agent().is_some(),
            node_runs: std::sync::Mutex::new(Default::default()),
            set_model_response_agents: std::sync::Mutex::new(Default::default()),
            cancel: CancellationToken::new(),
            events,
            compaction: self.compaction.clone(),
            resumable: self.resumable,
            resumed: resumed.is_some(),
            checkpoints: std::sync::Mutex::new(checkpoints),
        });
        let root_ctx = InvocationContext {
            invocation: invocation.clone(),
            agent: self.agent.clone(),
            branch: None,
            node_path: String::new(),
            escalations: Vec::new(),
            pause_flags: Vec::new(),
        };
        let driver = drive(self, root_ctx.clone(), message, state_delta).boxed();
        let cancel = invocation.cancel.clone().drop_guard();
        Ok(Running {
            driver: Some(driver),
            ended: None,
            storing: None,
            passed: None,
            inbox,
            ctx: root_ctx,
            _cancel: cancel,
        })
    }
}

/// The invocation whose function calls `message` answers, when it answers some.
fn resumed_invocation(session: &Session, message: &Content) -> Option<String> {
    let mut ids: std::collections::HashSet<&str> =
        message.function_responses().filter_map(|r| r.id.as_deref()).collect();
    if ids.is_empty() {
        return None;
    }
    let mut invocation = None;
    for event in crate::history::apply_rewinds(&session.events).into_iter().rev() {
        for call in event.function_calls() {
            if call.id.as_deref().is_some_and(|id| ids.remove(id)) {
                invocation = Some(event.invocation_id.to_string());
            }
        }
        if ids.is_empty() {
            break;
        }
    }
    if ids.is_empty() { invocation } else { None }
}

/// The whole invocation, in the order ADK runs it.
async fn drive(
    runner: Runner,
    ctx: InvocationContext,
    message: Content,
    state_delta: Option<Map<String, Value>>,
) -> Result<()> {
    let result = drive_inner(&runner, &ctx, message, state_delta).await;
    if let Err(error) = &result {
        for plugin in &runner.plugins {
            plugin.on_run_error(&ctx, error).await;
        }
    }
    result
}

async fn drive_inner(
    runner: &Runner,
    ctx: &InvocationContext,
    mut message: Content,
    state_delta: Option<Map<String, Value>>,
) -> Result<()> {
    for plugin in &runner.plugins {
        if let Some(replaced) = plugin.on_user_message(ctx, &message).await {
            message = replaced;
            break;
        }
    }
    let mut user_event = Event::user(ctx.invocation_id(), message);
    if let Some(delta) = state_delta {
        user_event.actions = EventActions { state_delta: delta, ..EventActions::default() };
    }
    stamp_metadata(&mut user_event, ctx.run_config());
    {
        let mut session = ctx.invocation.session.lock().await;
        stamp_branch(&mut user_event, &session.events);
        runner.sessions.append_event(&mut session, user_event).await?;
    }

    let session = ctx.session().await;
    // A resumable invocation whose root left a checkpoint resumes from the root, which leads
    // down to where it paused; otherwise the agent that should answer runs.
    let resumes_root = ctx.checkpoints_know(runner.agent.name());
    let agent = if resumes_root { runner.agent.clone() } else { agent_to_run(&runner.agent, &session) };
    if ctx.is_resumable() && ctx.is_end_of_agent(agent.name()) {
        // That agent had finished: the answer is stored, and nothing runs again (ADK).
        return Ok(());
    }
    for plugin in &runner.plugins {
        if let Some(content) = plugin.before_run(ctx).await {
            // ADK writes the early answer as the model's.
            let event = Event::from_response(ctx.invocation_id(), "model", crate::event::LlmResponse::new(content));
            ctx.emit(event).await?;
            return compact(runner, ctx).await;
        }
    }
    // An agent picked below the root runs at its place in the tree (`root@1/sub_a@1`).
    let mut ancestors = Vec::new();
    let mut name = agent.name().to_owned();
    while let Some(parent) = find_parent(&runner.agent, &name) {
        name = parent.name().to_owned();
        ancestors.push(name.clone());
    }
    let mut start = ctx.clone();
    if !Arc::ptr_eq(&agent, &runner.agent) {
        // An agent picked below the root goes on on the branch it last ran on (ADK's
        // `restore_branch_from_history`).
        start.branch = branch_from_history(&session, agent.name(), ctx.invocation.resumed.then(|| ctx.invocation_id()));
    }
    if start.invocation.node_paths {
        // The ancestors count as run once, so a transfer back up runs them a second time.
        let mut runs = start.invocation.node_runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut path = String::new();
        for ancestor in ancestors.iter().rev() {
            runs.insert(format!("{path}/{ancestor}"), 1);
            path = if path.is_empty() { format!("{ancestor}@1") } else { format!("{path}/{ancestor}@1") };
        }
        drop(runs);
        start.node_path = path;
    }
    start.run(&agent).await?;
    for plugin in &runner.plugins {
        plugin.after_run(ctx).await;
    }
    compact(runner, ctx).await
}

/// The compaction pass after an invocation (the token threshold also runs before each model call).
async fn compact(runner: &Runner, ctx: &InvocationContext) -> Result<()> {
    match &runner.compaction {
        Some(compaction) => compaction.after_invocation(ctx).await,
        None => Ok(()),
    }
}

/// Which agent answers the next message (ADK's `find_agent_to_run`): the agent whose calls the
/// message answers; else, walking back, the target of a transfer, the root, or the agent that
/// answered last when it may hand the conversation on; else the root.
pub fn agent_to_run(root: &Arc<dyn Agent>, session: &Session) -> Arc<dyn Agent> {
    let events: Vec<&Event> = crate::history::apply_rewinds(&session.events);
    if let Some(last) = events.last().filter(|e| e.author == "user") {
        let answered: Vec<&str> = last.function_responses().filter_map(|r| r.id.as_deref()).collect();
        if !answered.is_empty() {
            let caller = events
                .iter()
                .rev()
                .skip(1)
                .find(|e| e.function_calls().any(|c| c.id.as_deref().is_some_and(|id| answered.contains(&id))));
            if let Some(agent) = caller.and_then(|e| find_agent(root, &e.author)) {
                return agent;
            }
        }
    }
    let replies = events.iter().rev().filter(|e| {
        e.author != "user"
            && e.actions.agent_state.is_none()
            && e.actions.end_of_agent.is_none()
            && !(e.error_code.is_some() && e.content.as_ref().is_none_or(|c| c.parts().is_empty()))
    });
    for event in replies {
        if let Some(target) = event.actions.transfer_to_agent.as_deref().and_then(|t| find_agent(root, t))
            && transferable(root, &target)
        {
            return target;
        }
        if event.author == root.name() {
            return root.clone();
        }
        if let Some(agent) = find_agent(root, &event.author)
            && transferable(root, &agent)
        {
            return agent;
        }
    }
    root.clone()
}

/// Whether `agent` may keep the conversation: it and every agent above it are LLM agents that may
/// hand the conversation back to their parent.
fn transferable(root: &Arc<dyn Agent>, agent: &Arc<dyn Agent>) -> bool {
    let mut current = agent.clone();
    loop {
        let Some(llm) = current.as_llm_agent() else { return false };
        let Some(parent) = find_parent(root, current.name()) else { return true };
        if llm.disallow_transfer_to_parent() {
            return false;
        }
        current = parent;
    }
}

/// A run as the caller sees it: starting (reading the session, storing the message), then
/// running. Hand-written rather than combinators: it is polled once per streamed token.
enum RunStream {
    Starting(BoxFuture<'static, Result<Running>>),
    Running(Box<Running>),
    Done,
}

impl futures::Stream for RunStream {
    type Item = Result<Event>;

    fn poll_next(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<Option<Result<Event>>> {
        loop {
            match &mut *self {
                RunStream::Starting(start) => match start.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(running)) => *self = RunStream::Running(Box::new(running)),
                    Poll::Ready(Err(error)) => {
                        *self = RunStream::Done;
                        return Poll::Ready(Some(Err(error)));
                    }
                },
                RunStream::Running(running) => {
                    let next = running.poll_event(cx);
                    if let Poll::Ready(None) = next {
                        *self = RunStream::Done;
                    }
                    return next;
                }
                RunStream::Done => return Poll::Ready(None),
            }
        }
    }
}

/// What a stored event owes: its result, and the agent waiting for it.
type Storing = BoxFuture<'static, (Result<Event>, Option<oneshot::Sender<Event>>)>;

struct Running {
    driver: Option<BoxFuture<'static, Result<()>>>,
    /// The agents' result, once they are done.
    ended: Option<Result<()>>,
    /// An event being stored.
    storing: Option<Storing>,
    /// A fragment to yield as it is.
    passed: Option<Box<Event>>,
    inbox: crate::handoff::Receiver<Emitted>,
    /// The invocation, as the plugins see it.
    ctx: InvocationContext,
    /// Cancels the invocation (its model calls and tools) when the caller drops the stream.
    _cancel: tokio_util::sync::DropGuard,
}

impl Running {
    /// The next event: what the agents emit, stored (unless partial) and handed back to them; the
    /// agents' error at the end.
    fn poll_event(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Option<Result<Event>>> {
        loop {
            if let Some(storing) = &mut self.storing {
                let (result, waiting) = std::task::ready!(storing.as_mut().poll(cx));
                self.storing = None;
                match (&result, waiting) {
                    // The emitter may have been cancelled meanwhile; the event is stored either way.
                    (Ok(event), Some(waiting)) => drop(waiting.send(event.clone())),
                    // A session that cannot be written ends the run: its error is the last item,
                    // and the agents, which would only see the run cancelled, are dropped.
                    (Err(_), _) => {
                        self.driver = None;
                        self.ended = Some(Ok(()));
                    }
                    (Ok(_), None) => {}
                }
                return Poll::Ready(Some(result));
            }
            let emitted = match self.inbox.poll_recv(cx) {
                Poll::Ready(Some(emitted)) => emitted,
                Poll::Ready(None) => {
                    // Unreachable while `self.ctx` holds a sender; end rather than spin if it were.
                    self.driver = None;
                    self.ended.get_or_insert(Ok(()));
                    return Poll::Ready(self.ended.take().and_then(Result::err).map(Err));
                }
                Poll::Pending => {
                    let Some(driver) = self.driver.as_mut() else {
                        // The agents are done. `poll_recv` may say Pending only because the
                        // task's budget ran out: what they handed over last is taken regardless.
                        match self.inbox.try_recv() {
                            Some(emitted) => {
                                self.handle(emitted);
                                match self.take_passed() {
                                    Some(event) => return Poll::Ready(Some(Ok(event))),
                                    None => continue,
                                }
                            }
                            None => return Poll::Ready(self.ended.take().and_then(Result::err).map(Err)),
                        }
                    };
                    if let Poll::Ready(result) = driver.as_mut().poll(cx) {
                        self.driver = None;
                        self.ended = Some(result);
                        continue;
                    }
                    // The agents may have handed an event over before waiting: take it now
                    // rather than after a wake-up.
                    match self.inbox.poll_recv(cx) {
                        Poll::Ready(Some(emitted)) => emitted,
                        Poll::Ready(None) => {
                            self.driver = None;
                            self.ended.get_or_insert(Ok(()));
                            continue;
                        }
                        Poll::Pending => return Poll::Pending,
                    }
                }
            };
            self.handle(emitted);
            if let Some(event) = self.take_passed() {
                return Poll::Ready(Some(Ok(event)));
            }
        }
    }

    /// Takes an event from the agents: a fragment that needs no storing and no plugin goes
    /// straight out; any other is stored first.
    fn handle(&mut self, (event, waiting): Emitted) {
        if waiting.is_none() && event.is_partial() && self.ctx.invocation.plugins.is_empty() {
            let mut event = event;
            stamp_metadata(&mut event, self.ctx.run_config());
            self.passed = Some(event);
            return;
        }
        let ctx = self.ctx.clone();
        self.storing = Some(Box::pin(async move { (store(&ctx, event).await.map(|e| *e), waiting) }));
    }

    fn take_passed(&mut self) -> Option<Event> {
        // Unboxed once, on the way out.
        self.passed.take().map(|event| *event)
    }
}

/// The branch of the latest event `agent` wrote (in `invocation` when given), rewound ones aside.
fn branch_from_history(session: &Session, agent: &str, invocation: Option<&str>) -> Option<String> {
    crate::history::apply_rewinds(&session.events)
        .into_iter()
        .rev()
        .filter(|e| invocation.is_none_or(|id| e.invocation_id == id))
        .find(|e| e.author == agent)
        .and_then(|e| e.branch.clone())
}

/// Puts a message answering a call on the branch of the call, in the same invocation (ADK's
/// `_stamp_event_branch_context`): the agent on that branch then sees its answer.
fn stamp_branch(message: &mut Event, events: &[Event]) {
    let Some(id) = message.function_responses().next().and_then(|r| r.id.as_deref()).filter(|id| !id.is_empty()) else {
        return;
    };
    let call = events
        .iter()
        .rev()
        .filter(|e| e.invocation_id == message.invocation_id)
        .find(|e| e.function_calls().any(|c| c.id.as_deref() == Some(id)));
    if let Some(call) = call {
        message.branch = call.branch.clone();
        if message.isolation_scope.is_none() {
            message.isolation_scope = call.isolation_scope.clone();
        }
    }
}

/// Merges the run's custom metadata into the event's (keys ADK keeps internal left out).
fn stamp_metadata(event: &mut Event, config: &RunConfig) {
    let Some(metadata) = &config.custom_metadata else { return };
    let own = event.custom_metadata.get_or_insert_with(Map::new);
    for (key, value) in metadata.iter().filter(|(k, _)| !k.starts_with("__adk_internal_")) {
        own.insert(key.clone(), value.clone());
    }
}

/// Runs the plugins' `on_event` (the first answer replaces the event), and stores the event
/// unless it is partial.
async fn store(ctx: &InvocationContext, mut event: Box<Event>) -> Result<Box<Event>> {
    for plugin in &ctx.invocation.plugins {
        if let Some(replaced) = plugin.on_event(ctx, &event).await {
            *event = replaced;
            break;
        }
    }
    stamp_metadata(&mut event, ctx.run_config());
    if event.is_partial() {
        return Ok(event);
    }
    let invocation = &ctx.invocation;
    let mut session = invocation.session.lock().await;
    invocation.service.append_event(&mut session, *event).await.map(Box::new)
}
