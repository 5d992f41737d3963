//! [`PostgresSessionService`]: ADK sessions in PostgreSQL, in the schema adk-python's
//! `DatabaseSessionService` (`postgresql+asyncpg://…`) uses.

use async_trait::async_trait;
use chrono::NaiveDateTime;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use serde_json::{Map, Value};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use super::{
    Appended, Fresh, SCHEMA_VERSION, SCHEMA_VERSION_KEY, check_fresh, commit_to_session, event_data, event_from_row,
    merge_state, session_id_or_new, state_object, store_error, stored_session, to_datetime, to_seconds,
    unsupported_schema, without_temp,
};
use crate::error::{Error, Result};
use crate::event::{Event, now_seconds};
use crate::session::{GetSessionConfig, SessionService, StateDeltas};
use crate::types::Session;

/// `DatabaseSessionService`'s schema v1 as SQLAlchemy creates it on PostgreSQL.
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS adk_internal_metadata (
    key character varying(128) NOT NULL PRIMARY KEY,
    value character varying(256) NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    id character varying(128) NOT NULL,
    state jsonb NOT NULL,
    create_time timestamp without time zone NOT NULL,
    update_time timestamp without time zone NOT NULL,
    PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS app_states (
    app_name character varying(128) NOT NULL PRIMARY KEY,
    state jsonb NOT NULL,
    update_time timestamp without time zone NOT NULL
);
CREATE TABLE IF NOT EXISTS user_states (
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    state jsonb NOT NULL,
    update_time timestamp without time zone NOT NULL,
    PRIMARY KEY (app_name, user_id)
);
CREATE TABLE IF NOT EXISTS events (
    id character varying(128) NOT NULL,
    app_name character varying(128) NOT NULL,
    user_id character varying(128) NOT NULL,
    session_id character varying(128) NOT NULL,
    invocation_id character varying(256) NOT NULL,
    "timestamp" timestamp without time zone NOT NULL,
    event_data jsonb,
    PRIMARY KEY (id, app_name, user_id, session_id),
    FOREIGN KEY (app_name, user_id, session_id) REFERENCES sessions (app_name, user_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_events_app_user_session_ts_id
    ON events (app_name, user_id, session_id, "timestamp" DESC, id DESC);
"#;

/// Serializes table creation across every process sharing the database.
const SCHEMA_LOCK: i64 = 0x4144_4b53_4553_5331; // "ADKSESS1"

/// How long a connection is waited for (to the server, or from an exhausted pool) at most.
const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Connections [`PostgresSessionService::connect`] pools at most.
const POOL_SIZE: usize = 16;

/// Adds a JSON object to a state row (Python's `dict.update`), creating the row.
const UPSERT_APP_STATE: &str = "
    INSERT INTO app_states (app_name, state, update_time) VALUES ($1, $2, $3)
    ON CONFLICT (app_name) DO UPDATE SET state = app_states.state || excluded.state, update_time = excluded.update_time";
const UPSERT_USER_STATE: &str = "
    INSERT INTO user_states (app_name, user_id, state, update_time) VALUES ($1, $2, $3, $4)
    ON CONFLICT (app_name, user_id) DO UPDATE SET state = user_states.state || excluded.state,
        update_time = excluded.update_time";

/// ADK sessions in PostgreSQL that adk-python opens as its own (and the other way round).
///
/// The service creates adk-python's tables when they are missing (under an advisory lock, however
/// many instances start together) and refuses ADK's legacy schema v0. Every append is one
/// transaction that locks its session's row, so appends to one session from any number of
/// processes are serialized and a stale session object is refused; state rows are merged in SQL
/// (`jsonb ||`), so concurrent appends to sibling sessions never lose an `app:` or `user:` key.
/// Tables live in the connection's `search_path` (`options=-c search_path=...` in the URL).
/// JSON columns are `jsonb`, which refuses the `\u0000` character, as it does for adk-python.
#[derive(Clone, Debug)]
pub struct PostgresSessionService {
    pool: Pool,
}

pub(crate) fn db(what: &'static str) -> impl Fn(tokio_postgres::Error) -> Error {
    move |e| store_error(what, e)
}

/// Column `index` of `row`; a value of another type (a NULL, an `infinity` time) is an error.
pub(crate) fn col<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a tokio_postgres::Row, index: usize) -> Result<T> {
    row.try_get(index).map_err(|e| store_error("reading a row", e))
}

/// A pool of up to 16 connections to `url`, without TLS.
pub(crate) fn pool(url: &str) -> Result<Pool> {
    let mut config: tokio_postgres::Config = url.parse().map_err(db("parsing the database URL"))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(WAIT);
    }
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(POOL_SIZE)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(WAIT))
        .create_timeout(Some(WAIT))
        .recycle_timeout(Some(WAIT))
        .build()
        .map_err(|e| store_error("building the connection pool", e))
}

