//! Backends (spec 003 §4): what turns the IR into something that runs, or into something else
//! (a picture, a contract report). [`Backend`] compiles; [`Execute`] runs what was compiled and
//! streams backend-agnostic [`AgentEvent`]s.

mod adk;
mod dry_run;
mod mock;
mod viz;

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Map, Value};
use sinew_adk::{Event, EventsCompactionConfig, StreamingMode};

pub use adk::{AdkApp, AdkBackend, Registry};
pub use dry_run::DryRunBackend;
pub use mock::MockBackend;
pub use viz::{Format, VizBackend};

use crate::error::Result;
use crate::ir::Node;

/// How a compiled pipeline runs (spec 003 §3.3).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ExecutionConfig {
    /// The app's name: a letter, then letters, digits, `_` or `-` (ADK's rule).
    pub app_name: String,
    /// At most this many model calls per invocation.
    pub max_llm_calls: usize,
    /// The whole run's time limit.
    pub timeout: Option<Duration>,
    /// Whether answers stream as fragments.
    pub streaming: StreamingMode,
    /// ADK's resumability (`ResumabilityConfig(is_resumable=True)`): agents write checkpoints
    /// into the session and an answered long-running call resumes the workflow where it paused.
    /// Off by default, as in ADK: a run still pauses on a long-running call, and the client's
    /// answer continues the same invocation with the agent that made the call only (gates resume
    /// their pipeline either way; gated sequences and loops write no checkpoints).
    pub resumable: bool,
    /// Event compaction (ADK's `EventsCompactionConfig`): older events summarized by a model.
    pub compaction: Option<EventsCompactionConfig>,
    /// Metadata put on every event of a run (ADK's `RunConfig.custom_metadata`).
    pub custom_metadata: Option<Map<String, Value>>,
}

impl Default for ExecutionConfig {
    fn default() -> Self {
        ExecutionConfig {
            app_name: "sinew_fluent_app".into(),
            max_llm_calls: sinew_adk::DEFAULT_MAX_LLM_CALLS,
            timeout: None,
            streaming: StreamingMode::None,
            resumable: false,
            compaction: None,
            custom_metadata: None,
        }
    }
}

impl ExecutionConfig {
    /// The default configuration, for the app `name`.
    pub fn app(name: impl Into<String>) -> Self {
        ExecutionConfig { app_name: name.into(), ..ExecutionConfig::default() }
    }

    /// At most `n` model calls per invocation.
    #[must_use]
    pub fn with_max_llm_calls(mut self, n: usize) -> Self {
        self.max_llm_calls = n;
        self
    }

    /// A time limit for each run.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Answers stream as fragments (server-sent events).
    #[must_use]
    pub fn streaming(mut self) -> Self {
        self.streaming = StreamingMode::Sse;
        self
    }

    /// ADK's resumability: an answered long-running call resumes the workflow where it paused.
    #[must_use]
    pub fn resumable(mut self) -> Self {
        self.resumable = true;
        self
    }

    /// Event compaction: older events of a session summarized by a model, after every few
    /// invocations or once the prompt grows past a token threshold.
    #[must_use]
    pub fn with_compaction(mut self, compaction: EventsCompactionConfig) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// Metadata put on every event.
    #[must_use]
    pub fn with_custom_metadata(mut self, metadata: Map<String, Value>) -> Self {
        self.custom_metadata = Some(metadata);
        self
    }
}

/// Who runs, in which session, with what state.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunOptions {
    /// The user.
    pub user_id: String,
    /// The session (made when missing).
    pub session_id: String,
    /// State written with the message.
    pub state: Map<String, Value>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { user_id: "default_user".into(), session_id: "default_session".into(), state: Map::new() }
    }
}

impl RunOptions {
    /// The session `session_id` of `user_id`.
    pub fn session(user_id: impl Into<String>, session_id: impl Into<String>) -> Self {
        RunOptions { user_id: user_id.into(), session_id: session_id.into(), state: Map::new() }
    }

    /// State written with the message.
    #[must_use]
    pub fn with_state(mut self, state: Map<String, Value>) -> Self {
        self.state = state;
        self
    }
}

/// A function call an event carries.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolCallInfo {
    /// The tool.
    pub tool_name: String,
    /// Its arguments.
    pub args: Value,
    /// The call's id.
    pub call_id: String,
}

