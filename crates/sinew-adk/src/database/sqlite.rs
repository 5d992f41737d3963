//! [`SqliteSessionService`]: ADK sessions in one SQLite file, in the schema adk-python's
//! `DatabaseSessionService` (`sqlite+aiosqlite:///path`) uses, and able to open the files of its
//! stdlib `SqliteSessionService` (`sqlite:///path`) too.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, OptionalExtension as _, Transaction, TransactionBehavior, params};
use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::{
    Appended, Fresh, SCHEMA_VERSION, SCHEMA_VERSION_KEY, check_fresh, commit_to_session, datetime_text, event_data,
    event_from_row, merge_state, parse_datetime_text, session_id_or_new, state_object, store_error, stored_session,
    to_datetime, to_seconds, unsupported_schema, without_temp,
};
use crate::error::{Error, Result};
use crate::event::{Event, now_seconds};
use crate::session::{GetSessionConfig, SessionService, StateDeltas};
use crate::types::Session;

/// `DatabaseSessionService`'s schema v1 as SQLAlchemy creates it on SQLite (samples/17).
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS adk_internal_metadata (
	"key" VARCHAR(128) NOT NULL,
	value VARCHAR(256) NOT NULL,
	PRIMARY KEY ("key")
);
CREATE TABLE IF NOT EXISTS sessions (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	id VARCHAR(128) NOT NULL,
	state TEXT NOT NULL,
	create_time DATETIME NOT NULL,
	update_time DATETIME NOT NULL,
	PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS app_states (
	app_name VARCHAR(128) NOT NULL,
	state TEXT NOT NULL,
	update_time DATETIME NOT NULL,
	PRIMARY KEY (app_name)
);
CREATE TABLE IF NOT EXISTS user_states (
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	state TEXT NOT NULL,
	update_time DATETIME NOT NULL,
	PRIMARY KEY (app_name, user_id)
);
CREATE TABLE IF NOT EXISTS events (
	id VARCHAR(128) NOT NULL,
	app_name VARCHAR(128) NOT NULL,
	user_id VARCHAR(128) NOT NULL,
	session_id VARCHAR(128) NOT NULL,
	invocation_id VARCHAR(256) NOT NULL,
	timestamp DATETIME NOT NULL,
	event_data TEXT,
	PRIMARY KEY (id, app_name, user_id, session_id),
	FOREIGN KEY(app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_events_app_user_session_ts_id ON events (app_name, user_id, session_id, timestamp DESC, id DESC);
"#;

/// How long a statement waits for another connection's (or process's) write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections a service opens at most.
const MAX_CONNECTIONS: usize = 8;

/// How the file keeps times: which of adk-python's two SQLite services made it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// `DatabaseSessionService`: `YYYY-MM-DD HH:MM:SS.ffffff` text, and `adk_internal_metadata`.
    Database,
    /// The stdlib `SqliteSessionService`: seconds as REAL.
    Stdlib,
}

impl Layout {
    fn time(self, seconds: f64) -> SqlValue {
        match self {
            Layout::Database => SqlValue::Text(datetime_text(to_datetime(seconds))),
            Layout::Stdlib => SqlValue::Real(seconds),
        }
    }

    /// The time `seconds` reads back as once stored.
    fn stored(self, seconds: f64) -> f64 {
        match self {
            Layout::Database => to_seconds(to_datetime(seconds)),
            Layout::Stdlib => seconds,
        }
    }
}

/// ADK sessions in a SQLite file that adk-python opens as its own (and the other way round).
///
/// A new file gets `DatabaseSessionService`'s schema v1; a file made by adk-python's stdlib
/// `SqliteSessionService` is used in its own layout. The database runs in WAL mode with
/// `synchronous = FULL`: every append is one transaction, durable before it returns, and appends
/// from any connection or process queue behind SQLite's write lock, so a crash keeps every
/// acknowledged event. Blocking work runs on tokio's blocking pool. The file is made readable by
/// its owner only: conversations hold whatever was said.
#[derive(Clone, Debug)]
pub struct SqliteSessionService {
    pool: SqlitePool,
    layout: Layout,
}

impl SqliteSessionService {
    /// Opens (or creates) the database at `path`, creating adk-python's tables when missing. A
    /// database in ADK's legacy schema v0 is refused: adk-python's `adk migrate session` converts
    /// it.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        let mut layout = Layout::Database;
        let pool = SqlitePool::open(path.into(), |connection| {
            layout = prepare(connection)?;
            Ok(())
        })?;
        Ok(SqliteSessionService { pool, layout })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.pool.path()
    }

    /// Runs `f` on a pooled connection, on the blocking pool.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection, Layout) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let layout = self.layout;
        self.pool.with(move |connection| f(connection, layout)).await
    }
}

