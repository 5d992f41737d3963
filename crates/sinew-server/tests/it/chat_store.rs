//! Chat's stores on SQLite and PostgreSQL: one suite for both, the migrations (spec 001's
//! "Database migration" requirement), and the chat flow over PostgreSQL.

use std::sync::Arc;

use serde_json::json;
use sinew_adk::testing::ScriptedLlm;
use sinew_server::SqliteChatStore;
use sinew_server::chat::{AgentDefinitionSpec, AgentRun, ChatError, ChatStore, RunStatus, migrations};
use uuid::Uuid;

use crate::chat::{Models, start_chat};

/// What every store does.
async fn suite(store: &dyn ChatStore) {
    // Definitions.
    let spec = AgentDefinitionSpec::new("Helper", "mock/a").instruction("Be brief.").tool("echo").mcp_server("fs");
    let definition = store.create_definition(&spec).await.unwrap();
    assert_eq!(store.definition(definition.id).await.unwrap(), Some(definition.clone()));
    let other = store.create_definition(&AgentDefinitionSpec::new("Other", "mock/b")).await.unwrap();
    assert_eq!(store.definitions().await.unwrap(), [definition.clone(), other.clone()]);
    let changed = store.update_definition(other.id, &AgentDefinitionSpec::new("Changed", "mock/c")).await.unwrap();
    let changed = changed.unwrap();
    assert_eq!((changed.spec.name.as_str(), changed.created_at), ("Changed", other.created_at));
    assert!(changed.updated_at >= other.updated_at);
    assert_eq!(store.update_definition(Uuid::new_v4(), &spec).await.unwrap(), None);

    // Conversations: a missing definition creates nothing.
    let missing = Uuid::new_v4();
    let refused = store.create_conversation("x", Some(missing)).await.unwrap_err();
    assert!(matches!(refused, ChatError::UnknownAgentDefinition(id) if id == missing), "{refused}");
    assert!(store.conversations(100).await.unwrap().is_empty());
    let plain = store.create_conversation("Plain", None).await.unwrap();
    let backed = store.create_conversation("Backed", Some(definition.id)).await.unwrap();
    assert_eq!(store.conversation(backed.id).await.unwrap(), Some(backed.clone()));
    assert_eq!(store.conversation(plain.id).await.unwrap().unwrap().agent_definition_id, None);

    // Messages, oldest first; the window before a message.
    let mut ids = Vec::new();
    for i in 0..5 {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        ids.push(store.add_message(backed.id, role, &format!("m{i}"), None).await.unwrap().id);
    }
    let context = json!({"agent_run_id": "r"});
    let last = store.add_message(backed.id, "assistant", "m5", Some(&context)).await.unwrap();
    let all = store.messages(backed.id).await.unwrap();
    assert_eq!(all.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["m0", "m1", "m2", "m3", "m4", "m5"]);
    assert_eq!(all[5], last);
    let window = store.messages_before(backed.id, ids[4], 2).await.unwrap();
    assert_eq!(window.iter().map(|m| m.content.as_str()).collect::<Vec<_>>(), ["m2", "m3"]);
    assert!(store.messages_before(backed.id, ids[0], 10).await.unwrap().is_empty());
    assert!(store.add_message(Uuid::new_v4(), "user", "lost?", None).await.is_err());
    // The conversation touched last comes first.
    assert_eq!(store.conversations(100).await.unwrap().iter().map(|c| c.id).collect::<Vec<_>>(), [backed.id, plain.id]);
    assert_eq!(store.conversations(1).await.unwrap().iter().map(|c| c.id).collect::<Vec<_>>(), [backed.id]);

    // Runs.
    let run = AgentRun {
        id: Uuid::new_v4(),
        agent_definition_id: Some(definition.id),
        conversation_id: Some(backed.id),
        agent_name: "Helper".into(),
        status: RunStatus::Running,
        input: "m4".into(),
        output: None,
        error: None,
        started_at: chrono::Utc::now(),
        finished_at: None,
    };
    store.start_run(&run).await.unwrap();
    store.finish_run(run.id, RunStatus::Completed, Some("m5"), None).await.unwrap();
    let trace = store.run(run.id).await.unwrap().unwrap();
    assert_eq!((trace.run.status, trace.run.output.as_deref()), (RunStatus::Completed, Some("m5")));
    assert!(trace.run.finished_at.is_some());
    assert!(store.run(Uuid::new_v4()).await.unwrap().is_none());

    // A definition in use stays; conversations go with their messages; runs stay.
    let in_use = store.delete_definition(definition.id).await.unwrap_err();
    assert!(matches!(in_use, ChatError::DefinitionInUse(_, 1)), "{in_use}");
    assert!(store.delete_conversation(backed.id).await.unwrap());
    assert!(!store.delete_conversation(backed.id).await.unwrap());
    assert!(store.messages(backed.id).await.unwrap().is_empty());
    assert!(store.delete_definition(definition.id).await.unwrap());
    assert!(!store.delete_definition(definition.id).await.unwrap());
    let orphan = store.run(run.id).await.unwrap().unwrap().run;
    assert_eq!((orphan.agent_definition_id, orphan.conversation_id), (None, None));
}

