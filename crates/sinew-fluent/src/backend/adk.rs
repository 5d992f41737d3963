//! The ADK backend: the IR compiled to sinew-adk agents under an [`App`], run by sinew-adk's
//! [`Runner`]. ADK's own agent classes become sinew-adk's (`LlmAgent`, `SequentialAgent`,
//! `ParallelAgent`, `LoopAgent`); sinew-fluent's nodes become small agents of their own.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Map, Value};
use sinew_adk::callbacks::{
    AfterAgentCallback, AfterModelCallback, AfterToolCallback, BeforeAgentCallback, BeforeModelCallback,
    BeforeToolCallback, OnModelErrorCallback, OnToolErrorCallback,
};
use sinew_adk::{
    App, ArtifactService, CallbackContext, Content, InMemorySessionService, IncludeContents, Llm, LlmAgent, LlmRequest,
    LlmResponse, LoopAgent, ParallelAgent, Plugin, RunConfig, Runner, SequentialAgent, SessionService, Tool,
    ToolContext,
};

use sinew_adk::ToolError;

use super::{AgentEvent, Backend, Execute, ExecutionConfig, RunOptions};
use crate::config;
use crate::error::{Error, Result};
use crate::ir::{AgentNode, Node, Semantics};
use crate::middleware::{Middleware, MiddlewarePlugin};
use crate::nodes::is_session_scoped;
use crate::resources::{ResourcePlugin, ResourceStore, Resources};

/// Finds the model a name stands for.
type ModelResolver = Arc<dyn Fn(&str) -> Option<Arc<dyn Llm>> + Send + Sync>;

/// What names in the IR and in YAML stand for: models, tools, schemas.
#[derive(Clone, Default)]
pub struct Registry {
    models: Option<ModelResolver>,
    tools: HashMap<String, Arc<dyn Tool>>,
    schemas: HashMap<String, Value>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut tools: Vec<&String> = self.tools.keys().collect();
        tools.sort();
        let mut schemas: Vec<&String> = self.schemas.keys().collect();
        schemas.sort();
        f.debug_struct("Registry")
            .field("models", &self.models.is_some())
            .field("tools", &tools)
            .field("schemas", &schemas)
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Models by name: `resolve` gives the model a name stands for, `None` when it knows none.
    #[must_use]
    pub fn models(mut self, resolve: impl Fn(&str) -> Option<Arc<dyn Llm>> + Send + Sync + 'static) -> Self {
        self.models = Some(Arc::new(resolve));
        self
    }

    /// Makes `tool` known by its name.
    #[must_use]
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.insert(tool.name().to_owned(), tool);
        self
    }

    /// Makes the JSON schema `schema` known as `name` (an `output_schema` or `input_schema`
    /// code reference of YAML).
    #[must_use]
    pub fn schema(mut self, name: impl Into<String>, schema: Value) -> Self {
        self.schemas.insert(name.into(), schema);
        self
    }

    fn model(&self, name: &str) -> Result<Arc<dyn Llm>> {
        let resolver = self.models.as_ref().ok_or_else(|| {
            Error::Compile(format!(
                "model `{name}` is named, not given: give the backend a registry that resolves model names"
            ))
        })?;
        resolver(name).ok_or_else(|| Error::Compile(format!("no model is known as `{name}`")))
    }

    fn named_tool(&self, name: &str) -> Result<Arc<dyn Tool>> {
        self.tools.get(name).cloned().ok_or_else(|| {
            let mut known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            known.sort_unstable();
            Error::Compile(format!("no tool is known as `{name}` (known: {})", known.join(", ")))
        })
    }
}

/// A compiled pipeline: ADK's app, and how it runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AdkApp {
    /// The app.
    pub app: App,
    /// How it runs.
    pub config: ExecutionConfig,
}

/// The fixed answers of the mock backend, by agent name.
pub(super) type MockAnswers = Arc<HashMap<String, Value>>;

/// Compiles the IR to sinew-adk and runs it over a session service (in memory by default).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use std::sync::Arc;
/// use sinew_adk::testing::ScriptedLlm;
/// use sinew_fluent::{AdkBackend, Agent, Backend as _, Execute as _, ExecutionConfig, RunOptions, final_text};
///
/// let model = Arc::new(ScriptedLlm::texts(["Hello!"]));
/// let node = Agent::new("greeter", model).instruct("Greet the user.").build().unwrap();
/// let backend = AdkBackend::new();
/// let app = backend.compile(&node, &ExecutionConfig::default()).unwrap();
/// let events = backend.run(&app, "hi", RunOptions::default()).await.unwrap();
/// assert_eq!(final_text(&events), "Hello!");
/// # });
/// ```
#[derive(Clone)]
pub struct AdkBackend {
    sessions: Arc<dyn SessionService>,
    artifacts: Option<Arc<dyn ArtifactService>>,
    registry: Registry,
    plugins: Vec<Arc<dyn Plugin>>,
    middleware: Vec<Arc<dyn Middleware>>,
    resources: Resources,
    pub(super) mock: Option<MockAnswers>,
}