/// Pooled connections to one SQLite file (WAL, `synchronous = FULL`, foreign keys on, owner-only
/// permissions); blocking work runs on tokio's blocking pool.
#[derive(Clone, Debug)]
pub(crate) struct SqlitePool {
    inner: Arc<PoolInner>,
}

#[derive(Debug)]
struct PoolInner {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Bounds the open connections: each holds its own page cache, and SQLite runs one writer at
    /// a time anyway.
    permits: Semaphore,
}

impl SqlitePool {
    /// Opens `path` and runs `prepare` (creating tables, say) on the first connection.
    pub(crate) fn open(path: PathBuf, prepare: impl FnOnce(&mut Connection) -> Result<()>) -> Result<Self> {
        if path.as_os_str().is_empty() || path == Path::new(":memory:") {
            // Each pooled connection would open a database of its own.
            return Err(store_error(
                "opening the session database",
                "an in-memory SQLite database cannot be shared by a pool: give a file (or use the in-memory service)",
            ));
        }
        let mut connection = connect(&path)?;
        prepare(&mut connection)?;
        let inner = PoolInner { path, idle: Mutex::new(vec![connection]), permits: Semaphore::new(MAX_CONNECTIONS) };
        Ok(SqlitePool { inner: Arc::new(inner) })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` on a pooled connection, on the blocking pool.
    pub(crate) async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = Arc::clone(&self.inner);
        let _permit = self.inner.permits.acquire().await.map_err(|e| store_error("waiting for a connection", e))?;
        tokio::task::spawn_blocking(move || {
            let idle = inner.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let mut connection = match idle {
                Some(connection) => connection,
                None => connect(&inner.path)?,
            };
            let result = f(&mut connection);
            inner.idle.lock().unwrap_or_else(PoisonError::into_inner).push(connection);
            result
        })
        .await
        .map_err(|e| store_error("running a blocking task", e))?
    }
}

pub(crate) fn db(what: &'static str) -> impl Fn(rusqlite::Error) -> Error {
    move |e| store_error(what, e)
}

fn connect(path: &Path) -> Result<Connection> {
    make_private(path)?;
    let connection = Connection::open(path).map_err(db("opening the session database"))?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(db("opening the session database"))?;
    connection
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(db("opening the session database"))?;
    Ok(connection)
}

/// Creates the database file readable and writable by its owner only (0600): conversations hold
/// whatever was said. An existing file keeps its permissions (adk-python may share it); SQLite
/// gives its `-wal` and `-shm` files the database's.
fn make_private(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let created = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path);
        match created {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(store_error("creating the session database file", e)),
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Finds which service made the file (creating schema v1 in a new one), in one write
/// transaction so concurrent openers agree.
fn prepare(connection: &mut Connection) -> Result<Layout> {
    let error = db("preparing the session tables");
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(&error)?;
    let has_table = |name: &str| -> Result<bool> {
        tx.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |row| {
            row.get::<_, i64>(0)
        })
        .map(|n| n > 0)
        .map_err(db("preparing the session tables"))
    };
    let column_type = |table: &str, column: &str| -> Result<Option<String>> {
        tx.query_row("SELECT type FROM pragma_table_info(?1) WHERE name = ?2", [table, column], |row| row.get(0))
            .optional()
            .map_err(db("preparing the session tables"))
    };
    let layout = if has_table("adk_internal_metadata")? {
        let version: Option<String> = tx
            .query_row("SELECT value FROM adk_internal_metadata WHERE \"key\" = ?1", [SCHEMA_VERSION_KEY], |row| {
                row.get(0)
            })
            .optional()
            .map_err(&error)?;
        match version.as_deref() {
            Some(SCHEMA_VERSION) => Layout::Database,
            Some(other) => return Err(unsupported_schema(other)),
            None => return Err(unsupported_schema("(missing)")),
        }
    } else if column_type("sessions", "update_time")?.is_some_and(|t| t.eq_ignore_ascii_case("REAL")) {
        Layout::Stdlib
    } else if column_type("events", "actions")?.is_some() && column_type("events", "event_data")?.is_none() {
        return Err(unsupported_schema("0"));
    } else {
        Layout::Database
    };
    if layout == Layout::Database {
        tx.execute_batch(SCHEMA).map_err(&error)?;
        tx.execute(
            "INSERT OR IGNORE INTO adk_internal_metadata (\"key\", value) VALUES (?1, ?2)",
            [SCHEMA_VERSION_KEY, SCHEMA_VERSION],
        )
        .map_err(&error)?;
    }
    tx.commit().map_err(&error)?;
    Ok(layout)
}

fn read_time(value: ValueRef<'_>) -> rusqlite::Result<f64> {
    match value {
        #[allow(clippy::cast_precision_loss)]
        ValueRef::Integer(n) => Ok(n as f64),
        ValueRef::Real(f) => Ok(f),
        ValueRef::Text(bytes) => std::str::from_utf8(bytes)
            .ok()
            .and_then(parse_datetime_text)
            .map(to_seconds)
            .ok_or_else(|| rusqlite::Error::InvalidColumnType(0, "time".into(), rusqlite::types::Type::Text)),
        other => Err(rusqlite::Error::InvalidColumnType(0, "time".into(), other.data_type())),
    }
}

fn parse_json(what: &'static str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| store_error(what, e))
}

fn to_text(map: &Map<String, Value>) -> String {
    crate::pyrepr::json_dumps(&Value::Object(map.clone()))
}

/// The state in `table` under `key`, `{}` when there is no row.
fn read_state(tx: &Connection, table: StateTable, key: &[&str]) -> Result<Map<String, Value>> {
    let text: Option<String> = tx
        .query_row(table.select(), rusqlite::params_from_iter(key), |row| row.get(0))
        .optional()
        .map_err(db("reading a state"))?;
    text.map_or(Ok(Map::new()), |t| state_object(parse_json("reading a state", &t)?))
}

/// Adds `delta` to the state in `table` under `key` (Python's `dict.update`), creating the row.
fn update_state(
    tx: &Connection,
    layout: Layout,
    table: StateTable,
    key: &[&str],
    delta: Map<String, Value>,
) -> Result<()> {
    let mut state = read_state(tx, table, key)?;
    state.extend(delta);
    let mut values: Vec<SqlValue> = key.iter().map(|k| SqlValue::Text((*k).to_owned())).collect();
    values.push(SqlValue::Text(to_text(&state)));
    values.push(layout.time(now_seconds()));
    tx.execute(table.upsert(), rusqlite::params_from_iter(values)).map_err(db("writing a state"))?;
    Ok(())
}

#[derive(Clone, Copy)]
enum StateTable {
    App,
    User,
}

impl StateTable {
    fn select(self) -> &'static str {
        match self {
            StateTable::App => "SELECT state FROM app_states WHERE app_name = ?1",
            StateTable::User => "SELECT state FROM user_states WHERE app_name = ?1 AND user_id = ?2",
        }
    }

    fn upsert(self) -> &'static str {
        match self {
            StateTable::App => {
                "INSERT INTO app_states (app_name, state, update_time) VALUES (?1, ?2, ?3)
                 ON CONFLICT (app_name) DO UPDATE SET state = excluded.state, update_time = excluded.update_time"
            }
            StateTable::User => {
                "INSERT INTO user_states (app_name, user_id, state, update_time) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (app_name, user_id) DO UPDATE SET state = excluded.state, update_time = excluded.update_time"
            }
        }
    }
}

/// A session row and the state it sees, read in `tx`.
fn read_session(tx: &Connection, app_name: &str, user_id: &str, id: &str) -> Result<Option<(Map<String, Value>, f64)>> {
    let row: Option<(String, f64)> = tx
        .query_row(
            "SELECT state, update_time FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
            [app_name, user_id, id],
            |row| Ok((row.get(0)?, read_time(row.get_ref(1)?)?)),
        )
        .optional()
        .map_err(db("reading a session"))?;
    let Some((state, update_time)) = row else { return Ok(None) };
    let state = state_object(parse_json("reading a session", &state)?)?;
    let app = read_state(tx, StateTable::App, &[app_name])?;
    let user = read_state(tx, StateTable::User, &[app_name, user_id])?;
    Ok(Some((merge_state(&app, &user, state), update_time)))
}

fn read_events(
    tx: &Connection,
    layout: Layout,
    app_name: &str,
    user_id: &str,
    id: &str,
    config: GetSessionConfig,
) -> Result<Vec<Event>> {
    if config.num_recent_events == Some(0) {
        return Ok(Vec::new());
    }
    let mut sql = String::from(
        "SELECT id, invocation_id, timestamp, event_data FROM events
         WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3",
    );
    let mut values =
        vec![SqlValue::Text(app_name.to_owned()), SqlValue::Text(user_id.to_owned()), SqlValue::Text(id.to_owned())];
    if let Some(after) = config.after_timestamp {
        sql.push_str(" AND timestamp >= ?4");
        values.push(layout.time(after));
    }
    // The stdlib service breaks ties in append order, `DatabaseSessionService` by id.
    sql.push_str(match layout {
        Layout::Database => " ORDER BY timestamp DESC, id DESC",
        Layout::Stdlib => " ORDER BY timestamp DESC, rowid DESC",
    });
    if let Some(n) = config.num_recent_events {
        sql.push_str(&format!(" LIMIT {}", i64::try_from(n).unwrap_or(i64::MAX)));
    }
    let mut statement = tx.prepare_cached(&sql).map_err(db("reading events"))?;
    let rows = statement
        .query_map(rusqlite::params_from_iter(values), |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                read_time(row.get_ref(2)?)?,
                row.get::<_, Option<String>>(3)?,
            ))
        })
        .map_err(db("reading events"))?;
    let mut events = Vec::new();
    for row in rows {
        let (id, invocation_id, timestamp, data) = row.map_err(db("reading events"))?;
        let data = data.map(|d| parse_json("reading an event", &d)).transpose()?;
        events.push(event_from_row(id, invocation_id, timestamp, data)?);
    }
    events.reverse();
    Ok(events)
}

fn newest_event_id(tx: &Transaction<'_>, fresh: &Fresh, layout: Layout) -> Result<Option<String>> {
    tx.query_row(
        match layout {
            Layout::Database => {
                "SELECT id FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3
                 ORDER BY timestamp DESC, id DESC LIMIT 1"
            }
            // The stdlib service breaks ties in append order.
            Layout::Stdlib => {
                "SELECT id FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3
                 ORDER BY timestamp DESC, rowid DESC LIMIT 1"
            }
        },
        [&fresh.app_name, &fresh.user_id, &fresh.id],
        |row| row.get(0),
    )
    .optional()
    .map_err(db("reading events"))
}

#[async_trait]
impl SessionService for SqliteSessionService {
    async fn create_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: Option<&str>,
        state: Map<String, Value>,
    ) -> Result<Session> {
        let id = session_id_or_new(session_id);
        let (app_name, user_id) = (app_name.to_owned(), user_id.to_owned());
        self.with(move |connection, layout| {
            let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db("creating a session"))?;
            let exists: bool = tx
                .query_row(
                    "SELECT count(*) FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                    [&app_name, &user_id, &id],
                    |row| row.get::<_, i64>(0),
                )
                .map_err(db("creating a session"))?
                > 0;
            if exists {
                return Err(Error::SessionExists(id));
            }
            let StateDeltas { app, user, session, .. } = StateDeltas::split(&state);
            // adk-python creates both state rows with the session; its appends expect them.
            update_state(&tx, layout, StateTable::App, &[&app_name], app)?;
            update_state(&tx, layout, StateTable::User, &[&app_name, &user_id], user)?;
            let now = now_seconds();
            tx.execute(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![app_name, user_id, id, to_text(&session), layout.time(now)],
            )
            .map_err(db("creating a session"))?;
            let (state, update_time) =
                read_session(&tx, &app_name, &user_id, &id)?.ok_or_else(|| Error::SessionNotFound(id.clone()))?;
            tx.commit().map_err(db("creating a session"))?;
            Ok(stored_session(app_name, user_id, id, state, Vec::new(), update_time))
        })
        .await
    }

    async fn get_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: &str,
        config: GetSessionConfig,
    ) -> Result<Option<Session>> {
        let (app_name, user_id, id) = (app_name.to_owned(), user_id.to_owned(), session_id.to_owned());
        self.with(move |connection, layout| {
            // One read transaction: the state and the events are of the same moment.
            let tx = connection.transaction().map_err(db("reading a session"))?;
            let Some((state, update_time)) = read_session(&tx, &app_name, &user_id, &id)? else { return Ok(None) };
            let events = read_events(&tx, layout, &app_name, &user_id, &id, config)?;
            tx.finish().map_err(db("reading a session"))?;
            Ok(Some(stored_session(app_name, user_id, id, state, events, update_time)))
        })
        .await
    }

    async fn list_sessions(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Session>> {
        let (app_name, user_id) = (app_name.to_owned(), user_id.map(str::to_owned));
        self.with(move |connection, _| {
            let tx = connection.transaction().map_err(db("listing sessions"))?;
            let app = read_state(&tx, StateTable::App, &[&app_name])?;
            let mut statement = tx
                .prepare_cached(
                    "SELECT s.user_id, s.id, s.state, s.update_time, u.state FROM sessions s
                     LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
                     WHERE s.app_name = ?1 AND (?2 IS NULL OR s.user_id = ?2)
                     ORDER BY s.update_time ASC, s.user_id ASC, s.id ASC",
                )
                .map_err(db("listing sessions"))?;
            let rows = statement
                .query_map(params![app_name, user_id], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        read_time(row.get_ref(3)?)?,
                        row.get::<_, Option<String>>(4)?,
                    ))
                })
                .map_err(db("listing sessions"))?;
            let mut sessions = Vec::new();
            for row in rows {
                let (user_id, id, state, update_time, user_state) = row.map_err(db("listing sessions"))?;
                let state = state_object(parse_json("listing sessions", &state)?)?;
                let user = match user_state {
                    Some(text) => state_object(parse_json("listing sessions", &text)?)?,
                    None => Map::new(),
                };
                let state = merge_state(&app, &user, state);
                sessions.push(stored_session(app_name.clone(), user_id, id, state, Vec::new(), update_time));
            }
            Ok(sessions)
        })
        .await
    }

    async fn delete_session(&self, app_name: &str, user_id: &str, session_id: &str) -> Result<()> {
        let key = [app_name.to_owned(), user_id.to_owned(), session_id.to_owned()];
        self.with(move |connection, _| {
            let tx = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db("deleting a session"))?;
            tx.execute(
                "DELETE FROM events WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3",
                rusqlite::params_from_iter(&key),
            )
            .map_err(db("deleting a session"))?;
            tx.execute(
                "DELETE FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                rusqlite::params_from_iter(&key),
            )
            .map_err(db("deleting a session"))?;
            tx.commit().map_err(db("deleting a session"))
        })
        .await
    }

    async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event> {
        if event.is_partial() {
            return Ok(event);
        }
        let stored = without_temp(&event);
        let data_value = event_data(&stored)?;
        let data = crate::pyrepr::json_dumps(&data_value);
        let fresh = Fresh::of(session);
        let deltas = StateDeltas::split(&stored.actions.state_delta);
        let (event_id, invocation_id, timestamp) =
            (stored.id.to_string(), stored.invocation_id.to_string(), stored.timestamp);
        let appended = self
            .with(move |connection, layout| {
                let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db("appending an event"))?;
                let row: Option<(String, f64)> = tx
                    .query_row(
                        "SELECT state, update_time FROM sessions WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                        [&fresh.app_name, &fresh.user_id, &fresh.id],
                        |row| Ok((row.get(0)?, read_time(row.get_ref(1)?)?)),
                    )
                    .optional()
                    .map_err(db("appending an event"))?;
                let Some((state, update_time)) = row else { return Err(Error::SessionNotFound(fresh.id)) };
                check_fresh(&fresh, update_time, || newest_event_id(&tx, &fresh, layout))?;
                let inserted = tx
                    .execute(
                        "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                        params![event_id, fresh.app_name, fresh.user_id, fresh.id, invocation_id, layout.time(timestamp), data],
                    )
                    .map_err(db("appending an event"))?;
                if inserted == 0 {
                    let existing: Option<String> = tx
                        .query_row(
                            "SELECT event_data FROM events WHERE id = ?1 AND app_name = ?2 AND user_id = ?3 AND session_id = ?4",
                            [&event_id, &fresh.app_name, &fresh.user_id, &fresh.id],
                            |row| row.get(0),
                        )
                        .map_err(db("appending an event"))?;
                    // Compared as JSON: another writer may have spaced it differently.
                    let same = existing.is_some_and(|e| serde_json::from_str::<Value>(&e).ok().as_ref() == Some(&data_value));
                    return if same {
                        Ok(Appended::AlreadyStored)
                    } else {
                        Err(Error::InvalidRequest(format!(
                            "session {} already holds another event with id {event_id}",
                            fresh.id
                        )))
                    };
                }
                if !deltas.app.is_empty() {
                    update_state(&tx, layout, StateTable::App, &[&fresh.app_name], deltas.app)?;
                }
                if !deltas.user.is_empty() {
                    update_state(&tx, layout, StateTable::User, &[&fresh.app_name, &fresh.user_id], deltas.user)?;
                }
                let mut state = state_object(parse_json("appending an event", &state)?)?;
                state.extend(deltas.session);
                tx.execute(
                    "UPDATE sessions SET state = ?4, update_time = ?5 WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                    params![fresh.app_name, fresh.user_id, fresh.id, to_text(&state), layout.time(timestamp)],
                )
                .map_err(db("appending an event"))?;
                tx.commit().map_err(db("appending an event"))?;
                Ok(Appended::Stored(layout.stored(timestamp)))
            })
            .await?;
        Ok(commit_to_session(session, event, appended))
    }
}
