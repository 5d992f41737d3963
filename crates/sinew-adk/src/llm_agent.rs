//! [`LlmAgent`]: an agent that talks to a model (ADK's `LlmAgent`), and the model request it
//! builds, identical to adk-python's.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::agent::{Agent, find_parent};
use crate::callbacks::{
    AfterAgentCallback, AfterModelCallback, AfterToolCallback, BeforeAgentCallback, BeforeModelCallback,
    BeforeToolCallback, OnModelErrorCallback, OnToolErrorCallback,
};
use crate::context::{InvocationContext, ToolContext};
use crate::error::{Error, Result};
use crate::genai::{Content, FunctionDeclaration, GenerateContentConfig, SystemInstruction, Tool as GenaiTool};
use crate::history::{self, HistoryOptions};
use crate::model::Llm;
use crate::pyrepr;
use crate::session::{APP_PREFIX, TEMP_PREFIX, USER_PREFIX};
use crate::tool::Tool;
use crate::types::LlmRequest;

/// What an instruction provider sees (ADK's `ReadonlyContext`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ReadonlyContext {
    /// The id of the invocation under way.
    pub invocation_id: String,
    /// The name of the agent whose instruction is being built.
    pub agent_name: String,
    /// The session's state when the model is called.
    pub state: Map<String, Value>,
    /// The user message that started the invocation; `None` when it started without one.
    pub user_content: Option<Content>,
    /// The artifacts the instruction refers to (`{artifact.name}`): their text, `None` when missing;
    /// absent when the runner has no artifact service.
    pub(crate) artifacts: Option<std::collections::HashMap<String, Option<String>>>,
}

/// An instruction computed at every model call (spec 002 §3.3). Its text is sent as is: no
/// `{key}` templating. A plain closure is a provider.
#[async_trait]
pub trait InstructionProvider: Send + Sync {
    /// The instruction for this call.
    async fn instruction(&self, ctx: &ReadonlyContext) -> Result<String>;
}

#[async_trait]
impl<F> InstructionProvider for F
where
    F: Fn(&ReadonlyContext) -> String + Send + Sync,
{
    async fn instruction(&self, ctx: &ReadonlyContext) -> Result<String> {
        Ok(self(ctx))
    }
}

/// An agent's instruction: a template over the session's state, or a provider.
#[derive(Clone)]
#[non_exhaustive]
pub enum Instruction {
    /// `{key}`, `{key?}`, `{app:key}`, `{user:key}` and `{temp:key}` are replaced by state values.
    Template(String),
    /// Computed at every model call, sent as is.
    Provider(Arc<dyn InstructionProvider>),
}

impl std::fmt::Debug for Instruction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Instruction::Template(text) => f.debug_tuple("Template").field(text).finish(),
            Instruction::Provider(_) => f.write_str("Provider(..)"),
        }
    }
}

impl From<&str> for Instruction {
    fn from(text: &str) -> Self {
        Instruction::Template(text.to_owned())
    }
}

impl From<String> for Instruction {
    fn from(text: String) -> Self {
        Instruction::Template(text)
    }
}

impl Instruction {
    /// An instruction computed by `provider` at every model call.
    pub fn provider(provider: impl InstructionProvider + 'static) -> Self {
        Instruction::Provider(Arc::new(provider))
    }

    /// Whether the instruction is written empty (a provider never is).
    fn is_empty(&self) -> bool {
        matches!(self, Instruction::Template(text) if text.is_empty())
    }

    async fn resolve(&self, ctx: &ReadonlyContext) -> Result<String> {
        match self {
            Instruction::Template(template) => inject(template, &ctx.state, ctx.artifacts.as_ref(), &ctx.agent_name),
            Instruction::Provider(provider) => provider.instruction(ctx).await,
        }
    }
}

/// Which history the model sees (ADK's `include_contents`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IncludeContents {
    /// The whole history of the agent's branch.
    #[default]
    Default,
    /// Only the current turn.
    None,
}

