//! Agents from ADK AgentConfig YAML (`root_agent.yaml`), as `adk api_server AGENTS_DIR` finds
//! them: one directory per app, the app's name the directory's.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};
use sinew_adk::{
    Agent, Error, IncludeContents, Llm, LlmAgent, LoopAgent, ParallelAgent, Result, SequentialAgent, Tool,
};

use crate::adk_api::is_app_name;

/// Sub-agents nest at most this deep (a `config_path` cycle ends here with an error).
const MAX_DEPTH: usize = 16;

/// Finds the model a name stands for.
type ModelResolver = Box<dyn Fn(&str) -> Option<Arc<dyn Llm>> + Send + Sync>;

/// What YAML agents are built from: models by name, tools by name.
pub struct AgentRegistry {
    models: ModelResolver,
    tools: HashMap<String, Arc<dyn Tool>>,
    /// MCP servers by name, with their tools.
    mcp_servers: HashMap<String, Vec<Arc<dyn Tool>>>,
}

impl std::fmt::Debug for AgentRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut tools: Vec<&String> = self.tools.keys().collect();
        tools.sort();
        f.debug_struct("AgentRegistry").field("tools", &tools).finish_non_exhaustive()
    }
}

impl AgentRegistry {
    /// Models come from `models` (a `provider/model` name in, a model out, `None` when unknown).
    pub fn new(models: impl Fn(&str) -> Option<Arc<dyn Llm>> + Send + Sync + 'static) -> Self {
        AgentRegistry { models: Box::new(models), tools: HashMap::new(), mcp_servers: HashMap::new() }
    }

    /// Makes the MCP server `name` available to agent definitions (which take all its `tools`),
    /// and each of its tools by its name.
    #[must_use]
    pub fn mcp_server(mut self, name: impl Into<String>, tools: Vec<Arc<dyn Tool>>) -> Self {
        for tool in &tools {
            self.tools.insert(tool.name().to_owned(), tool.clone());
        }
        self.mcp_servers.insert(name.into(), tools);
        self
    }

    /// The names of the MCP servers.
    pub fn mcp_server_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.mcp_servers.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }

    /// The agent an agent definition stands for: an `LlmAgent` on its model, with its instruction,
    /// its tools and every tool of its MCP servers, named after it (as an ADK name: other
    /// characters become `_`). Unknown models, tools and servers are errors naming them.
    pub fn definition_agent(&self, spec: &crate::chat::AgentDefinitionSpec) -> Result<Arc<dyn Agent>> {
        let model = (self.models)(&spec.model)
            .ok_or_else(|| Error::InvalidAgent(format!("no provider serves model `{}`", spec.model)))?;
        let mut builder = LlmAgent::builder(agent_name(&spec.name)).model(model);
        if !spec.instruction.is_empty() {
            builder = builder.instruction(spec.instruction.clone());
        }
        let mut names = std::collections::HashSet::new();
        for name in &spec.tools {
            let tool = self.tools.get(name).ok_or_else(|| {
                Error::InvalidAgent(format!("no tool named `{name}` (known: {})", self.tool_names().join(", ")))
            })?;
            if names.insert(tool.name().to_owned()) {
                builder = builder.tool(tool.clone());
            }
        }
        for server in &spec.mcp_servers {
            let tools = self.mcp_servers.get(server).ok_or_else(|| {
                Error::InvalidAgent(format!(
                    "no MCP server named `{server}` (known: {})",
                    self.mcp_server_names().join(", ")
                ))
            })?;
            for tool in tools {
                if names.insert(tool.name().to_owned()) {
                    builder = builder.tool(tool.clone());
                }
            }
        }
        Ok(Arc::new(builder.build()?))
    }

    /// Makes `tool` available by its name.
    #[must_use]
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.insert(tool.name().to_owned(), tool);
        self
    }

    /// The names of the tools.
    pub fn tool_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.tools.keys().map(String::as_str).collect();
        names.sort_unstable();
        names
    }
}

/// One agent of a YAML file (the fields of ADK's `*AgentConfig` sinew builds from).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentConfig {
    #[serde(default = "llm_agent")]
    agent_class: String,
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    sub_agents: Vec<SubAgent>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    instruction: Option<String>,
    #[serde(default)]
    static_instruction: Option<String>,
    #[serde(default)]
    disallow_transfer_to_parent: bool,
    #[serde(default)]
    disallow_transfer_to_peers: bool,
    #[serde(default)]
    output_key: Option<String>,
    #[serde(default)]
    output_schema: Option<Value>,
    #[serde(default)]
    include_contents: Option<String>,
    #[serde(default)]
    tools: Vec<ToolConfig>,
    #[serde(default)]
    generate_content_config: Option<Map<String, Value>>,
    /// `LoopAgent`'s.
    #[serde(default)]
    max_iterations: Option<usize>,
}

