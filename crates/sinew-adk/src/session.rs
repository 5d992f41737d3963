//! Session services: where ADK keeps sessions, their events and the shared `app:` and `user:`
//! state (`BaseSessionService`, `InMemorySessionService`).
//!
//! State keys are routed by prefix, as in ADK: `app:` keys are shared by every session of the app,
//! `user:` keys by every session of one user of the app (both stored without their prefix), and
//! `temp:` keys live only in the in-memory session of the running invocation: they are never
//! stored, not even from the initial state. A session read from a service holds the merged state.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::event::{Event, now_seconds};
use crate::types::Session;

/// The prefix of state keys shared by every session of an app.
pub const APP_PREFIX: &str = "app:";
/// The prefix of state keys shared by every session of a user.
pub const USER_PREFIX: &str = "user:";
/// The prefix of state keys that live only during an invocation.
pub const TEMP_PREFIX: &str = "temp:";

/// Which events [`SessionService::get_session`] returns (ADK's `GetSessionConfig`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct GetSessionConfig {
    /// At most this many of the most recent events; `Some(0)` returns none.
    pub num_recent_events: Option<usize>,
    /// Only the events from this timestamp on (seconds; events at it included).
    pub after_timestamp: Option<f64>,
}

impl GetSessionConfig {
    /// Only the `n` most recent events.
    pub fn recent(n: usize) -> Self {
        GetSessionConfig { num_recent_events: Some(n), after_timestamp: None }
    }

    /// Only the events from `timestamp` on.
    pub fn after(timestamp: f64) -> Self {
        GetSessionConfig { num_recent_events: None, after_timestamp: Some(timestamp) }
    }

    /// The events of `events` this configuration keeps.
    pub fn select<'a>(&self, events: &'a [Event]) -> &'a [Event] {
        let mut events = events;
        if let Some(n) = self.num_recent_events {
            events = &events[events.len().saturating_sub(n)..];
        }
        if let Some(after) = self.after_timestamp {
            // ADK keeps the events after the last one older than `after`.
            if let Some(last_older) = events.iter().rposition(|e| e.timestamp < after) {
                events = &events[last_older + 1..];
            }
        }
        events
    }
}

/// A state split by scope: `app:` and `user:` keys without their prefix, `temp:` keys dropped.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct StateDeltas {
    /// The `app:` keys, without the prefix: shared by every user of the app.
    pub app: Map<String, Value>,
    /// The `user:` keys, without the prefix: shared by the user's sessions of the app.
    pub user: Map<String, Value>,
    /// The keys without a prefix: the session's own.
    pub session: Map<String, Value>,
}

impl StateDeltas {
    /// Splits `state` (ADK's `extract_state_delta`).
    pub fn split(state: &Map<String, Value>) -> Self {
        let mut deltas = StateDeltas::default();
        for (key, value) in state {
            if let Some(key) = key.strip_prefix(APP_PREFIX) {
                deltas.app.insert(key.to_owned(), value.clone());
            } else if let Some(key) = key.strip_prefix(USER_PREFIX) {
                deltas.user.insert(key.to_owned(), value.clone());
            } else if !key.starts_with(TEMP_PREFIX) {
                deltas.session.insert(key.clone(), value.clone());
            }
        }
        deltas
    }
}

/// Puts `event` into the in-memory `session`, as ADK's `BaseSessionService.append_event` does, and
/// gives back the event to store: `temp:` keys are applied to the session's state and trimmed from
/// the event, the rest of the delta is applied, the event is appended and its timestamp becomes the
/// session's `last_update_time`. Session services call this first, then store what it returns.
pub fn apply_event(session: &mut Session, mut event: Event) -> Event {
    let delta = &mut event.actions.state_delta;
    if delta.keys().any(|k| k.starts_with(TEMP_PREFIX)) {
        for (key, value) in delta.iter().filter(|(k, _)| k.starts_with(TEMP_PREFIX)) {
            session.state.insert(key.clone(), value.clone());
        }
        delta.retain(|k, _| !k.starts_with(TEMP_PREFIX));
    }
    for (key, value) in &event.actions.state_delta {
        session.state.insert(key.clone(), value.clone());
    }
    session.last_update_time = event.timestamp;
    session.events.push(event.clone());
    event
}

/// Where sessions live (ADK's `BaseSessionService`). Object-safe: runners hold an
/// `Arc<dyn SessionService>`. Every implementation passes `tests/it/session_services.rs`.
#[async_trait]
pub trait SessionService: Send + Sync {
    /// Creates a session with `state` (routed by prefix, `temp:` keys dropped) and the id given, or
    /// a fresh uuid; [`Error::SessionExists`] when the id is taken.
    async fn create_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: Option<&str>,
        state: Map<String, Value>,
    ) -> Result<Session>;

    /// The session with its merged state and the events `config` selects; `None` when it is not
    /// there.
    async fn get_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: &str,
        config: GetSessionConfig,
    ) -> Result<Option<Session>>;

    /// The sessions of `user_id` (of every user when `None`) without their events, with their
    /// merged state, oldest update first.
    async fn list_sessions(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Session>>;

    /// Deletes the session and its events; deleting a missing session does nothing.
    async fn delete_session(&self, app_name: &str, user_id: &str, session_id: &str) -> Result<()>;

    /// Appends `event` to `session` and stores it: partial events are given back untouched and never
    /// stored; `temp:` state is applied to `session` only (see [`apply_event`]).
    async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event>;

    /// The session if it is there, else a new one with `state` (adk-js's `getOrCreateSession`).
    async fn get_or_create_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: &str,
        state: Map<String, Value>,
    ) -> Result<Session> {
        if let Some(session) = self.get_session(app_name, user_id, session_id, GetSessionConfig::default()).await? {
            return Ok(session);
        }
        match self.create_session(app_name, user_id, Some(session_id), state).await {
            // Created by someone else in between: theirs it is.
            Err(Error::SessionExists(_)) => self
                .get_session(app_name, user_id, session_id, GetSessionConfig::default())
                .await?
                .ok_or_else(|| Error::SessionNotFound(session_id.to_owned())),
            other => other,
        }
    }
}