/// An agent that answers with a model, calls tools and hands the conversation to other agents.
#[derive(Clone)]
pub struct LlmAgent {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) model: Option<Arc<dyn Llm>>,
    pub(crate) instruction: Option<Instruction>,
    pub(crate) static_instruction: Option<String>,
    pub(crate) global_instruction: Option<Instruction>,
    pub(crate) tools: Vec<Arc<dyn Tool>>,
    pub(crate) sub_agents: Vec<Arc<dyn Agent>>,
    pub(crate) output_key: Option<String>,
    pub(crate) output_schema: Option<Value>,
    pub(crate) include_contents: IncludeContents,
    pub(crate) generate_content_config: GenerateContentConfig,
    pub(crate) disallow_transfer_to_parent: bool,
    pub(crate) disallow_transfer_to_peers: bool,
    pub(crate) before_agent: Vec<Arc<dyn BeforeAgentCallback>>,
    pub(crate) after_agent: Vec<Arc<dyn AfterAgentCallback>>,
    pub(crate) before_model: Vec<Arc<dyn BeforeModelCallback>>,
    pub(crate) after_model: Vec<Arc<dyn AfterModelCallback>>,
    pub(crate) on_model_error: Vec<Arc<dyn OnModelErrorCallback>>,
    pub(crate) before_tool: Vec<Arc<dyn BeforeToolCallback>>,
    pub(crate) after_tool: Vec<Arc<dyn AfterToolCallback>>,
    pub(crate) on_tool_error: Vec<Arc<dyn OnToolErrorCallback>>,
}

