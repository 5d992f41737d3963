//! sinew-adk's errors.

/// What can go wrong in sinew-adk.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `create_session` with an id that exists (ADK's `AlreadyExistsError`).
    #[error("session already exists: {0}")]
    SessionExists(String),
    /// The session is not there (ADK's `SessionNotFoundError`).
    #[error("session not found: {0}")]
    SessionNotFound(String),
    /// The session object is older than what is stored: another writer appended to the session
    /// since it was read (ADK's `StaleSessionError`). Read the session again, then append.
    #[error("session {id} was modified in storage since it was read: read it again before appending")]
    StaleSession {
        /// The session's id.
        id: String,
    },
    /// The model failed: the provider's error.
    #[error("model: {0}")]
    Model(#[source] sinew_core::ProviderError),
    /// An agent is set up wrongly (a bad name, a missing model, settings in the wrong place).
    #[error("{0}")]
    InvalidAgent(String),
    /// A transfer to an agent that is not allowed (ADK's `ValueError`).
    #[error("{0}")]
    AgentNotFound(String),
    /// A transfer to an agent that is not in the agent tree: a model naming an agent that does
    /// not exist. Worded as adk-go words it; adk-python says `Transfer target agent '<name>' not
    /// found.` [`run_and_collect`](crate::run_and_collect) retries once with the valid names.
    #[error("failed to find agent: {name}")]
    UnknownAgent {
        /// The name the model gave.
        name: String,
    },
    /// An instruction could not be built (a missing state key).
    #[error("{0}")]
    Instruction(String),
    /// The invocation called the model more often than `RunConfig::max_llm_calls` allows.
    #[error("Max number of llm calls limit of `{0}` exceeded")]
    LlmCallsLimitExceeded(usize),
    /// A tool failed and no error callback answered for it.
    #[error("tool `{name}` failed: {source}")]
    Tool {
        /// The tool's name.
        name: String,
        /// The error the tool failed with.
        #[source]
        source: sinew_core::ToolError,
    },
    /// The run was dropped by its caller.
    #[error("the run was cancelled")]
    Cancelled,
    /// A request that cannot be served as given.
    #[error("{0}")]
    InvalidRequest(String),
    /// A session store failed.
    #[error("session store: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// sinew-adk's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
