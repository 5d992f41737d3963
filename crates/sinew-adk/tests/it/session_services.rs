//! One conformance suite for every session service (ADK's `BaseSessionService` semantics, as
//! adk-python 2.13's services behave). The SQL services instantiate the same macro.

use serde_json::{Map, Value, json};
use sinew_adk::{Content, Event, GetSessionConfig, InMemorySessionService, Session, SessionService};

pub(crate) fn state(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// An event at `timestamp` with `delta`.
pub(crate) fn event(invocation: &str, text: &str, timestamp: f64, delta: Value) -> Event {
    let mut event = Event::user(invocation, Content::user_text(text));
    event.timestamp = timestamp;
    event.actions.state_delta = state(delta);
    event
}

pub(crate) fn texts(session: &Session) -> Vec<String> {
    session.events.iter().map(|e| e.content.as_ref().map(Content::text).unwrap_or_default()).collect()
}

/// Instantiates the suite for the service `$make` builds: an expression of a fresh, empty service
/// and what must live as long as it (a temporary directory, a database schema). `$attr` goes on
/// every test (an `ignore` when a server is missing).
#[macro_export]
macro_rules! session_service_conformance {
    ($module:ident, $make:expr $(, #[$attr:meta])?) => {
        mod $module {
            use serde_json::json;
            use sinew_adk::{Error, GetSessionConfig, SessionService};

            use $crate::session_services::{event, state, texts};

            async fn service() -> (impl SessionService, impl Sized) {
                $make
            }

            #[tokio::test]
            $(#[$attr])?
            async fn create_routes_state_by_prefix_and_drops_temp() {
                let (s, _guard) = service().await;
                let created = s
                    .create_session("demo_agent", "u1", Some("s1"), state(json!({
                        "greeting": "hi", "user:lang": "en", "app:theme": "dark", "temp:x": 1
                    })))
                    .await
                    .unwrap();
                // samples/01_create_session.json, minus the clock.
                assert_eq!((created.id.as_str(), created.app_name.as_str(), created.user_id.as_str()), ("s1", "demo_agent", "u1"));
                assert_eq!(created.state, state(json!({"greeting": "hi", "app:theme": "dark", "user:lang": "en"})));
                assert!(created.events.is_empty());
                assert!(created.last_update_time > 0.0);
                // Another user of the app sees `app:` keys only; another app sees neither.
                let other_user = s.create_session("demo_agent", "u2", None, state(json!({}))).await.unwrap();
                assert_eq!(other_user.state, state(json!({"app:theme": "dark"})));
                let same_user = s.create_session("demo_agent", "u1", None, state(json!({}))).await.unwrap();
                assert_eq!(same_user.state, state(json!({"app:theme": "dark", "user:lang": "en"})));
                let other_app = s.create_session("other", "u1", None, state(json!({}))).await.unwrap();
                assert!(other_app.state.is_empty());
            }

            #[tokio::test]
            $(#[$attr])?
            async fn ids_are_unique_and_generated_when_absent() {
                let (s, _guard) = service().await;
                s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                let again = s.create_session("a", "u", Some("s1"), state(json!({}))).await;
                assert!(matches!(again, Err(Error::SessionExists(ref id)) if id == "s1"), "{again:?}");
                // The same id under another user or app is another session.
                s.create_session("a", "v", Some("s1"), state(json!({}))).await.unwrap();
                s.create_session("b", "u", Some("s1"), state(json!({}))).await.unwrap();
                let generated = s.create_session("a", "u", None, state(json!({}))).await.unwrap();
                assert_eq!(generated.id.len(), 36, "a uuid: {}", generated.id);
                let blank = s.create_session("a", "u", Some("  "), state(json!({}))).await.unwrap();
                assert_eq!(blank.id.len(), 36, "a blank id is no id: {}", blank.id);
            }

            #[tokio::test]
            $(#[$attr])?
            async fn get_misses_are_none() {
                let (s, _guard) = service().await;
                s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                for (app, user, id) in [("a", "u", "s2"), ("a", "v", "s1"), ("b", "u", "s1")] {
                    assert!(s.get_session(app, user, id, GetSessionConfig::default()).await.unwrap().is_none());
                }
            }

            #[tokio::test]
            $(#[$attr])?
            async fn append_stores_events_and_routes_their_state() {
                let (s, _guard) = service().await;
                let mut session = s.create_session("a", "u", Some("s1"), state(json!({"k": 0}))).await.unwrap();
                let stored = s
                    .append_event(&mut session, event("e-1", "one", 10.0, json!({
                        "k": 1, "app:calls": 1, "user:unit": "C", "temp:scratch": "x"
                    })))
                    .await
                    .unwrap();
                // `temp:` is visible in the running session and trimmed from what is stored.
                assert_eq!(stored.actions.state_delta, state(json!({"k": 1, "app:calls": 1, "user:unit": "C"})));
                assert_eq!(session.state["temp:scratch"], "x");
                assert_eq!(session.last_update_time, 10.0);
                assert_eq!(session.events.len(), 1);

                let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
                assert_eq!(read.state, state(json!({"k": 1, "app:calls": 1, "user:unit": "C"})));
                assert_eq!(read.events, vec![stored]);
                assert_eq!(read.last_update_time, 10.0);
                let sibling = s.create_session("a", "u", None, state(json!({}))).await.unwrap();
                assert_eq!(sibling.state, state(json!({"app:calls": 1, "user:unit": "C"})));
                let stranger = s.create_session("a", "v", None, state(json!({}))).await.unwrap();
                assert_eq!(stranger.state, state(json!({"app:calls": 1})));
            }

            #[tokio::test]
            $(#[$attr])?
            async fn partial_events_are_given_back_and_never_stored() {
                let (s, _guard) = service().await;
                let mut session = s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                let mut partial = event("e-1", "frag", 1.0, json!({"k": 1}));
                partial.partial = Some(true);
                let back = s.append_event(&mut session, partial.clone()).await.unwrap();
                assert_eq!(back, partial);
                assert!(session.events.is_empty() && session.state.is_empty());
                let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
                assert!(read.events.is_empty() && read.state.is_empty());
            }

            #[tokio::test]
            $(#[$attr])?
            async fn the_same_event_twice_is_stored_once() {
                let (s, _guard) = service().await;
                let mut session = s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                let once = event("e-1", "one", 1.0, json!({}));
                s.append_event(&mut session, once.clone()).await.unwrap();
                s.append_event(&mut session, once).await.unwrap();
                let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
                assert_eq!(texts(&read), ["one"]);
            }

            #[tokio::test]
            $(#[$attr])?
            async fn get_selects_recent_events_and_events_after_a_time() {
                let (s, _guard) = service().await;
                let mut session = s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                for (i, text) in ["e0", "e1", "e2", "e3"].iter().enumerate() {
                    s.append_event(&mut session, event("e-1", text, 100.0 + i as f64, json!({}))).await.unwrap();
                }
                let cases: &[(GetSessionConfig, &[&str])] = &[
                    (GetSessionConfig::default(), &["e0", "e1", "e2", "e3"]),
                    (GetSessionConfig::recent(2), &["e2", "e3"]),
                    (GetSessionConfig::recent(10), &["e0", "e1", "e2", "e3"]),
                    (GetSessionConfig::recent(0), &[]),
                    (GetSessionConfig::after(101.0), &["e1", "e2", "e3"]),
                    (GetSessionConfig::after(101.5), &["e2", "e3"]),
                    (GetSessionConfig::after(50.0), &["e0", "e1", "e2", "e3"]),
                    (GetSessionConfig::after(500.0), &[]),
                ];
                for (config, expected) in cases {
                    let read = s.get_session("a", "u", "s1", *config).await.unwrap().unwrap();
                    assert_eq!(texts(&read), *expected, "{config:?}");
                }
            }

            #[tokio::test]
            $(#[$attr])?
            async fn list_has_no_events_merged_state_and_oldest_first() {
                let (s, _guard) = service().await;
                let mut first = s.create_session("a", "u", Some("s-first"), state(json!({"n": 1}))).await.unwrap();
                s.create_session("a", "v", Some("s-other"), state(json!({"user:x": 2}))).await.unwrap();
                s.create_session("b", "u", Some("s-elsewhere"), state(json!({}))).await.unwrap();
                s.append_event(&mut first, event("e-1", "hi", 4_000_000_000.0, json!({"app:y": 3}))).await.unwrap();

                let mine = s.list_sessions("a", Some("u")).await.unwrap();
                assert_eq!(mine.len(), 1);
                assert!(mine[0].events.is_empty());
                assert_eq!(mine[0].state, state(json!({"n": 1, "app:y": 3})));
                let all = s.list_sessions("a", None).await.unwrap();
                let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
                assert_eq!(ids, ["s-other", "s-first"], "oldest update first");
                assert_eq!(all[0].state, state(json!({"user:x": 2, "app:y": 3})));
                assert!(s.list_sessions("a", Some("nobody")).await.unwrap().is_empty());
                assert!(s.list_sessions("nothing", None).await.unwrap().is_empty());
            }

            #[tokio::test]
            $(#[$attr])?
            async fn delete_removes_the_session_and_appending_to_it_fails() {
                let (s, _guard) = service().await;
                let mut session = s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                s.append_event(&mut session, event("e-1", "one", 1.0, json!({}))).await.unwrap();
                s.delete_session("a", "u", "s1").await.unwrap();
                assert!(s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().is_none());
                assert!(s.list_sessions("a", Some("u")).await.unwrap().is_empty());
                s.delete_session("a", "u", "s1").await.unwrap();
                let late = s.append_event(&mut session, event("e-1", "two", 2.0, json!({}))).await;
                assert!(matches!(late, Err(Error::SessionNotFound(ref id)) if id == "s1"), "{late:?}");
                // The id is free again, and the new session starts empty.
                let fresh = s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                assert!(fresh.events.is_empty());
            }

            #[tokio::test]
            $(#[$attr])?
            async fn get_or_create_creates_once() {
                let (s, _guard) = service().await;
                let created = s.get_or_create_session("a", "u", "s1", state(json!({"k": 1}))).await.unwrap();
                assert_eq!(created.state, state(json!({"k": 1})));
                let mut session = created;
                s.append_event(&mut session, event("e-1", "one", 1.0, json!({}))).await.unwrap();
                let got = s.get_or_create_session("a", "u", "s1", state(json!({"k": 2}))).await.unwrap();
                assert_eq!((texts(&got), got.state), (vec!["one".to_owned()], state(json!({"k": 1}))));
            }

            #[tokio::test]
            $(#[$attr])?
            async fn concurrent_appends_are_all_kept() {
                let (s, _guard) = service().await;
                let s = std::sync::Arc::new(s);
                s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                let tasks: Vec<_> = (0..16)
                    .map(|i| {
                        let s = s.clone();
                        tokio::spawn(async move {
                            // A copy another writer overtook is refused as stale (by the SQL
                            // services, as adk-python's): read it again and retry.
                            for _ in 0..100 {
                                let mut session = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
                                let delta = json!({ format!("k{i}"): i, "user:last": i });
                                match s.append_event(&mut session, event("e-1", &format!("m{i}"), f64::from(i), delta)).await {
                                    Ok(_) => return,
                                    Err(Error::StaleSession { .. }) => continue,
                                    Err(other) => panic!("{other}"),
                                }
                            }
                            panic!("a hundred appends in a row found the session stale");
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
                let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
                assert_eq!(read.events.len(), 16);
                assert_eq!(read.state.len(), 17, "{:?}", read.state);
            }

            #[tokio::test]
            $(#[$attr])?
            async fn stored_events_survive_json() {
                let (s, _guard) = service().await;
                let mut session = s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
                let mut rich: sinew_adk::Event = serde_json::from_str(&$crate::data("samples/11_event_all_actions.json")).unwrap();
                rich.actions.state_delta.insert("temp:t".into(), json!(1));
                s.append_event(&mut session, rich).await.unwrap();
                let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
                let mut expected: sinew_adk::Event = serde_json::from_str(&$crate::data("samples/11_event_all_actions.json")).unwrap();
                expected.actions.state_delta.remove("temp:t");
                assert_eq!(read.events, vec![expected]);
            }
        }
    };
}

session_service_conformance!(in_memory, (sinew_adk::InMemorySessionService::new(), ()));

#[tokio::test]
async fn the_in_memory_service_hands_out_copies() {
    let s = InMemorySessionService::new();
    let mut session = s.create_session("a", "u", Some("s1"), state(json!({}))).await.unwrap();
    session.state.insert("local".into(), json!(1));
    session.events.push(event("e-1", "not appended", 1.0, json!({})));
    let read = s.get_session("a", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert!(read.state.is_empty() && read.events.is_empty());
}