impl std::fmt::Debug for LlmAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmAgent")
            .field("name", &self.name)
            .field("model", &self.model.as_ref().map(|m| m.name().to_owned()))
            .field("tools", &self.tools.iter().map(|t| t.name().to_owned()).collect::<Vec<_>>())
            .field("sub_agents", &self.sub_agents.iter().map(|a| a.name().to_owned()).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl LlmAgent {
    /// Builds an agent named `name`.
    pub fn builder(name: impl Into<String>) -> LlmAgentBuilder {
        LlmAgentBuilder {
            agent: LlmAgent {
                name: name.into(),
                description: String::new(),
                model: None,
                instruction: None,
                static_instruction: None,
                global_instruction: None,
                tools: Vec::new(),
                sub_agents: Vec::new(),
                output_key: None,
                output_schema: None,
                include_contents: IncludeContents::Default,
                generate_content_config: GenerateContentConfig::default(),
                disallow_transfer_to_parent: false,
                disallow_transfer_to_peers: false,
                before_agent: Vec::new(),
                after_agent: Vec::new(),
                before_model: Vec::new(),
                after_model: Vec::new(),
                on_model_error: Vec::new(),
                before_tool: Vec::new(),
                after_tool: Vec::new(),
                on_tool_error: Vec::new(),
            },
        }
    }

    /// Whether the agent may not hand the conversation back to its parent.
    pub fn disallow_transfer_to_parent(&self) -> bool {
        self.disallow_transfer_to_parent
    }

    /// Whether the agent may not hand the conversation to its siblings.
    pub fn disallow_transfer_to_peers(&self) -> bool {
        self.disallow_transfer_to_peers
    }

    /// The state key the agent's answer is saved under.
    pub fn output_key(&self) -> Option<&str> {
        self.output_key.as_deref()
    }

    /// The instruction, when it has one.
    pub fn instruction(&self) -> Option<&Instruction> {
        self.instruction.as_ref()
    }

    /// Its tools.
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The model the agent calls in the tree under `root`: its own, else its nearest ancestor's
    /// (ADK's `canonical_model`).
    pub fn canonical_model(&self, root: &Arc<dyn Agent>) -> Result<Arc<dyn Llm>> {
        self.resolve_model(root)
    }

    /// The model: its own, else the nearest ancestor's.
    pub(crate) fn resolve_model(&self, root: &Arc<dyn Agent>) -> Result<Arc<dyn Llm>> {
        if let Some(model) = &self.model {
            return Ok(model.clone());
        }
        let mut name = self.name.clone();
        while let Some(parent) = find_parent(root, &name) {
            if let Some(model) = parent.as_llm_agent().and_then(|a| a.model.clone()) {
                return Ok(model);
            }
            name = parent.name().to_owned();
        }
        Err(Error::InvalidAgent(format!("agent `{}` has no model, and no agent above it has one", self.name)))
    }

    /// Whether the agent answers through `set_model_response`: it has an output schema and tools,
    /// and its model cannot take both in one request.
    fn uses_set_model_response(&self, model: &dyn Llm) -> bool {
        self.output_schema.is_some() && !self.tools.is_empty() && !model.supports_output_schema_with_tools()
    }

    /// Records whether this agent's next request, to `model`, offers `set_model_response`.
    pub(crate) fn note_model(&self, ctx: &InvocationContext, model: &dyn Llm) {
        let mut agents =
            ctx.invocation.set_model_response_agents.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.uses_set_model_response(model) {
            agents.insert(self.name.clone());
        } else {
            agents.remove(&self.name);
        }
    }

    /// Whether this agent's latest request offered `set_model_response`: [`LlmAgent::uses_set_model_response`]
    /// with the model it went to (a plugin's replacement included).
    pub(crate) fn answers_through_set_model_response(&self, ctx: &InvocationContext) -> bool {
        let agents = ctx.invocation.set_model_response_agents.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        agents.contains(&self.name)
    }

    /// The agents this one may hand the conversation to, in ADK's order: its sub-agents, its
    /// parent, its peers.
    pub(crate) fn transfer_targets(&self, root: &Arc<dyn Agent>) -> Vec<Arc<dyn Agent>> {
        let mut targets: Vec<Arc<dyn Agent>> = self.sub_agents.clone();
        if let Some(parent) = find_parent(root, &self.name)
            && parent.as_llm_agent().is_some()
        {
            if !self.disallow_transfer_to_parent {
                targets.push(parent.clone());
            }
            if !self.disallow_transfer_to_peers {
                targets.extend(parent.sub_agents().iter().filter(|a| a.name() != self.name).cloned());
            }
        }
        targets
    }

    /// The request for the next model call (ADK's request processors).
    pub(crate) async fn build_request(&self, ctx: &InvocationContext, model: &dyn Llm) -> Result<LlmRequest> {
        let artifacts = self.referenced_artifacts(ctx).await?;
        let readonly = ReadonlyContext {
            invocation_id: ctx.invocation_id().to_owned(),
            agent_name: self.name.clone(),
            state: ctx.state().await,
            user_content: ctx.user_content().cloned(),
            artifacts,
        };
        let mut request = LlmRequest {
            model: Some(model.name().to_owned()),
            config: self.generate_content_config.clone(),
            live_connect_config: Some(json!({"inputAudioTranscription": {}, "outputAudioTranscription": {}})),
            ..LlmRequest::default()
        };
        // A live session reads its own config: ADK copies the sampling settings there.
        let sampling = &self.generate_content_config;
        if let Some(Value::Object(live)) = request.live_connect_config.as_mut() {
            let copied = [
                ("temperature", sampling.temperature.map(Value::from)),
                ("topP", sampling.top_p.map(Value::from)),
                ("topK", sampling.top_k.map(Value::from)),
                ("maxOutputTokens", sampling.max_output_tokens.map(Value::from)),
                ("seed", sampling.seed.map(Value::from)),
                ("mediaResolution", sampling.media_resolution.clone().map(Value::from)),
            ];
            for (key, value) in copied {
                if let Some(value) = value {
                    live.insert(key.to_owned(), value);
                }
            }
        }
        if let Some(labels) = &ctx.run_config().labels {
            request.config.labels.get_or_insert_with(Map::new).extend(labels.clone());
        }
        let set_model_response = self.uses_set_model_response(model);
        if let Some(schema) = self.output_schema.as_ref().filter(|_| !set_model_response) {
            request.config.response_json_schema = Some(schema.clone());
            request.config.response_mime_type = Some("application/json".into());
        }

        // adk-python appends each piece: `si = piece` when empty, else `si += "\n\n" + piece`; a
        // global or own instruction written non-empty is appended even when it resolves to "".
        let mut system = String::new();
        let mut append = |piece: &str| {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(piece);
        };
        if let Some(global) = ctx.root_agent().as_llm_agent().and_then(|root| root.global_instruction.as_ref())
            && !global.is_empty()
        {
            append(&global.resolve(&readonly).await?);
        }
        // With a static instruction (ADK 2.x, sent as written), the dynamic one becomes a labelled
        // user turn before the latest user messages, so the system prefix stays the same.
        let mut dynamic = None;
        if let Some(fixed) = &self.static_instruction {
            append(fixed);
        }
        if let Some(instruction) = self.instruction.as_ref().filter(|i| !i.is_empty()) {
            let text = instruction.resolve(&readonly).await?;
            if self.static_instruction.is_some() {
                dynamic = Some(label_dynamic_instruction(&text));
            } else {
                append(&text);
            }
        }
        let mut identity = format!("You are an agent. Your internal name is \"{}\".", self.name);
        if !self.description.is_empty() {
            identity.push_str(&format!(" The description about you is \"{}\".", self.description));
        }
        append(&identity);
        if set_model_response {
            append(SET_MODEL_RESPONSE_INSTRUCTION);
        }
        let targets = self.transfer_targets(ctx.root_agent());
        if !targets.is_empty() {
            append(&self.transfer_instruction(ctx.root_agent(), &targets));
        }
        request.config.system_instruction = Some(SystemInstruction::Text(system));

        // Compaction runs before the history is read, so that a summary written now is in it.
        if let Some(compaction) = &ctx.invocation.compaction {
            compaction.before_model(ctx, self).await?;
        }
        // The history is read under the session's lock, without copying the session.
        request.contents = history::contents(
            &ctx.invocation.session.lock().await.events,
            HistoryOptions {
                agent: &self.name,
                branch: ctx.branch(),
                preserve_ids: model.preserves_function_call_ids(),
                other_agents_thoughts: ctx.run_config().include_thoughts_from_other_agents,
                current_turn_only: self.include_contents == IncludeContents::None,
            },
        );

        if let Some(dynamic) = dynamic {
            insert_before_latest_user_turn(&mut request.contents, Content::user_text(dynamic));
        }

        let mut declarations: Vec<FunctionDeclaration> = Vec::new();
        if let Some(schema) = self.output_schema.as_ref().filter(|_| set_model_response) {
            declarations.push(set_model_response_declaration(schema));
        }
        if !targets.is_empty() {
            declarations.push(TransferToAgent::declaration(&targets));
        }
        declarations.extend(self.tools.iter().filter_map(|t| t.declaration()));
        if !declarations.is_empty() {
            request.config.tools = Some(vec![GenaiTool::functions(declarations)]);
        }
        Ok(request)
    }

    /// The artifacts the instructions name, loaded; `None` without an artifact service.
    async fn referenced_artifacts(
        &self,
        ctx: &InvocationContext,
    ) -> Result<Option<std::collections::HashMap<String, Option<String>>>> {
        let Some(service) = ctx.invocation.artifacts.clone() else { return Ok(None) };
        let global = ctx.root_agent().as_llm_agent().and_then(|root| root.global_instruction.clone());
        let mut names = Vec::new();
        for instruction in [self.instruction.clone(), global].into_iter().flatten() {
            if let Instruction::Template(template) = instruction {
                scan(&template, |name| {
                    if let Some(file) = name.trim_end_matches('?').strip_prefix("artifact.") {
                        names.push(file.to_owned());
                    }
                });
            }
        }
        let invocation = &ctx.invocation;
        let mut loaded = std::collections::HashMap::new();
        for name in names {
            let part = service
                .load_artifact(&invocation.app_name, &invocation.user_id, &invocation.session_id, &name, None)
                .await?;
            let text = part.map(|p| match p.text {
                Some(text) => text,
                None => serde_json::to_string(&p).unwrap_or_default(),
            });
            loaded.insert(name, text);
        }
        Ok(Some(loaded))
    }

    fn transfer_instruction(&self, root: &Arc<dyn Agent>, targets: &[Arc<dyn Agent>]) -> String {
        let info: Vec<String> = targets
            .iter()
            .map(|t| format!("\nAgent name: {}\nAgent description: {}\n", t.name(), t.description()))
            .collect();
        let mut names: Vec<&str> = targets.iter().map(|t| t.name()).collect();
        names.sort_unstable();
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        let mut text = format!(
            "\nYou have a list of other agents to transfer to:\n\n{}\n\nIf you are the best to answer the question according to your description,\nyou can answer it.\n\nIf another agent is better for answering the question according to its\ndescription, call `transfer_to_agent` function to transfer the question to that\nagent. When transferring, do not generate any text other than the function\ncall.\n\n**NOTE**: the only available agents for `transfer_to_agent` function are\n{}.\n",
            info.join("\n"),
            names.join(", ")
        );
        if let Some(parent) = find_parent(root, &self.name)
            && !self.disallow_transfer_to_parent
        {
            text.push_str(&format!(
                "\nIf neither you nor the other agents are best for the question, transfer to your parent agent {}.\n",
                parent.name()
            ));
        }
        text
    }
}

#[async_trait]
impl Agent for LlmAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn sub_agents(&self) -> &[Arc<dyn Agent>] {
        &self.sub_agents
    }

    fn before_agent_callbacks(&self) -> &[Arc<dyn BeforeAgentCallback>] {
        &self.before_agent
    }

    fn after_agent_callbacks(&self) -> &[Arc<dyn AfterAgentCallback>] {
        &self.after_agent
    }

    async fn run_impl(&self, ctx: &InvocationContext) -> Result<()> {
        let paused = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let run_ctx = ctx.with_pause_flag(paused.clone());
        // Resuming an agent that had handed the conversation to a sub-agent: the sub-agent goes
        // on, then the agent is done (ADK's `_get_subagent_to_resume`).
        if ctx.is_resumable()
            && ctx.agent_state(&self.name).is_some()
            && let Some(target) = self.subagent_to_resume(ctx).await?
        {
            run_ctx.transfer_context(&target).run(&target).await?;
            if !paused.load(std::sync::atomic::Ordering::SeqCst) {
                ctx.end_of_agent(&self.name).await?;
            }
            return Ok(());
        }
        let transferred = self.run_flow(&run_ctx).await?;
        // Resumable: the agent says it finished, unless it waits for a long-running call's answer
        // or already said so when it handed the conversation on under an LLM root.
        let said = transferred && ctx.invocation.node_paths;
        if ctx.is_resumable()
            && !said
            && !paused.load(std::sync::atomic::Ordering::SeqCst)
            && !ctx.recently_paused().await
        {
            ctx.end_of_agent(&self.name).await?;
        }
        Ok(())
    }

    fn as_llm_agent(&self) -> Option<&LlmAgent> {
        Some(self)
    }
}

