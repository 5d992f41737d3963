//! [`SqliteMessageStore`]: conversations in a SQLite file.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension as _, TransactionBehavior, params};
use serde_json::{Map, Value};

use super::{ChatMessage, Conversation, ConversationKey, MessageStore, ToolCall};
use crate::database::sqlite::{SqlitePool, db};
use crate::database::{state_object, store_error};
use crate::error::{Error, Result};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sinew_chat_conversations (
    app_name   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    id         TEXT NOT NULL,
    state      TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS sinew_chat_messages (
    app_name        TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             INTEGER NOT NULL,
    id              TEXT NOT NULL,
    role            TEXT NOT NULL,
    author          TEXT NOT NULL,
    content         TEXT NOT NULL,
    tool_calls      TEXT NOT NULL,
    timestamp       REAL NOT NULL,
    PRIMARY KEY (app_name, user_id, conversation_id, seq),
    FOREIGN KEY (app_name, user_id, conversation_id)
        REFERENCES sinew_chat_conversations (app_name, user_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX IF NOT EXISTS sinew_chat_message_ids
    ON sinew_chat_messages (app_name, user_id, conversation_id, id) WHERE id <> '';
";

/// Conversations in one SQLite file (tables `sinew_chat_conversations` and
/// `sinew_chat_messages`), beside ADK's tables or in a file of their own. WAL mode and
/// `synchronous = FULL`: each append is one durable transaction; writers from any connection or
/// process queue behind SQLite's lock.
#[derive(Clone, Debug)]
pub struct SqliteMessageStore {
    pool: SqlitePool,
}

impl SqliteMessageStore {
    /// Opens (or creates) the database at `path` and its tables.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        let pool = SqlitePool::open(path.into(), |connection| {
            connection.execute_batch(SCHEMA).map_err(db("creating the message tables"))
        })?;
        Ok(SqliteMessageStore { pool })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.pool.path()
    }
}

fn json_text(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| store_error("encoding a message", e))
}

fn parse<T: serde::de::DeserializeOwned>(what: &'static str, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| store_error(what, e))
}

fn read_messages(connection: &Connection, key: &ConversationKey) -> Result<Vec<ChatMessage>> {
    let mut statement = connection
        .prepare_cached(
            "SELECT id, role, author, content, tool_calls, timestamp FROM sinew_chat_messages
             WHERE app_name = ?1 AND user_id = ?2 AND conversation_id = ?3 ORDER BY seq",
        )
        .map_err(db("reading messages"))?;
    let rows = statement
        .query_map([&key.app_name, &key.user_id, &key.id], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, f64>(5)?,
            ))
        })
        .map_err(db("reading messages"))?;
    let mut messages = Vec::new();
    for row in rows {
        let (id, role, author, content, tool_calls, timestamp) = row.map_err(db("reading messages"))?;
        let tool_calls: Vec<ToolCall> = parse("reading messages", &tool_calls)?;
        messages.push(ChatMessage { id, role, author, content, tool_calls, timestamp });
    }
    Ok(messages)
}

#[async_trait]
impl MessageStore for SqliteMessageStore {
    async fn create(&self, key: &ConversationKey, state: Map<String, Value>, at: f64) -> Result<Conversation> {
        let key = key.clone();
        self.pool
            .with(move |connection| {
                let text = json_text(&state)?;
                let inserted = connection
                    .execute(
                        "INSERT INTO sinew_chat_conversations (app_name, user_id, id, state, created_at, updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT DO NOTHING",
                        params![key.app_name, key.user_id, key.id, text, at],
                    )
                    .map_err(db("creating a conversation"))?;
                if inserted == 0 {
                    return Err(Error::SessionExists(key.id));
                }
                Ok(Conversation { key, state, messages: Vec::new(), updated_at: at })
            })
            .await
    }

