//! [`FileArtifactService`]: artifacts on disk, in adk-python's `FileArtifactService` layout.

use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ArtifactService, ArtifactVersion};
use crate::error::{Error, Result};
use crate::genai::Part;

const METADATA: &str = "metadata.json";
const VERSIONS: &str = "versions";

/// The metadata document beside each version (adk-python's `FileArtifactVersion`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metadata {
    #[serde(default)]
    version: i64,
    #[serde(default)]
    canonical_uri: String,
    #[serde(default)]
    custom_metadata: Map<String, Value>,
    #[serde(default)]
    create_time: f64,
    #[serde(default)]
    mime_type: Option<String>,
    #[serde(default)]
    file_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
}

/// Artifacts under a root directory, laid out as adk-python's `FileArtifactService` lays them
/// out, so either opens the other's files:
///
/// ```text
/// root/apps/{app}/users/{user}/sessions/{session}/artifacts/{path}/versions/{v}/{name}  (+ metadata.json)
/// root/apps/{app}/users/{user}/artifacts/{path}/versions/{v}/{name}                     (`user:` files)
/// ```
///
/// A save is written into a staging directory and published with one rename, so a reader never
/// sees half a version. File names may hold `/` (nested directories); absolute paths, `..`, a
/// `versions` component and the name `metadata.json` are refused, as are app, user and session
/// ids that are not one plain path segment.
#[derive(Clone, Debug)]
pub struct FileArtifactService {
    root: PathBuf,
}

fn invalid(message: String) -> Error {
    Error::InvalidRequest(message)
}

fn io(what: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| crate::database::store_error(what, e)
}

/// `value` as one directory name, or an error.
fn segment<'a>(value: &'a str, what: &str) -> Result<&'a str> {
    let plain = !value.is_empty()
        && value != "."
        && value != ".."
        && !value.contains(['/', '\\', '\0'])
        && Path::new(value).components().count() == 1;
    if plain { Ok(value) } else { Err(invalid(format!("{what} `{value}` is not a plain path segment"))) }
}

impl FileArtifactService {
    /// Artifacts under `root` (created when missing).
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(io("creating the artifact directory"))?;
        let root = root.canonicalize().map_err(io("opening the artifact directory"))?;
        Ok(FileArtifactService { root })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn user_root(&self, app: &str, user: &str) -> Result<PathBuf> {
        Ok(self.root.join("apps").join(segment(app, "app name")?).join("users").join(segment(user, "user id")?))
    }

    /// The directory of `filename`'s versions' parent (the artifact's own directory).
    fn artifact_dir(&self, app: &str, user: &str, session: &str, filename: &str) -> Result<PathBuf> {
        let base = self.user_root(app, user)?;
        let (scope, name) = match filename.strip_prefix("user:") {
            Some(name) => (base.join("artifacts"), name),
            None => (base.join("sessions").join(segment(session, "session id")?).join("artifacts"), filename),
        };
        let relative = Path::new(name);
        let mut dir = scope;
        for component in relative.components() {
            match component {
                Component::Normal(part) => dir.push(part),
                Component::CurDir => {}
                _ => return Err(invalid(format!("artifact name `{filename}` leaves its directory"))),
            }
        }
        if relative
            .components()
            .any(|c| c.as_os_str().to_string_lossy().trim_end_matches([' ', '.']).eq_ignore_ascii_case(VERSIONS))
        {
            return Err(invalid(format!(
                "artifact name `{filename}` has a `{VERSIONS}` component, which stores versions"
            )));
        }
        if dir.file_name().is_none_or(|n| n.to_string_lossy().eq_ignore_ascii_case(METADATA)) {
            return Err(invalid(format!("artifact name `{filename}` is reserved")));
        }
        Ok(dir)
    }

    /// The published versions of an artifact, ascending.
    fn versions(dir: &Path) -> Vec<i64> {
        let Ok(entries) = std::fs::read_dir(dir.join(VERSIONS)) else { return Vec::new() };
        let mut versions: Vec<i64> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        versions.sort_unstable();
        versions
    }

