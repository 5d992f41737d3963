//! Artifacts (ADK's `BaseArtifactService`): files an agent saves beside a session, versioned.
//! A file name starting with `user:` belongs to the user, shared by all their sessions of the app.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use crate::error::Result;
use crate::genai::Part;

/// Where artifacts live. Versions count from 0, one more per save.
#[async_trait]
pub trait ArtifactService: Send + Sync {
    /// Saves `artifact` as the next version of `filename`; gives that version.
    async fn save_artifact(&self, app: &str, user: &str, session: &str, filename: &str, artifact: Part) -> Result<i64>;

    /// The given version of `filename`, or its latest; `None` when there is none.
    async fn load_artifact(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        version: Option<i64>,
    ) -> Result<Option<Part>>;

    /// The file names of the session's artifacts and of the user's, sorted.
    async fn list_artifact_keys(&self, app: &str, user: &str, session: &str) -> Result<Vec<String>>;

    /// The versions of `filename`, oldest first.
    async fn list_versions(&self, app: &str, user: &str, session: &str, filename: &str) -> Result<Vec<i64>>;

    /// Deletes every version of `filename`.
    async fn delete_artifact(&self, app: &str, user: &str, session: &str, filename: &str) -> Result<()>;
}

/// Artifacts in memory, lost when the process ends.
#[derive(Debug, Default)]
pub struct InMemoryArtifactService {
    files: Mutex<HashMap<String, Vec<Part>>>,
}

impl InMemoryArtifactService {
    /// An empty service.
    pub fn new() -> Self {
        InMemoryArtifactService::default()
    }

    fn files(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Part>>> {
        self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The storage key of a file: user files are shared by the user's sessions.
fn key(app: &str, user: &str, session: &str, filename: &str) -> String {
    if filename.starts_with("user:") {
        format!("{app}/{user}/user/{filename}")
    } else {
        format!("{app}/{user}/{session}/{filename}")
    }
}

#[async_trait]
impl ArtifactService for InMemoryArtifactService {
    async fn save_artifact(&self, app: &str, user: &str, session: &str, filename: &str, artifact: Part) -> Result<i64> {
        let mut files = self.files();
        let versions = files.entry(key(app, user, session, filename)).or_default();
        versions.push(artifact);
        Ok(i64::try_from(versions.len() - 1).unwrap_or(i64::MAX))
    }

    async fn load_artifact(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        version: Option<i64>,
    ) -> Result<Option<Part>> {
        let files = self.files();
        let Some(versions) = files.get(&key(app, user, session, filename)) else { return Ok(None) };
        Ok(match version {
            None => versions.last().cloned(),
            Some(v) => usize::try_from(v).ok().and_then(|v| versions.get(v)).cloned(),
        })
    }

    async fn list_artifact_keys(&self, app: &str, user: &str, session: &str) -> Result<Vec<String>> {
        let session_prefix = format!("{app}/{user}/{session}/");
        let user_prefix = format!("{app}/{user}/user/");
        let mut names: Vec<String> = self
            .files()
            .keys()
            .filter_map(|k| k.strip_prefix(&session_prefix).or_else(|| k.strip_prefix(&user_prefix)))
            .map(str::to_owned)
            .collect();
        names.sort();
        Ok(names)
    }

    async fn list_versions(&self, app: &str, user: &str, session: &str, filename: &str) -> Result<Vec<i64>> {
        let count = self.files().get(&key(app, user, session, filename)).map_or(0, Vec::len);
        Ok((0..count).filter_map(|v| i64::try_from(v).ok()).collect())
    }

    async fn delete_artifact(&self, app: &str, user: &str, session: &str, filename: &str) -> Result<()> {
        self.files().remove(&key(app, user, session, filename));
        Ok(())
    }
}
