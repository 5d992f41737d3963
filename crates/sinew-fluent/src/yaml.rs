//! The IR as ADK AgentConfig YAML, both ways: a pipeline built here is a directory `sinew serve`
//! (or `adk web`) serves, and a YAML agent is a node to extend here.
//!
//! One file per agent, as ADK lays them out: `root_agent.yaml` for the root, `<name>.yaml` for the
//! others, each sub-agent a `config_path` relative to its parent's file. The fields are the
//! generated configuration structs' (adk-python's own). What ADK holds as code has no YAML form
//! beyond a name: tools are written by name and models by name (a backend's
//! [`Registry`](crate::Registry) resolves them when reading), and a node that cannot be written
//! (sinew-fluent's own nodes, callbacks, a custom agent, a JSON output schema) is an error naming
//! it. A `produces::<T>()` schema is written as the code reference `T`; register it under that
//! name to read it back. `consumes::<T>()` is a check, not configuration: it is not written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::builder::{Agent, FanOut, Loop, Pipeline};
use crate::config::{
    AgentRefConfig, CodeConfig, LlmAgentConfig, LoopAgentConfig, ParallelAgentConfig, SequentialAgentConfig, ToolConfig,
};
use crate::error::{Error, Result};
use crate::ir::Node;

/// Sub-agents nest at most this deep when read (a `config_path` cycle ends here with an error).
const MAX_DEPTH: usize = 32;

/// The root agent's file, as ADK names it.
pub const ROOT_FILE: &str = "root_agent.yaml";

fn yaml_error(what: impl std::fmt::Display) -> Error {
    Error::Yaml(what.to_string())
}

/// The YAML files of the tree under `root`, by file name.
pub fn to_yaml_files(root: &Node) -> Result<BTreeMap<String, String>> {
    let root = crate::builder::finish(root.clone())?;
    let mut files = BTreeMap::new();
    write_node(&root, ROOT_FILE.to_owned(), &mut files)?;
    Ok(files)
}

/// Writes the tree under `root` into `dir` (made when missing), one file per agent.
pub fn write_yaml_dir(root: &Node, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| yaml_error(format!("{}: {e}", dir.display())))?;
    for (file, text) in to_yaml_files(root)? {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|e| yaml_error(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

fn file_of(node: &Node) -> String {
    format!("{}.yaml", node.name())
}

fn references(children: &[&Node]) -> Option<Vec<AgentRefConfig>> {
    (!children.is_empty()).then(|| children.iter().map(|c| AgentRefConfig::path(file_of(c))).collect())
}

fn to_text(config: &impl Serialize) -> Result<String> {
    serde_yaml_ng::to_string(config).map_err(yaml_error)
}

fn write_node(node: &Node, file: String, files: &mut BTreeMap<String, String>) -> Result<()> {
    let children = node.children();
    let text = match node {
        Node::Agent(agent) => {
            let name = &agent.config.name;
            let callbacks = &agent.callbacks;
            if !(callbacks.before_agent.is_empty()
                && callbacks.after_agent.is_empty()
                && callbacks.before_model.is_empty()
                && callbacks.after_model.is_empty()
                && callbacks.on_model_error.is_empty()
                && callbacks.before_tool.is_empty()
                && callbacks.after_tool.is_empty()
                && callbacks.on_tool_error.is_empty())
            {
                return Err(yaml_error(format!(
                    "`{name}` has callbacks given as code, which AgentConfig YAML cannot hold"
                )));
            }
            let mut config = agent.config.clone();
            config.sub_agents = references(&children);
            let mut tools: Vec<ToolConfig> = config.tools.take().unwrap_or_default();
            let mut seen: BTreeSet<String> = tools.iter().map(|t| t.name.clone()).collect();
            let names = agent.tools.iter().map(|t| t.name()).chain(agent.resource_tools.iter().map(|t| t.name()));
            for name in names {
                if seen.insert(name.to_owned()) {
                    tools.push(ToolConfig::new(name));
                }
            }
            config.tools = (!tools.is_empty()).then_some(tools);
            if agent.output_schema.is_some() && config.output_schema.is_none() {
                let contract = agent.produces.as_ref().ok_or_else(|| {
                    yaml_error(format!(
                        "`{name}` has an output schema given as JSON; AgentConfig YAML names a schema class: use produces::<T>()"
                    ))
                })?;
                config.output_schema = Some(CodeConfig::new(&contract.type_name));
            }
            to_text(&config)?
        }
        Node::Sequence(n) => {
            let mut config = n.config.clone();
            config.sub_agents = references(&children);
            to_text(&config)?
        }
        Node::Parallel(n) => {
            let mut config = n.config.clone();
            config.sub_agents = references(&children);
            to_text(&config)?
        }
        Node::Loop(n) => {
            let mut config = n.config.clone();
            config.sub_agents = references(&children);
            to_text(&config)?
        }
        other => {
            return Err(yaml_error(format!(
                "`{}` is a {} node, which ADK's AgentConfig has no class for",
                other.name(),
                other.kind()
            )));
        }
    };
    files.insert(file, text);
    for child in children {
        if file_of(child) == ROOT_FILE {
            return Err(yaml_error("a sub-agent named `root_agent` would take the root's file: rename it"));
        }
        write_node(child, file_of(child), files)?;
    }
    Ok(())
}

/// A file larger than this is refused.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// What has been read: the files open above the one being read, and every file read so far.
#[derive(Default)]
struct Reading {
    open: Vec<PathBuf>,
    read: BTreeSet<PathBuf>,
}

/// The agent tree of ADK's AgentConfig file `path` and the files it refers to. Each file is read
/// once (agent names are unique, so a file that two parents name is an error).
pub fn read_yaml_file(path: &Path) -> Result<Node> {
    let node = read_node(path, &mut Reading::default())?;
    crate::builder::finish(node)
}

/// The agent tree of `dir/root_agent.yaml` (an ADK app directory).
pub fn read_yaml_dir(dir: &Path) -> Result<Node> {
    read_yaml_file(&dir.join(ROOT_FILE))
}

/// The text of the regular file `path`, at most [`MAX_FILE_BYTES`] of it (a device or a pipe
/// named as an agent file is refused, a file that grows past the bound while read too).
fn read_bounded(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;

    let file = std::fs::File::open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::other(format!("more than an agent file may hold ({MAX_FILE_BYTES} bytes)")));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("not UTF-8"))
}