    fn metadata(dir: &Path, version: i64) -> Option<Metadata> {
        let text = std::fs::read_to_string(dir.join(VERSIONS).join(version.to_string()).join(METADATA)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The version's `file://` URI, percent-encoded as Python's `Path.as_uri()` writes it.
    fn uri(dir: &Path, version: i64) -> String {
        /// What `urllib.parse.quote` leaves as is: letters, digits, `_.-~`, and `/`.
        const PATH: &percent_encoding::AsciiSet =
            &percent_encoding::NON_ALPHANUMERIC.remove(b'_').remove(b'.').remove(b'-').remove(b'~').remove(b'/');
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let path = dir.join(VERSIONS).join(version.to_string()).join(name);
        let bytes = path.as_os_str().as_encoded_bytes();
        format!("file://{}", percent_encoding::percent_encode(bytes, PATH))
    }

    fn version_of(dir: &Path, version: i64) -> ArtifactVersion {
        // The URI comes from the layout, never from the document: the document is data.
        let meta = Self::metadata(dir, version);
        ArtifactVersion {
            version,
            canonical_uri: Self::uri(dir, version),
            custom_metadata: meta.as_ref().map(|m| m.custom_metadata.clone()).unwrap_or_default(),
            create_time: meta.as_ref().map_or(0.0, |m| m.create_time),
            mime_type: meta.and_then(|m| m.mime_type),
        }
    }

    fn pick(dir: &Path, version: Option<i64>) -> Option<i64> {
        let versions = Self::versions(dir);
        match version {
            None => versions.last().copied(),
            Some(v) => versions.contains(&v).then_some(v),
        }
    }

    fn save(&self, dir: &Path, filename: &str, artifact: &Part, custom_metadata: Map<String, Value>) -> Result<i64> {
        let versions_dir = dir.join(VERSIONS);
        std::fs::create_dir_all(&versions_dir).map_err(io("saving an artifact"))?;
        let name = dir.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        // Reserve the next version: its staging directory is created exclusively, so two savers
        // never take the same number.
        let mut version = Self::versions(dir).last().map_or(0, |v| v + 1);
        let staging = loop {
            let staging = versions_dir.join(format!(".{version}.pending"));
            match std::fs::create_dir(&staging) {
                Ok(()) if !versions_dir.join(version.to_string()).exists() => break staging,
                Ok(()) => {
                    let _ = std::fs::remove_dir(&staging);
                    version += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => version += 1,
                Err(e) => return Err(io("saving an artifact")(e)),
            }
        };
        let written = (|| -> Result<()> {
            let (mime_type, display_name) = if let Some(blob) = &artifact.inline_data {
                let data = blob.data.as_deref().ok_or_else(|| invalid("artifact inline_data has no data".into()))?;
                std::fs::write(staging.join(&name), data).map_err(io("saving an artifact"))?;
                (
                    Some(blob.mime_type.clone().unwrap_or_else(|| "application/octet-stream".into())),
                    blob.display_name.clone(),
                )
            } else if let Some(text) = &artifact.text {
                std::fs::write(staging.join(&name), text).map_err(io("saving an artifact"))?;
                (None, None)
            } else {
                return Err(invalid("an artifact must have inline_data or text".into()));
            };
            let meta = Metadata {
                version,
                canonical_uri: Self::uri(dir, version),
                custom_metadata,
                create_time: crate::event::now_seconds(),
                mime_type,
                file_name: filename.to_owned(),
                display_name,
            };
            let json = serde_json::to_vec_pretty(&meta).map_err(|e| invalid(e.to_string()))?;
            std::fs::write(staging.join(METADATA), json).map_err(io("saving an artifact"))?;
            std::fs::rename(&staging, versions_dir.join(version.to_string())).map_err(io("saving an artifact"))
        })();
        if let Err(error) = written {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(error);
        }
        Ok(version)
    }

    fn load(dir: &Path, version: Option<i64>) -> Option<Part> {
        let version = Self::pick(dir, version)?;
        let name = dir.file_name()?;
        let payload = dir.join(VERSIONS).join(version.to_string()).join(name);
        match Self::metadata(dir, version).and_then(|m| m.mime_type.map(|t| (t, m.display_name))) {
            Some((mime_type, display_name)) => {
                let data = std::fs::read(payload).ok()?;
                let mut part = Part::inline_data(mime_type, data);
                if let Some(blob) = part.inline_data.as_deref_mut() {
                    blob.display_name = display_name;
                }
                Some(part)
            }
            None => std::fs::read_to_string(payload).ok().map(Part::text),
        }
    }

    /// The artifacts below `scope`, by name relative to it.
    fn names(scope: &Path, prefix: &str, into: &mut Vec<String>) {
        fn walk(dir: &Path, scope: &Path, prefix: &str, into: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else { return };
            for entry in entries.filter_map(|e| e.ok()) {
                let path = entry.path();
                if !entry.file_type().is_ok_and(|t| t.is_dir()) || entry.file_name() == VERSIONS {
                    continue;
                }
                if path.join(VERSIONS).is_dir()
                    && !FileArtifactService::versions(&path).is_empty()
                    && let Ok(relative) = path.strip_prefix(scope)
                {
                    into.push(format!("{prefix}{}", relative.to_string_lossy()));
                }
                walk(&path, scope, prefix, into);
            }
        }
        walk(scope, scope, prefix, into);
    }

    async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
        tokio::task::spawn_blocking(f).await.map_err(|e| crate::database::store_error("running a blocking task", e))?
    }
}

#[async_trait]
impl ArtifactService for FileArtifactService {
    async fn save_artifact_with_metadata(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        artifact: Part,
        custom_metadata: Map<String, Value>,
    ) -> Result<i64> {
        let dir = self.artifact_dir(app, user, session, filename)?;
        let (this, filename) = (self.clone(), filename.to_owned());
        Self::blocking(move || this.save(&dir, &filename, &artifact, custom_metadata)).await
    }

    async fn load_artifact(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        version: Option<i64>,
    ) -> Result<Option<Part>> {
        let dir = self.artifact_dir(app, user, session, filename)?;
        Self::blocking(move || Ok(Self::load(&dir, version))).await
    }

    async fn artifact_version(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
        version: Option<i64>,
    ) -> Result<Option<ArtifactVersion>> {
        let dir = self.artifact_dir(app, user, session, filename)?;
        Self::blocking(move || Ok(Self::pick(&dir, version).map(|v| Self::version_of(&dir, v)))).await
    }

    async fn list_artifact_versions(
        &self,
        app: &str,
        user: &str,
        session: &str,
        filename: &str,
    ) -> Result<Vec<ArtifactVersion>> {
        let dir = self.artifact_dir(app, user, session, filename)?;
        Self::blocking(move || Ok(Self::versions(&dir).into_iter().map(|v| Self::version_of(&dir, v)).collect())).await
    }

    async fn list_artifact_keys(&self, app: &str, user: &str, session: &str) -> Result<Vec<String>> {
        let base = self.user_root(app, user)?;
        let sessions = base.join("sessions").join(segment(session, "session id")?).join("artifacts");
        Self::blocking(move || {
            let mut names = Vec::new();
            Self::names(&sessions, "", &mut names);
            Self::names(&base.join("artifacts"), "user:", &mut names);
            names.sort();
            Ok(names)
        })
        .await
    }

    async fn list_versions(&self, app: &str, user: &str, session: &str, filename: &str) -> Result<Vec<i64>> {
        let dir = self.artifact_dir(app, user, session, filename)?;
        Self::blocking(move || Ok(Self::versions(&dir))).await
    }

    async fn delete_artifact(&self, app: &str, user: &str, session: &str, filename: &str) -> Result<()> {
        let dir = self.artifact_dir(app, user, session, filename)?;
        Self::blocking(move || {
            match std::fs::remove_dir_all(dir.join(VERSIONS)) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("deleting an artifact")(e)),
            }
            // The artifact's directory goes too when nothing is nested below it.
            let _ = std::fs::remove_dir(&dir);
            Ok(())
        })
        .await
    }
}
