//! What can go wrong with sessions.

use std::path::PathBuf;

/// A session store's error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No session has the id given.
    #[error("session {0} not found")]
    NotFound(String),
    /// A session id that cannot name a file or row (empty, a path separator, `..`).
    #[error("invalid session id {0:?}")]
    InvalidId(String),
    /// Reading or writing a session file failed.
    #[error("cannot access {}", path.display())]
    Io {
        /// The file or directory accessed.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A session could not be written as, or read from, JSON.
    #[error("session {id} is not valid session JSON")]
    Json {
        /// The session's id.
        id: String,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored session has a newer format version than this build reads.
    #[error("session {id} has format version {found}; this build reads up to {supported}")]
    UnsupportedFormat {
        /// The session's id.
        id: String,
        /// The format version the session was saved with.
        found: u32,
        /// The newest format version this build reads.
        supported: u32,
    },
    /// The database failed (connecting, a migration, or a statement).
    #[error("session database error while {doing}")]
    Database {
        /// What the store was doing, such as `opening the database`.
        doing: &'static str,
        /// The database's (or the connection pool's) error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// `Result` with [`SessionError`].
pub type Result<T, E = SessionError> = std::result::Result<T, E>;

impl SessionError {
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn database<E: Into<Box<dyn std::error::Error + Send + Sync>>>(
        doing: &'static str,
    ) -> impl FnOnce(E) -> Self {
        move |source| SessionError::Database { doing, source: source.into() }
    }
}

/// Checks that `id` can safely name a file or a row.
pub(crate) fn check_id(id: &str) -> Result<()> {
    let bad = id.is_empty()
        || id.len() > 255
        || id.starts_with('.')
        || id.chars().any(|c| matches!(c, '/' | '\\' | '\0') || c.is_control());
    if bad { Err(SessionError::InvalidId(id.to_owned())) } else { Ok(()) }
}
