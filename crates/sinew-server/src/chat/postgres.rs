//! [`PostgresChatStore`]: chat's tables in a PostgreSQL schema (`kb` unless configured).

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use serde_json::Value;
use tokio_postgres::{NoTls, Row};
use uuid::Uuid;

use super::migrations;
use super::store::{
    AgentDefinition, AgentDefinitionSpec, AgentRun, ChatConversation, ChatError, ChatResult, ChatStore, RunMessage,
    RunStatus, RunToolCall, RunTrace, StoredMessage, now,
};

/// The schema chat's tables live in unless another is given.
pub const DEFAULT_SCHEMA: &str = "kb";

/// How long a connection, a pooled connection or a migration lock is waited for.
const WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Serializes migrations across instances ("CHATMIGR").
const MIGRATION_LOCK: i64 = 0x4348_4154_4d49_4752;

/// Chat's tables in one schema of a PostgreSQL database, migrated to the newest version when
/// connected. Any number of instances may share the database: migrations run under an advisory
/// lock, and every write is one statement or one transaction.
#[derive(Clone)]
pub struct PostgresChatStore {
    pool: Pool,
    schema: String,
}

impl std::fmt::Debug for PostgresChatStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresChatStore").field("schema", &self.schema).finish_non_exhaustive()
    }
}

fn db(what: &'static str) -> impl Fn(tokio_postgres::Error) -> ChatError {
    move |e| ChatError::store(what, e)
}

fn col<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, index: usize) -> ChatResult<T> {
    row.try_get(index).map_err(|e| ChatError::store("reading a row", e))
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63
}

/// A pool of connections to `url` (without TLS) whose `search_path` is `schema`.
pub(crate) fn pool_in(url: &str, schema: &str) -> ChatResult<Pool> {
    if !is_identifier(schema) {
        return Err(ChatError::Invalid(format!("`{schema}` is not a plain lowercase schema name")));
    }
    let mut config: tokio_postgres::Config = url.parse().map_err(db("parsing the database URL"))?;
    let options = match config.get_options() {
        Some(options) => format!("{options} -c search_path={schema}"),
        None => format!("-c search_path={schema}"),
    };
    config.options(&options);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(WAIT);
    }
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(16)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(WAIT))
        .create_timeout(Some(WAIT))
        .recycle_timeout(Some(WAIT))
        .build()
        .map_err(|e| ChatError::store("building the connection pool", e))
}

impl PostgresChatStore {
    /// Connects to `url` without TLS (16 pooled connections) and migrates schema `kb`.
    pub async fn connect(url: &str) -> ChatResult<Self> {
        Self::connect_in(url, DEFAULT_SCHEMA).await
    }

    /// Connects to `url` and migrates `schema` (created when missing).
    pub async fn connect_in(url: &str, schema: &str) -> ChatResult<Self> {
        let pool = pool_in(url, schema)?;
        migrate_pool(&pool, schema, None).await?;
        Ok(PostgresChatStore { pool, schema: schema.to_owned() })
    }

    /// Creates `schema` when missing and applies the migrations it lacks, up to `version` (all
    /// when `None`), under a lock other instances wait for.
    pub async fn migrate(url: &str, schema: &str, version: Option<i32>) -> ChatResult<()> {
        migrate_pool(&pool_in(url, schema)?, schema, version).await
    }

    /// The schema the tables are in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    async fn client(&self) -> ChatResult<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|e| ChatError::store("connecting to the database", e))
    }
}

async fn migrate_pool(pool: &Pool, schema: &str, version: Option<i32>) -> ChatResult<()> {
    let mut client = pool.get().await.map_err(|e| ChatError::store("connecting to the database", e))?;
    let error = db("migrating the chat tables");
    client.batch_execute(&format!("SET lock_timeout = '{}s'", WAIT.as_secs())).await.map_err(&error)?;
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).await.map_err(&error)?;
    let migrated = async {
        client.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\"")).await.map_err(&error)?;
        let mut runner = migrations::postgres();
        if let Some(version) = version {
            runner = runner.set_target(refinery::Target::Version(version));
        }
        let client: &mut tokio_postgres::Client = &mut client;
        runner.run_async(client).await.map_err(|e| ChatError::store("migrating the chat tables", e))?;
        Ok::<_, ChatError>(())
    }
    .await;
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).await.map_err(&error);
    // The connection goes back to the pool as it came.
    let reset = client.batch_execute("RESET lock_timeout").await.map_err(&error);
    migrated.and(unlocked.map(drop)).and(reset)
}