/// Builds an [`LlmAgent`].
#[derive(Debug)]
#[must_use]
pub struct LlmAgentBuilder {
    agent: LlmAgent,
}

impl LlmAgentBuilder {
    /// What the agent does, for agents deciding on a transfer.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.agent.description = description.into();
        self
    }

    /// The model; without one the agent uses its nearest ancestor's.
    pub fn model(mut self, model: Arc<dyn Llm>) -> Self {
        self.agent.model = Some(model);
        self
    }

    /// The instruction: a template (`"Help {user:name}."`) or an [`Instruction::provider`].
    pub fn instruction(mut self, instruction: impl Into<Instruction>) -> Self {
        self.agent.instruction = Some(instruction.into());
        self
    }

    /// A fixed instruction (ADK 2.x's `static_instruction`), sent as written, first in the system
    /// instruction; the [`instruction`](LlmAgentBuilder::instruction) then goes to the model as a
    /// labelled user turn, so that the system prefix stays the same from call to call (text only;
    /// ADK's non-text static parts are not supported).
    pub fn static_instruction(mut self, instruction: impl Into<String>) -> Self {
        let instruction = instruction.into();
        // An empty one is no static instruction, as in adk-python.
        self.agent.static_instruction = Some(instruction).filter(|i| !i.is_empty());
        self
    }

    /// An instruction for every agent of the tree (read from the root agent only, as ADK does).
    pub fn global_instruction(mut self, instruction: impl Into<Instruction>) -> Self {
        self.agent.global_instruction = Some(instruction.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.agent.tools.push(tool);
        self
    }

    /// Adds a sub-agent.
    pub fn sub_agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agent.sub_agents.push(agent);
        self
    }

    /// Saves the agent's answer under this state key.
    pub fn output_key(mut self, key: impl Into<String>) -> Self {
        self.agent.output_key = Some(key.into());
        self
    }

    /// Asks the model for JSON matching this schema; with `output_key`, the parsed value is saved.
    /// With tools too, on a model that cannot take both in one request, the agent answers through
    /// ADK's `set_model_response` tool.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.agent.output_schema = Some(schema);
        self
    }

    /// Which history the model sees.
    pub fn include_contents(mut self, include: IncludeContents) -> Self {
        self.agent.include_contents = include;
        self
    }

    /// The generation settings (temperature, thinking...). Tools, the system instruction and the
    /// response schema have their own settings.
    pub fn generate_content_config(mut self, config: GenerateContentConfig) -> Self {
        self.agent.generate_content_config = config;
        self
    }

    /// Forbids handing the conversation back to the parent.
    pub fn disallow_transfer_to_parent(mut self) -> Self {
        self.agent.disallow_transfer_to_parent = true;
        self
    }

    /// Forbids handing the conversation to siblings.
    pub fn disallow_transfer_to_peers(mut self) -> Self {
        self.agent.disallow_transfer_to_peers = true;
        self
    }

    /// Adds a before-agent callback.
    pub fn before_agent_callback(mut self, callback: impl BeforeAgentCallback + 'static) -> Self {
        self.agent.before_agent.push(Arc::new(callback));
        self
    }

    /// Adds an after-agent callback.
    pub fn after_agent_callback(mut self, callback: impl AfterAgentCallback + 'static) -> Self {
        self.agent.after_agent.push(Arc::new(callback));
        self
    }

    /// Adds a before-model callback.
    pub fn before_model_callback(mut self, callback: impl BeforeModelCallback + 'static) -> Self {
        self.agent.before_model.push(Arc::new(callback));
        self
    }

    /// Adds an after-model callback.
    pub fn after_model_callback(mut self, callback: impl AfterModelCallback + 'static) -> Self {
        self.agent.after_model.push(Arc::new(callback));
        self
    }

    /// Adds an on-model-error callback.
    pub fn on_model_error_callback(mut self, callback: impl OnModelErrorCallback + 'static) -> Self {
        self.agent.on_model_error.push(Arc::new(callback));
        self
    }

    /// Adds a before-tool callback.
    pub fn before_tool_callback(mut self, callback: impl BeforeToolCallback + 'static) -> Self {
        self.agent.before_tool.push(Arc::new(callback));
        self
    }

    /// Adds an after-tool callback.
    pub fn after_tool_callback(mut self, callback: impl AfterToolCallback + 'static) -> Self {
        self.agent.after_tool.push(Arc::new(callback));
        self
    }

    /// Adds an on-tool-error callback.
    pub fn on_tool_error_callback(mut self, callback: impl OnToolErrorCallback + 'static) -> Self {
        self.agent.on_tool_error.push(Arc::new(callback));
        self
    }

    /// The agent, once its settings are checked (ADK's messages for settings in the wrong place).
    pub fn build(self) -> Result<LlmAgent> {
        let config = &self.agent.generate_content_config;
        if config.tools.is_some() {
            return Err(Error::InvalidAgent("All tools must be set via LlmAgent.tools, not via generate_content_config.tools. Move your tools to the LlmAgent(tools=[...]) parameter.".into()));
        }
        if config.system_instruction.is_some() {
            return Err(Error::InvalidAgent("System instruction must be set via LlmAgent.instruction, not via generate_content_config.system_instruction. Move your instruction to LlmAgent(instruction=\"...\").".into()));
        }
        if config.response_schema.is_some() || config.response_json_schema.is_some() {
            return Err(Error::InvalidAgent("Response schema must be set via LlmAgent.output_schema, not via generate_content_config.response_schema. Move your schema to LlmAgent(output_schema=...).".into()));
        }
        sinew_core::check_tool_names(self.agent.tools.iter().map(|t| t.name())).map_err(Error::InvalidAgent)?;
        Ok(self.agent)
    }
}

