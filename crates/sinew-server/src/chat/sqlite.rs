//! [`SqliteChatStore`]: chat's tables in a SQLite file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{Connection, OptionalExtension as _, Row, TransactionBehavior, params};
use serde_json::Value;
use uuid::Uuid;

use super::migrations;
use super::store::{
    AgentDefinition, AgentDefinitionSpec, AgentRun, ChatConversation, ChatError, ChatResult, ChatStore, RunMessage,
    RunStatus, RunToolCall, RunTrace, StoredMessage, now,
};

/// How long a statement waits for another connection's write lock.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Chat's tables in one SQLite file, migrated to the newest schema when opened (WAL mode,
/// `synchronous = FULL`, foreign keys on). One connection serves the store; SQLite runs one
/// writer at a time anyway, and PostgreSQL is the choice for more load or more instances.
#[derive(Clone)]
pub struct SqliteChatStore {
    path: PathBuf,
    connection: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteChatStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteChatStore").field("path", &self.path).finish_non_exhaustive()
    }
}

fn db(what: &'static str) -> impl Fn(rusqlite::Error) -> ChatError {
    move |e| ChatError::store(what, e)
}

/// Opens `path` as chat's stores open it, without migrating.
pub(crate) fn connect(path: &Path) -> ChatResult<Connection> {
    create_private(path)?;
    let connection = Connection::open(path).map_err(db("opening the chat database"))?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(db("opening the chat database"))?;
    connection
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(db("opening the chat database"))?;
    Ok(connection)
}

/// Creates the file readable by its owner only: conversations hold whatever was said.
fn create_private(path: &Path) -> ChatResult<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(ChatError::store("creating the chat database", e)),
    }
}

impl SqliteChatStore {
    /// Opens (or creates) the database at `path` and applies the migrations it lacks.
    pub fn open(path: impl Into<PathBuf>) -> ChatResult<Self> {
        let path = path.into();
        if path.as_os_str().is_empty() || path == Path::new(":memory:") {
            return Err(ChatError::Invalid("the chat database must be a file".into()));
        }
        let mut connection = connect(&path)?;
        migrations::sqlite().run(&mut connection).map_err(|e| ChatError::store("migrating the chat database", e))?;
        Ok(SqliteChatStore { path, connection: Arc::new(Mutex::new(connection)) })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `f` on the connection, on tokio's blocking pool.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> ChatResult<T> + Send + 'static,
    ) -> ChatResult<T> {
        let connection = Arc::clone(&self.connection);
        tokio::task::spawn_blocking(move || {
            // Every write is one transaction: a panic elsewhere leaves the connection usable.
            let mut connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut connection)
        })
        .await
        .map_err(|e| ChatError::store("running a blocking task", e))?
    }
}

type Read<T> = fn(&Row<'_>) -> rusqlite::Result<T>;

impl SqliteChatStore {
    /// The row `sql` selects for `key`, read by `read`.
    async fn one<T: Send + 'static>(
        &self,
        sql: String,
        key: Uuid,
        read: Read<T>,
        what: &'static str,
    ) -> ChatResult<Option<T>> {
        self.with(move |c| c.query_row(&sql, [key.to_string()], read).optional().map_err(db(what))).await
    }

    /// The rows `sql` selects (for `key`, when it takes one), read by `read`.
    async fn all<T: Send + 'static>(
        &self,
        sql: String,
        key: Option<Uuid>,
        read: Read<T>,
        what: &'static str,
    ) -> ChatResult<Vec<T>> {
        self.with(move |c| {
            let mut statement = c.prepare_cached(&sql).map_err(db(what))?;
            let rows = match key {
                Some(key) => statement.query_map([key.to_string()], read),
                None => statement.query_map([], read),
            };
            rows.map_err(db(what))?.collect::<rusqlite::Result<_>>().map_err(db(what))
        })
        .await
    }
}