fn names(value: Value) -> ChatResult<Vec<String>> {
    serde_json::from_value(value).map_err(|e| ChatError::store("reading an agent definition", e))
}

fn definition_row(row: &Row) -> ChatResult<AgentDefinition> {
    Ok(AgentDefinition {
        id: col(row, 0)?,
        spec: AgentDefinitionSpec {
            name: col(row, 1)?,
            model: col(row, 2)?,
            instruction: col(row, 3)?,
            tools: names(col(row, 4)?)?,
            mcp_servers: names(col(row, 5)?)?,
        },
        created_at: col(row, 6)?,
        updated_at: col(row, 7)?,
    })
}

const DEFINITION_COLUMNS: &str = "id, name, model, instruction, tools, mcp_servers, created_at, updated_at";

fn conversation_row(row: &Row) -> ChatResult<ChatConversation> {
    Ok(ChatConversation {
        id: col(row, 0)?,
        title: col(row, 1)?,
        agent_definition_id: col(row, 2)?,
        created_at: col(row, 3)?,
        updated_at: col(row, 4)?,
    })
}

const CONVERSATION_COLUMNS: &str = "id, title, agent_definition_id, created_at, updated_at";

fn message_row(row: &Row) -> ChatResult<StoredMessage> {
    Ok(StoredMessage {
        id: col(row, 0)?,
        conversation_id: col(row, 1)?,
        role: col(row, 2)?,
        content: col(row, 3)?,
        retrieval_context: col(row, 4)?,
        created_at: col(row, 5)?,
    })
}

const MESSAGE_COLUMNS: &str = "id, conversation_id, role, content, retrieval_context, created_at";

fn names_json(names: &[String]) -> Value {
    Value::from(names.to_vec())
}

#[async_trait]
impl ChatStore for PostgresChatStore {
    async fn create_definition(&self, spec: &AgentDefinitionSpec) -> ChatResult<AgentDefinition> {
        let definition = AgentDefinition::new(spec);
        let at = definition.created_at;
        self.client()
            .await?
            .execute(
                "INSERT INTO agent_definitions (id, name, model, instruction, tools, mcp_servers, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
                &[
                    &definition.id,
                    &spec.name,
                    &spec.model,
                    &spec.instruction,
                    &names_json(&spec.tools),
                    &names_json(&spec.mcp_servers),
                    &at,
                ],
            )
            .await
            .map_err(db("storing an agent definition"))?;
        Ok(definition)
    }

    async fn definition(&self, id: Uuid) -> ChatResult<Option<AgentDefinition>> {
        let row = self
            .client()
            .await?
            .query_opt(&format!("SELECT {DEFINITION_COLUMNS} FROM agent_definitions WHERE id = $1"), &[&id])
            .await
            .map_err(db("reading an agent definition"))?;
        row.as_ref().map(definition_row).transpose()
    }

    async fn definitions(&self) -> ChatResult<Vec<AgentDefinition>> {
        let rows = self
            .client()
            .await?
            .query(&format!("SELECT {DEFINITION_COLUMNS} FROM agent_definitions ORDER BY created_at, id"), &[])
            .await
            .map_err(db("reading agent definitions"))?;
        rows.iter().map(definition_row).collect()
    }

    async fn update_definition(&self, id: Uuid, spec: &AgentDefinitionSpec) -> ChatResult<Option<AgentDefinition>> {
        let row = self
            .client()
            .await?
            .query_opt(
                &format!(
                    "UPDATE agent_definitions SET name = $2, model = $3, instruction = $4, tools = $5, mcp_servers = $6,
                     updated_at = $7 WHERE id = $1 RETURNING {DEFINITION_COLUMNS}"
                ),
                &[
                    &id,
                    &spec.name,
                    &spec.model,
                    &spec.instruction,
                    &names_json(&spec.tools),
                    &names_json(&spec.mcp_servers),
                    &now(),
                ],
            )
            .await
            .map_err(db("updating an agent definition"))?;
        row.as_ref().map(definition_row).transpose()
    }

    async fn delete_definition(&self, id: Uuid) -> ChatResult<bool> {
        let error = db("deleting a definition");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        // Conversations created meanwhile wait for the row lock, then fail their reference check.
        let found =
            tx.query_opt("SELECT 1 FROM agent_definitions WHERE id = $1 FOR UPDATE", &[&id]).await.map_err(&error)?;
        if found.is_none() {
            return Ok(false);
        }
        let users: i64 = col(
            &tx.query_one("SELECT count(*) FROM chat_conversations WHERE agent_definition_id = $1", &[&id])
                .await
                .map_err(&error)?,
            0,
        )?;
        if users > 0 {
            return Err(ChatError::DefinitionInUse(id, users.unsigned_abs()));
        }
        tx.execute("DELETE FROM agent_definitions WHERE id = $1", &[&id]).await.map_err(&error)?;
        tx.commit().await.map_err(&error)?;
        Ok(true)
    }

