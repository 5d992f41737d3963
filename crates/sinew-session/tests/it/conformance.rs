//! The conformance suite every `SessionStore` passes: the same checks, one instantiation per
//! store (`store_conformance!`).

use std::collections::HashSet;
use std::sync::Arc;

use sinew_session::{SessionError, SessionStore};

use crate::{record, session};

pub(crate) async fn round_trip(store: &dyn SessionStore) {
    let mut original = session("s-round", "agent-a", 3);
    original.loops[1].children_loop_ids = vec!["s-round.mock.m.3".into()];
    original.loops[2].parent_loop_id = Some("s-round.mock.m.2".into());
    // What tool output may hold: a NUL, quotes, non-ASCII, a lone backslash.
    original.loops[0].messages.push(sinew_core::AgentMessage::user("nul \u{0} \"quoted\" žluťoučký 🦀 \\"));
    original.parent_spawn_ref = Some(sinew_session::SpawnRef {
        parent_session_id: "p".into(),
        parent_loop_id: "p.1".into(),
        tool_call_id: "call_1".into(),
        tool_name: "delegate".into(),
    });
    store.save(&original).await.unwrap();
    let loaded = store.load("s-round").await.unwrap();
    assert_eq!(loaded, original);
    assert_eq!(loaded.total_usage().total_tokens, 45);
}

pub(crate) async fn save_replaces(store: &dyn SessionStore) {
    store.save(&session("s-replace", "a", 3)).await.unwrap();
    store.save(&session("s-replace", "a", 1)).await.unwrap();
    assert_eq!(store.load("s-replace").await.unwrap().loops.len(), 1);
}

pub(crate) async fn missing_sessions_are_not_found(store: &dyn SessionStore) {
    assert!(matches!(store.load("nope").await, Err(SessionError::NotFound(id)) if id == "nope"));
    assert!(matches!(store.delete("nope").await, Err(SessionError::NotFound(_))));
}