fn time_text(time: DateTime<Utc>) -> String {
    time.to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn time(row: &Row<'_>, index: usize) -> rusqlite::Result<DateTime<Utc>> {
    let text: String = row.get(index)?;
    DateTime::parse_from_rfc3339(&text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e)))
}

fn optional_time(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<DateTime<Utc>>> {
    match row.get_ref(index)? {
        rusqlite::types::ValueRef::Null => Ok(None),
        _ => time(row, index).map(Some),
    }
}

fn uuid(row: &Row<'_>, index: usize) -> rusqlite::Result<Uuid> {
    let text: String = row.get(index)?;
    Uuid::parse_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e)))
}

fn optional_uuid(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Uuid>> {
    match row.get_ref(index)? {
        rusqlite::types::ValueRef::Null => Ok(None),
        _ => uuid(row, index).map(Some),
    }
}

fn json(row: &Row<'_>, index: usize) -> rusqlite::Result<Value> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e)))
}

fn optional_json(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Value>> {
    match row.get_ref(index)? {
        rusqlite::types::ValueRef::Null => Ok(None),
        _ => json(row, index).map(Some),
    }
}

fn names(value: Value) -> rusqlite::Result<Vec<String>> {
    serde_json::from_value(value)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e)))
}

const DEFINITION_COLUMNS: &str = "id, name, model, instruction, tools, mcp_servers, created_at, updated_at";

fn definition_row(row: &Row<'_>) -> rusqlite::Result<AgentDefinition> {
    Ok(AgentDefinition {
        id: uuid(row, 0)?,
        spec: AgentDefinitionSpec {
            name: row.get(1)?,
            model: row.get(2)?,
            instruction: row.get(3)?,
            tools: names(json(row, 4)?)?,
            mcp_servers: names(json(row, 5)?)?,
        },
        created_at: time(row, 6)?,
        updated_at: time(row, 7)?,
    })
}

const CONVERSATION_COLUMNS: &str = "id, title, agent_definition_id, created_at, updated_at";

fn conversation_row(row: &Row<'_>) -> rusqlite::Result<ChatConversation> {
    Ok(ChatConversation {
        id: uuid(row, 0)?,
        title: row.get(1)?,
        agent_definition_id: optional_uuid(row, 2)?,
        created_at: time(row, 3)?,
        updated_at: time(row, 4)?,
    })
}

const MESSAGE_COLUMNS: &str = "id, conversation_id, role, content, retrieval_context, created_at";

fn message_row(row: &Row<'_>) -> rusqlite::Result<StoredMessage> {
    Ok(StoredMessage {
        id: uuid(row, 0)?,
        conversation_id: uuid(row, 1)?,
        role: row.get(2)?,
        content: row.get(3)?,
        retrieval_context: optional_json(row, 4)?,
        created_at: time(row, 5)?,
    })
}

fn json_text(value: &impl serde::Serialize) -> ChatResult<String> {
    serde_json::to_string(value).map_err(|e| ChatError::store("encoding JSON", e))
}

#[async_trait]
impl ChatStore for SqliteChatStore {
    async fn create_definition(&self, spec: &AgentDefinitionSpec) -> ChatResult<AgentDefinition> {
        let definition = AgentDefinition::new(spec);
        let stored = definition.clone();
        self.with(move |c| {
            c.execute(
                "INSERT INTO agent_definitions (id, name, model, instruction, tools, mcp_servers, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
                params![
                    stored.id.to_string(),
                    stored.spec.name,
                    stored.spec.model,
                    stored.spec.instruction,
                    json_text(&stored.spec.tools)?,
                    json_text(&stored.spec.mcp_servers)?,
                    time_text(stored.created_at),
                ],
            )
            .map_err(db("storing an agent definition"))?;
            Ok(())
        })
        .await?;
        Ok(definition)
    }

    async fn definition(&self, id: Uuid) -> ChatResult<Option<AgentDefinition>> {
        let sql = format!("SELECT {DEFINITION_COLUMNS} FROM agent_definitions WHERE id = ?1");
        self.one(sql, id, definition_row, "reading an agent definition").await
    }

