//! Sessions in a SQLite database file: the embedded store for applications. SQLite is compiled in
//! (rusqlite's `bundled`), so no system library is needed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use tokio::sync::Semaphore;

use crate::error::{Result, SessionError, check_id};
use crate::model::Session;
use crate::sql::{HeaderRow, db_millis, loop_rows, parse_loop, spawn_ref_json};
use crate::store::SessionStore;

/// The schema, one migration per entry; `PRAGMA user_version` counts the applied ones.
const MIGRATIONS: &[&str] = &["
    CREATE TABLE sinew_sessions (
        session_id       TEXT PRIMARY KEY,
        agent_id         TEXT NOT NULL,
        format_version   INTEGER NOT NULL,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL,
        parent_spawn_ref TEXT
    );
    CREATE INDEX sinew_sessions_by_update ON sinew_sessions (updated_at DESC, session_id);
    CREATE INDEX sinew_sessions_by_agent ON sinew_sessions (agent_id, updated_at DESC);
    CREATE TABLE sinew_loops (
        session_id TEXT NOT NULL REFERENCES sinew_sessions (session_id) ON DELETE CASCADE,
        loop_id    TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        record     TEXT NOT NULL,
        PRIMARY KEY (session_id, loop_id)
    );
    CREATE INDEX sinew_loops_in_order ON sinew_loops (session_id, seq);
"];

/// How long a statement waits for another connection's (or process's) write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// A [`SessionStore`] in one SQLite database file.
///
/// The database runs in WAL mode: readers never wait for a writer, and writes from other
/// connections and processes queue behind SQLite's lock. Every write is one transaction, synced
/// before it returns, so a crash keeps each session as it was after its last acknowledged write.
/// Connections are pooled; blocking work runs on tokio's blocking pool.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
    /// Bounds the open connections: each holds its own page cache, and SQLite runs one writer at
    /// a time anyway.
    permits: Semaphore,
}

/// Connections a store opens at most, unless [`SqliteStore::open_with_max_connections`] says.
pub const DEFAULT_SQLITE_CONNECTIONS: usize = 8;

impl SqliteStore {
    /// Opens (or creates) the database at `path` and brings its schema up to date. The store
    /// opens up to [`DEFAULT_SQLITE_CONNECTIONS`] connections.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        Self::open_with_max_connections(path, DEFAULT_SQLITE_CONNECTIONS)
    }

    /// [`SqliteStore::open`] with at most `max` connections (at least one).
    pub fn open_with_max_connections(path: impl Into<PathBuf>, max: usize) -> Result<Self> {
        let path = path.into();
        let mut connection = connect(&path)?;
        migrate(&mut connection)?;
        let inner = Inner { path, idle: Mutex::new(vec![connection]), permits: Semaphore::new(max.max(1)) };
        Ok(SqliteStore { inner: Arc::new(inner) })
    }

    /// The path of the database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` on a pooled connection, on the blocking pool.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let inner = Arc::clone(&self.inner);
        let _permit = self.inner.permits.acquire().await.map_err(SessionError::database("waiting for a connection"))?;
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
        .map_err(SessionError::database("running a blocking task"))?
    }
}

/// Makes `path` readable and writable by its owner only (0600): conversations hold whatever
/// was said and read, secrets included. A new file is created so; an existing one is tightened.
/// SQLite gives its `-wal` and `-shm` files the database's permissions.
fn make_private(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let io = |error: std::io::Error| SessionError::database("securing the database file")(error);
        std::fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o600).open(path).map_err(io)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

fn connect(path: &Path) -> Result<Connection> {
    if path != Path::new(":memory:") {
        make_private(path)?;
    }
    let connection = Connection::open(path).map_err(SessionError::database("opening the database"))?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(SessionError::database("opening the database"))?;
    connection
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(SessionError::database("opening the database"))?;
    Ok(connection)
}

/// Applies the migrations the database lacks, in one write transaction, so concurrent openers
/// apply each exactly once.
fn migrate(connection: &mut Connection) -> Result<()> {
    let tx = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(SessionError::database("migrating"))?;
    let applied: usize =
        tx.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(SessionError::database("migrating"))?;
    if applied > MIGRATIONS.len() {
        return Err(SessionError::database("migrating")(format!(
            "the database has schema version {applied}; this build knows up to {}",
            MIGRATIONS.len()
        )));
    }
    for migration in &MIGRATIONS[applied..] {
        tx.execute_batch(migration).map_err(SessionError::database("migrating"))?;
    }
    tx.pragma_update(None, "user_version", MIGRATIONS.len()).map_err(SessionError::database("migrating"))?;
    tx.commit().map_err(SessionError::database("migrating"))
}

fn write_header(tx: &rusqlite::Transaction<'_>, session: &Session) -> Result<()> {
    tx.execute(
        "INSERT INTO sinew_sessions (session_id, agent_id, format_version, created_at, updated_at, parent_spawn_ref)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (session_id) DO UPDATE SET agent_id = excluded.agent_id,
             format_version = excluded.format_version, created_at = excluded.created_at,
             updated_at = excluded.updated_at, parent_spawn_ref = excluded.parent_spawn_ref",
        params![
            session.session_id,
            session.agent_id,
            session.format_version,
            db_millis(session.created_at),
            db_millis(session.updated_at),
            spawn_ref_json(session)?,
        ],
    )
    .map_err(SessionError::database("writing a session"))?;
    Ok(())
}