/// A function response an event carries.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolResponseInfo {
    /// The tool.
    pub tool_name: String,
    /// Its result.
    pub result: Value,
    /// The call's id.
    pub call_id: String,
}

/// An event, whatever the backend (spec 003 §4.1).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AgentEvent {
    /// Who wrote it: `user` or an agent's name.
    pub author: String,
    /// The invocation it belongs to (what [`AdkBackend::rewind`] rewinds to before).
    pub invocation_id: String,
    /// Its text, when it has any.
    pub content: Option<String>,
    /// The state it changes.
    pub state_delta: Map<String, Value>,
    /// The artifact versions it writes.
    pub artifact_delta: Map<String, Value>,
    /// The agent it hands the conversation to.
    pub transfer_to: Option<String>,
    /// Whether it escalates (ends a loop).
    pub escalate: bool,
    /// Its function calls.
    pub tool_calls: Vec<ToolCallInfo>,
    /// Its function responses.
    pub tool_responses: Vec<ToolResponseInfo>,
    /// The error code of a failed model call (or of a middleware refusing one).
    pub error_code: Option<String>,
    /// Its message.
    pub error_message: Option<String>,
    /// Whether it ends its agent's turn for the user to see.
    pub is_final: bool,
    /// Whether it is a streamed fragment.
    pub is_partial: bool,
    /// Whether its agent finished.
    pub end_of_agent: bool,
    /// An agent's checkpoint.
    pub agent_state: Option<Value>,
    /// The run's custom metadata.
    pub metadata: Map<String, Value>,
    /// When it was made, in seconds since the epoch.
    pub timestamp: f64,
}

impl AgentEvent {
    /// The backend-agnostic form of an ADK event.
    pub fn from_adk(event: &Event) -> Self {
        let text = event.content.as_ref().map(sinew_adk::Content::text).filter(|t| !t.is_empty());
        let actions = &event.actions;
        AgentEvent {
            author: event.author.to_string(),
            invocation_id: event.invocation_id.to_string(),
            content: text,
            state_delta: actions.state_delta.clone(),
            artifact_delta: actions.artifact_delta.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect(),
            transfer_to: actions.transfer_to_agent.clone(),
            escalate: actions.escalate == Some(true),
            tool_calls: event
                .function_calls()
                .map(|c| ToolCallInfo {
                    tool_name: c.name.clone().unwrap_or_default(),
                    args: Value::Object(c.args.clone().unwrap_or_default()),
                    call_id: c.id.clone().unwrap_or_default(),
                })
                .collect(),
            tool_responses: event
                .function_responses()
                .map(|r| ToolResponseInfo {
                    tool_name: r.name.clone().unwrap_or_default(),
                    result: Value::Object(r.response.clone().unwrap_or_default()),
                    call_id: r.id.clone().unwrap_or_default(),
                })
                .collect(),
            error_code: event.error_code.clone(),
            error_message: event.error_message.clone(),
            is_final: event.is_final_response(),
            is_partial: event.is_partial(),
            end_of_agent: actions.end_of_agent == Some(true),
            agent_state: actions.agent_state.clone().map(Value::Object),
            metadata: event.custom_metadata.clone().unwrap_or_default(),
            timestamp: event.timestamp,
        }
    }
}

/// The text of the last final event that has text.
pub fn final_text(events: &[AgentEvent]) -> String {
    events.iter().rev().find(|e| e.is_final && e.content.is_some()).and_then(|e| e.content.clone()).unwrap_or_default()
}

/// Turns the IR into this backend's form.
pub trait Backend: Send + Sync {
    /// What compiling gives.
    type Compiled: Send + Sync;

    /// Compiles `node` (a built IR) with `config`.
    fn compile(&self, node: &Node, config: &ExecutionConfig) -> Result<Self::Compiled>;
}

/// A backend that runs what it compiled.
#[async_trait]
pub trait Execute: Backend {
    /// Runs `prompt` as the user's message; events come out as they happen, an error is the last
    /// item.
    fn stream(
        &self,
        compiled: &Self::Compiled,
        prompt: &str,
        options: RunOptions,
    ) -> BoxStream<'static, Result<AgentEvent>>;

    /// Runs `prompt` and gives every event, or the first error.
    async fn run(&self, compiled: &Self::Compiled, prompt: &str, options: RunOptions) -> Result<Vec<AgentEvent>> {
        let mut stream = self.stream(compiled, prompt, options);
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event?);
        }
        Ok(events)
    }
}
