//! The PostgreSQL store, against the server `SINEW_TEST_POSTGRES_URL` names (the tests are ignored
//! without it; `.ci/run` sets it). Each test works in a schema of its own, dropped at its end.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sinew_session::{PostgresStore, SessionError, SessionStore};

use crate::session;

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