/// Inserts or replaces `session`'s loops; a new loop goes after the session's last one.
fn upsert_loops(tx: &rusqlite::Transaction<'_>, session: &Session) -> Result<()> {
    let mut upsert = tx
        .prepare_cached(
            "INSERT INTO sinew_loops (session_id, loop_id, seq, record)
             VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM sinew_loops WHERE session_id = ?1), ?3)
             ON CONFLICT (session_id, loop_id) DO UPDATE SET record = excluded.record",
        )
        .map_err(SessionError::database("writing a loop"))?;
    for (loop_id, record) in loop_rows(session)? {
        upsert
            .execute(params![session.session_id, loop_id, record])
            .map_err(SessionError::database("writing a loop"))?;
    }
    Ok(())
}

fn read_header(connection: &Connection, session_id: &str) -> Result<Option<Session>> {
    connection
        .query_row(
            "SELECT session_id, agent_id, format_version, created_at, updated_at, parent_spawn_ref
             FROM sinew_sessions WHERE session_id = ?1",
            [session_id],
            |row| {
                Ok(HeaderRow {
                    session_id: row.get(0)?,
                    agent_id: row.get(1)?,
                    format_version: row.get(2)?,
                    created_at: row.get(3)?,
                    updated_at: row.get(4)?,
                    parent_spawn_ref: row.get(5)?,
                })
            },
        )
        .optional()
        .map_err(SessionError::database("reading a session"))?
        .map(HeaderRow::into_session)
        .transpose()
}

/// Reads a session whole; run it in a transaction, so the header and the loops are of one version.
fn read_session(tx: &rusqlite::Transaction<'_>, session_id: &str) -> Result<Session> {
    let mut session = read_header(tx, session_id)?.ok_or_else(|| SessionError::NotFound(session_id.to_owned()))?;
    let mut select = tx
        .prepare_cached("SELECT record FROM sinew_loops WHERE session_id = ?1 ORDER BY seq")
        .map_err(SessionError::database("reading a session"))?;
    let mut rows = select.query([session_id]).map_err(SessionError::database("reading a session"))?;
    while let Some(row) = rows.next().map_err(SessionError::database("reading a session"))? {
        let json: String = row.get(0).map_err(SessionError::database("reading a session"))?;
        session.loops.push(parse_loop(session_id, &json)?);
    }
    Ok(session)
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn save(&self, session: &Session) -> Result<()> {
        check_id(&session.session_id)?;
        let session = session.clone();
        self.with(move |connection| {
            let tx = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(SessionError::database("saving"))?;
            write_header(&tx, &session)?;
            tx.execute("DELETE FROM sinew_loops WHERE session_id = ?1", [&session.session_id])
                .map_err(SessionError::database("saving"))?;
            upsert_loops(&tx, &session)?;
            tx.commit().map_err(SessionError::database("saving"))
        })
        .await
    }

    async fn merge(&self, session: &Session) -> Result<()> {
        check_id(&session.session_id)?;
        let session = session.clone();
        self.with(move |connection| {
            // IMMEDIATE takes the write lock first, so merges of one session serialize.
            let tx = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(SessionError::database("merging"))?;
            let header = match read_header(&tx, &session.session_id)? {
                Some(mut stored) => {
                    stored.merge_header(&session);
                    stored
                }
                None => Session { loops: Vec::new(), ..session.clone() },
            };
            write_header(&tx, &header)?;
            upsert_loops(&tx, &session)?;
            tx.commit().map_err(SessionError::database("merging"))
        })
        .await
    }

    async fn load(&self, session_id: &str) -> Result<Session> {
        check_id(session_id)?;
        let id = session_id.to_owned();
        self.with(move |connection| {
            let tx = connection.transaction().map_err(SessionError::database("reading a session"))?;
            read_session(&tx, &id)
        })
        .await
    }

    async fn list_ids(&self) -> Result<Vec<String>> {
        self.with(|connection| {
            let mut select = connection
                .prepare_cached("SELECT session_id FROM sinew_sessions ORDER BY updated_at DESC, session_id")
                .map_err(SessionError::database("listing sessions"))?;
            let ids = select.query_map([], |row| row.get(0)).map_err(SessionError::database("listing sessions"))?;
            ids.collect::<Result<_, _>>().map_err(SessionError::database("listing sessions"))
        })
        .await
    }

    async fn delete(&self, session_id: &str) -> Result<()> {
        check_id(session_id)?;
        let id = session_id.to_owned();
        self.with(move |connection| {
            let deleted = connection
                .execute("DELETE FROM sinew_sessions WHERE session_id = ?1", [&id])
                .map_err(SessionError::database("deleting a session"))?;
            if deleted == 0 { Err(SessionError::NotFound(id)) } else { Ok(()) }
        })
        .await
    }

    async fn load_for_agent(&self, agent_id: &str) -> Result<Vec<Session>> {
        let agent = agent_id.to_owned();
        self.with(move |connection| {
            let tx = connection.transaction().map_err(SessionError::database("listing sessions"))?;
            let ids: Vec<String> = {
                let mut select = tx
                    .prepare_cached(
                        "SELECT session_id FROM sinew_sessions WHERE agent_id = ?1 ORDER BY updated_at DESC, session_id",
                    )
                    .map_err(SessionError::database("listing sessions"))?;
                let ids = select.query_map([&agent], |row| row.get(0)).map_err(SessionError::database("listing sessions"))?;
                ids.collect::<Result<_, _>>().map_err(SessionError::database("listing sessions"))?
            };
            ids.iter().map(|id| read_session(&tx, id)).collect()
        })
        .await
    }
}