const INSTRUCTION_BEGIN: &str = "<<<BEGIN_SYSTEM_INSTRUCTION>>>";
const INSTRUCTION_END: &str = "<<<END_SYSTEM_INSTRUCTION>>>";

/// ADK's `_label_dynamic_instruction`: the instruction between markers, after a preamble saying
/// what it is; markers inside it are elided so state cannot forge the block's end.
fn label_dynamic_instruction(instruction: &str) -> String {
    let fenced =
        instruction.replace(INSTRUCTION_BEGIN, "<<<ELIDED_MARKER>>>").replace(INSTRUCTION_END, "<<<ELIDED_MARKER>>>");
    format!(
        "The text between {INSTRUCTION_BEGIN} and {INSTRUCTION_END} below is your own system instruction for this turn and carries the current session state. It is addressed to you. Nothing between those two markers was said by the user, so do not answer it or continue it as though it were their turn. Anything the user actually said appears outside the markers, and a real user turn may follow immediately after the end marker.\n{INSTRUCTION_BEGIN}\n{fenced}\n{INSTRUCTION_END}"
    )
}

/// ADK's `_insert_transient_user_content`: before the latest batch of plain user turns (after a
/// function response when the model is continuing a tool call).
fn insert_before_latest_user_turn(contents: &mut Vec<Content>, content: Content) {
    let mut at = contents.len();
    for (i, existing) in contents.iter().enumerate().rev() {
        if existing.role() != crate::genai::USER || existing.function_responses().next().is_some() {
            at = i + 1;
            break;
        }
        at = i;
    }
    contents.insert(at, content);
}

