//! Artifacts (ADK's `BaseArtifactService`): files an agent saves beside a session, versioned.
//! A file name starting with `user:` belongs to the user, shared by all their sessions of the app.
//! [`InMemoryArtifactService`] keeps them in memory, [`FileArtifactService`] on disk in
//! adk-python's layout.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::genai::Part;

mod file;

pub use file::FileArtifactService;

/// What is known of one version of an artifact (ADK's `ArtifactVersion`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ArtifactVersion {
    /// The version number: 0 for the first save, one more for each later save.
    pub version: i64,
    /// Where the payload is (`memory://…`, `file://…`).
    #[serde(alias = "canonical_uri")]
    pub canonical_uri: String,
    /// Metadata given when the version was saved (`customMetadata`); empty when none was.
    #[serde(default, alias = "custom_metadata")]
    pub custom_metadata: Map<String, Value>,
    /// When the version was saved, in seconds since the epoch.
    #[serde(alias = "create_time")]
    pub create_time: f64,
    /// The MIME type of a binary payload.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "mime_type")]
    pub mime_type: Option<String>,
}

/// Where artifacts live. Versions count from 0, one more per save.
#[async_trait]
pub trait ArtifactService: Send + Sync {
    /// Saves `artifact` as the next version of `filename`; gives that version.
    async fn save_artifact(&self, app: &str, user: &str, session: &str, filename: &str, artifact: Part) -> Result<i64> {
        self.save_artifact_with_metadata(app, user, session, filename, artifact, Map::new()).await
    }

    /// [`ArtifactService::save_artifact`] with metadata of the caller's, kept with the version.
    async fn save_artifact_with_metadata(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        artifact: Part,
        custom_metadata: Map<String, Value>,
    ) -> Result<i64>;

    /// What is known of the given version of `filename` (its latest when `None`).
    async fn artifact_version(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        version: Option<i64>,
    ) -> Result<Option<ArtifactVersion>>;

    /// What is known of every version of `filename`, oldest first.
    async fn list_artifact_versions(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
    ) -> Result<Vec<ArtifactVersion>>;

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
    files: Mutex<HashMap<String, Vec<(Part, ArtifactVersion)>>>,
}

impl InMemoryArtifactService {
    /// An empty service.
    pub fn new() -> Self {
        InMemoryArtifactService::default()
    }

    fn files(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<(Part, ArtifactVersion)>>> {
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

/// adk-python's in-memory URI of a version.
fn memory_uri(app: &str, user: &str, session: &str, filename: &str, version: i64) -> String {
    if filename.starts_with("user:") {
        format!("memory://apps/{app}/users/{user}/artifacts/{filename}/versions/{version}")
    } else {
        format!("memory://apps/{app}/users/{user}/sessions/{session}/artifacts/{filename}/versions/{version}")
    }
}

/// The version of `versions` that `version` names (the latest when `None`).
fn pick<T>(versions: &[T], version: Option<i64>) -> Option<&T> {
    match version {
        None => versions.last(),
        Some(v) => usize::try_from(v).ok().and_then(|v| versions.get(v)),
    }
}

#[async_trait]
impl ArtifactService for InMemoryArtifactService {
    async fn save_artifact_with_metadata(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        artifact: Part,
        custom_metadata: Map<String, Value>,
    ) -> Result<i64> {
        let mut files = self.files();
        let versions = files.entry(key(app, user, session, filename)).or_default();
        let version = i64::try_from(versions.len()).unwrap_or(i64::MAX);
        let meta = ArtifactVersion {
            version,
            canonical_uri: memory_uri(app, user, session, filename, version),
            custom_metadata,
            create_time: crate::event::now_seconds(),
            mime_type: artifact.inline_data.as_ref().and_then(|b| b.mime_type.clone()),
        };
        versions.push((artifact, meta));
        Ok(version)
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
        Ok(pick(versions, version).map(|(part, _)| part.clone()))
    }

    async fn artifact_version(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        version: Option<i64>,
    ) -> Result<Option<ArtifactVersion>> {
        let files = self.files();
        let Some(versions) = files.get(&key(app, user, session, filename)) else { return Ok(None) };
        Ok(pick(versions, version).map(|(_, meta)| meta.clone()))
    }

    async fn list_artifact_versions(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
    ) -> Result<Vec<ArtifactVersion>> {
        let files = self.files();
        let versions = files.get(&key(app, user, session, filename));
        Ok(versions.map(|v| v.iter().map(|(_, meta)| meta.clone()).collect()).unwrap_or_default())
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
