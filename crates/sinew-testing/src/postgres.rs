//! PostgreSQL schemas for tests (feature `postgres`): each test works in a schema of its own on
//! the server `SINEW_TEST_POSTGRES_URL` names, dropped with everything in it when the test ends.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The server's URL, from `SINEW_TEST_POSTGRES_URL`.
///
/// # Panics
/// When the variable is not set: call it from tests that run only when it is.
pub fn server_url() -> String {
    std::env::var("SINEW_TEST_POSTGRES_URL").expect("SINEW_TEST_POSTGRES_URL names the test server")
}

/// `url` with `search_path` set to `schema`.
pub fn url_in(url: &str, schema: &str) -> String {
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}options=-c%20search_path%3D{schema}")
}

/// A client of the server, its connection driven on the current runtime.
///
/// # Panics
/// When the server does not answer.
pub async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&server_url(), tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("SINEW_TEST_POSTGRES_URL is set but the server does not answer: {e}"));
    tokio::spawn(connection);
    client
}

/// A schema of one test; dropped with everything in it when the value is.
#[derive(Debug)]
pub struct TestSchema(String);

impl TestSchema {
    /// Creates a fresh schema (named after `prefix`, the process and a counter).
    ///
    /// # Panics
    /// When the server refuses.
    pub async fn create(prefix: &str) -> TestSchema {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("{prefix}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        admin()
            .await
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"))
            .await
            .unwrap_or_else(|e| panic!("creating test schema {name}: {e}"));
        TestSchema(name)
    }

    /// The schema's name.
    pub fn name(&self) -> &str {
        &self.0
    }

    /// The server's URL with `search_path` set to this schema.
    pub fn url(&self) -> String {
        url_in(&server_url(), &self.0)
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        let name = self.0.clone();
        // Drop may run inside a test's runtime: do the async cleanup on a thread of its own.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                admin()
                    .await
                    .batch_execute(&format!("SET lock_timeout = '10s'; DROP SCHEMA {name} CASCADE"))
                    .await
                    .map_err(std::io::Error::other)
            })
        });
        if let Ok(Err(error)) = cleanup.join()
            && !std::thread::panicking()
        {
            panic!("could not drop test schema {}: {error}", self.0);
        }
    }
}
