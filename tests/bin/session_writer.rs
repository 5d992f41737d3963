//! The writer process of the session crash tests (`tests/session_crash.rs`), killed mid-write by
//! the test:
//!
//! - `sinew-e2e-session-writer json DIR`: saves ever larger versions of session `crashy` into
//!   DIR, forever.
//! - `sinew-e2e-session-writer sqlite PATH`: the same into the SQLite store at PATH.
//! - `sinew-e2e-session-writer postgres URL NAME`: appends loops `NAME-0`, `NAME-1`... to session
//!   `shared`, one merge each, printing each id once the merge is acknowledged.
//! - `sinew-e2e-session-writer adk-sqlite PATH`: appends ADK events (with state in every scope) to
//!   session `crash` of app `interop`, user `u1`, in the ADK SQLite service at PATH, forever,
//!   printing each event's id once the append is acknowledged.

#![allow(clippy::print_stdout)]

use std::io::Write as _;
use std::path::Path;

use sinew::session::{PostgresStore, SessionStore, SqliteStore, load_session, save_session};
use sinew_e2e::{LOOPS_PER_WRITER, record, session};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["json", dir] => {
            let dir = Path::new(dir);
            // Versions keep rising across writers, so the survivor tells how far they got.
            let start = load_session(dir, "crashy").map_or(0, |s| s.updated_at) + 1;
            for version in start.. {
                let mut s = session("crashy", "a", 200);
                s.updated_at = version;
                save_session(dir, &s)?;
            }
            Ok(())
        }
        ["sqlite", path] => {
            let store = SqliteStore::open(path)?;
            let start = store.load("crashy").await.map_or(0, |s| s.updated_at) + 1;
            for version in start.. {
                let mut s = session("crashy", "a", 200);
                s.updated_at = version;
                store.save(&s).await?;
            }
            Ok(())
        }
        ["postgres", url, name] => {
            let store = PostgresStore::connect(url).await?;
            let mut stdout = std::io::stdout();
            for i in 0..LOOPS_PER_WRITER {
                let id = format!("{name}-{i}");
                let mut part = session("shared", "a", 0);
                part.loops.push(record("shared", "a", &id));
                store.merge(&part).await?;
                writeln!(stdout, "{id}")?;
                stdout.flush()?;
            }
            Ok(())
        }
        ["adk-sqlite", path] => {
            use sinew::adk::{Content, Event, SessionService, SqliteSessionService, now_seconds};
            let service = SqliteSessionService::open(path)?;
            let mut session = service.get_or_create_session("interop", "u1", "crash", Default::default()).await?;
            let mut stdout = std::io::stdout();
            for i in 0_u64.. {
                let mut event = Event::user("e-crash", Content::user_text(format!("m{i}")));
                event.timestamp = now_seconds();
                let delta = serde_json::json!({"count": i, "user:count": i, "app:count": i});
                event.actions.state_delta = delta.as_object().cloned().unwrap_or_default();
                let id = event.id.to_string();
                service.append_event(&mut session, event).await?;
                writeln!(stdout, "{id}")?;
                stdout.flush()?;
            }
            Ok(())
        }
        _ => Err("usage: sinew-e2e-session-writer json DIR | sqlite PATH | postgres URL NAME | adk-sqlite PATH".into()),
    }
}