    async fn create_conversation(
        &self,
        title: &str,
        agent_definition_id: Option<Uuid>,
    ) -> ChatResult<ChatConversation> {
        let conversation = ChatConversation::new(title, agent_definition_id);
        let at = conversation.created_at;
        let error = db("creating a conversation");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        if let Some(definition) = agent_definition_id {
            // Locks the definition against a concurrent delete until the conversation is in.
            let found = tx
                .query_opt("SELECT 1 FROM agent_definitions WHERE id = $1 FOR KEY SHARE", &[&definition])
                .await
                .map_err(&error)?;
            if found.is_none() {
                return Err(ChatError::UnknownAgentDefinition(definition));
            }
        }
        tx.execute(
            "INSERT INTO chat_conversations (id, title, agent_definition_id, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $4)",
            &[&conversation.id, &conversation.title, &agent_definition_id, &at],
        )
        .await
        .map_err(&error)?;
        tx.commit().await.map_err(&error)?;
        Ok(conversation)
    }

    async fn conversation(&self, id: Uuid) -> ChatResult<Option<ChatConversation>> {
        let row = self
            .client()
            .await?
            .query_opt(&format!("SELECT {CONVERSATION_COLUMNS} FROM chat_conversations WHERE id = $1"), &[&id])
            .await
            .map_err(db("reading a conversation"))?;
        row.as_ref().map(conversation_row).transpose()
    }

