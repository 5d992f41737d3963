//! The PostgreSQL store, against the server `SINEW_TEST_POSTGRES_URL` names (the tests are ignored
//! without it; `.ci/run` sets it). Each test works in a schema of its own, dropped at its end.

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sinew_session::{PostgresStore, SessionError, SessionStore};

use crate::{record, session};

fn server_url() -> String {
    std::env::var("SINEW_TEST_POSTGRES_URL").expect("SINEW_TEST_POSTGRES_URL names the test server")
}

/// `url` with `search_path` set to `schema`.
fn url_in(schema: &str) -> String {
    let url = server_url();
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}options=-c%20search_path%3D{schema}")
}

async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&server_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("SINEW_TEST_POSTGRES_URL is set but the server does not answer: {e}"));
    tokio::spawn(connection);
    client
}

/// A schema of one test; dropped with everything in it when the test ends.
pub(crate) struct Schema(String);

impl Schema {
    async fn create() -> Schema {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("sinew_test_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        admin()
            .await
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"))
            .await
            .unwrap();
        Schema(name)
    }

    fn url(&self) -> String {
        url_in(&self.0)
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let name = self.0.clone();
        // Drop runs inside the test's runtime: do the async cleanup on a thread of its own.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                let sql = format!("SET lock_timeout = '10s'; DROP SCHEMA {name} CASCADE");
                admin().await.batch_execute(&sql).await
            })
        });
        if let Ok(Err(error)) = cleanup.join() {
            panic!("could not drop test schema {}: {error}", self.0);
        }
    }
}

async fn postgres_store() -> (Arc<dyn SessionStore>, Schema) {
    let schema = Schema::create().await;
    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    (Arc::new(store), schema)
}

mod conformance {
    crate::store_conformance!(
        super::postgres_store(),
        #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn instances_starting_together_migrate_once() {
    let schema = Schema::create().await;
    let url = schema.url();
    let starts = (0..6).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { PostgresStore::connect(&url).await })
    });
    for start in starts {
        start.await.unwrap().unwrap();
    }
    let client = admin().await;
    let versions =
        client.query(&format!("SELECT version FROM {}.sinew_session_migrations", schema.0), &[]).await.unwrap();
    assert_eq!(versions.len(), 1, "one migration, applied once");
}

#[tokio::test]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn damaged_and_newer_databases_are_clear_errors() {
    let schema = Schema::create().await;
    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    store.save(&session("future", "a", 1)).await.unwrap();
    let client = admin().await;
    let s = &schema.0;
    client.execute(&format!("UPDATE {s}.sinew_sessions SET format_version = 2"), &[]).await.unwrap();
    let error = store.load("future").await.unwrap_err();
    assert_eq!(error.to_string(), "session future has format version 2; this build reads up to 1");
    client.execute(&format!("INSERT INTO {s}.sinew_session_migrations (version) VALUES (7)"), &[]).await.unwrap();
    let error = PostgresStore::connect(&schema.url()).await.unwrap_err();
    let cause = std::error::Error::source(&error).unwrap().to_string();
    assert_eq!(cause, "the database has schema version 7; this build knows up to 1");
}

#[tokio::test]
async fn an_unreachable_server_is_a_clear_error() {
    // Port 1 on loopback: refused at once, no server needed.
    let error = PostgresStore::connect("postgres://postgres@127.0.0.1:1/test?connect_timeout=2").await.unwrap_err();
    assert!(matches!(error, SessionError::Database { doing: "connecting", .. }), "{error}");
    let error = PostgresStore::connect("not a url").await.unwrap_err();
    assert!(matches!(error, SessionError::Database { doing: "parsing the database URL", .. }), "{error}");
}

