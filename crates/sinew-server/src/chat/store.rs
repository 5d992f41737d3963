//! What agent-backed chat keeps (spec 001): agent definitions, conversations and their messages,
//! and each agent run with its messages and tool calls.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

/// Why a chat operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChatError {
    /// A request the API refuses (a 400).
    #[error("{0}")]
    Invalid(String),
    /// The agent definition a new conversation names is not there (a 400: nothing is created).
    #[error("agent definition not found: {0}")]
    UnknownAgentDefinition(Uuid),
    /// Conversations still use the agent definition (a 409).
    #[error("agent definition {0} is used by {1} conversation(s): delete them first")]
    DefinitionInUse(Uuid, u64),
    /// The database failed.
    #[error("{what}: {source}")]
    Store {
        /// What the store was doing, such as `reading a run`.
        what: &'static str,
        /// The database's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ChatError {
    pub(crate) fn store(what: &'static str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ChatError::Store { what, source: source.into() }
    }
}

/// `Result` with [`ChatError`].
pub type ChatResult<T> = std::result::Result<T, ChatError>;

/// What an agent is made of (the body of `POST /api/agent-definitions`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentDefinitionSpec {
    /// The agent's name, recorded with each of its runs.
    pub name: String,
    /// `provider/model`.
    pub model: String,
    /// The agent's system instruction; empty for none.
    #[serde(default)]
    pub instruction: String,
    /// Tools by name.
    #[serde(default)]
    pub tools: Vec<String>,
    /// MCP servers by name: every tool of each.
    #[serde(default)]
    pub mcp_servers: Vec<String>,
}

impl AgentDefinitionSpec {
    /// A definition named `name` on `model`.
    pub fn new(name: impl Into<String>, model: impl Into<String>) -> Self {
        AgentDefinitionSpec { name: name.into(), model: model.into(), ..AgentDefinitionSpec::default() }
    }

    /// With `instruction`.
    #[must_use]
    pub fn instruction(mut self, instruction: impl Into<String>) -> Self {
        self.instruction = instruction.into();
        self
    }

    /// With the tool `name`.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>) -> Self {
        self.tools.push(name.into());
        self
    }

    /// With every tool of the MCP server `name`.
    #[must_use]
    pub fn mcp_server(mut self, name: impl Into<String>) -> Self {
        self.mcp_servers.push(name.into());
        self
    }
}

/// A stored agent definition.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentDefinition {
    /// The definition's id, given when it was created.
    pub id: Uuid,
    /// What the agent is made of; its fields sit at the top level of the JSON.
    #[serde(flatten)]
    pub spec: AgentDefinitionSpec,
    /// When the definition was created (UTC).
    pub created_at: DateTime<Utc>,
    /// When the definition was last replaced (UTC); `created_at` until then.
    pub updated_at: DateTime<Utc>,
}

/// A conversation: plain when `agent_definition_id` is `None`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatConversation {
    /// The conversation's id.
    pub id: Uuid,
    /// The title given at creation, or else the first line of the first message, cut at 60
    /// characters.
    pub title: String,
    /// The agent definition that answers in it; `None` for a plain conversation.
    pub agent_definition_id: Option<Uuid>,
    /// When the conversation was created (UTC).
    pub created_at: DateTime<Utc>,
    /// When a message was last added (UTC); `created_at` until then.
    pub updated_at: DateTime<Utc>,
}

/// A message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    /// The message's id.
    pub id: Uuid,
    /// The conversation it belongs to.
    pub conversation_id: Uuid,
    /// `user` or `assistant`.
    pub role: String,
    /// The message's text.
    pub content: String,
    /// For an agent's answer, `{"agent_run_id": "<run id>"}`.
    pub retrieval_context: Option<Value>,
    /// When the message was stored (UTC).
    pub created_at: DateTime<Utc>,
}

impl ChatConversation {
    /// A new conversation, created now.
    pub(crate) fn new(title: &str, agent_definition_id: Option<Uuid>) -> Self {
        let at = now();
        ChatConversation {
            id: Uuid::new_v4(),
            title: title.to_owned(),
            agent_definition_id,
            created_at: at,
            updated_at: at,
        }
    }
}

impl AgentDefinition {
    /// A new definition of `spec`, created now.
    pub(crate) fn new(spec: &AgentDefinitionSpec) -> Self {
        let at = now();
        AgentDefinition { id: Uuid::new_v4(), spec: spec.clone(), created_at: at, updated_at: at }
    }
}

impl StoredMessage {
    /// A new message, written now.
    pub(crate) fn new(conversation_id: Uuid, role: &str, content: &str, retrieval_context: Option<&Value>) -> Self {
        StoredMessage {
            id: Uuid::new_v4(),
            conversation_id,
            role: role.to_owned(),
            content: content.to_owned(),
            retrieval_context: retrieval_context.cloned(),
            created_at: now(),
        }
    }
}

/// How a run ended (or that it has not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Under way.
    Running,
    /// Ended with an answer.
    Completed,
    /// Ended with an error, which the run records.
    Failed,
}

impl RunStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
        }
    }

    pub(crate) fn parse(text: &str) -> ChatResult<Self> {
        match text {
            "running" => Ok(RunStatus::Running),
            "completed" => Ok(RunStatus::Completed),
            "failed" => Ok(RunStatus::Failed),
            other => Err(ChatError::store("reading a run", format!("unknown run status `{other}`"))),
        }
    }
}

