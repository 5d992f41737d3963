//! `cargo xtask bench adk-sessions`: ADK session services under load. `sessions` runners at once
//! (default 100), each appending `events` events (default 50, each with a state delta in every
//! scope) to a session of its own, in one store; appends per second and peak memory per store.
//!
//! Stores: in memory, SQLite (adk-python's schema), the spec-000 adapter over a SQLite message
//! store, and PostgreSQL (adk-python's schema) when `SINEW_TEST_POSTGRES_URL` names a server.
//! Each store is measured in a process of its own, so the peak memory it reports is its own.
//! Arguments: `[sessions] [events]`. The last line is `RESULT {json}`.

#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, json};
use sinew_adk::{
    Content, Event, InMemorySessionService, PostgresSessionService, SessionService, SessionServiceAdapter,
    SqliteMessageStore, SqliteSessionService,
};
use sinew_testing::memory_kb;

async fn service(name: &str, dir: &std::path::Path) -> Arc<dyn SessionService> {
    match name {
        "memory" => Arc::new(InMemorySessionService::new()),
        "sqlite" => Arc::new(SqliteSessionService::open(dir.join("adk.db")).expect("sqlite opens")),
        "adapter-sqlite" => {
            let store = SqliteMessageStore::open(dir.join("chat.db")).expect("sqlite opens");
            Arc::new(SessionServiceAdapter::new(Arc::new(store)))
        }
        "postgres" => {
            let url = std::env::var("SINEW_TEST_POSTGRES_URL").expect("SINEW_TEST_POSTGRES_URL names the server");
            // A schema of the run's own, so the tables start empty.
            let schema = format!("sinew_adk_bench_{}", std::process::id());
            let (client, connection) =
                tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("postgres answers");
            tokio::spawn(connection);
            client.batch_execute(&format!("CREATE SCHEMA {schema}")).await.expect("schema created");
            let join = if url.contains('?') { '&' } else { '?' };
            let service = PostgresSessionService::connect(&format!("{url}{join}options=-c%20search_path%3D{schema}"))
                .await
                .expect("postgres service");
            Arc::new(service)
        }
        other => panic!("unknown store {other}"),
    }
}

async fn drop_schema() {
    let Ok(url) = std::env::var("SINEW_TEST_POSTGRES_URL") else { return };
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("postgres answers");
    tokio::spawn(connection);
    let schema = format!("sinew_adk_bench_{}", std::process::id());
    client.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await.expect("schema dropped");
}

/// One measurement: `--one <store> <sessions> <events>`; prints `<store> <appends/s> <peak MB>`.
fn measure(name: &str, sessions: usize, events: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let service = runtime.block_on(service(name, dir.path()));
    let start = Instant::now();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..sessions)
            .map(|n| {
                let service = service.clone();
                tokio::spawn(async move {
                    let user = format!("u{}", n % 10);
                    let mut session = service.create_session("bench", &user, None, Map::new()).await.expect("created");
                    for i in 0..events {
                        let mut event =
                            Event::user("e-bench", Content::user_text(format!("message {i} of session {n}")));
                        let delta = json!({"turn": i, format!("user:last_{n}"): i, format!("app:seen_{n}"): i});
                        event.actions.state_delta = delta.as_object().cloned().unwrap_or_default();
                        service.append_event(&mut session, event).await.expect("appended");
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("runner");
        }
    });
    let seconds = start.elapsed().as_secs_f64();
    if name == "postgres" {
        runtime.block_on(drop_schema());
    }
    let peak_mb = memory_kb("VmHWM").map_or(0, |kb| kb / 1024);
    println!("{name} {:.0} {peak_mb}", (sessions * events) as f64 / seconds);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if let [flag, name, sessions, events] = args.as_slice()
        && flag == "--one"
    {
        measure(name, sessions.parse().expect("sessions"), events.parse().expect("events"));
        return;
    }
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sessions = numbers.first().copied().unwrap_or(100);
    let events = numbers.get(1).copied().unwrap_or(50);
    let mut names = vec!["memory", "sqlite", "adapter-sqlite"];
    if std::env::var_os("SINEW_TEST_POSTGRES_URL").is_some() {
        names.push("postgres");
    }
    println!("{sessions} sessions x {events} events, appended at once");
    println!("{:>15} {:>12} {:>10}", "store", "appends/s", "peak RSS");
    let me = std::env::current_exe().expect("the bench binary");
    let mut results = Vec::new();
    for name in names {
        let output = std::process::Command::new(&me)
            .args(["--one", name, &sessions.to_string(), &events.to_string()])
            .output()
            .expect("the measurement runs");
        assert!(output.status.success(), "measuring {name} failed: {}", String::from_utf8_lossy(&output.stderr));
        let line = String::from_utf8_lossy(&output.stdout).lines().last().unwrap_or_default().to_owned();
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, rate, peak] = fields.as_slice() else { panic!("unexpected output from {name}: {line}") };
        println!("{name:>15} {rate:>12} {peak:>7} MB");
        results.push(format!("{{\"store\":\"{name}\",\"appends_per_s\":{rate},\"peak_rss_mb\":{peak}}}"));
    }
    println!(
        "RESULT {{\"bench\":\"adk-sessions\",\"sessions\":{sessions},\"events\":{events},\"stores\":[{}]}}",
        results.join(",")
    );
}
