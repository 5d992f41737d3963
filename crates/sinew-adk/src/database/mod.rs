//! Session services over SQL databases in adk-python's own schema, so that sinew and adk-python
#![cfg_attr(
    not(any(feature = "sqlite", feature = "postgres")),
    allow(dead_code, reason = "the helpers of the SQL services")
)]
//! open each other's databases: [`SqliteSessionService`] and [`PostgresSessionService`].
//!
//! The schema is `DatabaseSessionService`'s v1 (google-adk 2.13):
//!
//! ```sql
//! adk_internal_metadata(key PK, value)                  -- ("schema_version", "1")
//! sessions(app_name, user_id, id PK, state JSON, create_time, update_time)
//! events(id, app_name, user_id, session_id PK, invocation_id, timestamp, event_data JSON)
//! app_states(app_name PK, state, update_time);  user_states(app_name, user_id PK, state, update_time)
//! ```
//!
//! Times are naive UTC datetimes with microseconds (SQLite: `YYYY-MM-DD HH:MM:SS.ffffff` text;
//! PostgreSQL: `timestamp without time zone`); JSON is text on SQLite and `jsonb` on PostgreSQL;
//! `event_data` is the event's snake_case storage form ([`crate::to_snake_value`]).
//!
//! Appends behave as adk-python's: one transaction each, serialized per session, and a session
//! object that another writer has overtaken is refused with [`Error::StaleSession`]: one read
//! from the service must still be at the stored revision it was read at; one without a revision
//! (built by hand, read from JSON) is refused when the stored session was updated after its
//! `last_update_time` and its newest stored event is not the object's last one.

use std::fmt;

use chrono::{DateTime, NaiveDateTime};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::event::Event;
use crate::session::{APP_PREFIX, TEMP_PREFIX, USER_PREFIX};
use crate::types::Session;

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

#[cfg(feature = "postgres")]
pub use postgres::PostgresSessionService;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSessionService;

/// The `adk_internal_metadata` key and the schema version these services read and write.
pub(crate) const SCHEMA_VERSION_KEY: &str = "schema_version";
pub(crate) const SCHEMA_VERSION: &str = "1";

/// What a database that is not in schema v1 gets.
pub(crate) fn unsupported_schema(found: &str) -> Error {
    store_error(
        "opening the session database",
        format!(
            "the database has ADK session schema version {found}; sinew-adk reads and writes version {SCHEMA_VERSION} \
             (adk-python's `adk migrate session` converts a legacy database)"
        ),
    )
}

/// A database error with what was being done.
pub(crate) fn store_error(what: &'static str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Error {
    Error::Store(Box::new(StoreError { what, source: source.into() }))
}

#[derive(Debug)]
struct StoreError {
    what: &'static str,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// `seconds` as adk-python stores it: a naive UTC datetime rounded to the microsecond, half to
/// even (Python's `datetime.fromtimestamp`).
pub(crate) fn to_datetime(seconds: f64) -> NaiveDateTime {
    let mut whole = seconds.floor();
    let mut micros = ((seconds - whole) * 1e6).round_ties_even();
    if micros >= 1e6 {
        whole += 1.0;
        micros -= 1e6;
    }
    // Saturating casts: a time outside chrono's range becomes the epoch, never a panic.
    #[allow(clippy::cast_possible_truncation)]
    let (whole, micros) = (whole as i64, micros as u32);
    DateTime::from_timestamp(whole, micros * 1000).unwrap_or_default().naive_utc()
}

/// A stored datetime as seconds, as adk-python reads it back (`datetime.timestamp()` of UTC).
pub(crate) fn to_seconds(time: NaiveDateTime) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let micros = time.and_utc().timestamp_micros() as f64;
    micros / 1e6
}

/// SQLAlchemy's SQLite text form of a datetime.
pub(crate) fn datetime_text(time: NaiveDateTime) -> String {
    time.format("%Y-%m-%d %H:%M:%S%.6f").to_string()
}

/// Parses SQLAlchemy's SQLite text form (microseconds optional, as `CURRENT_TIMESTAMP` writes).
pub(crate) fn parse_datetime_text(text: &str) -> Option<NaiveDateTime> {
    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f"))
        .ok()
}

/// The state a reader sees: the session's keys, then the app's and the user's with their prefix.
pub(crate) fn merge_state(
    app: &Map<String, Value>,
    user: &Map<String, Value>,
    mut session: Map<String, Value>,
) -> Map<String, Value> {
    for (key, value) in app {
        session.insert(format!("{APP_PREFIX}{key}"), value.clone());
    }
    for (key, value) in user {
        session.insert(format!("{USER_PREFIX}{key}"), value.clone());
    }
    session
}