fn llm_agent() -> String {
    "LlmAgent".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubAgent {
    config_path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolConfig {
    name: String,
    /// Arguments of a tool factory; none of the registry's tools takes any.
    #[serde(default)]
    args: Option<Value>,
}

fn config_error(file: &Path, message: impl std::fmt::Display) -> Error {
    Error::InvalidAgent(format!("{}: {message}", file.display()))
}

impl AgentRegistry {
    /// The root agent of app `app` in `agents_dir` (`agents_dir/app/root_agent.yaml`). An app
    /// name that is not a plain identifier is refused before any file is read.
    pub fn load_app(&self, agents_dir: &Path, app: &str) -> Result<Arc<dyn Agent>> {
        if !is_app_name(app) {
            return Err(Error::InvalidAgent(format!("app name `{app}` is not a plain identifier")));
        }
        let dir = agents_dir.join(app);
        self.load_file(&dir, &dir.join("root_agent.yaml"), 0, false)
    }

    /// The apps of `agents_dir`: its subdirectories holding a `root_agent.yaml`, by name.
    pub fn app_names(agents_dir: &Path) -> Result<Vec<String>> {
        let entries = std::fs::read_dir(agents_dir).map_err(|e| config_error(agents_dir, e))?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().join("root_agent.yaml").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| is_app_name(name))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The agent of `file`; `inherited` says whether an agent above it has a model (an
    /// `LlmAgent` without one uses the nearest one's).
    fn load_file(&self, app_dir: &Path, file: &Path, depth: usize, inherited: bool) -> Result<Arc<dyn Agent>> {
        if depth > MAX_DEPTH {
            return Err(config_error(file, format!("sub-agents nest deeper than {MAX_DEPTH} (a config_path cycle?)")));
        }
        let text = std::fs::read_to_string(file).map_err(|e| config_error(file, e))?;
        let config: AgentConfig = serde_yaml_ng::from_str(&text).map_err(|e| config_error(file, e))?;
        let is_llm = matches!(config.agent_class.as_str(), "LlmAgent" | "Agent");
        let has_model = inherited || (is_llm && config.model.is_some());
        if is_llm && !has_model {
            return Err(config_error(
                file,
                format!("agent `{}` has no model, and no agent above it has one", config.name),
            ));
        }
        let mut sub_agents = Vec::with_capacity(config.sub_agents.len());
        for sub in &config.sub_agents {
            let path = sub_path(app_dir, file, &sub.config_path)?;
            sub_agents.push(self.load_file(app_dir, &path, depth + 1, has_model)?);
        }
        let name = config.name.clone();
        let description = config.description.clone();
        Ok(match config.agent_class.as_str() {
            "LlmAgent" | "Agent" => Arc::new(self.llm_agent(file, config, sub_agents)?),
            "SequentialAgent" => Arc::new(SequentialAgent::new(name, sub_agents).with_description(description)),
            "ParallelAgent" => Arc::new(ParallelAgent::new(name, sub_agents).with_description(description)),
            "LoopAgent" => {
                let mut agent = LoopAgent::new(name, sub_agents).with_description(description);
                if let Some(n) = config.max_iterations {
                    agent = agent.with_max_iterations(n);
                }
                Arc::new(agent)
            }
            other => return Err(config_error(file, format!("agent_class `{other}` is not one sinew builds"))),
        })
    }

    fn llm_agent(&self, file: &Path, config: AgentConfig, sub_agents: Vec<Arc<dyn Agent>>) -> Result<LlmAgent> {
        let mut builder = LlmAgent::builder(&config.name).description(&config.description);
        if let Some(model) = &config.model {
            let llm = (self.models)(model)
                .ok_or_else(|| config_error(file, format!("no provider serves model `{model}`")))?;
            builder = builder.model(llm);
        }
        if let Some(instruction) = config.instruction {
            builder = builder.instruction(instruction);
        }
        if let Some(instruction) = config.static_instruction {
            builder = builder.static_instruction(instruction);
        }
        if config.disallow_transfer_to_parent {
            builder = builder.disallow_transfer_to_parent();
        }
        if config.disallow_transfer_to_peers {
            builder = builder.disallow_transfer_to_peers();
        }
        if let Some(key) = config.output_key {
            builder = builder.output_key(key);
        }
        if let Some(schema) = config.output_schema {
            builder = builder.output_schema(schema);
        }
        match config.include_contents.as_deref() {
            None | Some("default") => {}
            Some("none") => builder = builder.include_contents(IncludeContents::None),
            Some(other) => {
                return Err(config_error(file, format!("include_contents `{other}` is not default or none")));
            }
        }
        if let Some(generate) = config.generate_content_config {
            let generate = serde_json::from_value(Value::Object(generate)).map_err(|e| config_error(file, e))?;
            builder = builder.generate_content_config(generate);
        }
        for tool in &config.tools {
            if tool.args.is_some() {
                return Err(config_error(file, format!("tool `{}` takes no args here", tool.name)));
            }
            let found = self.tools.get(&tool.name).ok_or_else(|| {
                config_error(file, format!("no tool named `{}` (known: {})", tool.name, self.tool_names().join(", ")))
            })?;
            builder = builder.tool(found.clone());
        }
        for sub in sub_agents {
            builder = builder.sub_agent(sub);
        }
        builder.build().map_err(|e| config_error(file, e))
    }
}

/// `name` as an ADK agent name: letters, digits and `_`, not starting with a digit, not `user`.
fn agent_name(name: &str) -> String {
    let mut out: String = name.trim().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) || out == "user" {
        out.insert_str(0, "agent_");
    }
    out
}

/// A sub-agent's file: relative to the file that names it, and inside the app's directory.
fn sub_path(app_dir: &Path, file: &Path, config_path: &str) -> Result<PathBuf> {
    let base = file.parent().unwrap_or(app_dir);
    let joined = base.join(config_path);
    let (root, path) = match (app_dir.canonicalize(), joined.canonicalize()) {
        (Ok(root), Ok(path)) => (root, path),
        (_, Err(e)) => return Err(config_error(&joined, e)),
        (Err(e), _) => return Err(config_error(app_dir, e)),
    };
    if !path.starts_with(&root) {
        return Err(config_error(file, format!("config_path `{config_path}` leaves the app's directory")));
    }
    Ok(path)
}
