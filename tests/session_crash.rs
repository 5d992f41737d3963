//! Processes killed mid-write leave their session stores consistent: a JSON file store keeps
//! the last whole version, and a PostgreSQL store keeps every loop it acknowledged. The writers
//! are `sinew-e2e-session-writer` processes (`bin/session_writer.rs`), killed by the test.

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use sinew::session::{PostgresStore, SessionStore, SqliteStore, list_session_ids, load_session, save_session};
use sinew_e2e::{LOOPS_PER_WRITER, session};

/// Waits until `reached` (the writer saved far enough), checking every millisecond, 30 s at
/// most: the writer's only output is what it writes.
fn wait_until(mut reached: impl FnMut() -> bool) {
    for _ in 0..30_000 {
        if reached() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("the writer did not save far enough");
}

#[test]
fn a_writer_killed_mid_save_leaves_the_previous_version_intact() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = session("crashy", "a", 200);
    first.updated_at = 0;
    save_session(dir.path(), &first).unwrap();
    let mut newest = 0;
    for round in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sinew-e2e-session-writer"))
            .arg("json")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill it somewhere in the middle of its saves: after it saved one to five versions
        // (each round cuts a different save).
        let target = newest + 1 + round;
        wait_until(|| load_session(dir.path(), "crashy").is_ok_and(|s| s.updated_at >= target));
        child.kill().unwrap();
        child.wait().unwrap();
        let survivor = load_session(dir.path(), "crashy").expect("the session is loadable after the crash");
        assert_eq!(survivor.loops.len(), 200);
        assert!(survivor.updated_at >= newest, "an acknowledged save was lost");
        newest = survivor.updated_at;
        assert_eq!(list_session_ids(dir.path()).unwrap(), ["crashy"], "no temporary file is listed");
    }
    assert!(newest > 0, "the writer never saved: the test proved nothing");
}

#[test]
fn a_sqlite_writer_killed_mid_save_leaves_the_previous_version_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let mut first = session("crashy", "a", 200);
    first.updated_at = 0;
    runtime.block_on(store.save(&first)).unwrap();
    let mut newest = 0;
    for round in 0..5 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_sinew-e2e-session-writer"))
            .arg("sqlite")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill it after it saved one to five versions: each round cuts a different save.
        let target = newest + 1 + round;
        wait_until(|| runtime.block_on(store.load("crashy")).is_ok_and(|s| s.updated_at >= target));
        child.kill().unwrap();
        child.wait().unwrap();
        // A fresh store, as a restarted application would open it.
        let survivor = runtime
            .block_on(SqliteStore::open(&path).unwrap().load("crashy"))
            .expect("the session is loadable after the crash");
        assert_eq!(survivor.loops.len(), 200, "a save is all or nothing");
        assert!(survivor.updated_at >= newest, "an acknowledged save was lost");
        newest = survivor.updated_at;
    }
    assert!(newest > 0, "the writer never saved: the test proved nothing");
}

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
struct Schema(String);

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

fn spawn_writer(url: &str, name: &str) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_sinew-e2e-session-writer"))
        .args(["postgres", url, name])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The acknowledged ids a writer printed, one per line.
fn acknowledged(lines: impl Iterator<Item = String>, name: &str) -> Vec<String> {
    let prefix = format!("{name}-");
    lines.filter(|line| line.starts_with(&prefix)).collect()
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