    async fn definitions(&self) -> ChatResult<Vec<AgentDefinition>> {
        let sql = format!("SELECT {DEFINITION_COLUMNS} FROM agent_definitions ORDER BY created_at, id");
        self.all(sql, None, definition_row, "reading agent definitions").await
    }

    async fn update_definition(&self, id: Uuid, spec: &AgentDefinitionSpec) -> ChatResult<Option<AgentDefinition>> {
        let spec = spec.clone();
        self.with(move |c| {
            let updated = c
                .execute(
                    "UPDATE agent_definitions SET name = ?2, model = ?3, instruction = ?4, tools = ?5, mcp_servers = ?6,
                     updated_at = ?7 WHERE id = ?1",
                    params![
                        id.to_string(),
                        spec.name,
                        spec.model,
                        spec.instruction,
                        json_text(&spec.tools)?,
                        json_text(&spec.mcp_servers)?,
                        time_text(now()),
                    ],
                )
                .map_err(db("updating an agent definition"))?;
            if updated == 0 {
                return Ok(None);
            }
            c.query_row(
                &format!("SELECT {DEFINITION_COLUMNS} FROM agent_definitions WHERE id = ?1"),
                [id.to_string()],
                definition_row,
            )
            .optional()
            .map_err(db("reading an agent definition"))
        })
        .await
    }

    async fn delete_definition(&self, id: Uuid) -> ChatResult<bool> {
        self.with(move |c| {
            let tx =
                c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db("deleting a definition"))?;
            let users: u64 = tx
                .query_row(
                    "SELECT count(*) FROM chat_conversations WHERE agent_definition_id = ?1",
                    [id.to_string()],
                    |r| r.get(0),
                )
                .map_err(db("deleting a definition"))?;
            if users > 0 {
                return Err(ChatError::DefinitionInUse(id, users));
            }
            let deleted = tx
                .execute("DELETE FROM agent_definitions WHERE id = ?1", [id.to_string()])
                .map_err(db("deleting a definition"))?;
            tx.commit().map_err(db("deleting a definition"))?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn create_conversation(
        &self,
        title: &str,
        agent_definition_id: Option<Uuid>,
    ) -> ChatResult<ChatConversation> {
        let conversation = ChatConversation::new(title, agent_definition_id);
        let stored = conversation.clone();
        self.with(move |c| {
            let tx =
                c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db("creating a conversation"))?;
            if let Some(definition) = stored.agent_definition_id {
                let exists = tx
                    .query_row("SELECT 1 FROM agent_definitions WHERE id = ?1", [definition.to_string()], |_| Ok(()))
                    .optional()
                    .map_err(db("creating a conversation"))?;
                if exists.is_none() {
                    return Err(ChatError::UnknownAgentDefinition(definition));
                }
            }
            tx.execute(
                "INSERT INTO chat_conversations (id, title, agent_definition_id, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?4)",
                params![
                    stored.id.to_string(),
                    stored.title,
                    stored.agent_definition_id.map(|id| id.to_string()),
                    time_text(stored.created_at),
                ],
            )
            .map_err(db("creating a conversation"))?;
            tx.commit().map_err(db("creating a conversation"))
        })
        .await?;
        Ok(conversation)
    }

    async fn conversation(&self, id: Uuid) -> ChatResult<Option<ChatConversation>> {
        let sql = format!("SELECT {CONVERSATION_COLUMNS} FROM chat_conversations WHERE id = ?1");
        self.one(sql, id, conversation_row, "reading a conversation").await
    }

    async fn conversations(&self, limit: usize) -> ChatResult<Vec<ChatConversation>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql =
            format!("SELECT {CONVERSATION_COLUMNS} FROM chat_conversations ORDER BY updated_at DESC, id LIMIT {limit}");
        self.all(sql, None, conversation_row, "reading conversations").await
    }

