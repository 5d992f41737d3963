//! Sessions in PostgreSQL: for deployments that outgrow one machine, where several application
//! instances share one database.

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::{NoTls, Row};

use crate::error::{Result, SessionError, check_id};
use crate::model::Session;
use crate::sql::{HeaderRow, db_millis, loop_rows, parse_loop, spawn_ref_json};
use crate::store::SessionStore;

/// The schema, one migration per entry; `sinew_session_migrations` records the applied ones.
/// Records are `json`, not `jsonb`: kept byte for byte, and `jsonb` refuses `\u0000`, which tool
/// output may hold.
const MIGRATIONS: &[&str] = &["
    CREATE TABLE sinew_sessions (
        session_id       TEXT PRIMARY KEY,
        agent_id         TEXT NOT NULL,
        format_version   INTEGER NOT NULL,
        created_at       BIGINT NOT NULL,
        updated_at       BIGINT NOT NULL,
        parent_spawn_ref JSON
    );
    CREATE INDEX sinew_sessions_by_update ON sinew_sessions (updated_at DESC, session_id);
    CREATE INDEX sinew_sessions_by_agent ON sinew_sessions (agent_id, updated_at DESC);
    CREATE TABLE sinew_loops (
        session_id TEXT NOT NULL REFERENCES sinew_sessions (session_id) ON DELETE CASCADE,
        loop_id    TEXT NOT NULL,
        seq        BIGINT NOT NULL,
        record     JSON NOT NULL,
        PRIMARY KEY (session_id, loop_id)
    );
    CREATE INDEX sinew_loops_in_order ON sinew_loops (session_id, seq);
"];

/// Serializes migrations across every process sharing the database (`pg_advisory_xact_lock`).
const MIGRATION_LOCK: i64 = 0x5345_5353_494f_4e53; // "SESSIONS"

/// Connections [`PostgresStore::connect`] pools at most.
const POOL_SIZE: usize = 16;

/// Inserts or replaces loops; new ones go after the session's last, in the order given.
const UPSERT_LOOPS: &str = "
    INSERT INTO sinew_loops (session_id, loop_id, seq, record)
    SELECT $1, l.loop_id, (SELECT COALESCE(MAX(seq), 0) FROM sinew_loops WHERE session_id = $1) + l.n, l.record::json
    FROM UNNEST($2::text[], $3::text[]) WITH ORDINALITY AS l (loop_id, record, n)
    ON CONFLICT (session_id, loop_id) DO UPDATE SET record = excluded.record";

const UPSERT_HEADER: &str = "
    INSERT INTO sinew_sessions (session_id, agent_id, format_version, created_at, updated_at, parent_spawn_ref)
    VALUES ($1, $2, $3, $4, $5, $6::text::json)
    ON CONFLICT (session_id) DO UPDATE SET agent_id = excluded.agent_id,
        format_version = excluded.format_version, created_at = excluded.created_at,
        updated_at = excluded.updated_at, parent_spawn_ref = excluded.parent_spawn_ref";

const HEADER_COLUMNS: &str =
    "s.session_id, s.agent_id, s.format_version, s.created_at, s.updated_at, s.parent_spawn_ref::text";

/// A [`SessionStore`] in PostgreSQL.
///
/// The store creates its tables itself (migrations, applied once under an advisory lock however
/// many instances start together). Every write is one transaction: a crash mid-write rolls it back
/// and loses nothing acknowledged. Merges into one session lock its row, so concurrent merges from
/// any number of processes neither lose nor duplicate a loop. Tables live in the connection's
/// `search_path` (set `options=-c search_path=...` in the URL to choose a schema).
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: Pool,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/database?...`) without TLS, for a server on
    /// the same host or a private network, with a pool of up to 16 connections. For TLS or other
    /// pool settings, build the pool yourself and use [`PostgresStore::from_pool`].
    pub async fn connect(url: &str) -> Result<Self> {
        let config: tokio_postgres::Config = url.parse().map_err(SessionError::database("parsing the database URL"))?;
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(SessionError::database("building the connection pool"))?;
        Self::from_pool(pool).await
    }

    /// A store over `pool`; brings the schema up to date first.
    pub async fn from_pool(pool: Pool) -> Result<Self> {
        let store = PostgresStore { pool };
        store.migrate().await?;
        Ok(store)
    }

    /// The connection pool the store uses.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The sessions matching `filter` (on `key`), whole, in one statement: headers and loops come
    /// from the same snapshot.
    async fn select_sessions(&self, filter: &str, order: &str, key: &str) -> Result<Vec<Session>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {HEADER_COLUMNS}, l.record::text FROM sinew_sessions s
                     LEFT JOIN sinew_loops l ON l.session_id = s.session_id
                     WHERE {filter} ORDER BY {order}"
                ),
                &[&key],
            )
            .await
            .map_err(SessionError::database("reading sessions"))?;
        sessions_of(&rows)
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(SessionError::database("connecting"))
    }

    async fn migrate(&self) -> Result<()> {
        let error = || SessionError::database::<tokio_postgres::Error>("migrating");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(error())?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(error())?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS sinew_session_migrations (
                 version    INTEGER PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(error())?;
        let applied: i32 = tx
            .query_one("SELECT COALESCE(MAX(version), 0) FROM sinew_session_migrations", &[])
            .await
            .map_err(error())?
            .get(0);
        let applied = usize::try_from(applied).unwrap_or(0);
        if applied > MIGRATIONS.len() {
            // Release the advisory lock now rather than whenever the pooled connection next runs.
            tx.rollback().await.map_err(error())?;
            return Err(SessionError::database("migrating")(format!(
                "the database has schema version {applied}; this build knows up to {}",
                MIGRATIONS.len()
            )));
        }
        for (version, migration) in MIGRATIONS.iter().enumerate().skip(applied) {
            tx.batch_execute(migration).await.map_err(error())?;
            let version = i32::try_from(version + 1).unwrap_or(i32::MAX);
            tx.execute("INSERT INTO sinew_session_migrations (version) VALUES ($1)", &[&version])
                .await
                .map_err(error())?;
        }
        tx.commit().await.map_err(error())
    }
}

async fn write_header(tx: &deadpool_postgres::Transaction<'_>, session: &Session) -> Result<()> {
    let statement = tx.prepare_cached(UPSERT_HEADER).await.map_err(SessionError::database("writing a session"))?;
    let format_version = i32::try_from(session.format_version).unwrap_or(i32::MAX);
    tx.execute(
        &statement,
        &[
            &session.session_id,
            &session.agent_id,
            &format_version,
            &db_millis(session.created_at),
            &db_millis(session.updated_at),
            &spawn_ref_json(session)?,
        ],
    )
    .await
    .map_err(SessionError::database("writing a session"))?;
    Ok(())
}

async fn upsert_loops(tx: &deadpool_postgres::Transaction<'_>, session: &Session) -> Result<()> {
    let rows = loop_rows(session)?;
    if rows.is_empty() {
        return Ok(());
    }
    let (ids, records): (Vec<&str>, Vec<String>) = rows.into_iter().unzip();
    let statement = tx.prepare_cached(UPSERT_LOOPS).await.map_err(SessionError::database("writing loops"))?;
    tx.execute(&statement, &[&session.session_id, &ids, &records])
        .await
        .map_err(SessionError::database("writing loops"))?;
    Ok(())
}

fn header_of(row: &Row) -> Result<HeaderRow> {
    let error = SessionError::database::<tokio_postgres::Error>;
    Ok(HeaderRow {
        session_id: row.try_get(0).map_err(error("reading a session"))?,
        agent_id: row.try_get(1).map_err(error("reading a session"))?,
        format_version: i64::from(row.try_get::<_, i32>(2).map_err(error("reading a session"))?),
        created_at: row.try_get(3).map_err(error("reading a session"))?,
        updated_at: row.try_get(4).map_err(error("reading a session"))?,
        parent_spawn_ref: row.try_get(5).map_err(error("reading a session"))?,
    })
}

/// Sessions from rows of header columns plus a loop record (`NULL` for a session without loops),
/// grouped by session in row order.
fn sessions_of(rows: &[Row]) -> Result<Vec<Session>> {
    let mut sessions: Vec<Session> = Vec::new();
    for row in rows {
        let id: &str = row.try_get(0).map_err(SessionError::database("reading a session"))?;
        if sessions.last().is_none_or(|s| s.session_id != id) {
            sessions.push(header_of(row)?.into_session()?);
        }
        let record: Option<&str> = row.try_get(6).map_err(SessionError::database("reading a session"))?;
        if let (Some(json), Some(session)) = (record, sessions.last_mut()) {
            let record = parse_loop(&session.session_id, json)?;
            session.loops.push(record);
        }
    }
    Ok(sessions)
}

#[async_trait]
impl SessionStore for PostgresStore {
    async fn save(&self, session: &Session) -> Result<()> {
        check_id(&session.session_id)?;
        let error = || SessionError::database::<tokio_postgres::Error>("saving");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(error())?;
        write_header(&tx, session).await?;
        tx.execute("DELETE FROM sinew_loops WHERE session_id = $1", &[&session.session_id]).await.map_err(error())?;
        upsert_loops(&tx, session).await?;
        tx.commit().await.map_err(error())
    }

    async fn merge(&self, session: &Session) -> Result<()> {
        check_id(&session.session_id)?;
        let error = || SessionError::database::<tokio_postgres::Error>("merging");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(error())?;
        // Create the row if needed (a concurrent creator makes this wait, then do nothing), then
        // lock it: merges of one session run one after the other.
        tx.execute(
            "INSERT INTO sinew_sessions (session_id, agent_id, format_version, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $4) ON CONFLICT (session_id) DO NOTHING",
            &[
                &session.session_id,
                &session.agent_id,
                &i32::try_from(session.format_version).unwrap_or(i32::MAX),
                &db_millis(session.created_at),
            ],
        )
        .await
        .map_err(error())?;
        let locked = tx
            .query_one(
                &format!("SELECT {HEADER_COLUMNS} FROM sinew_sessions s WHERE s.session_id = $1 FOR UPDATE"),
                &[&session.session_id],
            )
            .await
            .map_err(error())?;
        let mut header = header_of(&locked)?.into_session()?;
        header.merge_header(session);
        write_header(&tx, &header).await?;
        upsert_loops(&tx, session).await?;
        tx.commit().await.map_err(error())
    }

    async fn load(&self, session_id: &str) -> Result<Session> {
        check_id(session_id)?;
        let sessions = self.select_sessions("s.session_id = $1", "l.seq", session_id).await?;
        sessions.into_iter().next().ok_or_else(|| SessionError::NotFound(session_id.to_owned()))
    }

    async fn list_ids(&self) -> Result<Vec<String>> {
        let client = self.client().await?;
        let rows = client
            .query("SELECT session_id FROM sinew_sessions ORDER BY updated_at DESC, session_id", &[])
            .await
            .map_err(SessionError::database("listing sessions"))?;
        rows.iter().map(|row| row.try_get(0).map_err(SessionError::database("listing sessions"))).collect()
    }

    async fn delete(&self, session_id: &str) -> Result<()> {
        check_id(session_id)?;
        let client = self.client().await?;
        let deleted = client
            .execute("DELETE FROM sinew_sessions WHERE session_id = $1", &[&session_id])
            .await
            .map_err(SessionError::database("deleting a session"))?;
        if deleted == 0 { Err(SessionError::NotFound(session_id.to_owned())) } else { Ok(()) }
    }

    async fn load_for_agent(&self, agent_id: &str) -> Result<Vec<Session>> {
        self.select_sessions("s.agent_id = $1", "s.updated_at DESC, s.session_id, l.seq", agent_id).await
    }
}