/// A state column's JSON object; anything else is a damaged row.
pub(crate) fn state_object(value: Value) -> Result<Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(store_error("reading a state", format!("a state column holds {other}, not a JSON object"))),
    }
}

/// An event to store: `temp:` keys trimmed from its delta, as every service stores it.
pub(crate) fn without_temp(event: &Event) -> Event {
    let mut stored = event.clone();
    stored.actions.state_delta.retain(|key, _| !key.starts_with(TEMP_PREFIX));
    stored
}

/// An `events` row's `event_data`: the snake_case storage form.
pub(crate) fn event_data(event: &Event) -> Result<Value> {
    crate::json::to_snake_value(event).map_err(|e| store_error("encoding an event", e))
}

/// The event an `events` row holds. As in adk-python, the row's id and invocation id win over
/// the JSON's, and the row's time stands in when the JSON has none.
pub(crate) fn event_from_row(id: String, invocation_id: String, timestamp: f64, data: Option<Value>) -> Result<Event> {
    let mut data = match data {
        Some(Value::Object(map)) => map,
        None | Some(Value::Null) => Map::new(),
        Some(other) => return Err(store_error("reading an event", format!("event {id} holds {other}, not an object"))),
    };
    data.insert("id".into(), Value::String(id.clone()));
    data.insert("invocation_id".into(), Value::String(invocation_id));
    data.entry("timestamp").or_insert_with(|| timestamp.into());
    serde_json::from_value(Value::Object(data))
        .map_err(|e| store_error("reading an event", format!("event {id} is not an ADK event: {e}")))
}

/// The revision a stored update time stands for: the time in microseconds.
pub(crate) fn revision(update_time: f64) -> i64 {
    // Saturating: a damaged time gives a revision no session object holds.
    #[allow(clippy::cast_possible_truncation)]
    let micros = (update_time * 1e6).round() as i64;
    micros
}

/// adk-python's stale-writer check. A session object read from the service carries the
/// revision it was read at, and the stored session must still be at it. One without (built by
/// hand, read from JSON) may be behind the stored session only when it has seen the newest
/// stored event (`newest_stored_event`, asked only then).
pub(crate) fn check_fresh(
    session: &Fresh,
    stored_update: f64,
    newest_stored_event: impl FnOnce() -> Result<Option<String>>,
) -> Result<()> {
    let fresh = match session.revision {
        Some(read_at) => read_at == revision(stored_update),
        None => stored_update <= session.last_update_time || newest_stored_event()? == session.last_event_id,
    };
    if fresh { Ok(()) } else { Err(Error::StaleSession { id: session.id.clone() }) }
}

/// What an append needs to know of the session object, owned so blocking work can take it.
#[derive(Clone, Debug)]
pub(crate) struct Fresh {
    pub(crate) app_name: String,
    pub(crate) user_id: String,
    pub(crate) id: String,
    pub(crate) last_update_time: f64,
    pub(crate) last_event_id: Option<String>,
    pub(crate) revision: Option<i64>,
}

impl Fresh {
    pub(crate) fn of(session: &Session) -> Self {
        Fresh {
            app_name: session.app_name.clone(),
            user_id: session.user_id.clone(),
            id: session.id.clone(),
            last_update_time: session.last_update_time,
            last_event_id: session.events.last().map(|e| e.id.to_string()),
            revision: session.storage_revision,
        }
    }
}

/// How an append ended in the database.
pub(crate) enum Appended {
    /// Stored; the session was updated at this time (as stored).
    Stored(f64),
    /// The same event was stored before: nothing changed.
    AlreadyStored,
}

/// Finishes an append in the session object: the event goes in, and the session's time and
/// revision become the stored ones.
pub(crate) fn commit_to_session(session: &mut Session, event: Event, appended: Appended) -> Event {
    match appended {
        Appended::AlreadyStored => event,
        Appended::Stored(update_time) => {
            let stored = crate::session::apply_event(session, event);
            session.last_update_time = update_time;
            session.storage_revision = Some(revision(update_time));
            stored
        }
    }
}

/// A session read from a service at `update_time`.
pub(crate) fn stored_session(
    app_name: impl Into<String>,
    user_id: impl Into<String>,
    id: impl Into<String>,
    state: Map<String, Value>,
    events: Vec<Event>,
    update_time: f64,
) -> Session {
    let mut session = Session::new(app_name, user_id, id);
    session.state = state;
    session.events = events;
    session.last_update_time = update_time;
    session.storage_revision = Some(revision(update_time));
    session
}

/// A session id as given (verbatim, as `DatabaseSessionService` keeps it), or a fresh uuid when
/// none (or a blank one) is.
pub(crate) fn session_id_or_new(session_id: Option<&str>) -> String {
    session_id.filter(|id| !id.trim().is_empty()).map_or_else(crate::event::uuid4, str::to_owned)
}

#[cfg(test)]
mod tests;