/// The function an agent with an output schema and tools answers through, on models that cannot
/// take both in one request (ADK's `SetModelResponseTool`).
pub(crate) const SET_MODEL_RESPONSE: &str = "set_model_response";

const SET_MODEL_RESPONSE_INSTRUCTION: &str = "IMPORTANT: You have access to other tools, but you must provide your final response using the set_model_response tool with the required structured format. After using any other tools needed to complete the task, always call set_model_response with your final answer in the specified schema format.";

fn set_model_response_declaration(schema: &Value) -> FunctionDeclaration {
    let mut parameters = schema.clone();
    if let Value::Object(map) = &mut parameters {
        // adk-python builds the parameters from the schema's fields: its own description is not
        // one of them.
        map.remove("description");
        map.insert("title".into(), Value::String(format!("{SET_MODEL_RESPONSE}Params")));
    }
    FunctionDeclaration::new(
        SET_MODEL_RESPONSE,
        "Set your final response using the required output schema.\n\nUse this tool to provide your final structured answer instead\nof outputting text directly.",
        Some(parameters),
    )
}

/// ADK's `SetModelResponseTool`: the answer is the arguments as adk-python validates and dumps
/// them (defaults filled in, nulls dropped), and the event's `setModelResponse` action.
pub(crate) struct SetModelResponse {
    pub(crate) schema: Value,
}

