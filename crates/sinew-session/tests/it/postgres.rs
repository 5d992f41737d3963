//! The PostgreSQL store, against the server `SINEW_TEST_POSTGRES_URL` names (the tests are ignored
//! without it; `.ci/run` sets it). Each test works in a schema of its own, dropped at its end.

use sinew_session::{PostgresStore, SessionError, SessionStore};
use sinew_testing::postgres::{TestSchema, admin};
use std::sync::Arc;

use crate::session;

async fn postgres_store() -> (Arc<dyn SessionStore>, TestSchema) {
    let schema = TestSchema::create("sinew_test").await;
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
    let schema = TestSchema::create("sinew_test").await;
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
        client.query(&format!("SELECT version FROM {}.sinew_session_migrations", schema.name()), &[]).await.unwrap();
    assert_eq!(versions.len(), 1, "one migration, applied once");
}

#[tokio::test]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn damaged_and_newer_databases_are_clear_errors() {
    let schema = TestSchema::create("sinew_test").await;
    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    store.save(&session("future", "a", 1)).await.unwrap();
    let client = admin().await;
    let s = schema.name();
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
