//! Sessions as JSON files in a directory (REQ-216, REQ-217): `{dir}/{session_id}.json`, pretty
//! printed, with the format version; written atomically; merges locked across processes.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;

use crate::error::{Result, SessionError, check_id};
use crate::model::{SESSION_FORMAT_VERSION, Session};
use crate::store::SessionStore;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io { path: path.to_path_buf(), source }
}

fn file_of(dir: &Path, session_id: &str) -> Result<PathBuf> {
    check_id(session_id)?;
    Ok(dir.join(format!("{session_id}.json")))
}

/// Writes `session` to `{dir}/{session_id}.json`: to a temporary file beside it, synced, then
/// renamed over the old one (and the directory synced), so a crash leaves the old file or the new
/// one. Creates `dir` if needed.
pub fn save_session(dir: &Path, session: &Session) -> Result<()> {
    let path = file_of(dir, &session.session_id)?;
    fs::create_dir_all(dir).map_err(io(dir))?;
    let json = serde_json::to_vec_pretty(session)
        .map_err(|source| SessionError::Json { id: session.session_id.clone(), source })?;
    let mut temp = tempfile::Builder::new()
        .prefix(&format!(".{}.", session.session_id))
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io(dir))?;
    temp.write_all(&json).map_err(io(temp.path()))?;
    temp.as_file().sync_all().map_err(io(temp.path()))?;
    temp.persist(&path).map_err(|e| SessionError::Io { path: path.clone(), source: e.error })?;
    // The rename itself must reach the disk.
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
    Ok(())
}

/// Reads `{dir}/{session_id}.json`.
pub fn load_session(dir: &Path, session_id: &str) -> Result<Session> {
    let path = file_of(dir, session_id)?;
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(SessionError::NotFound(session_id.to_owned()));
        }
        Err(error) => return Err(io(&path)(error)),
    };
    parse(session_id, &bytes)
}

/// Parses a session's JSON, refusing format versions newer than this build's.
pub(crate) fn parse(session_id: &str, bytes: &[u8]) -> Result<Session> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Version {
        format_version: u32,
    }
    let json = |source| SessionError::Json { id: session_id.to_owned(), source };
    let version: Version = serde_json::from_slice(bytes).map_err(json)?;
    if version.format_version > SESSION_FORMAT_VERSION {
        return Err(SessionError::UnsupportedFormat {
            id: session_id.to_owned(),
            found: version.format_version,
            supported: SESSION_FORMAT_VERSION,
        });
    }
    serde_json::from_slice(bytes).map_err(json)
}

/// The ids of the sessions in `dir`, most recently modified first (ties by id). A missing
/// directory has none.
pub fn list_session_ids(dir: &Path) -> Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(io(dir)(error)),
    };
    let mut found: Vec<(SystemTime, String)> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(dir))?;
        let name = entry.file_name();
        let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else { continue };
        if id.starts_with('.') {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified()).map_err(io(&entry.path()))?;
        found.push((modified, id.to_owned()));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, id)| id).collect())
}

/// The sessions in `dir` of one agent, most recently modified first.
pub fn load_sessions_for_agent(dir: &Path, agent_id: &str) -> Result<Vec<Session>> {
    let mut sessions = Vec::new();
    for id in list_session_ids(dir)? {
        match load_session(dir, &id) {
            Ok(session) if session.agent_id == agent_id => sessions.push(session),
            // Deleted meanwhile.
            Ok(_) | Err(SessionError::NotFound(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(sessions)
}

/// Removes `{dir}/{session_id}.json`; `NotFound` if it is not there.
pub fn delete_session(dir: &Path, session_id: &str) -> Result<()> {
    let path = file_of(dir, session_id)?;
    match fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(SessionError::NotFound(session_id.to_owned()))
        }
        Err(error) => Err(io(&path)(error)),
    }
}

/// Merges `session` into the stored one under an exclusive lock on `{dir}/.{id}.lock`, which
/// serializes merges of one session across threads and processes.
pub fn merge_session(dir: &Path, session: &Session) -> Result<()> {
    check_id(&session.session_id)?;
    fs::create_dir_all(dir).map_err(io(dir))?;
    let lock_path = dir.join(format!(".{}.lock", session.session_id));
    let lock = File::options().create(true).truncate(false).write(true).open(&lock_path).map_err(io(&lock_path))?;
    lock.lock().map_err(io(&lock_path))?;
    let merged = match load_session(dir, &session.session_id) {
        Ok(mut stored) => {
            stored.merge(session.clone());
            stored
        }
        Err(SessionError::NotFound(_)) => session.clone(),
        Err(error) => return Err(error),
    };
    save_session(dir, &merged)
    // The lock is released when `lock` is dropped.
}

/// A [`SessionStore`] over a directory of JSON files. Blocking file work runs on tokio's
/// blocking pool.
#[derive(Clone, Debug)]
pub struct JsonFileStore {
    dir: PathBuf,
}

impl JsonFileStore {
    /// A store in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        JsonFileStore { dir: dir.into() }
    }

    /// The directory holding the sessions, one `{session_id}.json` file each.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    async fn blocking<T: Send + 'static>(&self, f: impl FnOnce(&Path) -> Result<T> + Send + 'static) -> Result<T> {
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || f(&dir))
            .await
            .map_err(|e| SessionError::Io { path: self.dir.clone(), source: std::io::Error::other(e.to_string()) })?
    }
}

#[async_trait]
impl SessionStore for JsonFileStore {
    async fn save(&self, session: &Session) -> Result<()> {
        let session = session.clone();
        self.blocking(move |dir| save_session(dir, &session)).await
    }

    async fn merge(&self, session: &Session) -> Result<()> {
        let session = session.clone();
        self.blocking(move |dir| merge_session(dir, &session)).await
    }

    async fn load(&self, session_id: &str) -> Result<Session> {
        let id = session_id.to_owned();
        self.blocking(move |dir| load_session(dir, &id)).await
    }

    async fn list_ids(&self) -> Result<Vec<String>> {
        self.blocking(list_session_ids).await
    }

    async fn delete(&self, session_id: &str) -> Result<()> {
        let id = session_id.to_owned();
        self.blocking(move |dir| delete_session(dir, &id)).await
    }

    async fn load_for_agent(&self, agent_id: &str) -> Result<Vec<Session>> {
        let agent = agent_id.to_owned();
        self.blocking(move |dir| load_sessions_for_agent(dir, &agent)).await
    }
}
