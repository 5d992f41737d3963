//! ADK over an application's own conversation store (spec 000): chat products keep messages of
//! role, content and tool calls; these adapters run ADK agents over them.
//!
//! - [`MessageStore`]: the store, with [`InMemoryMessageStore`], [`SqliteMessageStore`] and
//!   [`PostgresMessageStore`].
//! - [`SessionServiceAdapter`]: a [`SessionService`](crate::SessionService) over a store. Loading
//!   maps the stored messages to events ([`EventsAdapter`]) within a token budget
//!   ([`truncate_to_budget`]); appending persists the event as a message **and** appends it to
//!   the session object, so `session.events` shows it at once.
//! - [`run_and_collect`]: runs an agent and returns its text, retrying once when the model
//!   transferred to an agent that does not exist.
//!
//! The message shape keeps text, function calls and function responses. What it has no place
//! for is not kept: other part kinds (images, files, code), thoughts, invocation ids, actions
//! other than the state delta. State is kept per conversation, `app:` and `user:` keys included
//! (they are not shared between conversations, as ADK's own services share them).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

mod collect;
mod events;
#[cfg(feature = "postgres")]
mod postgres;
mod service;
#[cfg(feature = "sqlite")]
mod sqlite;
mod truncate;

pub use collect::{correction_message, run_and_collect};
pub use events::{DEFAULT_AUTHOR, EventsAdapter, message_from_event};
#[cfg(feature = "postgres")]
pub use postgres::PostgresMessageStore;
pub use service::SessionServiceAdapter;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteMessageStore;
pub use truncate::{DEFAULT_TOKEN_BUDGET, truncate_to_budget};

/// A stored message, the shape chat products keep.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatMessage {
    /// The message's id (the ADK event's id when the adapter stored it); may be empty.
    pub id: String,
    /// `user`, `assistant` (or `model`), `tool` (or `function`); anything else is read as the
    /// agent's.
    pub role: String,
    /// Who wrote it: `user` or an agent's name; may be empty.
    pub author: String,
    /// The text; for a tool message, the serialized response.
    pub content: String,
    /// The calls an assistant message makes, or the responses a tool message carries.
    pub tool_calls: Vec<ToolCall>,
    /// Seconds since the epoch.
    pub timestamp: f64,
}

impl ChatMessage {
    /// A message of `role` with `content`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage { role: role.into(), content: content.into(), ..ChatMessage::default() }
    }

    /// With the id `id`.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// With `author`.
    #[must_use]
    pub fn author(mut self, author: impl Into<String>) -> Self {
        self.author = author.into();
        self
    }

    /// Written at `seconds` since the epoch.
    #[must_use]
    pub fn at(mut self, seconds: f64) -> Self {
        self.timestamp = seconds;
        self
    }

    /// With a tool call (or response).
    #[must_use]
    pub fn tool_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    /// Whether this is a tool (function) result.
    pub fn is_tool(&self) -> bool {
        matches!(self.role.as_str(), "tool" | "function")
    }

    /// Whether this is an assistant message with calls.
    pub fn has_calls(&self) -> bool {
        !self.is_tool() && self.role != "user" && !self.tool_calls.is_empty()
    }
}

/// A call in an assistant message, or a response in a tool message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The call's id, which the response to it repeats.
    pub id: String,
    /// The name of the function called (or that responded).
    pub name: String,
    /// The arguments as JSON text (a call).
    pub input: String,
    /// The response as JSON text (a response).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl ToolCall {
    /// A call of `name` with `input` (JSON text).
    pub fn call(id: impl Into<String>, name: impl Into<String>, input: impl Into<String>) -> Self {
        ToolCall { id: id.into(), name: name.into(), input: input.into(), output: None }
    }

    /// A response of `name` to the call `id`, `output` as JSON text.
    pub fn response(id: impl Into<String>, name: impl Into<String>, output: impl Into<String>) -> Self {
        ToolCall { id: id.into(), name: name.into(), input: String::new(), output: Some(output.into()) }
    }
}

/// Which conversation: an ADK session's app, user and id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ConversationKey {
    /// The ADK app the conversation belongs to.
    pub app_name: String,
    /// The user whose conversation it is.
    pub user_id: String,
    /// The conversation's id, which is the ADK session's id.
    pub id: String,
}