    async fn load(&self, key: &ConversationKey) -> Result<Option<Conversation>> {
        let key = key.clone();
        self.pool
            .with(move |connection| {
                let tx = connection.transaction().map_err(db("reading a conversation"))?;
                let row: Option<(String, f64)> = tx
                    .query_row(
                        "SELECT state, updated_at FROM sinew_chat_conversations
                         WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                        [&key.app_name, &key.user_id, &key.id],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )
                    .optional()
                    .map_err(db("reading a conversation"))?;
                let Some((state, updated_at)) = row else { return Ok(None) };
                let messages = read_messages(&tx, &key)?;
                let state = state_object(parse("reading a conversation", &state)?)?;
                Ok(Some(Conversation { key, state, messages, updated_at }))
            })
            .await
    }

    async fn list(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Conversation>> {
        let (app_name, user_id) = (app_name.to_owned(), user_id.map(str::to_owned));
        self.pool
            .with(move |connection| {
                let mut statement = connection
                    .prepare_cached(
                        "SELECT user_id, id, state, updated_at FROM sinew_chat_conversations
                         WHERE app_name = ?1 AND (?2 IS NULL OR user_id = ?2) ORDER BY updated_at, user_id, id",
                    )
                    .map_err(db("listing conversations"))?;
                let rows = statement
                    .query_map(params![app_name, user_id], |row| {
                        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?, row.get::<_, String>(2)?, row.get(3)?))
                    })
                    .map_err(db("listing conversations"))?;
                let mut listed = Vec::new();
                for row in rows {
                    let (user_id, id, state, updated_at) = row.map_err(db("listing conversations"))?;
                    listed.push(Conversation {
                        key: ConversationKey::new(app_name.clone(), user_id, id),
                        state: state_object(parse("listing conversations", &state)?)?,
                        messages: Vec::new(),
                        updated_at,
                    });
                }
                Ok(listed)
            })
            .await
    }

    async fn delete(&self, key: &ConversationKey) -> Result<()> {
        let key = key.clone();
        self.pool
            .with(move |connection| {
                // The messages go with it (ON DELETE CASCADE).
                connection
                    .execute(
                        "DELETE FROM sinew_chat_conversations WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                        [&key.app_name, &key.user_id, &key.id],
                    )
                    .map_err(db("deleting a conversation"))?;
                Ok(())
            })
            .await
    }

    async fn append(
        &self,
        key: &ConversationKey,
        message: Option<&ChatMessage>,
        state_delta: &Map<String, Value>,
        at: f64,
    ) -> Result<bool> {
        let (key, message, delta) = (key.clone(), message.cloned(), state_delta.clone());
        self.pool
            .with(move |connection| {
                let error = db("appending a message");
                let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate).map_err(&error)?;
                let state: Option<String> = tx
                    .query_row(
                        "SELECT state FROM sinew_chat_conversations WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                        [&key.app_name, &key.user_id, &key.id],
                        |row| row.get(0),
                    )
                    .optional()
                    .map_err(&error)?;
                let Some(state) = state else { return Err(Error::SessionNotFound(key.id)) };
                if let Some(message) = message {
                    let inserted = tx
                        .execute(
                            "INSERT INTO sinew_chat_messages
                                 (app_name, user_id, conversation_id, seq, id, role, author, content, tool_calls, timestamp)
                             VALUES (?1, ?2, ?3,
                                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM sinew_chat_messages
                                  WHERE app_name = ?1 AND user_id = ?2 AND conversation_id = ?3),
                                 ?4, ?5, ?6, ?7, ?8, ?9)
                             ON CONFLICT DO NOTHING",
                            params![
                                key.app_name,
                                key.user_id,
                                key.id,
                                message.id,
                                message.role,
                                message.author,
                                message.content,
                                json_text(&message.tool_calls)?,
                                message.timestamp
                            ],
                        )
                        .map_err(&error)?;
                    if inserted == 0 {
                        // Stored before: the append happened already.
                        return Ok(false);
                    }
                }
                let mut state = state_object(parse("appending a message", &state)?)?;
                state.extend(delta);
                tx.execute(
                    "UPDATE sinew_chat_conversations SET state = ?4, updated_at = ?5
                     WHERE app_name = ?1 AND user_id = ?2 AND id = ?3",
                    params![key.app_name, key.user_id, key.id, json_text(&state)?, at],
                )
                .map_err(&error)?;
                tx.commit().map_err(&error)?;
                Ok(true)
            })
            .await
    }
}
