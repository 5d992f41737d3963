//! The SQL session services: the conformance suite, adk-python's schema, stale writers, load, and
//! interop with adk-python 2.13 both ways. (A writer killed mid-append: the root `tests/`
//! package's `session_crash.rs`.)
//!
//! PostgreSQL tests run against `SINEW_TEST_POSTGRES_URL`, each in a schema of its own; interop
//! tests run adk-python from `SINEW_ADK_PYTHON` (`tests/data/scripts/adk_sessions.py`). Both are
//! reported as ignored without them, and `cargo xtask ci` always sets them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Map, Value, json};
#[cfg(feature = "postgres")]
use sinew_adk::PostgresSessionService;
use sinew_adk::testing::ScriptedLlm;
use sinew_adk::{
    Content, Error, Event, GetSessionConfig, LlmAgent, RunConfig, Runner, Session, SessionService,
    SqliteSessionService, now_seconds,
};

#[cfg(feature = "postgres")]
use crate::pg::Schema;

use crate::session_services::state;

pub(crate) fn sqlite_service() -> (SqliteSessionService, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (SqliteSessionService::open(dir.path().join("sessions.db")).unwrap(), dir)
}

crate::session_service_conformance!(sqlite_conformance, crate::sql_sessions::sqlite_service());

#[cfg(feature = "postgres")]
crate::session_service_conformance!(
    postgres_conformance,
    crate::sql_sessions::postgres_service().await,
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
);

#[cfg(feature = "postgres")]
pub(crate) async fn postgres_service() -> (PostgresSessionService, Schema) {
    let schema = crate::pg::schema().await;
    (PostgresSessionService::connect(&schema.url()).await.unwrap(), schema)
}

/// A user event at `timestamp`.
fn said(text: &str, timestamp: f64) -> Event {
    let mut event = Event::user("e-1", Content::user_text(text));
    event.timestamp = timestamp;
    event
}

/// Another writer appends through its own copy: the first copy is then stale and refused, and
/// works again once read afresh. The writer's own copy goes on appending.
async fn stale_copies_are_refused(s: &dyn SessionService) {
    let created = s.create_session("a", "u", Some("s1"), Map::new()).await.unwrap();
    let (mut mine, mut theirs) = (created.clone(), created);
    let t = now_seconds();
    s.append_event(&mut theirs, said("theirs", t + 1.0)).await.unwrap();
    s.append_event(&mut theirs, said("theirs again", t + 2.0)).await.unwrap();
    let refused = s.append_event(&mut mine, said("mine", t + 3.0)).await;
    assert!(matches!(refused, Err(Error::StaleSession { ref id }) if id == "s1"), "{refused:?}");
    assert_eq!(
        refused.unwrap_err().to_string(),
        "session s1 was modified in storage since it was read: read it again before appending"
    );
    assert!(mine.events.is_empty(), "a refused event is not added to the session object");

    let mut mine = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    s.append_event(&mut mine, said("mine", t + 3.0)).await.unwrap();
    let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(crate::session_services::texts(&read), ["theirs", "theirs again", "mine"]);
    assert_eq!(read.last_update_time, mine.last_update_time);

    // The same id with other content is not the same event: refused, and nothing changes.
    let mut fresh = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    let mut impostor = fresh.events[0].clone();
    impostor.content = Some(Content::user_text("something else"));
    let refused = s.append_event(&mut fresh, impostor).await;
    assert!(matches!(&refused, Err(Error::InvalidRequest(m)) if m.contains("another event with id")), "{refused:?}");
    let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(crate::session_services::texts(&read), ["theirs", "theirs again", "mine"]);

    // An object without a revision (through JSON) falls under adk-python's rule for those: it is
    // refused once the stored session is newer and it has not seen the newest stored event.
    let through_json =
        |session: &Session| -> Session { serde_json::from_value(serde_json::to_value(session).unwrap()).unwrap() };
    let (mut up_to_date, mut behind) = (through_json(&mine), through_json(&mine));
    s.append_event(&mut up_to_date, said("from JSON", t + 4.0)).await.unwrap();
    let refused = s.append_event(&mut behind, said("behind", t + 5.0)).await;
    assert!(matches!(refused, Err(Error::StaleSession { .. })), "{refused:?}");
    // Its times may lag while it has seen the newest event: accepted.
    let mut lagging = through_json(&up_to_date);
    lagging.last_update_time -= 10.0;
    s.append_event(&mut lagging, said("lagging", t + 6.0)).await.unwrap();
}

