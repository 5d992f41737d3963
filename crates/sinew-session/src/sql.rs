//! What the SQL stores share: a session is a header row plus one row per loop, each loop's record
//! as JSON, ordered by a per-session sequence number.

use crate::error::{Result, SessionError};
use crate::model::{LoopRecord, SESSION_FORMAT_VERSION, Session, SpawnRef};

/// A session's loops as `(loop_id, record JSON)` rows, one per loop id: a repeated id keeps the
/// first one's place and the last one's record, as [`Session::merge`] would.
pub(crate) fn loop_rows(session: &Session) -> Result<Vec<(&str, String)>> {
    let mut rows: Vec<(&str, String)> = Vec::with_capacity(session.loops.len());
    for record in &session.loops {
        let json = to_json(&session.session_id, record)?;
        match rows.iter_mut().find(|(id, _)| *id == record.loop_id) {
            Some(row) => row.1 = json,
            None => rows.push((&record.loop_id, json)),
        }
    }
    Ok(rows)
}

pub(crate) fn spawn_ref_json(session: &Session) -> Result<Option<String>> {
    session.parent_spawn_ref.as_ref().map(|spawn| to_json(&session.session_id, spawn)).transpose()
}

fn to_json(session_id: &str, value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|source| SessionError::Json { id: session_id.to_owned(), source })
}

/// A session's header row, as the stores read it back.
pub(crate) struct HeaderRow {
    pub(crate) session_id: String,
    pub(crate) agent_id: String,
    pub(crate) format_version: i64,
    pub(crate) created_at: i64,
    pub(crate) updated_at: i64,
    pub(crate) parent_spawn_ref: Option<String>,
}

impl HeaderRow {
    /// The session without its loops, refusing format versions newer than this build's.
    pub(crate) fn into_session(self) -> Result<Session> {
        let id = self.session_id;
        let found = u32::try_from(self.format_version).unwrap_or(u32::MAX);
        if found > SESSION_FORMAT_VERSION {
            return Err(SessionError::UnsupportedFormat { id, found, supported: SESSION_FORMAT_VERSION });
        }
        let parent_spawn_ref = match self.parent_spawn_ref {
            Some(json) => Some(from_json::<SpawnRef>(&id, &json)?),
            None => None,
        };
        let mut session = Session::new(id, self.agent_id, 0);
        session.format_version = found;
        session.created_at = millis(self.created_at);
        session.updated_at = millis(self.updated_at);
        session.parent_spawn_ref = parent_spawn_ref;
        Ok(session)
    }
}

pub(crate) fn parse_loop(session_id: &str, json: &str) -> Result<LoopRecord> {
    from_json(session_id, json)
}

fn from_json<T: serde::de::DeserializeOwned>(session_id: &str, json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|source| SessionError::Json { id: session_id.to_owned(), source })
}

/// Milliseconds as the databases' signed 64-bit integers (good for 292 million years).
pub(crate) fn db_millis(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn millis(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}
