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
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ChatError {
    pub(crate) fn store(what: &'static str, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        ChatError::Store { what, source: source.into() }
    }
}

pub type ChatResult<T> = std::result::Result<T, ChatError>;

/// What an agent is made of (the body of `POST /api/agent-definitions`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentDefinitionSpec {
    pub name: String,
    /// `provider/model`.
    pub model: String,
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
    pub id: Uuid,
    #[serde(flatten)]
    pub spec: AgentDefinitionSpec,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A conversation: plain when `agent_definition_id` is `None`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatConversation {
    pub id: Uuid,
    pub title: String,
    pub agent_definition_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredMessage {
    pub id: Uuid,
    pub conversation_id: Uuid,
    /// `user` or `assistant`.
    pub role: String,
    pub content: String,
    /// For an agent's answer, `{"agent_run_id": "<run id>"}`.
    pub retrieval_context: Option<Value>,
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
    Running,
    Completed,
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
    pub id: Uuid,
    pub agent_definition_id: Option<Uuid>,
    pub conversation_id: Option<Uuid>,
    pub agent_name: String,
    pub status: RunStatus,
    /// The user's message.
    pub input: String,
    /// The answer, once completed (what was said before a failure, when it failed).
    pub output: Option<String>,
    pub error: Option<String>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A message of a run: what the agent and its tools said, as spec 000's adapters store it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMessage {
    pub id: Uuid,
    pub role: String,
    pub author: String,
    pub content: String,
    /// Calls (an assistant message) or responses (a tool message).
    pub tool_calls: Value,
    pub created_at: DateTime<Utc>,
}

/// A tool call of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunToolCall {
    pub id: Uuid,
    /// The model's call id.
    pub call_id: String,
    pub tool: String,
    pub input: Value,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// `completed` or `error`.
    pub status: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// A run with everything it did, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTrace {
    #[serde(flatten)]
    pub run: AgentRun,
    pub messages: Vec<RunMessage>,
    pub tool_calls: Vec<RunToolCall>,
}

/// Where chat keeps its tables (the record types are plain structs, so that other stores can be
/// written): [`SqliteChatStore`](crate::SqliteChatStore) or
/// [`PostgresChatStore`](crate::PostgresChatStore). Object-safe.
#[async_trait]
pub trait ChatStore: Send + Sync + std::fmt::Debug {
    async fn create_definition(&self, spec: &AgentDefinitionSpec) -> ChatResult<AgentDefinition>;
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
