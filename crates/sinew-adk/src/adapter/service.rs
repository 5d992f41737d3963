//! [`SessionServiceAdapter`]: ADK sessions over a [`MessageStore`].

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sinew_compaction::{HeuristicTokenCounter, TokenCounter};

use super::{ConversationKey, EventsAdapter, MessageStore, message_from_event, truncate_to_budget};
use crate::database::without_temp;
use crate::error::Result;
use crate::event::{Event, now_seconds};
use crate::session::{GetSessionConfig, SessionService, TEMP_PREFIX, apply_event};
use crate::types::Session;

/// A [`SessionService`] over an application's [`MessageStore`] (spec 000's
/// `SessionServiceAdapter`; the [`Session`] it hands out plays its `SessionAdapter`).
///
/// - Loading a session maps its stored messages to events with an [`EventsAdapter`], keeping
///   the newest that fit the token budget ([`truncate_to_budget`]; 32,000 tokens unless set,
///   counted with sinew-compaction's [`HeuristicTokenCounter`] unless another counter is given).
/// - Appending an event stores it as a message ([`message_from_event`]) and its state delta in
///   one write, **and** appends it to the session object: `session.events` shows it at once, in
///   order. An event with no message in it (a state delta alone) is neither stored as a message
///   nor added to the events; its state is kept.
/// - `temp:` state lives in the session object only, as everywhere in ADK.
pub struct SessionServiceAdapter {
    store: Arc<dyn MessageStore>,
    events: EventsAdapter,
    token_budget: usize,
    counter: Arc<dyn TokenCounter>,
}

impl std::fmt::Debug for SessionServiceAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionServiceAdapter")
            .field("agent_author", &self.events.agent_author())
            .field("token_budget", &self.token_budget)
            .finish_non_exhaustive()
    }
}

impl SessionServiceAdapter {
    /// An adapter over `store` with the default budget, counter and author.
    pub fn new(store: Arc<dyn MessageStore>) -> Self {
        SessionServiceAdapter {
            store,
            events: EventsAdapter::default(),
            token_budget: 0,
            counter: Arc::new(HeuristicTokenCounter),
        }
    }

    /// Agent messages stored without an author are `name`'s (the root agent's name).
    #[must_use]
    pub fn root_agent_name(mut self, name: impl Into<String>) -> Self {
        self.events = EventsAdapter::new(name);
        self
    }

    /// The history a loaded session holds, in tokens; `0` is the default, 32,000.
    #[must_use]
    pub fn token_budget(mut self, tokens: usize) -> Self {
        self.token_budget = tokens;
        self
    }

    /// Counts the budget with `counter` (a real tokenizer, say).
    #[must_use]
    pub fn token_counter(mut self, counter: Arc<dyn TokenCounter>) -> Self {
        self.counter = counter;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn MessageStore> {
        &self.store
    }
}

fn without_temp_keys(state: Map<String, Value>) -> Map<String, Value> {
    state.into_iter().filter(|(key, _)| !key.starts_with(TEMP_PREFIX)).collect()
}

#[async_trait]
impl SessionService for SessionServiceAdapter {
    async fn create_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: Option<&str>,
        state: Map<String, Value>,
    ) -> Result<Session> {
        let key = ConversationKey::new(app_name, user_id, crate::database::session_id_or_new(session_id));
        let conversation = self.store.create(&key, without_temp_keys(state), now_seconds()).await?;
        let mut session = Session::new(app_name, user_id, key.id);
        session.state = conversation.state;
        session.last_update_time = conversation.updated_at;
        Ok(session)
    }

    async fn get_session(
        &self,
        app_name: &str,
        user_id: &str,
        session_id: &str,
        config: GetSessionConfig,
    ) -> Result<Option<Session>> {
        let key = ConversationKey::new(app_name, user_id, session_id.trim());
        let Some(conversation) = self.store.load(&key).await? else { return Ok(None) };
        let kept = truncate_to_budget(&conversation.messages, self.token_budget, &*self.counter);
        let events = self.events.events(kept);
        let mut session = Session::new(app_name, user_id, key.id);
        session.events = config.select(&events).to_vec();
        session.state = conversation.state;
        session.last_update_time = conversation.updated_at;
        Ok(Some(session))
    }

    async fn list_sessions(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Session>> {
        let conversations = self.store.list(app_name, user_id).await?;
        Ok(conversations
            .into_iter()
            .map(|conversation| {
                let key = conversation.key;
                let mut session = Session::new(key.app_name, key.user_id, key.id);
                session.state = conversation.state;
                session.last_update_time = conversation.updated_at;
                session
            })
            .collect())
    }

    async fn delete_session(&self, app_name: &str, user_id: &str, session_id: &str) -> Result<()> {
        self.store.delete(&ConversationKey::new(app_name, user_id, session_id.trim())).await
    }

    async fn append_event(&self, session: &mut Session, event: Event) -> Result<Event> {
        if event.is_partial() {
            return Ok(event);
        }
        let stored = without_temp(&event);
        let message = message_from_event(&stored);
        let key = ConversationKey::new(&session.app_name, &session.user_id, &session.id);
        let appended = self.store.append(&key, message.as_ref(), &stored.actions.state_delta, stored.timestamp).await?;
        if !appended {
            // Stored before: the session object has it already.
            return Ok(stored);
        }
        if message.is_some() {
            return Ok(apply_event(session, event));
        }
        // No message: the state changes, the history does not.
        for (key, value) in &event.actions.state_delta {
            session.state.insert(key.clone(), value.clone());
        }
        session.last_update_time = event.timestamp;
        Ok(stored)
    }
}
