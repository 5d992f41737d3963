//! Sessions: what agents did, recorded and persisted.
//!
//! - [`Session`], [`LoopRecord`] and the link types: one record per run ("loop"), with its
//!   messages, usage, events and tree links (continuations, sub-agents, parallel branches).
//! - [`SessionRecorder`]: builds sessions from the agent events of any number of runs.
//! - [`SessionStore`]: persistence, with three stores that pass one conformance suite:
//!   [`JsonFileStore`] (a directory of JSON files), `SqliteStore` (one embedded database file)
//!   and `PostgresStore` (a database shared by several application instances).
//!
//! Features: `sqlite` (default) adds `SqliteStore`, with SQLite compiled in; `postgres` adds
//! `PostgresStore`, a pooled PostgreSQL client (tokio-postgres, deadpool).
//!
//! ```
//! use sinew_session::{Formation, SessionRecorder};
//!
//! let mut recorder = SessionRecorder::new(Formation::PerSessionId);
//! // for event in run { recorder.on_event(&event); }
//! for session in recorder.flush() {
//!     println!("{} loops in {}", session.loops.len(), session.session_id);
//! }
//! ```

mod error;
mod json;
mod model;
#[cfg(feature = "postgres")]
mod postgres;
mod recorder;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

pub use error::{Result, SessionError};
pub use json::{
    JsonFileStore, delete_session, list_session_ids, load_session, load_sessions_for_agent, merge_session, save_session,
};
pub use model::{
    ChildLoopRef, LoopConfigSnapshot, LoopEvent, LoopRecord, LoopStatus, ParallelGroupRecord, SESSION_FORMAT_VERSION,
    Session, SpawnRef,
};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use recorder::{EventRecording, Formation, SessionRecorder};
#[cfg(feature = "sqlite")]
pub use sqlite::{DEFAULT_SQLITE_CONNECTIONS, SqliteStore};
pub use store::SessionStore;