fn parse<T: DeserializeOwned>(path: &Path, value: serde_yaml_ng::Value) -> Result<T> {
    serde_yaml_ng::from_value(value).map_err(|e| yaml_error(format!("{}: {e}", path.display())))
}

fn read_node(path: &Path, reading: &mut Reading) -> Result<Node> {
    if reading.open.len() >= MAX_DEPTH {
        return Err(yaml_error(format!("{}: sub-agents nest deeper than {MAX_DEPTH} files", path.display())));
    }
    let canonical = std::fs::canonicalize(path).map_err(|e| yaml_error(format!("{}: {e}", path.display())))?;
    if reading.open.contains(&canonical) {
        return Err(yaml_error(format!("{}: refers to itself through its sub-agents", path.display())));
    }
    if !reading.read.insert(canonical.clone()) {
        return Err(yaml_error(format!("{}: is a sub-agent twice (an agent has one parent)", path.display())));
    }
    let text = read_bounded(&canonical).map_err(|e| yaml_error(format!("{}: {e}", path.display())))?;
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| yaml_error(format!("{}: {e}", path.display())))?;
    let class = value.get("agent_class").and_then(serde_yaml_ng::Value::as_str).unwrap_or("LlmAgent");
    // ADK accepts the class's bare name or its module path.
    let class = class.rsplit('.').next().unwrap_or_default().to_owned();
    reading.open.push(canonical);
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut children = |refs: Option<Vec<AgentRefConfig>>| -> Result<Vec<Node>> {
        let mut nodes = Vec::new();
        for reference in refs.unwrap_or_default() {
            match (reference.config_path, reference.code) {
                (Some(config_path), _) => nodes.push(read_node(&dir.join(config_path), reading)?),
                (None, Some(code)) => {
                    return Err(yaml_error(format!(
                        "{}: sub-agent `{code}` is a code reference; give it to the builder instead",
                        path.display()
                    )));
                }
                (None, None) => {
                    return Err(yaml_error(format!("{}: a sub-agent names neither a file nor code", path.display())));
                }
            }
        }
        Ok(nodes)
    };
    let node = match class.as_str() {
        "" | "LlmAgent" | "Agent" => {
            let mut config: LlmAgentConfig = parse(path, value)?;
            let delegates = children(config.sub_agents.take())?;
            Agent::from_config(config).delegate(delegates).into()
        }
        "SequentialAgent" => {
            let mut config: SequentialAgentConfig = parse(path, value)?;
            let steps = children(config.sub_agents.take())?;
            let mut pipeline = Pipeline::new(String::new());
            pipeline.node.config = config;
            steps.into_iter().fold(pipeline, Pipeline::step).into()
        }
        "ParallelAgent" => {
            let mut config: ParallelAgentConfig = parse(path, value)?;
            let branches = children(config.sub_agents.take())?;
            let mut fan_out = FanOut::new(String::new());
            fan_out.node.config = config;
            branches.into_iter().fold(fan_out, FanOut::branch).into()
        }
        "LoopAgent" => {
            let mut config: LoopAgentConfig = parse(path, value)?;
            let steps = children(config.sub_agents.take())?;
            let mut looped = Loop::new(String::new());
            looped.node.config = config;
            steps.into_iter().fold(looped, Loop::step).into()
        }
        other => {
            return Err(yaml_error(format!(
                "{}: agent_class `{other}` is not one of LlmAgent, SequentialAgent, ParallelAgent, LoopAgent",
                path.display()
            )));
        }
    };
    reading.open.pop();
    Ok(node)
}
