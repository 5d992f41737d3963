//! Processes killed mid-write leave their session stores consistent: a JSON file store keeps
//! the last whole version, and a PostgreSQL store keeps every loop it acknowledged. The writers
//! are `sinew-e2e-session-writer` processes (`bin/session_writer.rs`), killed by the test. An ADK
//! SQLite session keeps every acknowledged event, for sinew and for adk-python.

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};

use sinew::session::{PostgresStore, SessionStore, SqliteStore, list_session_ids, load_session, save_session};
use sinew_e2e::{LOOPS_PER_WRITER, session};
use sinew_testing::postgres::TestSchema;

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
    let schema = TestSchema::create("sinew_test").await;
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
    let schema = TestSchema::create("sinew_test").await;
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

/// Runs an ADK writer (`sinew-e2e-session-writer adk-sqlite`) until it acknowledged 200 events,
/// kills it (SIGKILL) mid-append, and gives back the database and every acknowledged event id.
fn killed_adk_writer() -> (tempfile::TempDir, std::path::PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("adk.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sinew-e2e-session-writer"))
        .arg("adk-sqlite")
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked = Vec::new();
    while acked.len() < 200 {
        acked.push(lines.next().expect("the writer stopped before it was killed").unwrap());
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Acknowledgements already in the pipe count too.
    acked.extend(lines.map_while(Result::ok));
    (dir, path, acked)
}

/// SIGKILL proves a process crash loses nothing acknowledged (the file is in WAL mode, each
/// append one transaction); a power cut is `synchronous = FULL`'s, which no test here pulls.
#[test]
fn an_adk_writer_killed_mid_append_loses_no_acknowledged_event() {
    use sinew::adk::{GetSessionConfig, SessionService, SqliteSessionService};
    let (_dir, path, acked) = killed_adk_writer();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let service = SqliteSessionService::open(&path).unwrap();
    let read = runtime.block_on(service.get_session("interop", "u1", "crash", GetSessionConfig::default()));
    let read = read.unwrap().expect("the session is there after the crash");
    let stored: Vec<&str> = read.events.iter().map(|e| &*e.id).collect();
    // The append in flight when the writer died may have committed without being acknowledged.
    assert!(
        stored.len() == acked.len() || stored.len() == acked.len() + 1,
        "{} stored, {} acked",
        stored.len(),
        acked.len()
    );
    assert_eq!(stored[..acked.len()], acked.iter().map(String::as_str).collect::<Vec<_>>()[..]);
    let last = stored.len() - 1;
    assert_eq!(
        (&read.state["count"], &read.state["user:count"], &read.state["app:count"]),
        (&last.into(), &last.into(), &last.into())
    );
    let integrity: String =
        rusqlite::Connection::open(&path).unwrap().query_row("PRAGMA integrity_check", [], |row| row.get(0)).unwrap();
    assert_eq!(integrity, "ok");
}

/// adk-python 2.13 (`DatabaseSessionService` over aiosqlite) opens what the killed writer left,
/// validating every event, and appends to it.
#[test]
#[cfg_attr(not(sinew_test_adk_python), ignore = "set SINEW_ADK_PYTHON to a python with google-adk[db] 2.13.0")]
fn adk_python_opens_what_a_killed_adk_writer_left() {
    let (_dir, path, acked) = killed_adk_writer();
    let python = std::env::var("SINEW_ADK_PYTHON").unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/sinew-adk/tests/data/scripts/adk_sessions.py");
    let output = Command::new(python)
        .arg(script)
        .args(["read", "database", &format!("sqlite+aiosqlite:///{}", path.display()), "crash"])
        .output()
        .unwrap();
    assert!(output.status.success(), "adk-python failed: {}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let sessions: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let events = sessions[0]["events"].as_array().unwrap();
    assert!(events.len() >= acked.len(), "{} events, {} acked", events.len(), acked.len());
    assert_eq!(sessions[1]["events"].as_array().unwrap().len(), events.len() + 1, "adk-python appended");
}
