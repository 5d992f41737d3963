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
    /// The model failed: the provider's error.
    #[error("model: {0}")]
    Model(#[source] sinew_core::ProviderError),
    /// A request that cannot be served as given.
    #[error("{0}")]
    InvalidRequest(String),
    /// A session store failed.
    #[error("session store: {0}")]
    Store(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// sinew-adk's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
