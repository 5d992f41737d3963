//! Checkpoints: an agent's state as versioned JSON, to resume in the same or another process.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sinew_core::AgentMessage;

use crate::approval::Suspension;
use crate::error::{Error, Result};

/// The snapshot format this build writes and reads.
pub const SNAPSHOT_FORMAT_VERSION: u32 = 1;

/// An agent's state: identity, loop counters, system prompt, history and any suspended run.
/// Provider configuration and secrets are not part of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSnapshot {
    /// The snapshot format (`formatVersion` in the JSON); [`SNAPSHOT_FORMAT_VERSION`] when written by this build.
    pub format_version: u32,
    /// The agent's id, kept across restores.
    pub agent_id: String,
    /// The session the agent was in; restoring continues it.
    pub session_id: String,
    /// The latest run's loop id, the parent of the next continuation; `None` before any run.
    pub last_loop_id: Option<String>,
    /// The last loop number used, per `"{session_id}.{config_segment}"`, so restored loop ids do not repeat.
    pub loop_counters: BTreeMap<String, usize>,
    /// The system prompt; empty when none was set.
    pub system_prompt: String,
    /// The history, oldest first.
    pub messages: Vec<AgentMessage>,
    /// The suspended run waiting for decisions, if any; resume it after restoring.
    pub suspension: Option<Suspension>,
    /// When the snapshot was taken (ms since the epoch).
    pub created_at: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Version {
    format_version: u32,
}

impl AgentSnapshot {
    /// The snapshot as pretty-printed JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(Error::Json)
    }

    /// Parses a snapshot, refusing formats this build does not know.
    pub fn from_json(json: &str) -> Result<Self> {
        let Version { format_version } = serde_json::from_str(json).map_err(Error::Json)?;
        if format_version != SNAPSHOT_FORMAT_VERSION {
            return Err(Error::UnsupportedFormat { found: format_version, supported: SNAPSHOT_FORMAT_VERSION });
        }
        serde_json::from_str(json).map_err(Error::Json)
    }

    /// Writes the snapshot atomically: a temporary file beside `path`, synced, then renamed over it.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let io = |source| Error::Io { path: path.to_owned(), source };
        let json = self.to_json()?;
        let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(format!(".{}.tmp", std::process::id()));
        let tmp = path.with_file_name(tmp_name);
        let mut file = std::fs::File::create(&tmp).map_err(io)?;
        file.write_all(json.as_bytes()).and_then(|()| file.sync_all()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Reads a snapshot file written by [`AgentSnapshot::save`], refusing formats this build does not know.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        AgentSnapshot::from_json(&json)
    }
}