#[tokio::test]
async fn the_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    suite(&SqliteChatStore::open(dir.path().join("chat.db")).unwrap()).await;
    // Opening again migrates nothing and keeps everything.
    let again = SqliteChatStore::open(dir.path().join("chat.db")).unwrap();
    assert_eq!(again.definitions().await.unwrap().len(), 1);
}

#[tokio::test]
async fn stores_by_uri() {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("sqlite:///{}", dir.path().join("chat.db").display());
    let store = sinew_server::chat_store_from_uri(&uri).await.unwrap();
    store.create_definition(&AgentDefinitionSpec::new("A", "m")).await.unwrap();
    assert_eq!(SqliteChatStore::open(dir.path().join("chat.db")).unwrap().definitions().await.unwrap().len(), 1);
    for uri in ["mysql://root:hunter2@db/x", "chat.db", "sqlite://", "memory://"] {
        let error = sinew_server::chat_store_from_uri(uri).await.err().unwrap().to_string();
        assert!(error.contains("use sqlite:///path or postgresql://"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}

#[cfg(unix)]
#[test]
fn the_sqlite_file_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.db");
    SqliteChatStore::open(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
}

/// A SQLite file in the schema before the agent column, holding two conversations.
fn sqlite_before_the_agent_column(path: &std::path::Path) -> [Uuid; 2] {
    let mut connection = rusqlite::Connection::open(path).unwrap();
    let report = migrations::sqlite().set_target(refinery::Target::Version(1)).run(&mut connection).unwrap();
    assert_eq!(report.applied_migrations().len(), 1);
    let ids = [Uuid::new_v4(), Uuid::new_v4()];
    for id in ids {
        connection
            .execute(
                "INSERT INTO chat_conversations (id, title, created_at, updated_at)
                 VALUES (?1, 'Old', '2025-01-01T00:00:00.000000Z', '2025-01-01T00:00:00.000000Z')",
                [id.to_string()],
            )
            .unwrap();
        connection
            .execute(
                "INSERT INTO chat_messages (id, conversation_id, role, content, created_at)
                 VALUES (?1, ?2, 'user', 'Earlier question', '2025-01-01T00:00:00.000000Z')",
                [Uuid::new_v4().to_string(), id.to_string()],
            )
            .unwrap();
    }
    ids
}

#[tokio::test]
async fn migration_adds_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.db");
    sqlite_before_the_agent_column(&path);
    SqliteChatStore::open(&path).unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    let (kind, not_null): (String, bool) = connection
        .query_row(
            "SELECT type, \"notnull\" FROM pragma_table_info('chat_conversations') WHERE name = 'agent_definition_id'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((kind.as_str(), not_null), ("TEXT", false));
    let (table, to): (String, String) = connection
        .query_row(
            "SELECT \"table\", \"to\" FROM pragma_foreign_key_list('chat_conversations') WHERE \"from\" = 'agent_definition_id'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((table.as_str(), to.as_str()), ("agent_definitions", "id"));
    let versions: Vec<i64> = connection
        .prepare("SELECT version FROM refinery_schema_history ORDER BY version")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(versions, [1, 2]);
}

#[tokio::test]
async fn existing_conversations_unaffected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.db");
    let [old, _] = sqlite_before_the_agent_column(&path);
    let store = Arc::new(SqliteChatStore::open(&path).unwrap());
    assert_eq!(store.conversations(100).await.unwrap().len(), 2);
    assert!(store.conversations(100).await.unwrap().iter().all(|c| c.agent_definition_id.is_none()));
    // They go on as plain conversations: the model answers directly, with their history.
    let chat =
        start_chat(store.clone(), Models::default().with("plain", ScriptedLlm::texts(["Still here."])), |api| api)
            .await;
    let frames = chat.turn(json!({"message": "Again", "conversationId": old})).await;
    assert_eq!(frames[0]["agentDefinitionId"], serde_json::Value::Null);
    assert!(frames.last().unwrap().get("agentRunId").is_none());
    let texts: Vec<String> = chat.models.get("plain").requests()[0].0.contents.iter().map(|c| c.text()).collect();
    assert_eq!(texts, ["Earlier question", "Again"]);
    assert_eq!(store.messages(old).await.unwrap().len(), 3);
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use sinew_server::PostgresChatStore;
    use sinew_testing::postgres::{TestSchema, server_url};

    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn the_postgres_store() {
        let schema = TestSchema::create("sinew_chat_test").await;
        let store = PostgresChatStore::connect_in(&server_url(), schema.name()).await.unwrap();
        suite(&store).await;
        // Another instance on the same schema migrates nothing and sees everything.
        let again = PostgresChatStore::connect_in(&server_url(), schema.name()).await.unwrap();
        assert_eq!(again.definitions().await.unwrap().len(), 1);
    }

    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn a_postgresql_uri_names_the_schema() {
        let schema = TestSchema::create("sinew_chat_test").await;
        let url = server_url();
        let rest = url.split_once("://").unwrap().1;
        let join = if rest.contains('?') { '&' } else { '?' };
        let uri = format!("postgresql://{rest}{join}schema={}", schema.name());
        let store = sinew_server::chat_store_from_uri(&uri).await.unwrap();
        store.create_definition(&AgentDefinitionSpec::new("A", "m")).await.unwrap();
        let admin = sinew_testing::postgres::admin().await;
        let row =
            admin.query_one(&format!("SELECT count(*) FROM {}.agent_definitions", schema.name()), &[]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), 1);
    }

    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn the_default_schema_is_kb() {
        let store = PostgresChatStore::connect(&server_url()).await.unwrap();
        assert_eq!(store.schema(), "kb");
        let admin = sinew_testing::postgres::admin().await;
        let row = admin
            .query_one(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'kb' AND table_name IN
                 ('agent_definitions', 'chat_conversations', 'chat_messages', 'agent_runs', 'agent_run_messages',
                  'agent_run_tool_calls')",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 6);
    }

    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn instances_starting_together_migrate_once() {
        let schema = TestSchema::create("sinew_chat_test").await;
        let name = schema.name().to_owned();
        let starts = (0..4).map(|_| {
            let name = name.clone();
            tokio::spawn(async move { PostgresChatStore::connect_in(&server_url(), &name).await.map(drop) })
        });
        for started in futures::future::join_all(starts).await {
            started.unwrap().unwrap();
        }
        let admin = sinew_testing::postgres::admin().await;
        let row = admin.query_one(&format!("SELECT count(*) FROM {name}.refinery_schema_history"), &[]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), 2);
    }

    async fn postgres_before_the_agent_column(schema: &TestSchema) -> Uuid {
        PostgresChatStore::migrate(&server_url(), schema.name(), Some(1)).await.unwrap();
        let id = Uuid::new_v4();
        let admin = sinew_testing::postgres::admin().await;
        admin
            .execute(
                &format!("INSERT INTO {}.chat_conversations (id, title, created_at, updated_at) VALUES ($1, 'Old', now(), now())", schema.name()),
                &[&id],
            )
            .await
            .unwrap();
        admin
            .execute(
                &format!("INSERT INTO {}.chat_messages (id, conversation_id, role, content, created_at) VALUES ($1, $2, 'user', 'Earlier question', now())", schema.name()),
                &[&Uuid::new_v4(), &id],
            )
            .await
            .unwrap();
        id
    }

    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn migration_adds_column_on_postgres() {
        let schema = TestSchema::create("sinew_chat_test").await;
        postgres_before_the_agent_column(&schema).await;
        PostgresChatStore::connect_in(&server_url(), schema.name()).await.unwrap();
        let admin = sinew_testing::postgres::admin().await;
        let column = admin
            .query_one(
                "SELECT data_type, is_nullable FROM information_schema.columns
                 WHERE table_schema = $1 AND table_name = 'chat_conversations' AND column_name = 'agent_definition_id'",
                &[&schema.name()],
            )
            .await
            .unwrap();
        assert_eq!((column.get::<_, String>(0), column.get::<_, String>(1)), ("uuid".into(), "YES".into()));
        let reference = admin
            .query_one(
                "SELECT ccu.table_name, ccu.column_name FROM information_schema.key_column_usage kcu
                 JOIN information_schema.referential_constraints rc
                   ON rc.constraint_name = kcu.constraint_name AND rc.constraint_schema = kcu.constraint_schema
                 JOIN information_schema.constraint_column_usage ccu
                   ON ccu.constraint_name = rc.unique_constraint_name AND ccu.constraint_schema = rc.unique_constraint_schema
                 WHERE kcu.table_schema = $1 AND kcu.table_name = 'chat_conversations'
                   AND kcu.column_name = 'agent_definition_id'",
                &[&schema.name()],
            )
            .await
            .unwrap();
        assert_eq!(
            (reference.get::<_, String>(0), reference.get::<_, String>(1)),
            ("agent_definitions".into(), "id".into())
        );
    }

    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn existing_conversations_unaffected_on_postgres() {
        let schema = TestSchema::create("sinew_chat_test").await;
        let old = postgres_before_the_agent_column(&schema).await;
        let store = Arc::new(PostgresChatStore::connect_in(&server_url(), schema.name()).await.unwrap());
        assert_eq!(store.conversation(old).await.unwrap().unwrap().agent_definition_id, None);
        let models = Models::default().with("plain", ScriptedLlm::texts(["Still here."]));
        let chat = start_chat(store.clone(), models, |api| api).await;
        let frames = chat.turn(json!({"message": "Again", "conversationId": old})).await;
        assert!(frames.last().unwrap().get("agentRunId").is_none());
        assert_eq!(store.messages(old).await.unwrap().len(), 3);
    }

    #[tokio::test]
    #[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
    async fn agent_backed_chat_on_postgres() {
        let schema = TestSchema::create("sinew_chat_test").await;
        let store = Arc::new(PostgresChatStore::connect_in(&server_url(), schema.name()).await.unwrap());
        let model = sinew_adk::testing::ScriptedLlm::new([
            sinew_adk::testing::ScriptedAnswer::call("echo", json!({"text": "hi"})),
            sinew_adk::testing::ScriptedAnswer::streamed(&["Echo ", "said hi."]),
        ]);
        let chat = start_chat(store.clone(), Models::default().with("mock/a", model), |api| api).await;
        let definition = chat.define(json!({"name": "Helper", "model": "mock/a", "tools": ["echo"]})).await;
        let frames = chat.turn(json!({"message": "Echo hi", "agentDefinitionId": definition["id"]})).await;
        let run_id = Uuid::parse_str(frames.last().unwrap()["agentRunId"].as_str().unwrap()).unwrap();
        let trace = store.run(run_id).await.unwrap().unwrap();
        assert_eq!(trace.messages.len(), 4);
        assert_eq!(trace.tool_calls[0].output, Some(json!({"echo": "hi"})));
        let id = Uuid::parse_str(frames[0]["conversationId"].as_str().unwrap()).unwrap();
        let messages = store.messages(id).await.unwrap();
        assert_eq!(messages[1].retrieval_context, Some(json!({"agent_run_id": run_id})));
    }
}

/// A store that fails is a 500 that says where to look, never the database's words; a turn whose
/// message cannot be stored stores nothing and leaves the conversation free.
#[tokio::test]
async fn a_failing_store_is_a_500_and_frees_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chat.db");
    let store = Arc::new(SqliteChatStore::open(&path).unwrap());
    let chat = start_chat(store.clone(), Models::default(), |api| api).await;
    let first = chat.turn(json!({"message": "Hello"})).await;
    let id = first[0]["conversationId"].clone();
    rusqlite::Connection::open(&path).unwrap().execute_batch("DROP TABLE chat_messages").unwrap();
    for _ in 0..2 {
        // Twice: the first failure let go of the conversation.
        let reply = chat.stream(json!({"message": "Again", "conversationId": id})).await;
        assert_eq!(reply.status, 500, "{}", reply.body);
        assert_eq!(reply.json()["detail"], "the chat store failed; the server's log says why");
        assert!(!reply.body.contains("chat_messages"), "{}", reply.body);
    }
    let shown = crate::send(chat.addr, "GET", &format!("/api/conversations/{}", id.as_str().unwrap()), None, &[]).await;
    assert_eq!(shown.status, 500);
}

#[tokio::test]
async fn schema_names_are_plain_identifiers() {
    for bad in ["Kb", "kb; DROP TABLE x", "", "1kb", "a-b"] {
        let refused = sinew_server::PostgresChatStore::connect_in("postgres://nobody@127.0.0.1:1/none", bad).await;
        let error = refused.err().unwrap().to_string();
        assert!(error.contains("is not a plain lowercase schema name"), "{bad}: {error}");
    }
}