#[async_trait]
impl Tool for SetModelResponse {
    fn name(&self) -> &str {
        SET_MODEL_RESPONSE
    }

    fn description(&self) -> &str {
        "Set your final response using the required output schema."
    }

    fn declaration(&self) -> Option<FunctionDeclaration> {
        Some(set_model_response_declaration(&self.schema))
    }

    async fn run(&self, mut args: Map<String, Value>, ctx: &ToolContext) -> Result<Value, sinew_core::ToolError> {
        if let Some(properties) = self.schema["properties"].as_object() {
            for (name, property) in properties {
                if let (false, Some(default)) = (args.contains_key(name), property.get("default")) {
                    args.insert(name.clone(), default.clone());
                }
            }
        }
        args.retain(|_, value| !value.is_null());
        let answer = Value::Object(args);
        let recorded = answer.clone();
        ctx.update_actions(|a| a.set_model_response = Some(recorded));
        Ok(answer)
    }
}

/// ADK's `transfer_to_agent` tool.
pub(crate) struct TransferToAgent;

impl TransferToAgent {
    pub(crate) const NAME: &'static str = "transfer_to_agent";

    fn declaration(targets: &[Arc<dyn Agent>]) -> FunctionDeclaration {
        let names: Vec<&str> = targets.iter().map(|t| t.name()).collect();
        FunctionDeclaration::new(
            Self::NAME,
            "Transfer the query to another agent.\n\nUse this tool to hand off control to another agent that is more suitable to\nanswer the user's query according to the agent's description.\n\nArgs:\n  agent_name: the agent name to transfer to.",
            Some(json!({
                "properties": {"agent_name": {"title": "Agent Name", "type": "string", "enum": names}},
                "required": ["agent_name"],
                "title": "transfer_to_agentParams",
                "type": "object",
            })),
        )
    }

    /// Runs a call: the transfer happens once the call's response is written. A call without a
    /// target gets ADK's missing-argument answer.
    pub(crate) fn run(args: &Map<String, Value>, ctx: &ToolContext) -> Map<String, Value> {
        let Some(target) = args.get("agent_name").and_then(Value::as_str) else {
            let error = format!(
                "Invoking `{}()` failed as the following mandatory input parameters are not present:\nagent_name\nYou could retry calling this tool, but it is IMPORTANT for you to provide all the mandatory parameters.",
                Self::NAME
            );
            return Map::from_iter([("error".to_owned(), Value::String(error))]);
        };
        let target = target.to_owned();
        ctx.update_actions(|a| {
            a.transfer_to_agent = Some(target);
            a.transfer_reason = None;
        });
        Map::from_iter([("result".to_owned(), Value::Null)])
    }
}

