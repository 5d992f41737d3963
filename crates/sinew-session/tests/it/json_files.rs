//! The JSON file store: the conformance suite, the file format, and crash safety.

use std::sync::Arc;
use std::time::Duration;

use sinew_session::{
    JsonFileStore, SESSION_FORMAT_VERSION, SessionError, SessionStore, delete_session, list_session_ids, load_session,
    load_sessions_for_agent, save_session,
};

use crate::session;

async fn json_store() -> (Arc<dyn SessionStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    (Arc::new(JsonFileStore::new(dir.path().join("sessions"))), dir)
}

mod conformance {
    crate::store_conformance!(super::json_store());
}

#[test]
fn test_session_save_load_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let original = session("abc", "agent", 2);
    save_session(dir.path(), &original).unwrap();
    let text = std::fs::read_to_string(dir.path().join("abc.json")).unwrap();
    assert!(text.starts_with("{\n  \"formatVersion\": 1,"), "pretty, versioned JSON: {}", &text[..60]);
    assert_eq!(load_session(dir.path(), "abc").unwrap(), original);
    // Nothing else is left in the directory.
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["abc.json"]);
}

#[test]
fn test_session_list_ids() {
    let dir = tempfile::tempdir().unwrap();
    assert!(list_session_ids(&dir.path().join("missing")).unwrap().is_empty());
    // Newest first, by modification time: set, not waited for.
    let base = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for (age, id) in ["one", "two", "three"].into_iter().enumerate() {
        save_session(dir.path(), &session(id, "a", 1)).unwrap();
        let file = std::fs::File::options().write(true).open(dir.path().join(format!("{id}.json"))).unwrap();
        file.set_modified(base + Duration::from_secs(age as u64)).unwrap();
    }
    std::fs::write(dir.path().join("notes.txt"), "not a session").unwrap();
    assert_eq!(list_session_ids(dir.path()).unwrap(), ["three", "two", "one"]);
}

#[test]
fn test_session_delete() {
    let dir = tempfile::tempdir().unwrap();
    save_session(dir.path(), &session("gone", "a", 1)).unwrap();
    save_session(dir.path(), &session("kept", "b", 1)).unwrap();
    delete_session(dir.path(), "gone").unwrap();
    assert!(matches!(delete_session(dir.path(), "gone"), Err(SessionError::NotFound(_))));
    let for_b = load_sessions_for_agent(dir.path(), "b").unwrap();
    assert_eq!(for_b.len(), 1);
    assert!(load_sessions_for_agent(dir.path(), "a").unwrap().is_empty());
}

#[test]
fn bad_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.json"), "{\"formatVersion\": 1, \"sessionId\": ").unwrap();
    let error = load_session(dir.path(), "broken").unwrap_err();
    assert!(matches!(&error, SessionError::Json { id, .. } if id == "broken"), "{error}");
    let future = format!("{{\"formatVersion\": {}, \"sessionId\": \"f\"}}", SESSION_FORMAT_VERSION + 1);
    std::fs::write(dir.path().join("future.json"), future).unwrap();
    let error = load_session(dir.path(), "future").unwrap_err();
    assert_eq!(error.to_string(), "session future has format version 2; this build reads up to 1");
}

#[test]
fn a_store_path_that_is_a_file_is_a_clear_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sessions");
    std::fs::write(&file, "a file").unwrap();
    let error = list_session_ids(&file).unwrap_err();
    assert!(matches!(&error, SessionError::Io { path, .. } if *path == file), "{error}");
    let error = save_session(&file, &session("x", "a", 1)).unwrap_err();
    assert_eq!(error.to_string(), format!("cannot access {}", file.display()));
}
