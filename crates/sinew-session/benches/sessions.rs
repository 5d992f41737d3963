//! `cargo xtask bench sessions`: the load of REQ-170 (many agents at once, each with concurrent
//! tool calls, every run recorded and merged into a store) timed per store, with memory.
//!
//! Stores: none (recording only), JSON files, SQLite, and PostgreSQL when
//! `SINEW_TEST_POSTGRES_URL` names a server. Arguments: `[agents] [calls]` (default 100 and 10,
//! then 10 times the agents). Each measurement runs in a process of its own, so the peak memory
//! it reports is its own.

#![allow(clippy::print_stdout)]

#[path = "../tests/it/workload.rs"]
#[allow(dead_code, unreachable_pub)]
mod workload;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use sinew_session::{JsonFileStore, Result, Session, SessionError, SessionStore, SqliteStore};
use sinew_testing::memory_kb;

/// Keeps nothing: the cost of recording alone.
struct Discard;

#[async_trait]
impl SessionStore for Discard {
    async fn save(&self, _: &Session) -> Result<()> {
        Ok(())
    }
    async fn merge(&self, _: &Session) -> Result<()> {
        Ok(())
    }
    async fn load(&self, id: &str) -> Result<Session> {
        Err(SessionError::NotFound(id.to_owned()))
    }
    async fn list_ids(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    async fn delete(&self, id: &str) -> Result<()> {
        Err(SessionError::NotFound(id.to_owned()))
    }
}

/// The store called `name`, in `dir`.
async fn store(name: &str, dir: &std::path::Path) -> Arc<dyn SessionStore> {
    match name {
        "none" => Arc::new(Discard),
        "json" => Arc::new(JsonFileStore::new(dir.join("json"))),
        "sqlite" => Arc::new(SqliteStore::open(dir.join("sessions.db")).expect("sqlite opens")),
        "postgres" => {
            let url = std::env::var("SINEW_TEST_POSTGRES_URL").expect("SINEW_TEST_POSTGRES_URL names the server");
            Arc::new(postgres(&url).await)
        }
        other => panic!("unknown store {other}"),
    }
}

#[cfg(feature = "postgres")]
async fn postgres(url: &str) -> sinew_session::PostgresStore {
    // A schema of the run's own, so the tables start empty.
    let schema = format!("sinew_bench_{}", std::process::id());
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("postgres answers");
    tokio::spawn(connection);
    client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.expect("schema created");
    let join = if url.contains('?') { '&' } else { '?' };
    sinew_session::PostgresStore::connect(&format!("{url}{join}options=-c%20search_path%3D{schema}"))
        .await
        .expect("postgres store")
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_: &str) -> Discard {
    panic!("SINEW_TEST_POSTGRES_URL is set but the bench was built without the `postgres` feature")
}

/// One measurement, in a process of its own so that its peak memory is its own:
/// `--one <store> <agents> <calls>`.
fn measure(name: &str, agents: usize, calls: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = runtime.block_on(store(name, dir.path()));
    let start = Instant::now();
    runtime.block_on(workload::run_agents(store, agents, calls));
    let elapsed = start.elapsed().as_secs_f64() * 1e3;
    println!(
        "{agents:>8} {calls:>6} {name:>9} {elapsed:>8.0}ms {:>10.2}ms {:>9} MB",
        elapsed / agents as f64,
        memory_kb("VmHWM").map_or(0, |kb| kb / 1024),
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if let [flag, name, agents, calls] = args.as_slice()
        && flag == "--one"
    {
        measure(name, agents.parse().expect("agents"), calls.parse().expect("calls"));
        return;
    }
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let agents = numbers.first().copied().unwrap_or(100);
    let calls = numbers.get(1).copied().unwrap_or(10);
    let mut names = vec!["none", "json", "sqlite"];
    if std::env::var_os("SINEW_TEST_POSTGRES_URL").is_some() {
        names.push("postgres");
    }
    println!("{:>8} {:>6} {:>9} {:>10} {:>12} {:>12}", "agents", "calls", "store", "time", "per agent", "peak RSS");
    let me = std::env::current_exe().expect("the bench binary");
    for agents in [agents, agents * 10] {
        for name in &names {
            let status = std::process::Command::new(&me)
                .args(["--one", name, &agents.to_string(), &calls.to_string()])
                .status()
                .expect("the measurement runs");
            assert!(status.success(), "measuring {name} failed");
        }
    }
}
