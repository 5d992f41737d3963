//! Where tokens live between requests and between runs.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Mutex;

use super::ClientCredentials;
use crate::error::McpError;

/// The most a token file may hold.
const FILE_LIMIT: u64 = 1024 * 1024;

/// Tokens issued for one MCP server.
#[derive(Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct Tokens {
    /// The bearer token.
    pub access_token: String,
    /// Trades for a new access token when this one expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `Bearer`, or `DPoP` for a token bound to the client's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("access_token", &"****")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "****"))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("token_type", &self.token_type)
            .finish()
    }
}

impl Tokens {
    /// Reads a token endpoint's answer (RFC 6749 §5.1) received at `now`; `DPoP` tokens only
    /// when the request carried a proof.
    pub(super) fn from_response(answer: &Value, now: u64, dpop: bool) -> Result<Self, McpError> {
        let Some(access_token) = answer.get("access_token").and_then(Value::as_str).filter(|t| !t.is_empty()) else {
            return Err(McpError::Authorization("the token endpoint answered without an access_token".into()));
        };
        let token_type = answer.get("token_type").and_then(Value::as_str).unwrap_or("Bearer");
        let known = token_type.eq_ignore_ascii_case("bearer") || (dpop && token_type.eq_ignore_ascii_case("dpop"));
        if !known {
            return Err(McpError::Authorization(format!(
                "the token endpoint issued a {token_type} token; {} supported",
                if dpop { "Bearer and DPoP are" } else { "only Bearer is" }
            )));
        }
        // A lifetime over ten years is taken as ten years (it sizes nothing, but stays sane).
        let expires_in = answer.get("expires_in").and_then(Value::as_u64).map(|s| s.min(10 * 365 * 24 * 3600));
        Ok(Tokens {
            access_token: access_token.to_owned(),
            refresh_token: answer.get("refresh_token").and_then(Value::as_str).map(str::to_owned),
            expires_at: expires_in.map(|s| now.saturating_add(s)),
            scope: answer.get("scope").and_then(Value::as_str).map(str::to_owned),
            token_type: Some(token_type.to_owned()),
        })
    }

    /// Whether the token is bound to a DPoP key.
    pub(super) fn is_dpop(&self) -> bool {
        self.token_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }

    /// Whether the token expires within `margin` of `now`.
    pub(super) fn expires_within(&self, margin: Duration, now: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now.saturating_add(margin.as_secs()))
    }
}

/// What an [`OAuth`](super::OAuth) client keeps for one server: its registration and tokens.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredAuthorization {
    /// The client's identity at the authorization server (none for a JWT bearer grant made
    /// without one).
    pub client: Option<ClientCredentials>,
    /// The authorization server's issuer identifier.
    pub issuer: String,
    /// Where tokens are refreshed.
    pub token_endpoint: String,
    /// The `resource` the tokens were issued for.
    pub resource: String,
    /// The tokens.
    pub tokens: Tokens,
}

/// Keeps authorizations, by MCP server URL. Implement it to keep tokens in a keychain or a
/// database.
#[async_trait]
pub trait TokenStore: Send + Sync {
    /// The authorization kept for `server`, if any.
    async fn load(&self, server: &str) -> Option<StoredAuthorization>;
    /// Keeps `authorization` for `server`, replacing what was there.
    async fn save(&self, server: &str, authorization: &StoredAuthorization) -> Result<(), McpError>;
}

/// Keeps authorizations in memory, for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    entries: Mutex<HashMap<String, StoredAuthorization>>,
}

#[async_trait]
impl TokenStore for MemoryTokenStore {
    async fn load(&self, server: &str) -> Option<StoredAuthorization> {
        self.entries.lock().await.get(server).cloned()
    }

    async fn save(&self, server: &str, authorization: &StoredAuthorization) -> Result<(), McpError> {
        self.entries.lock().await.insert(server.to_owned(), authorization.clone());
        Ok(())
    }
}

/// Keeps authorizations in one JSON file readable by its owner only (mode `0600` on Unix),
/// written whole through a temporary file and a rename. Every store of one path in a process
/// shares one lock, so servers saving at once lose nothing; two processes saving at once keep
/// the last one's file whole.
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// The lock of each token file path in this process.
fn path_lock(path: &std::path::Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<std::sync::Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let locks = LOCKS.get_or_init(Default::default);
    let mut locks = locks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    locks.entry(path.to_path_buf()).or_default().clone()
}

impl FileTokenStore {
    /// A store in `path` (created on the first save, with its directory).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        FileTokenStore { lock: path_lock(&path), path }
    }

    /// Every authorization in the file. A file that cannot be read as one (broken, too large,
    /// of another format) is moved aside to `NAME.unreadable` when `for_save`, so the save
    /// that follows loses nothing that could be recovered.
    async fn read_all(&self, for_save: bool) -> HashMap<String, StoredAuthorization> {
        let path = self.path.clone();
        let read = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
            use std::io::Read as _;
            let mut bytes = Vec::new();
            std::fs::File::open(&path)?.take(FILE_LIMIT + 1).read_to_end(&mut bytes)?;
            Ok(bytes)
        })
        .await;
        let Ok(Ok(bytes)) = read else { return HashMap::new() };
        let parsed = if bytes.len() as u64 > FILE_LIMIT {
            Err(format!("it is over {FILE_LIMIT} bytes"))
        } else {
            serde_json::from_slice(&bytes).map_err(|e| e.to_string())
        };
        match parsed {
            Ok(all) => all,
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "the MCP token file cannot be read: ignoring it");
                if for_save {
                    let aside = self.path.with_extension("unreadable");
                    if let Err(error) = std::fs::rename(&self.path, &aside) {
                        tracing::warn!(%error, "cannot move the unreadable MCP token file aside");
                    }
                }
                HashMap::new()
            }
        }
    }
}

#[async_trait]
impl TokenStore for FileTokenStore {
    async fn load(&self, server: &str) -> Option<StoredAuthorization> {
        let _guard = self.lock.lock().await;
        self.read_all(false).await.remove(server)
    }

    async fn save(&self, server: &str, authorization: &StoredAuthorization) -> Result<(), McpError> {
        let _guard = self.lock.lock().await;
        let mut all = self.read_all(true).await;
        all.insert(server.to_owned(), authorization.clone());
        let bytes = serde_json::to_vec_pretty(&all).map_err(|e| McpError::Serialization(e.to_string()))?;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || write_private(&path, &bytes))
            .await
            .map_err(|e| McpError::Io(e.to_string()))?
            .map_err(|e| McpError::Io(format!("cannot write the MCP token file: {e}")))
    }
}

/// Writes `bytes` to `path` through a sibling temporary file created with mode `0600`.
fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)?;
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let temporary = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("tokens"),
        std::process::id(),
        WRITES.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = std::fs::OpenOptions::new();
    // A new file of our own: never one planted at this name, nor a link's target.
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(&temporary)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all()).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}