pub(crate) async fn list_is_newest_first(store: &dyn SessionStore) {
    for id in ["s-old", "s-mid", "s-new"] {
        let mut s = session(id, "a", 1);
        s.updated_at = match id {
            "s-old" => 1_000,
            "s-mid" => 2_000,
            _ => 3_000,
        };
        store.save(&s).await.unwrap();
        // File stores order by modification time: let it tick.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let ids = store.list_ids().await.unwrap();
    let ours: Vec<&str> = ids.iter().map(String::as_str).filter(|id| id.starts_with("s-")).collect();
    assert_eq!(ours, ["s-new", "s-mid", "s-old"]);
}

pub(crate) async fn delete_removes(store: &dyn SessionStore) {
    store.save(&session("s-delete", "a", 1)).await.unwrap();
    store.delete("s-delete").await.unwrap();
    assert!(matches!(store.load("s-delete").await, Err(SessionError::NotFound(_))));
    assert!(!store.list_ids().await.unwrap().contains(&"s-delete".to_owned()));
}

pub(crate) async fn sessions_of_one_agent(store: &dyn SessionStore) {
    store.save(&session("s-ag1", "agent-x", 1)).await.unwrap();
    store.save(&session("s-ag2", "agent-y", 1)).await.unwrap();
    store.save(&session("s-ag3", "agent-x", 2)).await.unwrap();
    let mut ids: Vec<String> =
        store.load_for_agent("agent-x").await.unwrap().into_iter().map(|s| s.session_id).collect();
    ids.sort();
    assert_eq!(ids, ["s-ag1", "s-ag3"]);
    assert!(store.load_for_agent("agent-z").await.unwrap().is_empty());
}

pub(crate) async fn merge_appends_and_replaces(store: &dyn SessionStore) {
    let first = session("s-merge", "a", 2);
    store.merge(&first).await.unwrap();
    let mut later = session("s-merge", "a", 0);
    let mut changed = record("s-merge", "a", "s-merge.mock.m.2");
    changed.status = sinew_session::LoopStatus::Failed;
    later.loops = vec![changed, record("s-merge", "a", "s-merge.mock.m.3")];
    later.updated_at = 5_000;
    store.merge(&later).await.unwrap();
    let stored = store.load("s-merge").await.unwrap();
    let ids: Vec<&str> = stored.loops.iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!(ids, ["s-merge.mock.m.1", "s-merge.mock.m.2", "s-merge.mock.m.3"]);
    assert_eq!(stored.loops[1].status, sinew_session::LoopStatus::Failed);
    assert_eq!(stored.updated_at, 5_000);
}

/// Concurrent merges into one session: none loses or duplicates a loop.
pub(crate) async fn concurrent_merges_lose_nothing(store: Arc<dyn SessionStore>) {
    let mut tasks = Vec::new();
    for writer in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                let mut part = session("s-concurrent", "a", 0);
                part.loops.push(record("s-concurrent", "a", &format!("w{writer}-{i}")));
                store.merge(&part).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let stored = store.load("s-concurrent").await.unwrap();
    let ids: HashSet<&str> = stored.loops.iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!(stored.loops.len(), 80, "no loop duplicated");
    assert_eq!(ids.len(), 80, "no loop lost");
    // Each writer's loops keep their order.
    for writer in 0..8 {
        let mine: Vec<&str> = stored
            .loops
            .iter()
            .map(|l| l.loop_id.as_str())
            .filter(|id| id.starts_with(&format!("w{writer}-")))
            .collect();
        let expected: Vec<String> = (0..10).map(|i| format!("w{writer}-{i}")).collect();
        assert_eq!(mine, expected);
    }
}

pub(crate) async fn get_or_create_keeps_what_is_there(store: &dyn SessionStore) {
    let created = store.get_or_create("s-goc", "agent-g").await.unwrap();
    assert_eq!((created.agent_id.as_str(), created.loops.len()), ("agent-g", 0));
    assert_eq!(store.load("s-goc").await.unwrap(), created, "it was stored");
    store.merge(&session("s-goc", "agent-g", 2)).await.unwrap();
    let again = store.get_or_create("s-goc", "someone-else").await.unwrap();
    assert_eq!((again.agent_id.as_str(), again.loops.len()), ("agent-g", 2));
}

pub(crate) async fn hostile_ids_are_refused(store: &dyn SessionStore) {
    for id in ["", "../escape", "a/b", ".hidden"] {
        let bad = session(id, "a", 1);
        assert!(matches!(store.save(&bad).await, Err(SessionError::InvalidId(_))), "{id:?}");
        assert!(matches!(store.load(id).await, Err(SessionError::InvalidId(_))), "{id:?}");
    }
}

/// Declares the suite's tests for a store built by `$make` (an async expression giving
/// `(store, guard)`; the guard lives as long as the test). Attributes after it go on each test.
#[macro_export]
macro_rules! store_conformance {
    ($make:expr $(, #[$attribute:meta])* $(,)?) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn round_trip() {
            let (store, _guard) = $make.await;
            $crate::conformance::round_trip(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn save_replaces() {
            let (store, _guard) = $make.await;
            $crate::conformance::save_replaces(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn missing_sessions_are_not_found() {
            let (store, _guard) = $make.await;
            $crate::conformance::missing_sessions_are_not_found(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn list_is_newest_first() {
            let (store, _guard) = $make.await;
            $crate::conformance::list_is_newest_first(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn delete_removes() {
            let (store, _guard) = $make.await;
            $crate::conformance::delete_removes(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn sessions_of_one_agent() {
            let (store, _guard) = $make.await;
            $crate::conformance::sessions_of_one_agent(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn merge_appends_and_replaces() {
            let (store, _guard) = $make.await;
            $crate::conformance::merge_appends_and_replaces(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn concurrent_merges_lose_nothing() {
            let (store, _guard) = $make.await;
            $crate::conformance::concurrent_merges_lose_nothing(store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn get_or_create_keeps_what_is_there() {
            let (store, _guard) = $make.await;
            $crate::conformance::get_or_create_keeps_what_is_there(&*store).await;
        }
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        $(#[$attribute])*
        async fn hostile_ids_are_refused() {
            let (store, _guard) = $make.await;
            $crate::conformance::hostile_ids_are_refused(&*store).await;
        }
    };
}
