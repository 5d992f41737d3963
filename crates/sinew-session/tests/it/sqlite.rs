//! The SQLite store: the conformance suite, crash safety, and what a damaged database gives.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use sinew_session::{SessionError, SessionStore, SqliteStore};

use crate::{record, session};

async fn sqlite_store() -> (Arc<dyn SessionStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Arc::new(SqliteStore::open(dir.path().join("sessions.db")).unwrap()), dir)
}

mod conformance {
    crate::store_conformance!(super::sqlite_store());
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_on_one_file_merge_without_losing_loops() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let stores = [SqliteStore::open(&path).unwrap(), SqliteStore::open(&path).unwrap()];
    let mut tasks = Vec::new();
    for (n, store) in stores.iter().enumerate() {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..25 {
                let mut part = session("shared", "a", 0);
                part.loops.push(record("shared", "a", &format!("s{n}-{i}")));
                store.merge(&part).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let stored = stores[0].load("shared").await.unwrap();
    let ids: HashSet<&str> = stored.loops.iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!((stored.loops.len(), ids.len()), (50, 50));
}

#[test]
fn a_database_from_a_newer_build_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    drop(SqliteStore::open(&path).unwrap());
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.pragma_update(None, "user_version", 99).unwrap();
    drop(connection);
    let error = SqliteStore::open(&path).unwrap_err();
    assert_eq!(error.to_string(), "session database error while migrating");
    let cause = std::error::Error::source(&error).unwrap().to_string();
    assert_eq!(cause, "the database has schema version 99; this build knows up to 1");
}

#[test]
fn a_file_that_is_not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    std::fs::write(&path, vec![b'x'; 4096]).unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(error, SessionError::Database { .. }), "{error}");
}

#[tokio::test]
async fn damaged_rows_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    let store = SqliteStore::open(&path).unwrap();
    store.save(&session("broken", "a", 2)).await.unwrap();
    store.save(&session("future", "a", 1)).await.unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    connection.execute("UPDATE sinew_loops SET record = '{\"loopId\": ' WHERE session_id = 'broken'", []).unwrap();
    connection.execute("UPDATE sinew_sessions SET format_version = 2 WHERE session_id = 'future'", []).unwrap();
    let error = store.load("broken").await.unwrap_err();
    assert!(matches!(&error, SessionError::Json { id, .. } if id == "broken"), "{error}");
    let error = store.load("future").await.unwrap_err();
    assert_eq!(error.to_string(), "session future has format version 2; this build reads up to 1");
}

/// The writer half of the crash test: saves ever larger versions of one session until killed.
#[test]
fn sqlite_crash_writer_child() {
    let Ok(path) = std::env::var("SINEW_CRASH_SQLITE_PATH") else { return };
    let runtime = runtime();
    let store = SqliteStore::open(Path::new(&path)).unwrap();
    runtime.block_on(async {
        let start = store.load("crashy").await.map_or(0, |s| s.updated_at) + 1;
        for version in start.. {
            let mut s = session("crashy", "a", 200);
            s.updated_at = version;
            store.save(&s).await.unwrap();
        }
    });
}

#[test]
fn a_writer_killed_mid_save_leaves_the_previous_version_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let runtime = runtime();
    let store = SqliteStore::open(&path).unwrap();
    let mut first = session("crashy", "a", 200);
    first.updated_at = 0;
    runtime.block_on(store.save(&first)).unwrap();
    let mut newest = 0;
    for round in 0..5 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["sqlite::sqlite_crash_writer_child", "--exact", "--nocapture", "--test-threads", "1"])
            .env("SINEW_CRASH_SQLITE_PATH", &path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150 + 37 * round));
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

#[test]
fn the_database_is_its_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let path = dir.path().join("new.db");
    drop(SqliteStore::open(&path).unwrap());
    assert_eq!(mode(&path), 0o600, "created private");
    let old = dir.path().join("old.db");
    std::fs::write(&old, b"").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o644)).unwrap();
    drop(SqliteStore::open(&old).unwrap());
    assert_eq!(mode(&old), 0o600, "an existing file is tightened");
}