#[tokio::test]
async fn sqlite_refuses_stale_session_objects() {
    let (s, _dir) = sqlite_service();
    stale_copies_are_refused(&s).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn postgres_refuses_stale_session_objects() {
    let (s, _schema) = postgres_service().await;
    stale_copies_are_refused(&s).await;
}

/// The file holds adk-python's schema v1, rows as adk-python writes them (samples/17).
#[tokio::test]
async fn sqlite_files_hold_adk_pythons_schema_and_rows() {
    let (s, dir) = sqlite_service();
    let mut session =
        s.create_session("app", "u", Some("s1"), state(json!({"k": 1, "app:a": "A", "user:b": "B"}))).await.unwrap();
    let mut event = said("hi", 1_795_254_255.658_109_7);
    event.actions.state_delta = state(json!({"k": 2, "user:b": "B2", "temp:t": 0}));
    s.append_event(&mut session, event).await.unwrap();
    assert_eq!(session.last_update_time, 1_795_254_255.658_11, "the stored time, rounded to the microsecond");

    let db = rusqlite::Connection::open(dir.path().join("sessions.db")).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(tables, ["adk_internal_metadata", "app_states", "events", "sessions", "user_states"]);
    let version: String =
        db.query_row("SELECT value FROM adk_internal_metadata WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
    assert_eq!(version, "1");
    let (state_text, update_time): (String, String) =
        db.query_row("SELECT state, update_time FROM sessions", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!((state_text.as_str(), update_time.as_str()), (r#"{"k": 2}"#, "2026-11-21 09:44:15.658110"));
    let user: String = db.query_row("SELECT state FROM user_states", [], |r| r.get(0)).unwrap();
    assert_eq!(user, r#"{"b": "B2"}"#);
    let (timestamp, data): (String, String) =
        db.query_row("SELECT timestamp, event_data FROM events", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    assert_eq!(timestamp, "2026-11-21 09:44:15.658110");
    let data: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(data["invocation_id"], "e-1");
    assert_eq!(data["actions"]["state_delta"], json!({"k": 2, "user:b": "B2"}), "temp: keys are never stored");
    assert_eq!(data["timestamp"], json!(1_795_254_255.658_109_7), "the event keeps its exact time");
}

/// A database in ADK's legacy schema v0 (typed columns, pickled actions) is refused with a way out.
#[test]
fn legacy_schema_v0_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("legacy.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE events (id TEXT, app_name TEXT, author TEXT, actions BLOB)")
        .unwrap();
    let error = SqliteSessionService::open(&path).unwrap_err().to_string();
    assert!(error.contains("schema version 0") && error.contains("adk migrate session"), "{error}");
}

#[test]
fn an_in_memory_sqlite_database_is_refused_with_a_reason() {
    let error = SqliteSessionService::open(":memory:").unwrap_err().to_string();
    assert!(error.contains("cannot be shared by a pool"), "{error}");
}

#[test]
fn a_metadata_table_without_a_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE adk_internal_metadata (\"key\" VARCHAR(128) PRIMARY KEY, value VARCHAR(256))")
        .unwrap();
    let error = SqliteSessionService::open(&path).unwrap_err().to_string();
    assert!(error.contains("schema version (missing)"), "{error}");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("INSERT INTO adk_internal_metadata VALUES ('schema_version', '2')", [])
        .unwrap();
    let error = SqliteSessionService::open(&path).unwrap_err().to_string();
    assert!(error.contains("schema version 2"), "{error}");
}

#[tokio::test]
#[cfg(feature = "postgres")]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn postgres_refuses_legacy_schema_v0() {
    let schema = crate::pg::schema().await;
    let (client, connection) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client.batch_execute("CREATE TABLE events (id TEXT, app_name TEXT, author TEXT, actions BYTEA)").await.unwrap();
    let error = PostgresSessionService::connect(&schema.url()).await.unwrap_err().to_string();
    assert!(error.contains("schema version 0") && error.contains("adk migrate session"), "{error}");
}

#[test]
fn a_file_that_is_not_a_database_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("not.db");
    std::fs::write(&path, b"this is not a database, just some text that goes on long enough").unwrap();
    let error = SqliteSessionService::open(&path).unwrap_err();
    assert!(matches!(error, Error::Store(_)), "{error:?}");
}

/// 100 runners at once, each with a session of its own in one database: every event and every
/// state key of every scope is kept.
async fn hundred_runners(sessions: Arc<dyn SessionService>) {
    const RUNNERS: usize = 100;
    let tasks: Vec<_> = (0..RUNNERS)
        .map(|i| {
            let sessions = sessions.clone();
            tokio::spawn(async move {
                let (user, id) = (format!("u{}", i % 10), format!("s{i}"));
                let initial = state(json!({"n": i, format!("user:seen_{i}"): true, format!("app:seen_{i}"): true}));
                sessions.create_session("load", &user, Some(&id), initial).await.unwrap();
                let llm = Arc::new(ScriptedLlm::texts([format!("first {i}"), format!("second {i}")]));
                let agent = LlmAgent::builder("agent").model(llm).output_key("last").build().unwrap();
                let runner = Runner::new("load", Arc::new(agent), sessions.clone()).unwrap();
                for turn in ["one", "two"] {
                    let events: Vec<_> = runner
                        .run(&user, &id, Some(Content::user_text(turn)), None, RunConfig::default())
                        .collect()
                        .await;
                    assert!(events.iter().all(Result::is_ok), "{events:?}");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut events = 0;
    for i in 0..RUNNERS {
        let read =
            sessions.get_session("load", &format!("u{}", i % 10), &format!("s{i}"), GetSessionConfig::default()).await;
        let read = read.unwrap().unwrap();
        events += read.events.len();
        assert_eq!(read.state["last"], format!("second {i}"));
        assert_eq!(read.state["n"], i);
        assert_eq!(read.state[&format!("user:seen_{i}")], true);
        let app_keys = read.state.keys().filter(|k| k.starts_with("app:seen_")).count();
        assert_eq!(app_keys, RUNNERS, "every runner's app: key");
    }
    assert_eq!(events, RUNNERS * 4, "two turns of a user event and an answer each");
    assert_eq!(sessions.list_sessions("load", None).await.unwrap().len(), RUNNERS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_runners_share_one_sqlite_file() {
    let (s, _dir) = sqlite_service();
    hundred_runners(Arc::new(s)).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn a_hundred_runners_share_one_postgres_database() {
    let (s, _schema) = postgres_service().await;
    hundred_runners(Arc::new(s)).await;
}

// ---- interop with adk-python ----

fn sqlite_url(path: &Path) -> String {
    format!("sqlite+aiosqlite:///{}", path.display())
}

/// Runs `tests/data/scripts/adk_sessions.py` with adk-python; its output, one JSON value per line.
fn adk_python(args: &[&str]) -> Vec<Value> {
    let python = std::env::var("SINEW_ADK_PYTHON").expect("SINEW_ADK_PYTHON names a python with google-adk[db] 2.13.0");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/scripts/adk_sessions.py");
    let output = Command::new(python).arg(script).args(args).output().unwrap();
    assert!(output.status.success(), "adk-python failed on {args:?}:\n{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Events of every kind adk-python records: text, calls and responses, transfers, every action,
/// confirmation requests, and the rarer part kinds.
fn recorded_events() -> Vec<Value> {
    let mut events: Vec<Value> = serde_json::from_str(&crate::data("samples/02_run_weather.json")).unwrap();
    let transfer: Value = serde_json::from_str(&crate::data("samples/16_transfer_events.json")).unwrap();
    events.extend(transfer["transfer_ok"].as_array().unwrap().iter().cloned());
    events.push(serde_json::from_str(&crate::data("samples/11_event_all_actions.json")).unwrap());
    let confirmation: Vec<Value> =
        serde_json::from_str(&crate::data("samples/03_run_confirmation_request.json")).unwrap();
    events.extend(confirmation);
    let kinds: Map<String, Value> = serde_json::from_str(&crate::data("samples/12_part_kinds.json")).unwrap();
    let parts: Vec<Value> = kinds.into_values().collect();
    events.push(json!({
        "invocationId": "e-kinds", "author": "agent", "id": "kinds-1", "timestamp": 1.0,
        "content": {"role": "model", "parts": parts},
    }));
    events
}

fn events_file(dir: &Path) -> String {
    let path = dir.join("events.json");
    std::fs::write(&path, serde_json::to_string(&recorded_events()).unwrap()).unwrap();
    path.display().to_string()
}

fn wire(session: &Session) -> Value {
    serde_json::to_value(session).unwrap()
}

/// adk-python wrote it: sinew reads the same session, state in every scope and every event.
async fn reads_what_python_wrote(s: &dyn SessionService, python: &Value) {
    let read = s.get_session("interop", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(wire(&read), *python);
    assert_eq!(read.events.len(), recorded_events().len());
    assert_eq!(read.state["app:theme"], "dark");
    assert!(!read.state.contains_key("temp:scratch"));
    // And sinew appends to it.
    let mut session = read;
    let mut event = said("appended by sinew", now_seconds());
    event.actions.state_delta = state(json!({"sinew": 1, "user:sinew": 1, "app:sinew": 1}));
    s.append_event(&mut session, event).await.unwrap();
}

/// sinew wrote it: adk-python reads the same session (validating every event), appends to it,
/// and sinew reads that.
async fn python_reads_what_sinew_wrote(s: &dyn SessionService, python: impl Fn() -> Vec<Value>) {
    let ours = s.get_session("interop", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    let seen = python();
    assert_eq!(seen[0], wire(&ours), "adk-python reads what sinew reads");
    let after = s.get_session("interop", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(wire(&after), seen[1], "sinew reads what adk-python appended");
    assert_eq!(after.events.last().unwrap().content.as_ref().unwrap().text(), "appended by adk-python");
    assert_eq!(
        (&after.state["python"], &after.state["user:python"], &after.state["app:python"]),
        (&json!(true), &json!(true), &json!(true))
    );
}

/// sinew's own writes of the recorded events, with fresh times.
async fn write_as_sinew(s: &dyn SessionService) {
    let initial = state(json!({"greeting": "hi", "app:theme": "dark", "user:lang": "en", "temp:scratch": 1}));
    let mut session = s.create_session("interop", "u1", Some("s1"), initial).await.unwrap();
    let start = now_seconds();
    for (i, raw) in recorded_events().into_iter().enumerate() {
        let mut event: Event = serde_json::from_value(raw).unwrap();
        event.timestamp = start + i as f64 / 1000.0;
        s.append_event(&mut session, event).await.unwrap();
    }
}

#[tokio::test]
#[cfg_attr(not(sinew_test_adk_python), ignore = "set SINEW_ADK_PYTHON to a python with google-adk[db] 2.13.0")]
async fn adk_python_sqlite_database_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let events = events_file(dir.path());
    let theirs = dir.path().join("theirs.db");
    let written = adk_python(&["write", "database", &sqlite_url(&theirs), "s1", &events]);
    reads_what_python_wrote(&SqliteSessionService::open(&theirs).unwrap(), &written[0]).await;
    // adk-python reads it back after sinew appended.
    let again = adk_python(&["read", "database", &sqlite_url(&theirs), "s1"]);
    assert_eq!(
        again[0]["events"].as_array().unwrap().last().unwrap()["content"]["parts"][0]["text"],
        "appended by sinew"
    );

    let ours = dir.path().join("ours.db");
    let s = SqliteSessionService::open(&ours).unwrap();
    write_as_sinew(&s).await;
    python_reads_what_sinew_wrote(&s, || adk_python(&["read", "database", &sqlite_url(&ours), "s1"])).await;
}

#[tokio::test]
#[cfg_attr(not(sinew_test_adk_python), ignore = "set SINEW_ADK_PYTHON to a python with google-adk[db] 2.13.0")]
async fn adk_python_stdlib_sqlite_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let events = events_file(dir.path());
    let theirs = dir.path().join("stdlib.db");
    let target = theirs.display().to_string();
    let written = adk_python(&["write", "sqlite", &target, "s1", &events]);
    let s = SqliteSessionService::open(&theirs).unwrap();
    reads_what_python_wrote(&s, &written[0]).await;
    let again = adk_python(&["read", "sqlite", &target, "s1"]);
    let read = s.get_session("interop", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(read.events.len(), recorded_events().len() + 2, "sinew's event and adk-python's");
    assert_eq!(wire(&read), again[1]);
}

#[cfg(feature = "postgres")]
#[tokio::test]
#[cfg_attr(
    not(all(sinew_test_adk_python, sinew_test_postgres)),
    ignore = "set SINEW_ADK_PYTHON and SINEW_TEST_POSTGRES_URL"
)]
async fn adk_python_postgres_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let events = events_file(dir.path());
    let theirs = crate::pg::schema().await;
    let written = adk_python(&["write", "database", &crate::pg::python_url(&theirs), "s1", &events]);
    reads_what_python_wrote(&PostgresSessionService::connect(&theirs.url()).await.unwrap(), &written[0]).await;
    let again = adk_python(&["read", "database", &crate::pg::python_url(&theirs), "s1"]);
    assert_eq!(
        again[0]["events"].as_array().unwrap().last().unwrap()["content"]["parts"][0]["text"],
        "appended by sinew"
    );

    let ours = crate::pg::schema().await;
    let s = PostgresSessionService::connect(&ours.url()).await.unwrap();
    write_as_sinew(&s).await;
    python_reads_what_sinew_wrote(&s, || adk_python(&["read", "database", &crate::pg::python_url(&ours), "s1"])).await;
}
