//! ADK's agent configurations (the `AgentConfig` family that `root_agent.yaml` files are read
//! with): the structs generated from google-adk's own models, and the small shared types they
//! refer to.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::generated::*;

/// A sub-agent of a configuration: another YAML file, or code (adk-python's `AgentRefConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentRefConfig {
    /// The path of the sub-agent's YAML file, relative to this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_path: Option<String>,
    /// A code reference to the sub-agent (`my_library.agents.helper`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

impl AgentRefConfig {
    /// A reference to the YAML file `path`.
    pub fn path(path: impl Into<String>) -> Self {
        AgentRefConfig { config_path: Some(path.into()), code: None }
    }
}

/// A reference to code: a callback, a schema, a model (adk-python's `CodeConfig`). In Rust the
/// code is registered under this name (see [`Registry`](crate::Registry)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CodeConfig {
    /// The name the code is known by.
    pub name: String,
}

impl CodeConfig {
    /// A reference to `name`.
    pub fn new(name: impl Into<String>) -> Self {
        CodeConfig { name: name.into() }
    }
}

/// A tool of an agent configuration, by name, with the arguments of a tool factory
/// (adk-python's `ToolConfig`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolConfig {
    /// The tool's name.
    pub name: String,
    /// A factory's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
}

impl ToolConfig {
    /// The tool `name`, without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        ToolConfig { name: name.into(), args: None }
    }
}