/// Sessions in memory, lost when the process ends: for tests, examples and ephemeral runs.
#[derive(Debug, Default)]
pub struct InMemorySessionService {
    apps: Mutex<HashMap<String, App>>,
}

#[derive(Debug, Default)]
struct App {
    state: Map<String, Value>,
    users: HashMap<String, User>,
}

#[derive(Debug, Default)]
struct User {
    state: Map<String, Value>,
    /// Sessions as stored: session-scoped state only.
    sessions: HashMap<String, Session>,
}

impl InMemorySessionService {
    /// An empty service.
    pub fn new() -> Self {
        InMemorySessionService::default()
    }

    fn apps(&self) -> std::sync::MutexGuard<'_, HashMap<String, App>> {
        // A panic elsewhere while holding the lock leaves consistent maps: every update is one insert.
        self.apps.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `stored` as a reader sees it: `app:` and `user:` state merged in, `events` as selected.
fn merged(app: &App, user: &User, stored: &Session, events: &[Event]) -> Session {
    Session {
        id: stored.id.clone(),
        app_name: stored.app_name.clone(),
        user_id: stored.user_id.clone(),
        state: crate::database::merge_state(&app.state, &user.state, stored.state.clone()),
        events: events.to_vec(),
        last_update_time: stored.last_update_time,
        storage_revision: None,
    }
}

#[async_trait]
impl SessionService for InMemorySessionService {
    async fn create_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: Option<&str>,
        state: Map<String, Value>,
    ) -> Result<Session> {
        let session_id = session_id.map(str::trim).filter(|id| !id.is_empty());
        let mut apps = self.apps();
        let app = apps.entry(app_name.to_owned()).or_default();
        if let Some(id) = session_id
            && app.users.get(user_id).is_some_and(|u| u.sessions.contains_key(id))
        {
            return Err(Error::SessionExists(id.to_owned()));
        }
        let deltas = StateDeltas::split(&state);
        app.state.extend(deltas.app);
        let user = app.users.entry(user_id.to_owned()).or_default();
        user.state.extend(deltas.user);
        let id = session_id.map_or_else(crate::event::uuid4, str::to_owned);
        let mut session = Session::new(app_name, user_id, id.clone());
        session.state = deltas.session;
        session.last_update_time = now_seconds();
        user.sessions.insert(id.clone(), session);
        let app = &apps[app_name];
        let user = &app.users[user_id];
        Ok(merged(app, user, &user.sessions[&id], &[]))
    }

    async fn get_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: &str,
        config: GetSessionConfig,
    ) -> Result<Option<Session>> {
        let apps = self.apps();
        let Some(app) = apps.get(app_name) else { return Ok(None) };
        let Some(user) = app.users.get(user_id) else { return Ok(None) };
        let Some(stored) = user.sessions.get(session_id.trim()) else { return Ok(None) };
        Ok(Some(merged(app, user, stored, config.select(&stored.events))))
    }

    async fn list_sessions(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Session>> {
        let apps = self.apps();
        let Some(app) = apps.get(app_name) else { return Ok(Vec::new()) };
        let mut sessions: Vec<Session> = app
            .users
            .iter()
            .filter(|(id, _)| user_id.is_none_or(|wanted| wanted == id.as_str()))
            .flat_map(|(_, user)| user.sessions.values().map(move |s| merged(app, user, s, &[])))
            .collect();
        sessions.sort_by(|a, b| {
            a.last_update_time
                .total_cmp(&b.last_update_time)
                .then_with(|| a.user_id.cmp(&b.user_id))
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(sessions)
    }

    async fn delete_session(&self, app_name: &str, user_id: &str, session_id: &str) -> Result<()> {
        if let Some(user) = self.apps().get_mut(app_name).and_then(|a| a.users.get_mut(user_id)) {
            user.sessions.remove(session_id.trim());
        }
        Ok(())
    }

    async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event> {
        if event.is_partial() {
            return Ok(event);
        }
        let mut apps = self.apps();
        let app = apps.get_mut(&session.app_name).ok_or_else(|| Error::SessionNotFound(session.id.clone()))?;
        let user = app.users.get_mut(&session.user_id).ok_or_else(|| Error::SessionNotFound(session.id.clone()))?;
        let stored = user.sessions.get_mut(&session.id).ok_or_else(|| Error::SessionNotFound(session.id.clone()))?;
        if stored.events.iter().any(|e| e.id == event.id && *e == event) {
            return Ok(event);
        }
        let event = apply_event(session, event);
        let deltas = StateDeltas::split(&event.actions.state_delta);
        stored.state.extend(deltas.session);
        stored.events.push(event.clone());
        stored.last_update_time = event.timestamp;
        user.state.extend(deltas.user);
        app.state.extend(deltas.app);
        Ok(event)
    }
}
