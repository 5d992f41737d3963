//! The SQLite store: the conformance suite, crash safety, and what a damaged database gives.

use std::collections::HashSet;
use std::sync::Arc;

use sinew_session::{SessionError, SessionStore, SqliteStore};

use crate::{record, session};

async fn sqlite_store() -> (Arc<dyn SessionStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Arc::new(SqliteStore::open(dir.path().join("sessions.db")).unwrap()), dir)
}

mod conformance {
    crate::store_conformance!(super::sqlite_store());
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