    async fn delete_conversation(&self, id: Uuid) -> ChatResult<bool> {
        self.with(move |c| {
            let deleted = c
                .execute("DELETE FROM chat_conversations WHERE id = ?1", [id.to_string()])
                .map_err(db("deleting a conversation"))?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn add_message(
        &self,
        conversation_id: Uuid,
        role: &str,
        content: &str,
        retrieval_context: Option<&Value>,
    ) -> ChatResult<StoredMessage> {
        let message = StoredMessage::new(conversation_id, role, content, retrieval_context);
        let stored = message.clone();
        self.with(move |c| {
            let context = stored.retrieval_context.as_ref().map(json_text).transpose()?;
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db("storing a message"))?;
            let touched = tx
                .execute(
                    "UPDATE chat_conversations SET updated_at = ?2 WHERE id = ?1",
                    params![conversation_id.to_string(), time_text(stored.created_at)],
                )
                .map_err(db("storing a message"))?;
            if touched == 0 {
                return Err(ChatError::Invalid(format!("conversation not found: {conversation_id}")));
            }
            tx.execute(
                "INSERT INTO chat_messages (id, conversation_id, role, content, retrieval_context, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    stored.id.to_string(),
                    conversation_id.to_string(),
                    stored.role,
                    stored.content,
                    context,
                    time_text(stored.created_at),
                ],
            )
            .map_err(db("storing a message"))?;
            tx.commit().map_err(db("storing a message"))
        })
        .await?;
        Ok(message)
    }

    async fn messages(&self, conversation_id: Uuid) -> ChatResult<Vec<StoredMessage>> {
        let sql = format!("SELECT {MESSAGE_COLUMNS} FROM chat_messages WHERE conversation_id = ?1 ORDER BY seq");
        self.all(sql, Some(conversation_id), message_row, "reading messages").await
    }

    async fn messages_before(
        &self,
        conversation_id: Uuid,
        before: Uuid,
        limit: usize,
    ) -> ChatResult<Vec<StoredMessage>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with(move |c| {
            let mut statement = c
                .prepare_cached(&format!(
                    "SELECT {MESSAGE_COLUMNS} FROM chat_messages WHERE conversation_id = ?1
                     AND seq < (SELECT seq FROM chat_messages WHERE id = ?2) ORDER BY seq DESC LIMIT ?3"
                ))
                .map_err(db("reading messages"))?;
            let rows = statement
                .query_map(params![conversation_id.to_string(), before.to_string(), limit], message_row)
                .map_err(db("reading messages"))?;
            let mut messages: Vec<StoredMessage> =
                rows.collect::<rusqlite::Result<_>>().map_err(db("reading messages"))?;
            messages.reverse();
            Ok(messages)
        })
        .await
    }