impl std::fmt::Debug for AdkBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdkBackend")
            .field("registry", &self.registry)
            .field("plugins", &self.plugins.iter().map(|p| p.name().to_owned()).collect::<Vec<_>>())
            .field("middleware", &self.middleware.iter().map(|m| m.name().to_owned()).collect::<Vec<_>>())
            .field("resources", &self.resources)
            .field("mock", &self.mock.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for AdkBackend {
    fn default() -> Self {
        AdkBackend::new()
    }
}

impl AdkBackend {
    /// A backend keeping sessions in memory, with an empty registry.
    pub fn new() -> Self {
        AdkBackend {
            sessions: Arc::new(InMemorySessionService::new()),
            artifacts: None,
            registry: Registry::new(),
            plugins: Vec::new(),
            middleware: Vec::new(),
            resources: Resources::new(),
            mock: None,
        }
    }

    /// Keeps sessions in `sessions` (SQLite, PostgreSQL ...).
    #[must_use]
    pub fn with_sessions(mut self, sessions: Arc<dyn SessionService>) -> Self {
        self.sessions = sessions;
        self
    }

    /// Keeps artifacts in `artifacts`.
    #[must_use]
    pub fn with_artifacts(mut self, artifacts: Arc<dyn ArtifactService>) -> Self {
        self.artifacts = Some(artifacts);
        self
    }

    /// Resolves model, tool and schema names with `registry`.
    #[must_use]
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// Adds middleware to every app it compiles: the stack runs in the order it was added, as one
    /// plugin before every other plugin and before the agents' own callbacks.
    #[must_use]
    pub fn with_middleware(mut self, middleware: Arc<dyn Middleware>) -> Self {
        self.middleware.push(middleware);
        self
    }

    /// Provides `resources` to the resource tools of every app it compiles (each compiled app has
    /// its own instances).
    #[must_use]
    pub fn with_resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    /// Adds a plugin to every app it compiles (after the middleware's).
    #[must_use]
    pub fn with_plugin(mut self, plugin: Arc<dyn Plugin>) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// The session service.
    pub fn sessions(&self) -> &Arc<dyn SessionService> {
        &self.sessions
    }

    /// A runner of `compiled` over this backend's services.
    pub fn runner(&self, compiled: &AdkApp) -> Result<Runner> {
        let runner = Runner::from_app(&compiled.app, self.sessions.clone())?.auto_create_session();
        Ok(match &self.artifacts {
            Some(artifacts) => runner.with_artifact_service(artifacts.clone()),
            None => runner,
        })
    }

    fn agent(&self, node: &Node, store: &Arc<ResourceStore>) -> Result<Arc<dyn sinew_adk::Agent>> {
        Ok(match node {
            Node::Agent(agent) => match &self.mock {
                Some(answers) => self.mock_agent(agent, answers, store)?,
                None => Arc::new(self.llm_agent(agent, store)?),
            },
            Node::Sequence(n) => {
                refuse_unhandled(&n.config.name, n.config.set_fields(), &["agent_class", "name", "description"])?;
                let children = self.agents(&n.children, store)?;
                let gates: Vec<Vec<String>> = n.children.iter().map(gates_in).collect();
                if gates.iter().all(Vec::is_empty) {
                    Arc::new(SequentialAgent::new(&n.config.name, children).with_description(&n.config.description))
                } else {
                    // A sequence holding a gate resumes at it once the gate's question is answered.
                    Arc::new(nodes::GatedSequence {
                        name: n.config.name.clone(),
                        description: n.config.description.clone(),
                        children,
                        gates,
                    })
                }
            }
            Node::Parallel(n) => {
                refuse_unhandled(&n.config.name, n.config.set_fields(), &["agent_class", "name", "description"])?;
                Arc::new(
                    ParallelAgent::new(&n.config.name, self.agents(&n.children, store)?)
                        .with_description(&n.config.description),
                )
            }
            Node::Loop(n) => {
                refuse_unhandled(
                    &n.config.name,
                    n.config.set_fields(),
                    &["agent_class", "name", "description", "max_iterations"],
                )?;
                let max_iterations = n
                    .config
                    .max_iterations
                    .map(|max| {
                        usize::try_from(max).map_err(|_| {
                            Error::Compile(format!("`{}`: max_iterations must not be negative", n.config.name))
                        })
                    })
                    .transpose()?;
                let children = self.agents(&n.children, store)?;
                let gates: Vec<Vec<String>> = n.children.iter().map(gates_in).collect();
                if gates.iter().any(|g| !g.is_empty()) {
                    return Ok(Arc::new(nodes::GatedLoop {
                        sequence: nodes::GatedSequence {
                            name: n.config.name.clone(),
                            description: n.config.description.clone(),
                            children,
                            gates,
                        },
                        max_iterations,
                    }));
                }
                let mut agent = LoopAgent::new(&n.config.name, children).with_description(&n.config.description);
                if let Some(max) = max_iterations {
                    agent = agent.with_max_iterations(max);
                }
                Arc::new(agent)
            }
            Node::Transform(n) => Arc::new(nodes::Transform(n.clone())),
            Node::Tap(n) => Arc::new(nodes::Tap(n.clone())),
            Node::Route(n) => {
                let rules = n
                    .rules
                    .iter()
                    .map(|r| Ok((r.test.clone(), self.agent(&r.node, store)?)))
                    .collect::<Result<Vec<_>>>()?;
                let default = n.default.as_deref().map(|d| self.agent(d, store)).transpose()?;
                Arc::new(nodes::Route::new(n.name.clone(), n.key.clone(), rules, default))
            }
            Node::Fallback(n) => {
                Arc::new(nodes::Fallback { name: n.name.clone(), children: self.agents(&n.children, store)? })
            }
            Node::Race(n) => Arc::new(nodes::Race { name: n.name.clone(), children: self.agents(&n.children, store)? }),
            Node::Gate(n) => Arc::new(nodes::Gate(n.clone())),
            Node::MapOver(n) => Arc::new(nodes::MapOver { node: n.clone(), body: [self.agent(&n.body, store)?] }),
            Node::Timeout(n) => Arc::new(nodes::Timeout {
                name: n.name.clone(),
                duration: n.duration,
                body: [self.agent(&n.body, store)?],
            }),
            Node::Transfer(n) => Arc::new(nodes::Transfer(n.clone())),
            Node::Custom(agent) => agent.0.clone(),
        })
    }

    fn agents(&self, nodes: &[Node], store: &Arc<ResourceStore>) -> Result<Vec<Arc<dyn sinew_adk::Agent>>> {
        nodes.iter().map(|n| self.agent(n, store)).collect()
    }

    fn llm_agent(&self, node: &AgentNode, store: &Arc<ResourceStore>) -> Result<LlmAgent> {
        let c = &node.config;
        refuse_unhandled(&c.name, c.set_fields(), HANDLED_LLM_FIELDS)?;
        let mut builder = LlmAgent::builder(&c.name).description(&c.description);
        let model = match (&node.model, &c.model) {
            (Some(model), _) => Some(model.clone()),
            (None, Some(name)) => Some(self.registry.model(name)?),
            (None, None) => None,
        };
        if let Some(model) = model {
            builder = builder.model(model);
        }
        if !c.instruction.is_empty() {
            builder = builder.instruction(c.instruction.as_str());
        }
        match &c.static_instruction {
            None => {}
            Some(Value::String(text)) => builder = builder.static_instruction(text.as_str()),
            Some(other) => {
                return Err(Error::Compile(format!(
                    "`{}`: a static_instruction must be text for the sinew-adk backend, not {other}",
                    c.name
                )));
            }
        }
        if c.disallow_transfer_to_parent == Some(true) {
            builder = builder.disallow_transfer_to_parent();
        }
        if c.disallow_transfer_to_peers == Some(true) {
            builder = builder.disallow_transfer_to_peers();
        }
        if c.include_contents == config::IncludeContents::None {
            builder = builder.include_contents(IncludeContents::None);
        }
        if let Some(generation) = &c.generate_content_config {
            let parsed = serde_json::from_value(generation.clone())
                .map_err(|e| Error::Compile(format!("`{}`: generate_content_config: {e}", c.name)))?;
            builder = builder.generate_content_config(parsed);
        }
        let schema =
            match (&node.output_schema, &c.output_schema) {
                (Some(schema), _) => Some(schema.clone()),
                (None, Some(code)) => {
                    Some(self.registry.schemas.get(&code.name).cloned().ok_or_else(|| {
                        Error::Compile(format!("`{}`: no schema is known as `{}`", c.name, code.name))
                    })?)
                }
                (None, None) => None,
            };
        if let Some(schema) = schema {
            builder = builder.output_schema(schema);
        }
        let mut output_key = c.output_key.clone();
        if let Some(contract) = &node.produces {
            // The answer's fields go to state under their names, read from the answer as saved.
            let key = output_key.get_or_insert_with(|| format!("temp:_{}_output", c.name)).clone();
            builder = builder.after_agent_callback(SpreadFields { key, fields: contract.fields.clone() });
        }
        if let Some(key) = output_key {
            builder = builder.output_key(key);
        }
        let mut names = std::collections::HashSet::new();
        let named = c
            .tools
            .iter()
            .flatten()
            .map(|t| match &t.args {
                // ADK builds such a tool with a factory of its own; sinew has none to call.
                Some(_) => Err(Error::Compile(format!(
                    "`{}`: tool `{}` is given arguments, which the sinew-adk backend cannot honour (register a tool made with them)",
                    c.name, t.name
                ))),
                None => self.registry.named_tool(&t.name),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut bound = Vec::new();
        for tool in &node.resource_tools {
            let (id, type_name) = tool.resource();
            if !self.resources.provides(id) {
                return Err(Error::Compile(format!(
                    "`{}`: tool `{}` takes a resource of type `{type_name}`, which the backend does not provide",
                    c.name,
                    tool.name()
                )));
            }
            bound.push(tool.bind(store));
        }
        for tool in node.tools.iter().cloned().chain(bound).chain(named) {
            if names.insert(tool.name().to_owned()) {
                builder = builder.tool(tool);
            }
        }
        for delegate in &node.delegates {
            builder = builder.sub_agent(self.agent(delegate, store)?);
        }
        let callbacks = &node.callbacks;
        for cb in &callbacks.before_agent {
            builder = builder.before_agent_callback(Shared(cb.clone()));
        }
        for cb in &callbacks.after_agent {
            builder = builder.after_agent_callback(Shared(cb.clone()));
        }
        for cb in &callbacks.before_model {
            builder = builder.before_model_callback(Shared(cb.clone()));
        }
        for cb in &callbacks.after_model {
            builder = builder.after_model_callback(Shared(cb.clone()));
        }
        for cb in &callbacks.on_model_error {
            builder = builder.on_model_error_callback(Shared(cb.clone()));
        }
        for cb in &callbacks.before_tool {
            builder = builder.before_tool_callback(Shared(cb.clone()));
        }
        for cb in &callbacks.after_tool {
            builder = builder.after_tool_callback(Shared(cb.clone()));
        }
        for cb in &callbacks.on_tool_error {
            builder = builder.on_tool_error_callback(Shared(cb.clone()));
        }
        Ok(builder.build()?)
    }

    fn mock_agent(
        &self,
        node: &AgentNode,
        answers: &MockAnswers,
        store: &Arc<ResourceStore>,
    ) -> Result<Arc<dyn sinew_adk::Agent>> {
        let name = &node.config.name;
        let answer = answers
            .get(name)
            .cloned()
            .ok_or_else(|| Error::Compile(format!("the mock backend has no answer for agent `{name}`")))?;
        Ok(Arc::new(nodes::Mock {
            name: name.clone(),
            description: node.config.description.clone(),
            output_key: node.config.output_key.clone(),
            answer,
            delegates: self.agents(&node.delegates, store)?,
        }))
    }
}

/// The gates a sequence or loop resumes at through `node`: `node` itself, or those below it
/// through sequences and loops (a gate under a route, fallback or timeout resumes its own
/// sequence there, once that group runs again).
fn gates_in(node: &Node) -> Vec<String> {
    match node {
        Node::Gate(gate) => vec![gate.name.clone()],
        Node::Sequence(_) | Node::Loop(_) => node.children().into_iter().flat_map(gates_in).collect(),
        _ => Vec::new(),
    }
}

/// Refuses a gate where its answer could not resume: inside a parallel group, a race or a
/// map-over, which would run their other branches or items again.
fn check_gate_placement(node: &Node, inside: Option<(&str, &str)>) -> Result<()> {
    if let (Node::Gate(gate), Some((kind, group))) = (node, inside) {
        return Err(Error::Compile(format!(
            "gate `{}` sits inside {kind} `{group}`, where its answer could not resume: put the gate before or after it",
            gate.name
        )));
    }
    let inside = match node {
        Node::Parallel(n) => Some(("the parallel group", n.config.name.as_str())),
        Node::Race(n) => Some(("the race", n.name.as_str())),
        Node::MapOver(n) => Some(("the map-over", n.name.as_str())),
        _ => inside,
    };
    node.children().into_iter().try_for_each(|child| check_gate_placement(child, inside))
}

/// The `LlmAgentConfig` fields the backend maps to sinew-adk; any other field set is refused by
/// name, so a field ADK adds (and the generator picks up) is never silently dropped.
const HANDLED_LLM_FIELDS: &[&str] = &[
    "agent_class",
    "name",
    "description",
    "model",
    "instruction",
    "static_instruction",
    "disallow_transfer_to_parent",
    "disallow_transfer_to_peers",
    "output_schema",
    "output_key",
    "include_contents",
    "tools",
    "generate_content_config",
];

fn refuse_unhandled(name: &str, set: Vec<&'static str>, handled: &[&str]) -> Result<()> {
    match set.into_iter().find(|f| !handled.contains(f)) {
        None => Ok(()),
        Some(field) => Err(Error::Compile(format!(
            "`{name}`: the sinew-adk backend cannot honour ADK field `{field}` yet (set it to its default, or give the value as code through the builder)"
        ))),
    }
}

impl Backend for AdkBackend {
    type Compiled = AdkApp;

    fn compile(&self, node: &Node, config: &ExecutionConfig) -> Result<AdkApp> {
        let root = crate::builder::finish(node.clone())?;
        crate::builder::check_transfer_targets(&root)?;
        check_gate_placement(&root, None)?;
        let store = ResourceStore::new(self.resources.clone());
        let mut app = App::new(config.app_name.clone(), self.agent(&root, &store)?)?;
        if let Some(compaction) = &config.compaction {
            app = app.with_events_compaction(compaction.clone())?;
        }
        if config.resumable {
            app = app.resumable();
        }
        if !self.middleware.is_empty() {
            app = app.with_plugin(Arc::new(MiddlewarePlugin::new(self.middleware.clone())));
        }
        if !self.resources.is_empty() {
            app = app.with_plugin(Arc::new(ResourcePlugin(store)));
        }
        for plugin in &self.plugins {
            app = app.with_plugin(plugin.clone());
        }
        Ok(AdkApp { app, config: config.clone() })
    }
}

impl AdkBackend {
    /// Closes `compiled` (ADK's `Runner.close`): every plugin's and middleware's `close` runs.
    pub async fn close(&self, compiled: &AdkApp) -> Result<()> {
        self.runner(compiled)?.close().await;
        Ok(())
    }

    /// Rewinds a session of `compiled` to before invocation `before_invocation_id` (ADK's
    /// `rewind_async`): the state and artifacts return to what they were, and the model no
    /// longer sees the rewound turns.
    pub async fn rewind(
        &self,
        compiled: &AdkApp,
        user_id: &str,
        session_id: &str,
        before_invocation_id: &str,
    ) -> Result<()> {
        Ok(self.runner(compiled)?.rewind(user_id, session_id, before_invocation_id).await?)
    }

    /// Runs `message` (any content: text, files, the answer to a confirmation request or to a
    /// long-running call); events come out as they happen, an error is the last item.
    pub fn stream_content(
        &self,
        compiled: &AdkApp,
        message: Content,
        options: RunOptions,
    ) -> BoxStream<'static, Result<AgentEvent>> {
        let runner = match self.runner(compiled) {
            Ok(runner) => runner,
            Err(e) => return futures::stream::once(async move { Err(e) }).boxed(),
        };
        let config = &compiled.config;
        let mut run_config = RunConfig::default().with_max_llm_calls(config.max_llm_calls);
        if config.streaming == sinew_adk::StreamingMode::Sse {
            run_config = run_config.sse();
        }
        if let Some(metadata) = &config.custom_metadata {
            run_config = run_config.with_custom_metadata(metadata.clone());
        }
        let state = (!options.state.is_empty()).then_some(options.state);
        let events = runner
            .run(&options.user_id, &options.session_id, Some(message), state, run_config)
            .map(|event| event.map(|e| AgentEvent::from_adk(&e)).map_err(Error::from));
        // A limit too long to count is no limit.
        let deadline = config.timeout.and_then(|limit| Some((tokio::time::Instant::now().checked_add(limit)?, limit)));
        match deadline {
            None => events.boxed(),
            Some((deadline, limit)) => futures::stream::unfold(Some(events), move |events| async move {
                let mut events = events?;
                match tokio::time::timeout_at(deadline, events.next()).await {
                    Ok(Some(item)) => Some((item, Some(events))),
                    Ok(None) => None,
                    Err(_) => Some((Err(Error::Timeout(limit)), None)),
                }
            })
            .boxed(),
        }
    }
}

#[async_trait]
impl Execute for AdkBackend {
    fn stream(&self, compiled: &AdkApp, prompt: &str, options: RunOptions) -> BoxStream<'static, Result<AgentEvent>> {
        self.stream_content(compiled, Content::user_text(prompt), options)
    }
}

/// A callback held by the IR, handed to sinew-adk (which takes callbacks by value).
struct Shared<T: ?Sized>(Arc<T>);

#[async_trait]
impl BeforeAgentCallback for Shared<dyn BeforeAgentCallback> {
    async fn call(&self, ctx: &CallbackContext) -> Option<Content> {
        self.0.call(ctx).await
    }
}

#[async_trait]
impl AfterAgentCallback for Shared<dyn AfterAgentCallback> {
    async fn call(&self, ctx: &CallbackContext) -> Option<Content> {
        self.0.call(ctx).await
    }
}

#[async_trait]
impl BeforeModelCallback for Shared<dyn BeforeModelCallback> {
    async fn call(&self, ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        self.0.call(ctx, request).await
    }
}

#[async_trait]
impl AfterModelCallback for Shared<dyn AfterModelCallback> {
    async fn call(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        self.0.call(ctx, response).await
    }
}

#[async_trait]
impl OnModelErrorCallback for Shared<dyn OnModelErrorCallback> {
    async fn call(&self, ctx: &CallbackContext, request: &LlmRequest, error: &sinew_adk::Error) -> Option<LlmResponse> {
        self.0.call(ctx, request, error).await
    }
}

#[async_trait]
impl BeforeToolCallback for Shared<dyn BeforeToolCallback> {
    async fn call(
        &self,
        tool: &dyn Tool,
        args: &mut Map<String, Value>,
        ctx: &ToolContext,
    ) -> Option<Map<String, Value>> {
        self.0.call(tool, args, ctx).await
    }
}

#[async_trait]
impl AfterToolCallback for Shared<dyn AfterToolCallback> {
    async fn call(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        response: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        self.0.call(tool, args, ctx, response).await
    }
}

#[async_trait]
impl OnToolErrorCallback for Shared<dyn OnToolErrorCallback> {
    async fn call(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        error: &ToolError,
    ) -> Option<Map<String, Value>> {
        self.0.call(tool, args, ctx, error).await
    }
}

/// Writes the fields of the object saved under `key` to state under their own names (an agent's
/// `produces::<T>()`).
struct SpreadFields {
    key: String,
    fields: Vec<String>,
}

#[async_trait]
impl AfterAgentCallback for SpreadFields {
    async fn call(&self, ctx: &CallbackContext) -> Option<Content> {
        if let Some(Value::Object(answer)) = ctx.get_state(&self.key).await {
            for field in &self.fields {
                if let Some(value) = answer.get(field) {
                    ctx.set_state(field.clone(), value.clone());
                }
            }
        }
        None
    }
}

/// The agents sinew-fluent's own nodes compile to.
mod nodes {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use async_trait::async_trait;
    use serde_json::{Map, Value};
    use sinew_adk::{Agent, Content, InvocationContext, Result};

    use super::{Semantics, is_session_scoped};
    use crate::ir::{GateNode, MapOverNode, TapNode, TransferNode, TransformNode};

    /// Emits `delta` as an event of the running node, when there is something to write.
    async fn write_state(ctx: &InvocationContext, delta: Map<String, Value>) -> Result<()> {
        if delta.is_empty() {
            return Ok(());
        }
        let mut event = ctx.new_event();
        event.actions.state_delta = delta;
        ctx.emit(event).await.map(drop)
    }

    /// Emits `text` as the running node's answer.
    async fn say(ctx: &InvocationContext, text: &str, delta: Map<String, Value>) -> Result<()> {
        let mut event = ctx.new_event();
        event.content = Some(Content::model_text(text));
        event.actions.state_delta = delta;
        ctx.emit(event).await.map(drop)
    }

    pub(super) struct Transform(pub(super) TransformNode);

    #[async_trait]
    impl Agent for Transform {
        fn name(&self) -> &str {
            &self.0.name
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            let state = ctx.state().await;
            let result = (self.0.function)(&state);
            let mut delta = Map::new();
            match self.0.semantics {
                Semantics::Merge => delta = result,
                Semantics::ReplaceSession => {
                    for (key, value) in &state {
                        if is_session_scoped(key) && !result.contains_key(key) && !value.is_null() {
                            delta.insert(key.clone(), Value::Null);
                        }
                    }
                    delta.extend(result);
                }
                Semantics::DeleteKeys => {
                    for key in self.0.affected_keys.iter().filter(|k| is_session_scoped(k)) {
                        if state.get(key).is_some_and(|v| !v.is_null()) {
                            delta.insert(key.clone(), Value::Null);
                        }
                    }
                }
            }
            write_state(ctx, delta).await
        }
    }

    pub(super) struct Tap(pub(super) TapNode);

    #[async_trait]
    impl Agent for Tap {
        fn name(&self) -> &str {
            &self.0.name
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            (self.0.function)(&ctx.state().await);
            Ok(())
        }
    }

    type Test = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

    pub(super) struct Route {
        name: String,
        key: String,
        rules: Vec<(Test, Arc<dyn Agent>)>,
        default: Option<Arc<dyn Agent>>,
        all: Vec<Arc<dyn Agent>>,
    }

    impl Route {
        pub(super) fn new(
            name: String,
            key: String,
            rules: Vec<(Test, Arc<dyn Agent>)>,
            default: Option<Arc<dyn Agent>>,
        ) -> Self {
            let all = rules.iter().map(|(_, a)| a.clone()).chain(default.clone()).collect();
            Route { name, key, rules, default, all }
        }
    }

    #[async_trait]
    impl Agent for Route {
        fn name(&self) -> &str {
            &self.name
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.all
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            let state = ctx.state().await;
            let value = state.get(&self.key).unwrap_or(&Value::Null);
            let chosen = self.rules.iter().find(|(test, _)| test(value)).map(|(_, a)| a).or(self.default.as_ref());
            match chosen {
                Some(agent) => ctx.run_sub_agent(agent).await,
                None => Ok(()),
            }
        }
    }

    pub(super) struct Fallback {
        pub(super) name: String,
        pub(super) children: Vec<Arc<dyn Agent>>,
    }

    #[async_trait]
    impl Agent for Fallback {
        fn name(&self) -> &str {
            &self.name
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.children
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            let mut last = None;
            for child in &self.children {
                match ctx.run_sub_agent(child).await {
                    Ok(()) => return Ok(()),
                    // A run the caller dropped is not a failure to recover from.
                    Err(sinew_adk::Error::Cancelled) => return Err(sinew_adk::Error::Cancelled),
                    Err(error) => last = Some(error),
                }
            }
            last.map_or(Ok(()), Err)
        }
    }

    pub(super) struct Race {
        pub(super) name: String,
        pub(super) children: Vec<Arc<dyn Agent>>,
    }

    #[async_trait]
    impl Agent for Race {
        fn name(&self) -> &str {
            &self.name
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.children
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            if self.children.is_empty() {
                return Ok(());
            }
            let runs = self.children.iter().map(|child| {
                let suffix = format!("{}.{}", self.name, child.name());
                let branch = Some(match ctx.branch() {
                    Some(branch) => format!("{branch}.{suffix}"),
                    None => suffix,
                });
                let branch_ctx = ctx.with_branch(branch);
                Box::pin(async move { branch_ctx.run_sub_agent(child).await })
            });
            // The first branch to finish well wins; dropping the others cancels them.
            futures::future::select_ok(runs).await.map(drop)
        }
    }

    pub(super) struct Gate(pub(super) GateNode);

    /// The state key holding the invocation in which gate `name` asked its question.
    fn pending_key(name: &str) -> String {
        format!("_gate_{name}_pending")
    }

    /// The state key keeping the asking invocation's `temp:` state while gate `name` waits: the
    /// steps that wrote it do not run again when the answer resumes the pipeline.
    fn temp_key(name: &str) -> String {
        format!("_gate_{name}_temp")
    }

    /// The state key keeping the round a gated loop was in when one of its gates asked.
    fn round_key(name: &str) -> String {
        format!("_loop_{name}_round")
    }

    /// Whether gate `name` asked its question in `invocation`.
    fn asked_in(state: &Map<String, Value>, name: &str, invocation: &str) -> bool {
        state.get(&pending_key(name)).and_then(Value::as_str) == Some(invocation)
    }

    /// The invocation before the running one: the newest event of another invocation, summaries
    /// and rewind markers aside (they carry ids of their own).
    async fn previous_invocation(ctx: &InvocationContext) -> Option<String> {
        let session = ctx.session().await;
        session
            .events
            .iter()
            .rev()
            .filter(|e| e.actions.compaction.is_none() && e.actions.rewind_before_invocation_id.is_none())
            .find(|e| e.invocation_id.as_ref() != ctx.invocation_id())
            .map(|e| e.invocation_id.to_string())
    }

    /// A sequence with a gate in it (directly, or below through sequences and loops): like ADK's
    /// `SequentialAgent` (with its checkpoints when the app is resumable), except that the message
    /// answering a gate's question resumes the sequence at the child holding that gate, so the
    /// steps before it do not run again.
    pub(super) struct GatedSequence {
        pub(super) name: String,
        pub(super) description: String,
        pub(super) children: Vec<Arc<dyn Agent>>,
        /// The gates each child resumes at.
        pub(super) gates: Vec<Vec<String>>,
    }

    impl GatedSequence {
        /// The child holding the gate whose question the previous invocation asked, if any.
        async fn resume_at(&self, ctx: &InvocationContext) -> Option<usize> {
            let state = ctx.state().await;
            let waiting = |gate: &String| state.get(&pending_key(gate)).and_then(Value::as_str).is_some();
            if !self.gates.iter().flatten().any(waiting) {
                return None;
            }
            let previous = previous_invocation(ctx).await?;
            self.gates.iter().position(|gates| gates.iter().any(|gate| asked_in(&state, gate, &previous)))
        }

        /// Where the sequence starts, and whether it resumes at an ADK checkpoint.
        async fn start(&self, ctx: &InvocationContext) -> (usize, bool) {
            if let Some(at) = self.resume_at(ctx).await {
                return (at, false);
            }
            let checkpoint = if ctx.is_resumable() { ctx.agent_state(&self.name) } else { None };
            match checkpoint {
                None => (0, false),
                Some(state) => {
                    let current = state.get("current_sub_agent").and_then(Value::as_str).filter(|n| !n.is_empty());
                    let at = current.map_or(self.children.len(), |current| {
                        self.children.iter().position(|c| c.name() == current).unwrap_or(0)
                    });
                    (at, true)
                }
            }
        }

        /// Runs the children from `start`; whether the invocation paused or ended in child `i`
        /// (its index comes back).
        async fn run_from(
            &self,
            ctx: &InvocationContext,
            run_ctx: &InvocationContext,
            start: usize,
            mut resuming: bool,
            checkpoint: impl Fn(&str) -> Map<String, Value>,
            escalated: Option<&AtomicBool>,
        ) -> Result<Option<usize>> {
            for (i, child) in self.children.iter().enumerate().skip(start) {
                if ctx.is_resumable() && !resuming {
                    ctx.checkpoint(&self.name, checkpoint(child.name())).await?;
                }
                resuming = false;
                run_ctx.run_sub_agent(child).await?;
                if ctx.is_paused() || ctx.is_ended() || escalated.is_some_and(|e| e.load(Ordering::SeqCst)) {
                    return Ok(Some(i));
                }
            }
            Ok(None)
        }
    }

    fn current_sub_agent(name: &str) -> Map<String, Value> {
        Map::from_iter([("current_sub_agent".to_owned(), Value::from(name))])
    }

    /// A loop with a gate in it: like ADK's `LoopAgent`, except that the message answering a
    /// gate's question resumes the round the gate asked in, at the child holding it.
    pub(super) struct GatedLoop {
        pub(super) sequence: GatedSequence,
        pub(super) max_iterations: Option<usize>,
    }

    #[async_trait]
    impl Agent for GatedLoop {
        fn name(&self) -> &str {
            &self.sequence.name
        }

        fn description(&self) -> &str {
            &self.sequence.description
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.sequence.children
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            let sequence = &self.sequence;
            if sequence.children.is_empty() {
                return Ok(());
            }
            let (mut start, mut resuming) = sequence.start(ctx).await;
            let state = ctx.state().await;
            let round = |value: Option<&Value>| value.and_then(Value::as_u64).and_then(|r| usize::try_from(r).ok());
            let mut rounds = if resuming {
                ctx.agent_state(&sequence.name).and_then(|s| round(s.get("times_looped"))).unwrap_or(0)
            } else if sequence.resume_at(ctx).await.is_some() {
                // The answer resumes the round the question was asked in.
                round(state.get(&round_key(&sequence.name))).unwrap_or(0)
            } else {
                0
            };
            if state.get(&round_key(&sequence.name)).is_some_and(|v| !v.is_null()) {
                write_state(ctx, Map::from_iter([(round_key(&sequence.name), Value::Null)])).await?;
            }
            while self.max_iterations.is_none_or(|max| rounds < max) {
                let escalated = Arc::new(AtomicBool::new(false));
                let round_ctx = ctx.with_escalation_flag(escalated.clone());
                let checkpoint = |name: &str| {
                    let mut state = current_sub_agent(name);
                    state.insert("times_looped".into(), Value::from(rounds));
                    state
                };
                let stopped = sequence.run_from(ctx, &round_ctx, start, resuming, checkpoint, Some(&escalated)).await?;
                resuming = false;
                if let Some(i) = stopped {
                    if ctx.is_paused() {
                        return Ok(());
                    }
                    if ctx.is_ended() {
                        // A gate of this round asked: its answer resumes this round.
                        let state = ctx.state().await;
                        if sequence.gates[i].iter().any(|gate| asked_in(&state, gate, ctx.invocation_id())) {
                            write_state(ctx, Map::from_iter([(round_key(&sequence.name), Value::from(rounds))]))
                                .await?;
                        }
                        return Ok(());
                    }
                    break;
                }
                start = 0;
                rounds += 1;
            }
            if ctx.is_resumable() {
                ctx.end_of_agent(&sequence.name).await?;
            }
            Ok(())
        }
    }

    #[async_trait]
    impl Agent for GatedSequence {
        fn name(&self) -> &str {
            &self.name
        }

        fn description(&self) -> &str {
            &self.description
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.children
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            let (start, resuming) = self.start(ctx).await;
            if self.run_from(ctx, ctx, start, resuming, current_sub_agent, None).await?.is_none() && ctx.is_resumable()
            {
                ctx.end_of_agent(&self.name).await?;
            }
            Ok(())
        }
    }

    #[async_trait]
    impl Agent for Gate {
        fn name(&self) -> &str {
            &self.0.name
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            let name = &self.0.name;
            let state = ctx.state().await;
            let (key, temp) = (pending_key(name), temp_key(name));
            if let Some(Value::String(asked)) = state.get(&key) {
                let mut cleared = Map::from_iter([(key.clone(), Value::Null)]);
                if state.get(&temp).is_some_and(|saved| !saved.is_null()) {
                    cleared.insert(temp.clone(), Value::Null);
                }
                if previous_invocation(ctx).await.as_deref() == Some(asked) {
                    // This message answers the gate's question.
                    let reply = ctx.user_content().map(Content::text).unwrap_or_default();
                    if (self.0.approves)(&reply) {
                        // The steps before the gate do not run again: their `temp:` state comes back.
                        if let Some(Value::Object(saved)) = state.get(&temp) {
                            cleared.extend(saved.clone());
                        }
                        return write_state(ctx, cleared).await;
                    }
                    say(ctx, "Not approved.", cleared).await?;
                    ctx.end_invocation();
                    return Ok(());
                }
                // A question nobody answered (the conversation went elsewhere): asked anew below
                // if it still needs asking.
                write_state(ctx, cleared).await?;
            }
            if (self.0.predicate)(&state) {
                let saved: Map<String, Value> =
                    state.iter().filter(|(k, _)| k.starts_with("temp:")).map(|(k, v)| (k.clone(), v.clone())).collect();
                let mut asked = Map::from_iter([(key, Value::String(ctx.invocation_id().to_owned()))]);
                if !saved.is_empty() {
                    asked.insert(temp, Value::Object(saved));
                }
                say(ctx, &self.0.message, asked).await?;
                ctx.end_invocation();
            }
            Ok(())
        }
    }

    pub(super) struct MapOver {
        pub(super) node: MapOverNode,
        pub(super) body: [Arc<dyn Agent>; 1],
    }

    #[async_trait]
    impl Agent for MapOver {
        fn name(&self) -> &str {
            &self.node.name
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.body
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            let n = &self.node;
            let items = match ctx.state().await.get(&n.list_key) {
                Some(Value::Array(items)) => items.clone(),
                None | Some(Value::Null) => Vec::new(),
                Some(other) => {
                    return Err(sinew_adk::Error::InvalidRequest(format!(
                        "`{}` maps over state `{}`, which is not a list: {other}",
                        n.name, n.list_key
                    )));
                }
            };
            let mut results = Vec::with_capacity(items.len());
            for item in items {
                write_state(ctx, Map::from_iter([(n.item_key.clone(), item), (n.result_key.clone(), Value::Null)]))
                    .await?;
                ctx.run_sub_agent(&self.body[0]).await?;
                if ctx.is_ended() || ctx.is_paused() {
                    return Ok(());
                }
                results.push(ctx.state().await.get(&n.result_key).cloned().unwrap_or(Value::Null));
            }
            write_state(ctx, Map::from_iter([(n.output_key.clone(), Value::Array(results))])).await
        }
    }

    pub(super) struct Timeout {
        pub(super) name: String,
        pub(super) duration: Duration,
        pub(super) body: [Arc<dyn Agent>; 1],
    }

    #[async_trait]
    impl Agent for Timeout {
        fn name(&self) -> &str {
            &self.name
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.body
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            match tokio::time::timeout(self.duration, ctx.run_sub_agent(&self.body[0])).await {
                Ok(result) => result,
                Err(_) => {
                    // The body's future is dropped: what it stored stays, nothing half-written.
                    let note =
                        format!("`{}` timed out after {} s", self.body[0].name(), crate::nodes::seconds(self.duration));
                    say(ctx, &note, Map::new()).await
                }
            }
        }
    }

    pub(super) struct Transfer(pub(super) TransferNode);

    #[async_trait]
    impl Agent for Transfer {
        fn name(&self) -> &str {
            &self.0.name
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            if let Some(condition) = &self.0.condition
                && !condition(&ctx.state().await)
            {
                return Ok(());
            }
            let target = sinew_adk::agent::find_agent(ctx.root_agent(), &self.0.target)
                .ok_or_else(|| sinew_adk::Error::UnknownAgent { name: self.0.target.clone() })?;
            let mut event = ctx.new_event();
            event.actions.transfer_to_agent = Some(self.0.target.clone());
            ctx.emit(event).await?;
            ctx.run(&target).await
        }
    }

    /// An agent of the mock backend: a fixed answer, no model. Text is its answer (saved under its
    /// output key, as ADK saves an answer); an object is written to state.
    pub(super) struct Mock {
        pub(super) name: String,
        pub(super) description: String,
        pub(super) output_key: Option<String>,
        pub(super) answer: Value,
        pub(super) delegates: Vec<Arc<dyn Agent>>,
    }

    #[async_trait]
    impl Agent for Mock {
        fn name(&self) -> &str {
            &self.name
        }

        fn description(&self) -> &str {
            &self.description
        }

        fn sub_agents(&self) -> &[Arc<dyn Agent>] {
            &self.delegates
        }

        async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
            match &self.answer {
                Value::Object(writes) => {
                    let text = Value::Object(writes.clone()).to_string();
                    say(ctx, &text, writes.clone()).await
                }
                other => {
                    let text = other.as_str().map_or_else(|| other.to_string(), str::to_owned);
                    let delta = self.output_key.iter().map(|k| (k.clone(), Value::String(text.clone()))).collect::<Map<
                        String,
                        Value,
                    >>(
                    );
                    say(ctx, &text, delta).await
                }
            }
        }
    }
}
