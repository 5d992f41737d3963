//! One suite for every `MessageStore`, and the session adapter over the SQL ones.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use sinew_adk::{ChatMessage, ConversationKey, Error, MessageStore, ToolCall};

pub(crate) fn key(id: &str) -> ConversationKey {
    ConversationKey::new("app", "u", id)
}

pub(crate) fn state(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Exercises `store` (fresh and empty).
pub(crate) async fn suite(store: Arc<dyn MessageStore>) {
    let created = store.create(&key("s1"), state(json!({"topic": "t"})), 1.0).await.unwrap();
    assert_eq!((created.state["topic"].clone(), created.updated_at), (json!("t"), 1.0));
    let again = store.create(&key("s1"), Map::new(), 2.0).await;
    assert!(matches!(again, Err(Error::SessionExists(ref id)) if id == "s1"), "{again:?}");

    let call = ChatMessage::new("assistant", "checking")
        .author("root")
        .tool_call(ToolCall::call("c1", "exec", r#"{"cmd":"ls"}"#))
        .at(3.0);
    let call = call.with_id("m2");
    let messages = [
        ChatMessage::new("user", "hi ünïcode \u{1F600}").at(2.0).with_id("m1"),
        call,
        ChatMessage::new("tool", "{}").tool_call(ToolCall::response("c1", "exec", "{}")).with_id("m3"),
        // A legacy message without an id.
        ChatMessage::new("assistant", "done"),
    ];
    for (i, message) in messages.iter().enumerate() {
        let delta = state(json!({ format!("k{i}"): i }));
        assert!(store.append(&key("s1"), Some(message), &delta, 10.0 + i as f64).await.unwrap());
    }
    // The same id again is not stored twice, and changes nothing.
    let again = store.append(&key("s1"), Some(&messages[0]), &state(json!({"late": true})), 99.0).await.unwrap();
    assert!(!again, "reported as not stored");
    // A state delta alone.
    assert!(store.append(&key("s1"), None, &state(json!({"topic": "u"})), 20.0).await.unwrap());

    let loaded = store.load(&key("s1")).await.unwrap().unwrap();
    assert_eq!(loaded.messages, messages);
    assert_eq!(loaded.state, state(json!({"topic": "u", "k0": 0, "k1": 1, "k2": 2, "k3": 3})));
    assert_eq!(loaded.updated_at, 20.0);

    let missing = store.append(&key("nope"), Some(&messages[0]), &Map::new(), 1.0).await;
    assert!(matches!(missing, Err(Error::SessionNotFound(ref id)) if id == "nope"), "{missing:?}");
    assert!(store.load(&key("nope")).await.unwrap().is_none());

    store.create(&ConversationKey::new("app", "v", "s2"), Map::new(), 5.0).await.unwrap();
    store.create(&ConversationKey::new("other", "u", "s3"), Map::new(), 5.0).await.unwrap();
    let listed: Vec<String> = store.list("app", None).await.unwrap().into_iter().map(|c| c.key.id).collect();
    assert_eq!(listed, ["s2", "s1"], "oldest update first");
    let mine = store.list("app", Some("u")).await.unwrap();
    assert_eq!((mine.len(), mine[0].messages.len()), (1, 0), "listed without messages");

    store.delete(&key("s1")).await.unwrap();
    store.delete(&key("s1")).await.unwrap();
    assert!(store.load(&key("s1")).await.unwrap().is_none());
    let fresh = store.create(&key("s1"), Map::new(), 30.0).await.unwrap();
    assert!(fresh.messages.is_empty());
    assert!(store.load(&key("s1")).await.unwrap().unwrap().messages.is_empty(), "the old messages went");
}

/// 100 conversations written at once, 20 messages each: all kept, each in order.
pub(crate) async fn concurrent(store: Arc<dyn MessageStore>) {
    let tasks: Vec<_> = (0..100)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                let key = key(&format!("c{n}"));
                store.create(&key, Map::new(), 0.0).await.unwrap();
                for i in 0..20 {
                    let message = ChatMessage::new("user", i.to_string()).with_id(format!("{n}-{i}"));
                    store.append(&key, Some(&message), &state(json!({"last": i})), f64::from(i)).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for n in 0..100 {
        let loaded = store.load(&key(&format!("c{n}"))).await.unwrap().unwrap();
        let contents: Vec<String> = loaded.messages.iter().map(|m| m.content.clone()).collect();
        assert_eq!(contents, (0..20).map(|i| i.to_string()).collect::<Vec<_>>());
        assert_eq!(loaded.state["last"], 19);
    }
}

#[tokio::test]
async fn in_memory_store() {
    suite(Arc::new(sinew_adk::InMemoryMessageStore::new())).await;
}

#[cfg(feature = "sqlite")]
mod sql {
    use std::sync::Arc;

    #[cfg(feature = "postgres")]
    use sinew_adk::PostgresMessageStore;
    use sinew_adk::{Content, Event, GetSessionConfig, SessionService, SessionServiceAdapter, SqliteMessageStore};

    use super::{concurrent, suite};
    #[cfg(feature = "postgres")]
    use crate::pg::Schema;

    fn sqlite() -> (SqliteMessageStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        (SqliteMessageStore::open(dir.path().join("chat.db")).unwrap(), dir)
    }

    #[cfg(feature = "postgres")]
    async fn postgres() -> (PostgresMessageStore, Schema) {
        let schema = crate::pg::schema().await;
        (PostgresMessageStore::connect(&schema.url()).await.unwrap(), schema)
    }

    #[tokio::test]
    async fn sqlite_store() {
        let (store, _dir) = sqlite();
        suite(Arc::new(store)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn sqlite_store_concurrent_conversations() {
        let (store, _dir) = sqlite();
        concurrent(Arc::new(store)).await;
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn postgres_store() {
        let (store, _schema) = postgres().await;
        suite(Arc::new(store)).await;
    }

    #[cfg(feature = "postgres")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn postgres_store_concurrent_conversations() {
        let (store, _schema) = postgres().await;
        concurrent(Arc::new(store)).await;
    }

    /// The adapter over a SQLite store, across a reopen: what one process appended, the next
    /// loads as events.
    #[tokio::test]
    async fn the_adapter_over_sqlite_survives_a_reopen() {
        let (store, dir) = sqlite();
        let adapter = SessionServiceAdapter::new(Arc::new(store)).root_agent_name("root");
        let mut session =
            adapter.create_session("app", "u", Some("s1"), super::state(serde_json::json!({}))).await.unwrap();
        adapter.append_event(&mut session, Event::user("e-1", Content::user_text("hi"))).await.unwrap();
        drop(adapter);
        let reopened = SqliteMessageStore::open(dir.path().join("chat.db")).unwrap();
        let adapter = SessionServiceAdapter::new(Arc::new(reopened)).root_agent_name("root");
        let loaded = adapter.get_session("app", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
        let summary = |events: &[Event]| -> Vec<(String, String, String, f64)> {
            events
                .iter()
                .map(|e| (e.id.to_string(), e.author.to_string(), e.content.as_ref().unwrap().text(), e.timestamp))
                .collect()
        };
        assert_eq!(summary(&loaded.events), summary(&session.events));
    }
}