impl ConversationKey {
    /// The key of conversation `id` of `user_id` in `app_name`.
    pub fn new(app_name: impl Into<String>, user_id: impl Into<String>, id: impl Into<String>) -> Self {
        ConversationKey { app_name: app_name.into(), user_id: user_id.into(), id: id.into() }
    }
}

/// A conversation: its messages, oldest first, and its state.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Conversation {
    /// Which conversation this is.
    pub key: ConversationKey,
    /// The conversation's state, `app:` and `user:` keys included (kept per conversation).
    pub state: Map<String, Value>,
    /// The messages, oldest first; empty in the answers of [`MessageStore::list`].
    pub messages: Vec<ChatMessage>,
    /// Seconds since the epoch.
    pub updated_at: f64,
}

/// Where an application keeps its conversations. Object-safe.
#[async_trait]
pub trait MessageStore: Send + Sync {
    /// Creates an empty conversation with `state`; [`Error::SessionExists`] when the key is taken.
    async fn create(&self, key: &ConversationKey, state: Map<String, Value>, at: f64) -> Result<Conversation>;

    /// The conversation with its messages; `None` when it is not there.
    async fn load(&self, key: &ConversationKey) -> Result<Option<Conversation>>;

    /// The conversations of `user_id` (of every user when `None`) without their messages, oldest
    /// update first.
    async fn list(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Conversation>>;

    /// Deletes the conversation and its messages; deleting a missing one does nothing.
    async fn delete(&self, key: &ConversationKey) -> Result<()>;

    /// Appends `message` (when there is one) and adds `state_delta` to the state, in one write,
    /// and says whether it did: a message whose id is already stored is not stored again, and
    /// then nothing changes (`false`). [`Error::SessionNotFound`] when the conversation is not
    /// there.
    async fn append(
        &self,
        key: &ConversationKey,
        message: Option<&ChatMessage>,
        state_delta: &Map<String, Value>,
        at: f64,
    ) -> Result<bool>;
}

/// Conversations in memory: for tests and examples.
#[derive(Debug, Default)]
pub struct InMemoryMessageStore {
    conversations: Mutex<HashMap<ConversationKey, Conversation>>,
}

impl InMemoryMessageStore {
    /// An empty store.
    pub fn new() -> Self {
        InMemoryMessageStore::default()
    }

    fn conversations(&self) -> std::sync::MutexGuard<'_, HashMap<ConversationKey, Conversation>> {
        // Every update is one insert or push: a panic elsewhere leaves the map consistent.
        self.conversations.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl MessageStore for InMemoryMessageStore {
    async fn create(&self, key: &ConversationKey, state: Map<String, Value>, at: f64) -> Result<Conversation> {
        let mut conversations = self.conversations();
        if conversations.contains_key(key) {
            return Err(Error::SessionExists(key.id.clone()));
        }
        let conversation = Conversation { key: key.clone(), state, messages: Vec::new(), updated_at: at };
        conversations.insert(key.clone(), conversation.clone());
        Ok(conversation)
    }

    async fn load(&self, key: &ConversationKey) -> Result<Option<Conversation>> {
        Ok(self.conversations().get(key).cloned())
    }

    async fn list(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Conversation>> {
        let mut listed: Vec<Conversation> = self
            .conversations()
            .values()
            .filter(|c| c.key.app_name == app_name && user_id.is_none_or(|u| u == c.key.user_id))
            .map(|c| Conversation { messages: Vec::new(), ..c.clone() })
            .collect();
        listed.sort_by(|a, b| a.updated_at.total_cmp(&b.updated_at).then_with(|| a.key.id.cmp(&b.key.id)));
        Ok(listed)
    }

    async fn delete(&self, key: &ConversationKey) -> Result<()> {
        self.conversations().remove(key);
        Ok(())
    }

    async fn append(
        &self,
        key: &ConversationKey,
        message: Option<&ChatMessage>,
        state_delta: &Map<String, Value>,
        at: f64,
    ) -> Result<bool> {
        let mut conversations = self.conversations();
        let conversation = conversations.get_mut(key).ok_or_else(|| Error::SessionNotFound(key.id.clone()))?;
        if let Some(message) = message {
            if !message.id.is_empty() && conversation.messages.iter().any(|m| m.id == message.id) {
                return Ok(false);
            }
            conversation.messages.push(message.clone());
        }
        conversation.state.extend(state_delta.iter().map(|(k, v)| (k.clone(), v.clone())));
        conversation.updated_at = at;
        Ok(true)
    }
}
