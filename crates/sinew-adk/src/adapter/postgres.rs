//! [`PostgresMessageStore`]: conversations in PostgreSQL.

use async_trait::async_trait;
use deadpool_postgres::Pool;
use serde_json::{Map, Value};

use super::{ChatMessage, Conversation, ConversationKey, MessageStore, ToolCall};
use crate::database::postgres::{col, db, pool};
use crate::database::{state_object, store_error};
use crate::error::{Error, Result};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sinew_chat_conversations (
    app_name   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    id         TEXT NOT NULL,
    state      JSONB NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    updated_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (app_name, user_id, id)
);
CREATE TABLE IF NOT EXISTS sinew_chat_messages (
    app_name        TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    id              TEXT NOT NULL,
    role            TEXT NOT NULL,
    author          TEXT NOT NULL,
    content         TEXT NOT NULL,
    tool_calls      JSON NOT NULL,
    timestamp       DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (app_name, user_id, conversation_id, seq),
    FOREIGN KEY (app_name, user_id, conversation_id)
        REFERENCES sinew_chat_conversations (app_name, user_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX IF NOT EXISTS sinew_chat_message_ids
    ON sinew_chat_messages (app_name, user_id, conversation_id, id) WHERE id <> '';
";

/// Serializes table creation across processes.
const SCHEMA_LOCK: i64 = 0x4348_4154_4d53_4753; // "CHATMSGS"

/// Conversations in PostgreSQL (tables `sinew_chat_conversations` and `sinew_chat_messages`, in
/// the connection's `search_path`). Each append is one transaction that locks its conversation's
/// row: appends to one conversation from any number of processes keep their order and lose
/// nothing.
#[derive(Clone, Debug)]
pub struct PostgresMessageStore {
    pool: Pool,
}

impl PostgresMessageStore {
    /// Connects to `url` without TLS (16 pooled connections) and creates the tables when missing.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::from_pool(pool(url)?).await
    }

    /// A store over `pool`; creates the tables when missing.
    pub async fn from_pool(pool: Pool) -> Result<Self> {
        let error = db("creating the message tables");
        let mut client = pool.get().await.map_err(|e| store_error("connecting to the database", e))?;
        let tx = client.transaction().await.map_err(&error)?;
        // Waiting for another instance's lock is bounded.
        tx.batch_execute("SET LOCAL lock_timeout = '30s'").await.map_err(&error)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(&error)?;
        tx.batch_execute(SCHEMA).await.map_err(&error)?;
        tx.commit().await.map_err(&error)?;
        drop(client);
        Ok(PostgresMessageStore { pool })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| store_error("connecting to the database", e))
    }
}

#[async_trait]
impl MessageStore for PostgresMessageStore {
    async fn create(&self, key: &ConversationKey, state: Map<String, Value>, at: f64) -> Result<Conversation> {
        let state = Value::Object(state);
        let inserted = self
            .client()
            .await?
            .execute(
                "INSERT INTO sinew_chat_conversations (app_name, user_id, id, state, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT DO NOTHING",
                &[&key.app_name, &key.user_id, &key.id, &state, &at],
            )
            .await
            .map_err(db("creating a conversation"))?;
        if inserted == 0 {
            return Err(Error::SessionExists(key.id.clone()));
        }
        Ok(Conversation { key: key.clone(), state: state_object(state)?, messages: Vec::new(), updated_at: at })
    }