impl PostgresSessionService {
    /// Connects to `url` (`postgres://user@host:port/database?...`) without TLS, for a server on
    /// the same host or a private network, with a pool of up to 16 connections. For TLS or other
    /// pool settings, build the pool yourself and use [`PostgresSessionService::from_pool`].
    pub async fn connect(url: &str) -> Result<Self> {
        Self::from_pool(pool(url)?).await
    }

    /// A service over `pool`; creates the tables first when they are missing.
    pub async fn from_pool(pool: Pool) -> Result<Self> {
        let service = PostgresSessionService { pool };
        service.prepare().await?;
        Ok(service)
    }

    /// The connection pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| store_error("connecting to the session database", e))
    }

    async fn prepare(&self) -> Result<()> {
        let error = db("preparing the session tables");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        // Waiting for another instance's lock is bounded.
        tx.batch_execute("SET LOCAL lock_timeout = '30s'").await.map_err(&error)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(&error)?;
        let flag = |row: tokio_postgres::Row| col::<bool>(&row, 0);
        let has_metadata =
            flag(tx.query_one("SELECT to_regclass('adk_internal_metadata') IS NOT NULL", &[]).await.map_err(&error)?)?;
        let has_events = flag(tx.query_one("SELECT to_regclass('events') IS NOT NULL", &[]).await.map_err(&error)?)?;
        if has_metadata {
            let row = tx
                .query_opt("SELECT value FROM adk_internal_metadata WHERE key = $1", &[&SCHEMA_VERSION_KEY])
                .await
                .map_err(&error)?;
            let version = row.map(|row| col::<String>(&row, 0)).transpose()?;
            match version.as_deref() {
                Some(SCHEMA_VERSION) => {}
                Some(other) => return Err(unsupported_schema(other)),
                None => return Err(unsupported_schema("(missing)")),
            }
        } else if has_events {
            let row = tx
                .query_one(
                    "SELECT count(*) FILTER (WHERE column_name = 'actions') > 0
                        AND count(*) FILTER (WHERE column_name = 'event_data') = 0
                     FROM information_schema.columns
                     WHERE table_name = 'events' AND table_schema = current_schema()",
                    &[],
                )
                .await
                .map_err(&error)?;
            if flag(row)? {
                return Err(unsupported_schema("0"));
            }
        }
        tx.batch_execute(SCHEMA).await.map_err(&error)?;
        tx.execute(
            "INSERT INTO adk_internal_metadata (key, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&SCHEMA_VERSION_KEY, &SCHEMA_VERSION],
        )
        .await
        .map_err(&error)?;
        tx.commit().await.map_err(&error)
    }
}

fn now() -> NaiveDateTime {
    to_datetime(now_seconds())
}

async fn read_state(client: &impl GenericClient, sql: &str, key: &[&(dyn ToSql + Sync)]) -> Result<Map<String, Value>> {
    match client.query_opt(sql, key).await.map_err(db("reading a state"))? {
        Some(row) => state_object(col(&row, 0)?),
        None => Ok(Map::new()),
    }
}

