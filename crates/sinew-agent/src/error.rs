//! Errors of the agent API.

use std::path::PathBuf;

/// What can go wrong outside a run: restoring state, resuming, continuing.
///
/// Failures *during* a run (a model error, a failing tool) are not errors: they end up in the
/// history and the events, where the host and the model can see them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("invalid agent state json")]
    Json(#[source] serde_json::Error),
    #[error("cannot access {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unsupported snapshot format version {found} (this build reads version {supported})")]
    UnsupportedFormat { found: u32, supported: u32 },
    #[error("there is no suspended run to resume")]
    NotSuspended,
    #[error("no decision for pending tool call {0}")]
    MissingDecision(String),
    #[error("tool call {0} is not pending")]
    UnknownToolCall(String),
    #[error("decision {decision} does not fit pending tool call {tool_call_id}")]
    InvalidDecision { tool_call_id: String, decision: &'static str },
    #[error("cannot continue: {0}")]
    InvalidContext(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