    async fn load(&self, key: &ConversationKey) -> Result<Option<Conversation>> {
        let error = db("reading a conversation");
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(&error)?;
        let row = tx
            .query_opt(
                "SELECT state, updated_at FROM sinew_chat_conversations WHERE app_name = $1 AND user_id = $2 AND id = $3",
                &[&key.app_name, &key.user_id, &key.id],
            )
            .await
            .map_err(&error)?;
        let Some(row) = row else {
            tx.commit().await.map_err(&error)?;
            return Ok(None);
        };
        let rows = tx
            .query(
                "SELECT id, role, author, content, tool_calls, timestamp FROM sinew_chat_messages
                 WHERE app_name = $1 AND user_id = $2 AND conversation_id = $3 ORDER BY seq",
                &[&key.app_name, &key.user_id, &key.id],
            )
            .await
            .map_err(db("reading messages"))?;
        tx.commit().await.map_err(&error)?;
        let mut messages = Vec::with_capacity(rows.len());
        for message in rows {
            let tool_calls: Vec<ToolCall> =
                serde_json::from_value(col(&message, 4)?).map_err(|e| store_error("reading messages", e))?;
            messages.push(ChatMessage {
                id: col(&message, 0)?,
                role: col(&message, 1)?,
                author: col(&message, 2)?,
                content: col(&message, 3)?,
                tool_calls,
                timestamp: col(&message, 5)?,
            });
        }
        Ok(Some(Conversation {
            key: key.clone(),
            state: state_object(col(&row, 0)?)?,
            messages,
            updated_at: col(&row, 1)?,
        }))
    }

    async fn list(&self, app_name: &str, user_id: Option<&str>) -> Result<Vec<Conversation>> {
        let rows = self
            .client()
            .await?
            .query(
                "SELECT user_id, id, state, updated_at FROM sinew_chat_conversations
                 WHERE app_name = $1 AND ($2::text IS NULL OR user_id = $2) ORDER BY updated_at, user_id, id",
                &[&app_name, &user_id],
            )
            .await
            .map_err(db("listing conversations"))?;
        rows.into_iter()
            .map(|row| {
                Ok(Conversation {
                    key: ConversationKey::new(app_name, col::<String>(&row, 0)?, col::<String>(&row, 1)?),
                    state: state_object(col(&row, 2)?)?,
                    messages: Vec::new(),
                    updated_at: col(&row, 3)?,
                })
            })
            .collect()
    }

    async fn delete(&self, key: &ConversationKey) -> Result<()> {
        self.client()
            .await?
            .execute(
                "DELETE FROM sinew_chat_conversations WHERE app_name = $1 AND user_id = $2 AND id = $3",
                &[&key.app_name, &key.user_id, &key.id],
            )
            .await
            .map_err(db("deleting a conversation"))?;
        Ok(())
    }

    async fn append(
        &self,
        key: &ConversationKey,
        message: Option<&ChatMessage>,
        state_delta: &Map<String, Value>,
        at: f64,
    ) -> Result<bool> {
        let error = db("appending a message");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        let found = tx
            .query_opt(
                "SELECT 1 FROM sinew_chat_conversations WHERE app_name = $1 AND user_id = $2 AND id = $3 FOR UPDATE",
                &[&key.app_name, &key.user_id, &key.id],
            )
            .await
            .map_err(&error)?;
        if found.is_none() {
            tx.commit().await.map_err(&error)?;
            return Err(Error::SessionNotFound(key.id.clone()));
        }
        if let Some(message) = message {
            let tool_calls =
                serde_json::to_value(&message.tool_calls).map_err(|e| store_error("encoding a message", e))?;
            let inserted = tx
                .execute(
                    "INSERT INTO sinew_chat_messages
                         (app_name, user_id, conversation_id, seq, id, role, author, content, tool_calls, timestamp)
                     VALUES ($1, $2, $3,
                         (SELECT COALESCE(MAX(seq), 0) + 1 FROM sinew_chat_messages
                          WHERE app_name = $1 AND user_id = $2 AND conversation_id = $3),
                         $4, $5, $6, $7, $8, $9)
                     ON CONFLICT DO NOTHING",
                    &[
                        &key.app_name,
                        &key.user_id,
                        &key.id,
                        &message.id,
                        &message.role,
                        &message.author,
                        &message.content,
                        &tool_calls,
                        &message.timestamp,
                    ],
                )
                .await
                .map_err(&error)?;
            if inserted == 0 {
                tx.commit().await.map_err(&error)?;
                return Ok(false);
            }
        }
        tx.execute(
            "UPDATE sinew_chat_conversations SET state = state || $4, updated_at = $5
             WHERE app_name = $1 AND user_id = $2 AND id = $3",
            &[&key.app_name, &key.user_id, &key.id, &Value::Object(state_delta.clone()), &at],
        )
        .await
        .map_err(&error)?;
        tx.commit().await.map_err(&error)?;
        Ok(true)
    }
}
