//! The persistence seam.

use async_trait::async_trait;

use crate::error::Result;
use crate::model::Session;

/// Where sessions live. [`JsonFileStore`](crate::JsonFileStore) keeps them in a directory of JSON
/// files; every store passes the same conformance suite (the crate's `tests/it/conformance.rs`).
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Writes `session` whole, replacing what was stored under its id. Atomic: a reader (or a
    /// crash) sees the old version or the new one, never a mix.
    async fn save(&self, session: &Session) -> Result<()>;

    /// Adds `session`'s loops to the stored session (a loop with a known id replaces the stored
    /// one, new loops are appended in order); stores it as is if there is none. Safe against
    /// concurrent merges into the same session: none loses or duplicates a loop.
    async fn merge(&self, session: &Session) -> Result<()>;

    /// The stored session; `SessionError::NotFound` if there is none.
    async fn load(&self, session_id: &str) -> Result<Session>;

    /// Every stored session id, most recently updated first.
    async fn list_ids(&self) -> Result<Vec<String>>;

    /// Removes a session; `SessionError::NotFound` if there is none.
    async fn delete(&self, session_id: &str) -> Result<()>;

    /// The stored session, or a new empty one for `agent_id`, stored first. Concurrent callers
    /// get the same session: creation goes through [`SessionStore::merge`].
    async fn get_or_create(&self, session_id: &str, agent_id: &str) -> Result<Session> {
        match self.load(session_id).await {
            Err(crate::SessionError::NotFound(_)) => {
                self.merge(&Session::new(session_id, agent_id, sinew_core::now_ms())).await?;
                self.load(session_id).await
            }
            found => found,
        }
    }

    /// The sessions of one agent, most recently updated first.
    async fn load_for_agent(&self, agent_id: &str) -> Result<Vec<Session>> {
        let mut sessions = Vec::new();
        for id in self.list_ids().await? {
            match self.load(&id).await {
                Ok(session) if session.agent_id == agent_id => sessions.push(session),
                Ok(_) | Err(crate::SessionError::NotFound(_)) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(sessions)
    }
}