/// An agent run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRun {
    /// The run's id.
    pub id: Uuid,
    /// The definition that ran; `None` once that definition is deleted.
    pub agent_definition_id: Option<Uuid>,
    /// The conversation the run answered in; `None` for a run outside any, or once the conversation
    /// is deleted.
    pub conversation_id: Option<Uuid>,
    /// The name of the agent that ran.
    pub agent_name: String,
    /// Whether the run is under way, completed or failed.
    pub status: RunStatus,
    /// The user's message.
    pub input: String,
    /// The answer, once completed (what was said before a failure, when it failed).
    pub output: Option<String>,
    /// Why the run failed; `None` unless it failed.
    pub error: Option<String>,
    /// When the run started (UTC).
    pub started_at: DateTime<Utc>,
    /// When the run ended (UTC); `None` while it is under way.
    pub finished_at: Option<DateTime<Utc>>,
}

/// A message of a run: what the agent and its tools said, as spec 000's adapters store it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMessage {
    /// The record's id (not the ADK event's).
    pub id: Uuid,
    /// `user`, `assistant` (or `model`), or `tool` (or `function`).
    pub role: String,
    /// Who wrote it: `user` or the agent's name; may be empty.
    pub author: String,
    /// The text; for a tool message, the serialized response.
    pub content: String,
    /// Calls (an assistant message) or responses (a tool message).
    pub tool_calls: Value,
    /// When the message was recorded (UTC).
    pub created_at: DateTime<Utc>,
}

/// A tool call of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunToolCall {
    /// The record's id.
    pub id: Uuid,
    /// The model's call id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments the tool was called with.
    pub input: Value,
    /// The tool's response; `None` when the tool failed without one.
    pub output: Option<Value>,
    /// What failed: the tool's error, or the `error` its response carries; `None` on success.
    pub error: Option<String>,
    /// `completed` or `error`.
    pub status: String,
    /// When the tool started (UTC).
    pub started_at: DateTime<Utc>,
    /// When the tool ended (UTC); `None` if its end was not recorded.
    pub finished_at: Option<DateTime<Utc>>,
}

/// A run with everything it did, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTrace {
    /// The run itself; its fields sit at the top level of the JSON.
    #[serde(flatten)]
    pub run: AgentRun,
    /// The run's messages, oldest first.
    pub messages: Vec<RunMessage>,
    /// The run's tool calls, oldest first.
    pub tool_calls: Vec<RunToolCall>,
}

/// Where chat keeps its tables (the record types are plain structs, so that other stores can be
/// written): [`SqliteChatStore`](crate::SqliteChatStore) or
/// [`PostgresChatStore`](crate::PostgresChatStore). Object-safe.
#[async_trait]
pub trait ChatStore: Send + Sync + std::fmt::Debug {
    /// Stores a new definition of `spec`, with a fresh id.
    async fn create_definition(&self, spec: &AgentDefinitionSpec) -> ChatResult<AgentDefinition>;
    /// The definition `id`; `None` when it is not there.
    async fn definition(&self, id: Uuid) -> ChatResult<Option<AgentDefinition>>;
    /// Every definition, oldest first.
    async fn definitions(&self) -> ChatResult<Vec<AgentDefinition>>;
    /// Replaces the definition; `None` when it is not there.
    async fn update_definition(&self, id: Uuid, spec: &AgentDefinitionSpec) -> ChatResult<Option<AgentDefinition>>;
    /// Deletes the definition (`false` when it was not there); [`ChatError::DefinitionInUse`]
    /// while conversations use it. Its runs stay, without it.
    async fn delete_definition(&self, id: Uuid) -> ChatResult<bool>;

    /// A new conversation, backed by `agent_definition_id` when given; the check that it exists
    /// and the insert are one transaction ([`ChatError::UnknownAgentDefinition`], nothing
    /// created).
    async fn create_conversation(&self, title: &str, agent_definition_id: Option<Uuid>)
    -> ChatResult<ChatConversation>;
    /// The conversation `id`; `None` when it is not there.
    async fn conversation(&self, id: Uuid) -> ChatResult<Option<ChatConversation>>;
    /// The `limit` most recently updated conversations, most recent first.
    async fn conversations(&self, limit: usize) -> ChatResult<Vec<ChatConversation>>;
    /// Deletes the conversation and its messages (`false` when it was not there); its runs stay.
    async fn delete_conversation(&self, id: Uuid) -> ChatResult<bool>;

    /// Appends a message to the conversation (and touches it).
    async fn add_message(
        &self,
        conversation_id: Uuid,
        role: &str,
        content: &str,
        retrieval_context: Option<&Value>,
    ) -> ChatResult<StoredMessage>;
    /// Every message of the conversation, oldest first.
    async fn messages(&self, conversation_id: Uuid) -> ChatResult<Vec<StoredMessage>>;
    /// The `limit` messages stored just before `before` (a message of the conversation), oldest
    /// first.
    async fn messages_before(
        &self,
        conversation_id: Uuid,
        before: Uuid,
        limit: usize,
    ) -> ChatResult<Vec<StoredMessage>>;

    /// Records a run as started.
    async fn start_run(&self, run: &AgentRun) -> ChatResult<()>;
    /// Appends a message to a run.
    async fn add_run_message(&self, run_id: Uuid, message: &RunMessage) -> ChatResult<()>;
    /// Appends a tool call to a run.
    async fn add_run_tool_call(&self, run_id: Uuid, call: &RunToolCall) -> ChatResult<()>;
    /// Records how the run ended.
    async fn finish_run(
        &self,
        run_id: Uuid,
        status: RunStatus,
        output: Option<&str>,
        error: Option<&str>,
    ) -> ChatResult<()>;
    /// The run with its messages and tool calls.
    async fn run(&self, id: Uuid) -> ChatResult<Option<RunTrace>>;
}

/// Now, to the microsecond (what both databases keep).
pub(crate) fn now() -> DateTime<Utc> {
    let now = Utc::now();
    DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}