/// The writer half of the two-process test: appends loops `{name}-0..` to session "shared", one
/// merge each, printing each id once the merge is acknowledged.
#[tokio::test]
#[allow(clippy::print_stdout, reason = "stdout is how the child reports to the test")]
async fn postgres_append_child() {
    let Ok(target) = std::env::var("SINEW_PG_APPEND_CHILD") else { return };
    let (url, name) = target.split_once(' ').unwrap();
    let store = PostgresStore::connect(url).await.unwrap();
    for i in 0..LOOPS_PER_WRITER {
        let id = format!("{name}-{i}");
        let mut part = session("shared", "a", 0);
        part.loops.push(record("shared", "a", &id));
        store.merge(&part).await.unwrap();
        println!("{id}");
    }
}

const LOOPS_PER_WRITER: usize = 60;

fn spawn_writer(url: &str, name: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["postgres::postgres_append_child", "--exact", "--nocapture", "--test-threads", "1"])
        .env("SINEW_PG_APPEND_CHILD", format!("{url} {name}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The acknowledged ids a writer printed. The first shares its line with the harness's
/// `test ... ` prefix, so an id is a line's last word.
fn acknowledged(lines: impl Iterator<Item = String>, name: &str) -> Vec<String> {
    let prefix = format!("{name}-");
    lines
        .filter_map(|line| line.split_whitespace().last().filter(|id| id.starts_with(&prefix)).map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn two_processes_appending_never_lose_or_duplicate_a_loop() {
    let schema = Schema::create().await;
    let url = schema.url();
    let store = PostgresStore::connect(&url).await.unwrap();
    let writers = [spawn_writer(&url, "left"), spawn_writer(&url, "right")];
    let mut printed = Vec::new();
    for (mut writer, name) in writers.into_iter().zip(["left", "right"]) {
        let stdout = BufReader::new(writer.stdout.take().unwrap());
        printed.push(acknowledged(stdout.lines().map_while(Result::ok), name));
        assert!(writer.wait().unwrap().success());
    }
    let stored = store.load("shared").await.unwrap();
    let ids: Vec<&str> = stored.loops.iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!(ids.len(), 2 * LOOPS_PER_WRITER, "no loop lost or duplicated");
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 2 * LOOPS_PER_WRITER);
    for (name, printed) in ["left", "right"].into_iter().zip(printed) {
        let theirs: Vec<&str> = ids.iter().copied().filter(|id| id.starts_with(&format!("{name}-"))).collect();
        assert_eq!(theirs, printed, "{name}'s loops are stored in the order it appended them");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn a_writer_killed_mid_append_loses_nothing_it_was_told_was_stored() {
    let schema = Schema::create().await;
    let url = schema.url();
    let store = PostgresStore::connect(&url).await.unwrap();
    let mut victim = spawn_writer(&url, "victim");
    let survivor = spawn_writer(&url, "survivor");
    // Read the victim's acknowledgements until it is a third of the way, then kill it.
    let mut lines = BufReader::new(victim.stdout.take().unwrap()).lines().map_while(Result::ok);
    let mut told = acknowledged(lines.by_ref().take_while(|line| !line.ends_with("victim-20")), "victim");
    told.push("victim-20".to_owned());
    victim.kill().unwrap();
    victim.wait().unwrap();
    // What it acknowledged between our reading and its death.
    told.extend(acknowledged(lines, "victim"));
    let survivor = survivor.wait_with_output().unwrap();
    assert!(survivor.status.success());

    let stored = store.load("shared").await.unwrap();
    let ids: Vec<&str> = stored.loops.iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), ids.len(), "no loop duplicated");
    let victims: Vec<&str> = ids.iter().copied().filter(|id| id.starts_with("victim-")).collect();
    assert!(victims.len() >= told.len(), "acknowledged {} loops, {} stored", told.len(), victims.len());
    assert_eq!(victims[..told.len()], told, "every acknowledged loop is stored, in order");
    assert!(victims.len() < LOOPS_PER_WRITER, "the victim was killed before it finished");
    let survivors = ids.iter().filter(|id| id.starts_with("survivor-")).count();
    assert_eq!(survivors, LOOPS_PER_WRITER);
}