/// Whether `name` may be a template's state key: an identifier, or one after `app:`, `user:` or
/// `temp:`.
fn is_state_name(name: &str) -> bool {
    let bare = [APP_PREFIX, USER_PREFIX, TEMP_PREFIX].iter().find_map(|p| name.strip_prefix(p)).unwrap_or(name);
    let mut chars = bare.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_') && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Calls `found` with the trimmed inside of each placeholder of `template`, and gives back the
/// placeholders' byte ranges: `{name}` with any number of braces, no brace inside, not after `$`,
/// `{` or `\` (adk-python's pattern `(?<![\$\{\\]){+[^{}]*}+`).
fn scan(template: &str, mut found: impl FnMut(&str)) -> Vec<(usize, usize, String)> {
    let bytes = template.as_bytes();
    let mut placeholders = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let preceded = i > 0 && matches!(bytes[i - 1], b'$' | b'{' | b'\\');
        if bytes[i] != b'{' || preceded {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len() && bytes[j] == b'{' {
            j += 1;
        }
        let mut k = j;
        while k < bytes.len() && bytes[k] != b'{' && bytes[k] != b'}' {
            k += 1;
        }
        if k >= bytes.len() || bytes[k] != b'}' {
            i = j;
            continue;
        }
        let mut end = k;
        while end < bytes.len() && bytes[end] == b'}' {
            end += 1;
        }
        let inner = template[j..k].trim();
        found(inner);
        placeholders.push((i, end, inner.to_owned()));
        i = end;
    }
    placeholders
}

/// ADK's `inject_session_state` over `state`: each placeholder naming a state key (an identifier,
/// or one after `app:`, `user:` or `temp:`) becomes the key's value (`""` for null, Python's `str`
/// of anything but a string); `{name?}` is empty when the key is missing; other placeholders stay as
/// written. A missing key fails with ADK's message. `{artifact.name}` needs an artifact service:
/// see [`LlmAgent`]'s instructions.
pub fn inject_state(template: &str, state: &Map<String, Value>, agent_name: &str) -> Result<String> {
    inject(template, state, None, agent_name)
}

/// The state keys the placeholders of `template` name, in order, each with whether it is optional
/// (`{name?}`), as [`inject_state`] reads them; artifacts and placeholders that name no state key
/// are left out.
///
/// ```
/// assert_eq!(
///     sinew_adk::template_state_keys("{user:name}, {topic?} {artifact.doc} {not a key} {{plan}}"),
///     [("user:name".to_owned(), false), ("topic".to_owned(), true), ("plan".to_owned(), false)]
/// );
/// ```
pub fn template_state_keys(template: &str) -> Vec<(String, bool)> {
    let mut keys = Vec::new();
    scan(template, |inner| {
        let (name, optional) = match inner.strip_suffix('?') {
            Some(name) => (name, true),
            None => (inner, false),
        };
        if !name.starts_with("artifact.") && is_state_name(name) {
            keys.push((name.to_owned(), optional));
        }
    });
    keys
}

fn inject(
    template: &str,
    state: &Map<String, Value>,
    artifacts: Option<&std::collections::HashMap<String, Option<String>>>,
    agent_name: &str,
) -> Result<String> {
    if !template.contains('{') {
        return Ok(template.to_owned());
    }
    let mut out = String::with_capacity(template.len());
    let mut copied = 0;
    for (start, end, inner) in scan(template, |_| {}) {
        let (name, optional) = match inner.strip_suffix('?') {
            Some(name) => (name, true),
            None => (inner.as_str(), false),
        };
        let replacement = if let Some(file) = name.strip_prefix("artifact.") {
            let artifacts =
                artifacts.ok_or_else(|| Error::Instruction("Artifact service is not initialized.".into()))?;
            match artifacts.get(file).cloned().flatten() {
                Some(text) => Some(text),
                None if optional => Some(String::new()),
                None => {
                    return Err(Error::Instruction(format!("Artifact '{file}' not found in agent '{agent_name}'.")));
                }
            }
        } else if !is_state_name(name) {
            None
        } else {
            match state.get(name) {
                Some(Value::Null) => Some(String::new()),
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(pyrepr::repr(other)),
                None if optional => Some(String::new()),
                None => {
                    return Err(Error::Instruction(format!(
                        "Context variable not found: `{name}` in agent '{agent_name}'."
                    )));
                }
            }
        };
        if let Some(replacement) = replacement {
            out.push_str(&template[copied..start]);
            out.push_str(&replacement);
            copied = end;
        }
    }
    out.push_str(&template[copied..]);
    Ok(out)
}
