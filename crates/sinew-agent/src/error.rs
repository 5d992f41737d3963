//! Errors of the agent API.

use std::path::PathBuf;

/// What can go wrong outside a run: restoring state, resuming, continuing.
///
/// Failures *during* a run (a model error, a failing tool) are not errors: they end up in the
/// history and the events, where the host and the model can see them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A history or snapshot could not be (de)serialized as JSON.
    #[error("invalid agent state json")]
    Json(#[source] serde_json::Error),
    /// A snapshot file could not be read or written.
    #[error("cannot access {}", path.display())]
    Io {
        /// The snapshot file's path.
        path: PathBuf,
        /// What the operating system reported.
        #[source]
        source: std::io::Error,
    },
    /// A snapshot's format version is not one this build reads.
    #[error("unsupported snapshot format version {found} (this build reads version {supported})")]
    UnsupportedFormat {
        /// The snapshot's `format_version`.
        found: u32,
        /// The version this build reads ([`crate::SNAPSHOT_FORMAT_VERSION`]).
        supported: u32,
    },
    /// A resume was asked for, but no run is suspended.
    #[error("there is no suspended run to resume")]
    NotSuspended,
    /// A call that waits for approval or a client-side result has no decision; holds its tool call id.
    #[error("no decision for pending tool call {0}")]
    MissingDecision(String),
    /// A decision names a tool call that is not pending; holds its id.
    #[error("tool call {0} is not pending")]
    UnknownToolCall(String),
    /// A decision does not fit its call: a `result` for a call that is not client-side.
    #[error("decision {decision} does not fit pending tool call {tool_call_id}")]
    InvalidDecision {
        /// The call the decision was for.
        tool_call_id: String,
        /// The decision's name: `approve`, `edit`, `reject` or `result`.
        decision: &'static str,
    },
    /// The context cannot be continued, resumed or branched as it is; says why.
    #[error("cannot continue: {0}")]
    InvalidContext(String),
    /// A schema is not valid JSON Schema; says what is wrong.
    #[cfg(feature = "schema")]
    #[error("invalid JSON Schema: {0}")]
    InvalidSchema(String),
    /// An extraction's run ended without an answer: it failed (the model call's error), was
    /// aborted, stopped by a hook or a limit, or suspended waiting for an approval.
    #[cfg(feature = "schema")]
    #[error("the run ended without an answer ({reason:?}){}", error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    NoAnswer {
        /// How the run ended.
        reason: sinew_core::EndReason,
        /// The model call's error, when it failed.
        error: Option<String>,
    },
    /// Every answer of an extraction, the retries included, was invalid.
    #[cfg(feature = "schema")]
    #[error("no valid answer after {attempts} attempts: {problem}")]
    InvalidAnswer {
        /// How many answers were read.
        attempts: u32,
        /// What was wrong with the last one.
        problem: String,
        /// The last answer as the model gave it (text, or the tool call's arguments as JSON).
        answer: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