/// The session's state (merged) and update time.
async fn read_session(
    client: &impl GenericClient,
    app_name: &str,
    user_id: &str,
    id: &str,
) -> Result<Option<(Map<String, Value>, f64)>> {
    let row = client
        .query_opt(
            "SELECT s.state, s.update_time, a.state, u.state FROM sessions s
             LEFT JOIN app_states a ON a.app_name = s.app_name
             LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
             WHERE s.app_name = $1 AND s.user_id = $2 AND s.id = $3",
            &[&app_name, &user_id, &id],
        )
        .await
        .map_err(db("reading a session"))?;
    let Some(row) = row else { return Ok(None) };
    let state = state_object(col(&row, 0)?)?;
    let app = state_object(col::<Option<Value>>(&row, 2)?.unwrap_or(Value::Null))?;
    let user = state_object(col::<Option<Value>>(&row, 3)?.unwrap_or(Value::Null))?;
    Ok(Some((merge_state(&app, &user, state), to_seconds(col(&row, 1)?))))
}

#[async_trait]
impl SessionService for PostgresSessionService {
    async fn create_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: Option<&str>,
        state: Map<String, Value>,
    ) -> Result<Session> {
        let id = session_id_or_new(session_id);
        let error = db("creating a session");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        let StateDeltas { app, user, session, .. } = StateDeltas::split(&state);
        let now = now();
        // adk-python creates both state rows with the session; its appends expect them.
        tx.execute(UPSERT_APP_STATE, &[&app_name, &Value::Object(app), &now]).await.map_err(&error)?;
        tx.execute(UPSERT_USER_STATE, &[&app_name, &user_id, &Value::Object(user), &now]).await.map_err(&error)?;
        let inserted = tx
            .execute(
                "INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time)
                 VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT DO NOTHING",
                &[&app_name, &user_id, &id, &Value::Object(session), &now],
            )
            .await
            .map_err(&error)?;
        if inserted == 0 {
            return Err(Error::SessionExists(id));
        }
        let (state, update_time) =
            read_session(&tx, app_name, user_id, &id).await?.ok_or_else(|| Error::SessionNotFound(id.clone()))?;
        tx.commit().await.map_err(&error)?;
        Ok(stored_session(app_name, user_id, id, state, Vec::new(), update_time))
    }

    async fn get_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: &str,
        config: GetSessionConfig,
    ) -> Result<Option<Session>> {
        let id = session_id;
        let error = db("reading a session");
        let mut client = self.client().await?;
        // One snapshot: the state and the events are of the same moment.
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(&error)?;
        let Some((state, update_time)) = read_session(&tx, app_name, user_id, id).await? else {
            // Ended now, not when the dropped transaction's rollback reaches the server.
            tx.commit().await.map_err(&error)?;
            return Ok(None);
        };
        let mut events = Vec::new();
        if config.num_recent_events != Some(0) {
            let after = config.after_timestamp.map(to_datetime);
            let limit = config.num_recent_events.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
            let rows = tx
                .query(
                    "SELECT id, invocation_id, \"timestamp\", event_data FROM events
                     WHERE app_name = $1 AND user_id = $2 AND session_id = $3
                       AND ($4::timestamp IS NULL OR \"timestamp\" >= $4)
                     ORDER BY \"timestamp\" DESC, id DESC LIMIT $5",
                    &[&app_name, &user_id, &id, &after, &limit],
                )
                .await
                .map_err(db("reading events"))?;
            for row in rows.into_iter().rev() {
                events.push(event_from_row(col(&row, 0)?, col(&row, 1)?, to_seconds(col(&row, 2)?), col(&row, 3)?)?);
            }
        }
        tx.commit().await.map_err(&error)?;
        Ok(Some(stored_session(app_name, user_id, id, state, events, update_time)))
    }

    async fn list_sessions(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Session>> {
        let client = self.client().await?;
        let app = read_state(&client, "SELECT state FROM app_states WHERE app_name = $1", &[&app_name]).await?;
        let rows = client
            .query(
                "SELECT s.user_id, s.id, s.state, s.update_time, u.state FROM sessions s
                 LEFT JOIN user_states u ON u.app_name = s.app_name AND u.user_id = s.user_id
                 WHERE s.app_name = $1 AND ($2::text IS NULL OR s.user_id = $2)
                 ORDER BY s.update_time ASC, s.user_id ASC, s.id ASC",
                &[&app_name, &user_id],
            )
            .await
            .map_err(db("listing sessions"))?;
        rows.into_iter()
            .map(|row| {
                let user = state_object(col::<Option<Value>>(&row, 4)?.unwrap_or(Value::Null))?;
                let state = merge_state(&app, &user, state_object(col(&row, 2)?)?);
                let (user_id, id): (String, String) = (col(&row, 0)?, col(&row, 1)?);
                Ok(stored_session(app_name, user_id, id, state, Vec::new(), to_seconds(col(&row, 3)?)))
            })
            .collect()
    }

    async fn delete_session(&self, app_name: &str, user_id: &str, session_id: &str) -> Result<()> {
        let id = session_id;
        let error = db("deleting a session");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        tx.execute(
            "DELETE FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3",
            &[&app_name, &user_id, &id],
        )
        .await
        .map_err(&error)?;
        tx.execute(
            "DELETE FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3",
            &[&app_name, &user_id, &id],
        )
        .await
        .map_err(&error)?;
        tx.commit().await.map_err(&error)
    }

    async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event> {
        if event.is_partial() {
            return Ok(event);
        }
        let stored = without_temp(&event);
        let data = event_data(&stored)?;
        let fresh = Fresh::of(session);
        let deltas = StateDeltas::split(&stored.actions.state_delta);
        let error = db("appending an event");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        // The row lock serializes appends to this session across every process.
        let row = tx
            .query_opt(
                "SELECT update_time FROM sessions WHERE app_name = $1 AND user_id = $2 AND id = $3 FOR UPDATE",
                &[&fresh.app_name, &fresh.user_id, &fresh.id],
            )
            .await
            .map_err(&error)?;
        let Some(row) = row else { return Err(Error::SessionNotFound(fresh.id)) };
        let update_time = to_seconds(col(&row, 0)?);
        // The newest stored event matters only to a session object without a revision.
        let newest: Option<String> = if fresh.revision.is_none() && update_time > fresh.last_update_time {
            let row = tx
                .query_opt(
                    "SELECT id FROM events WHERE app_name = $1 AND user_id = $2 AND session_id = $3
                     ORDER BY \"timestamp\" DESC, id DESC LIMIT 1",
                    &[&fresh.app_name, &fresh.user_id, &fresh.id],
                )
                .await
                .map_err(&error)?;
            row.map(|row| col(&row, 0)).transpose()?
        } else {
            None
        };
        check_fresh(&fresh, update_time, || Ok(newest))?;
        let time = to_datetime(stored.timestamp);
        let inserted = tx
            .execute(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, \"timestamp\", event_data)
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
                &[&&*stored.id, &fresh.app_name, &fresh.user_id, &fresh.id, &&*stored.invocation_id, &time, &data],
            )
            .await
            .map_err(&error)?;
        if inserted == 0 {
            let row = tx
                .query_one(
                    "SELECT event_data FROM events WHERE id = $1 AND app_name = $2 AND user_id = $3 AND session_id = $4",
                    &[&&*stored.id, &fresh.app_name, &fresh.user_id, &fresh.id],
                )
                .await
                .map_err(&error)?;
            let existing: Option<Value> = col(&row, 0)?;
            if existing.as_ref() == Some(&data) {
                return Ok(event);
            }
            return Err(Error::InvalidRequest(format!(
                "session {} already holds another event with id {}",
                fresh.id, stored.id
            )));
        }
        let now = now();
        if !deltas.app.is_empty() {
            tx.execute(UPSERT_APP_STATE, &[&fresh.app_name, &Value::Object(deltas.app), &now]).await.map_err(&error)?;
        }
        if !deltas.user.is_empty() {
            tx.execute(UPSERT_USER_STATE, &[&fresh.app_name, &fresh.user_id, &Value::Object(deltas.user), &now])
                .await
                .map_err(&error)?;
        }
        tx.execute(
            "UPDATE sessions SET state = state || $4, update_time = $5 WHERE app_name = $1 AND user_id = $2 AND id = $3",
            &[&fresh.app_name, &fresh.user_id, &fresh.id, &Value::Object(deltas.session), &time],
        )
        .await
        .map_err(&error)?;
        tx.commit().await.map_err(&error)?;
        Ok(commit_to_session(session, event, Appended::Stored(to_seconds(time))))
    }
}