    async fn conversations(&self, limit: usize) -> ChatResult<Vec<ChatConversation>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .client()
            .await?
            .query(
                &format!("SELECT {CONVERSATION_COLUMNS} FROM chat_conversations ORDER BY updated_at DESC, id LIMIT $1"),
                &[&limit],
            )
            .await
            .map_err(db("reading conversations"))?;
        rows.iter().map(conversation_row).collect()
    }

    async fn delete_conversation(&self, id: Uuid) -> ChatResult<bool> {
        let deleted = self
            .client()
            .await?
            .execute("DELETE FROM chat_conversations WHERE id = $1", &[&id])
            .await
            .map_err(db("deleting a conversation"))?;
        Ok(deleted > 0)
    }

    async fn add_message(
        &self,
        conversation_id: Uuid,
        role: &str,
        content: &str,
        retrieval_context: Option<&Value>,
    ) -> ChatResult<StoredMessage> {
        let message = StoredMessage::new(conversation_id, role, content, retrieval_context);
        let error = db("storing a message");
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&error)?;
        let touched = tx
            .execute(
                "UPDATE chat_conversations SET updated_at = $2 WHERE id = $1",
                &[&conversation_id, &message.created_at],
            )
            .await
            .map_err(&error)?;
        if touched == 0 {
            return Err(ChatError::Invalid(format!("conversation not found: {conversation_id}")));
        }
        tx.execute(
            "INSERT INTO chat_messages (id, conversation_id, role, content, retrieval_context, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &message.id,
                &conversation_id,
                &message.role,
                &message.content,
                &message.retrieval_context,
                &message.created_at,
            ],
        )
        .await
        .map_err(&error)?;
        tx.commit().await.map_err(&error)?;
        Ok(message)
    }

    async fn messages(&self, conversation_id: Uuid) -> ChatResult<Vec<StoredMessage>> {
        let rows = self
            .client()
            .await?
            .query(
                &format!("SELECT {MESSAGE_COLUMNS} FROM chat_messages WHERE conversation_id = $1 ORDER BY seq"),
                &[&conversation_id],
            )
            .await
            .map_err(db("reading messages"))?;
        rows.iter().map(message_row).collect()
    }

    async fn messages_before(
        &self,
        conversation_id: Uuid,
        before: Uuid,
        limit: usize,
    ) -> ChatResult<Vec<StoredMessage>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .client()
            .await?
            .query(
                &format!(
                    "SELECT {MESSAGE_COLUMNS} FROM chat_messages WHERE conversation_id = $1
                     AND seq < (SELECT seq FROM chat_messages WHERE id = $2) ORDER BY seq DESC LIMIT $3"
                ),
                &[&conversation_id, &before, &limit],
            )
            .await
            .map_err(db("reading messages"))?;
        let mut messages: Vec<StoredMessage> = rows.iter().map(message_row).collect::<ChatResult<_>>()?;
        messages.reverse();
        Ok(messages)
    }

    async fn start_run(&self, run: &AgentRun) -> ChatResult<()> {
        self.client()
            .await?
            .execute(
                "INSERT INTO agent_runs (id, agent_definition_id, conversation_id, agent_name, status, input, output,
                 error, started_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &run.id,
                    &run.agent_definition_id,
                    &run.conversation_id,
                    &run.agent_name,
                    &run.status.as_str(),
                    &run.input,
                    &run.output,
                    &run.error,
                    &run.started_at,
                    &run.finished_at,
                ],
            )
            .await
            .map_err(db("recording a run"))?;
        Ok(())
    }

    async fn add_run_message(&self, run_id: Uuid, message: &RunMessage) -> ChatResult<()> {
        self.client()
            .await?
            .execute(
                "INSERT INTO agent_run_messages (id, run_id, role, author, content, tool_calls, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[
                    &message.id,
                    &run_id,
                    &message.role,
                    &message.author,
                    &message.content,
                    &message.tool_calls,
                    &message.created_at,
                ],
            )
            .await
            .map_err(db("recording a run message"))?;
        Ok(())
    }

    async fn add_run_tool_call(&self, run_id: Uuid, call: &RunToolCall) -> ChatResult<()> {
        self.client()
            .await?
            .execute(
                "INSERT INTO agent_run_tool_calls (id, run_id, call_id, tool, input, output, error, status, started_at,
                 finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    &call.id,
                    &run_id,
                    &call.call_id,
                    &call.tool,
                    &call.input,
                    &call.output,
                    &call.error,
                    &call.status,
                    &call.started_at,
                    &call.finished_at,
                ],
            )
            .await
            .map_err(db("recording a tool call"))?;
        Ok(())
    }

    async fn finish_run(
        &self,
        run_id: Uuid,
        status: RunStatus,
        output: Option<&str>,
        error: Option<&str>,
    ) -> ChatResult<()> {
        self.client()
            .await?
            .execute(
                "UPDATE agent_runs SET status = $2, output = $3, error = $4, finished_at = $5 WHERE id = $1",
                &[&run_id, &status.as_str(), &output, &error, &now()],
            )
            .await
            .map_err(db("recording a run's end"))?;
        Ok(())
    }

    async fn run(&self, id: Uuid) -> ChatResult<Option<RunTrace>> {
        let client = self.client().await?;
        let error = db("reading a run");
        let Some(row) = client
            .query_opt(
                "SELECT id, agent_definition_id, conversation_id, agent_name, status, input, output, error,
                 started_at, finished_at FROM agent_runs WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(&error)?
        else {
            return Ok(None);
        };
        let run = AgentRun {
            id: col(&row, 0)?,
            agent_definition_id: col(&row, 1)?,
            conversation_id: col(&row, 2)?,
            agent_name: col(&row, 3)?,
            status: RunStatus::parse(col(&row, 4)?)?,
            input: col(&row, 5)?,
            output: col(&row, 6)?,
            error: col(&row, 7)?,
            started_at: col(&row, 8)?,
            finished_at: col(&row, 9)?,
        };
        let messages = client
            .query(
                "SELECT id, role, author, content, tool_calls, created_at FROM agent_run_messages
                 WHERE run_id = $1 ORDER BY seq",
                &[&id],
            )
            .await
            .map_err(&error)?
            .iter()
            .map(|row| {
                Ok(RunMessage {
                    id: col(row, 0)?,
                    role: col(row, 1)?,
                    author: col(row, 2)?,
                    content: col(row, 3)?,
                    tool_calls: col(row, 4)?,
                    created_at: col(row, 5)?,
                })
            })
            .collect::<ChatResult<_>>()?;
        let tool_calls = client
            .query(
                "SELECT id, call_id, tool, input, output, error, status, started_at, finished_at
                 FROM agent_run_tool_calls WHERE run_id = $1 ORDER BY seq",
                &[&id],
            )
            .await
            .map_err(&error)?
            .iter()
            .map(|row| {
                Ok(RunToolCall {
                    id: col(row, 0)?,
                    call_id: col(row, 1)?,
                    tool: col(row, 2)?,
                    input: col(row, 3)?,
                    output: col(row, 4)?,
                    error: col(row, 5)?,
                    status: col(row, 6)?,
                    started_at: col(row, 7)?,
                    finished_at: col(row, 8)?,
                })
            })
            .collect::<ChatResult<_>>()?;
        Ok(Some(RunTrace { run, messages, tool_calls }))
    }
}
