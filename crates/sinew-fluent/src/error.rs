//! sinew-fluent's errors.

use crate::contracts::ContractIssue;

/// What can go wrong building, compiling or running a pipeline.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A name breaks ADK's identifier rule.
    #[error("{0}")]
    InvalidName(String),
    /// Two nodes share a name.
    #[error("two nodes are named `{0}`: names must be unique in a pipeline")]
    DuplicateName(String),
    /// The IR cannot be compiled by this backend (an unknown model, a setting it cannot honour).
    #[error("{0}")]
    Compile(String),
    /// Steps read state no earlier step writes.
    #[error("{} contract issue(s): {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Contracts(Vec<ContractIssue>),
    /// AgentConfig YAML that cannot be read, or a node that cannot be written as YAML.
    #[error("AgentConfig YAML: {0}")]
    Yaml(String),
    /// The run took longer than its configured time limit.
    #[error("the run took longer than its time limit of {0:?}")]
    Timeout(std::time::Duration),
    /// sinew-adk failed.
    #[error(transparent)]
    Adk(#[from] sinew_adk::Error),
}

/// A result of sinew-fluent.
pub type Result<T, E = Error> = std::result::Result<T, E>;