    async fn start_run(&self, run: &AgentRun) -> ChatResult<()> {
        let run = run.clone();
        self.with(move |c| {
            c.execute(
                "INSERT INTO agent_runs (id, agent_definition_id, conversation_id, agent_name, status, input, output,
                 error, started_at, finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run.id.to_string(),
                    run.agent_definition_id.map(|id| id.to_string()),
                    run.conversation_id.map(|id| id.to_string()),
                    run.agent_name,
                    run.status.as_str(),
                    run.input,
                    run.output,
                    run.error,
                    time_text(run.started_at),
                    run.finished_at.map(time_text),
                ],
            )
            .map_err(db("recording a run"))?;
            Ok(())
        })
        .await
    }

    async fn add_run_message(&self, run_id: Uuid, message: &RunMessage) -> ChatResult<()> {
        let message = message.clone();
        self.with(move |c| {
            c.execute(
                "INSERT INTO agent_run_messages (id, run_id, role, author, content, tool_calls, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    message.id.to_string(),
                    run_id.to_string(),
                    message.role,
                    message.author,
                    message.content,
                    json_text(&message.tool_calls)?,
                    time_text(message.created_at),
                ],
            )
            .map_err(db("recording a run message"))?;
            Ok(())
        })
        .await
    }

    async fn add_run_tool_call(&self, run_id: Uuid, call: &RunToolCall) -> ChatResult<()> {
        let call = call.clone();
        self.with(move |c| {
            c.execute(
                "INSERT INTO agent_run_tool_calls (id, run_id, call_id, tool, input, output, error, status, started_at,
                 finished_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    call.id.to_string(),
                    run_id.to_string(),
                    call.call_id,
                    call.tool,
                    json_text(&call.input)?,
                    call.output.as_ref().map(json_text).transpose()?,
                    call.error,
                    call.status,
                    time_text(call.started_at),
                    call.finished_at.map(time_text),
                ],
            )
            .map_err(db("recording a tool call"))?;
            Ok(())
        })
        .await
    }

    async fn finish_run(
        &self,
        run_id: Uuid,
        status: RunStatus,
        output: Option<&str>,
        error: Option<&str>,
    ) -> ChatResult<()> {
        let (output, error) = (output.map(str::to_owned), error.map(str::to_owned));
        self.with(move |c| {
            c.execute(
                "UPDATE agent_runs SET status = ?2, output = ?3, error = ?4, finished_at = ?5 WHERE id = ?1",
                params![run_id.to_string(), status.as_str(), output, error, time_text(now())],
            )
            .map_err(db("recording a run's end"))?;
            Ok(())
        })
        .await
    }

    async fn run(&self, id: Uuid) -> ChatResult<Option<RunTrace>> {
        self.with(move |c| {
            let key = id.to_string();
            let run = c
                .query_row(
                    "SELECT id, agent_definition_id, conversation_id, agent_name, status, input, output, error,
                     started_at, finished_at FROM agent_runs WHERE id = ?1",
                    [&key],
                    |row| {
                        Ok((
                            AgentRun {
                                id: uuid(row, 0)?,
                                agent_definition_id: optional_uuid(row, 1)?,
                                conversation_id: optional_uuid(row, 2)?,
                                agent_name: row.get(3)?,
                                status: RunStatus::Running,
                                input: row.get(5)?,
                                output: row.get(6)?,
                                error: row.get(7)?,
                                started_at: time(row, 8)?,
                                finished_at: optional_time(row, 9)?,
                            },
                            row.get::<_, String>(4)?,
                        ))
                    },
                )
                .optional()
                .map_err(db("reading a run"))?;
            let Some((mut run, status)) = run else { return Ok(None) };
            run.status = RunStatus::parse(&status)?;
            let mut statement = c
                .prepare_cached(
                    "SELECT id, role, author, content, tool_calls, created_at FROM agent_run_messages
                     WHERE run_id = ?1 ORDER BY seq",
                )
                .map_err(db("reading a run"))?;
            let messages = statement
                .query_map([&key], |row| {
                    Ok(RunMessage {
                        id: uuid(row, 0)?,
                        role: row.get(1)?,
                        author: row.get(2)?,
                        content: row.get(3)?,
                        tool_calls: json(row, 4)?,
                        created_at: time(row, 5)?,
                    })
                })
                .map_err(db("reading a run"))?
                .collect::<rusqlite::Result<_>>()
                .map_err(db("reading a run"))?;
            let mut statement = c
                .prepare_cached(
                    "SELECT id, call_id, tool, input, output, error, status, started_at, finished_at
                     FROM agent_run_tool_calls WHERE run_id = ?1 ORDER BY seq",
                )
                .map_err(db("reading a run"))?;
            let tool_calls = statement
                .query_map([&key], |row| {
                    Ok(RunToolCall {
                        id: uuid(row, 0)?,
                        call_id: row.get(1)?,
                        tool: row.get(2)?,
                        input: json(row, 3)?,
                        output: optional_json(row, 4)?,
                        error: row.get(5)?,
                        status: row.get(6)?,
                        started_at: time(row, 7)?,
                        finished_at: optional_time(row, 8)?,
                    })
                })
                .map_err(db("reading a run"))?
                .collect::<rusqlite::Result<_>>()
                .map_err(db("reading a run"))?;
            Ok(Some(RunTrace { run, messages, tool_calls }))
        })
        .await
    }
}
