//! [`AgentExecutor`]: runs an agent definition over a conversation's recent messages, recording
//! the run, and streams what happens through an optional callback (spec 001).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::StreamExt as _;
use serde::Serialize;
use serde_json::{Map, Value};
use sinew_adk::adapter::{ChatMessage, Conversation, ConversationKey, MessageStore, SessionServiceAdapter};
use sinew_adk::{Content, Plugin, RunConfig, Runner, SessionService as _, Tool, ToolContext};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::store::{
    AgentDefinition, AgentRun, ChatError, ChatResult, ChatStore, RunMessage, RunStatus, RunToolCall, now,
};
use crate::agents::AgentRegistry;

/// The ADK app name runs are made under.
const APP: &str = "chat";
/// The ADK user runs are made for.
const USER: &str = "user";

/// What a streaming run reports, as it happens.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamEvent {
    /// A fragment of the agent's answer.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// A tool is about to run.
    ToolCallStart {
        /// The model's id for the call.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The arguments the tool is called with.
        input: Value,
    },
    /// A tool ran: its output, or the error it failed with (which the agent sees, and goes on).
    ToolCallEnd {
        /// The model's id for the call.
        call_id: String,
        /// The tool's name.
        tool: String,
        /// The tool's response; `None` when the tool failed without one.
        output: Option<Value>,
        /// What failed: the tool's error, or the `error` its response carries; `None` on success.
        error: Option<String>,
    },
    /// The run failed.
    Error {
        /// Why the run failed.
        error: String,
    },
}

/// Where a streaming run's events go. A bounded channel: a reader that falls behind slows the
/// run, and one that went away (a closed channel) no longer gets events, while the run goes on
/// to its end and is recorded.
pub type StreamCallback = mpsc::Sender<StreamEvent>;

/// One run of an agent definition.
#[derive(Debug)]
#[non_exhaustive]
pub struct ExecuteRequest {
    /// The agent definition to run.
    pub definition: AgentDefinition,
    /// The conversation the run answers in, when there is one.
    pub conversation_id: Option<Uuid>,
    /// Earlier messages, oldest first: the agent's prior context.
    pub history: Vec<ChatMessage>,
    /// The user's message.
    pub message: String,
    /// Streams the run (text fragments, tool calls, errors); `None` runs it in batch mode, with
    /// no events.
    pub stream: Option<StreamCallback>,
}

impl ExecuteRequest {
    /// A run of `definition` answering `message`, without history or streaming.
    pub fn new(definition: AgentDefinition, message: impl Into<String>) -> Self {
        ExecuteRequest { definition, conversation_id: None, history: Vec::new(), message: message.into(), stream: None }
    }

    /// In `conversation_id`.
    #[must_use]
    pub fn conversation(mut self, conversation_id: Uuid) -> Self {
        self.conversation_id = Some(conversation_id);
        self
    }

    /// With prior context.
    #[must_use]
    pub fn history(mut self, history: Vec<ChatMessage>) -> Self {
        self.history = history;
        self
    }

    /// Streams the run into `callback`.
    #[must_use]
    pub fn stream(mut self, callback: StreamCallback) -> Self {
        self.stream = Some(callback);
        self
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ExecuteResult {
    /// The id of the recorded run.
    pub run_id: Uuid,
    /// `Completed`, or `Failed` with the reason in `error`.
    pub status: RunStatus,
    /// The agent's answer (what it said before a failure, when it failed).
    pub text: String,
    /// Why the run failed; `None` when it completed.
    pub error: Option<String>,
}

/// Runs agent definitions, recording each run in the store's agent-run tables: the run, every
/// message of it (through spec 000's [`SessionServiceAdapter`]) and every tool call.
#[derive(Clone)]
pub struct AgentExecutor {
    store: Arc<dyn ChatStore>,
    registry: Arc<AgentRegistry>,
}

impl std::fmt::Debug for AgentExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentExecutor").field("store", &self.store).finish_non_exhaustive()
    }
}

impl AgentExecutor {
    /// Builds agents from `registry`, records runs in `store`.
    pub fn new(store: Arc<dyn ChatStore>, registry: Arc<AgentRegistry>) -> Self {
        AgentExecutor { store, registry }
    }

    /// Runs `request`. A run that fails (no such model, a model error) is recorded as failed,
    /// reported through the callback, and returned with its error; only the store failing is an
    /// `Err`.
    pub async fn execute(&self, request: ExecuteRequest) -> ChatResult<ExecuteResult> {
        let ExecuteRequest { definition, conversation_id, history, message, stream } = request;
        let agent = self.registry.definition_agent(&definition.spec);
        let run = AgentRun {
            id: Uuid::new_v4(),
            agent_definition_id: Some(definition.id),
            conversation_id,
            agent_name: agent.as_ref().map_or_else(|_| definition.spec.name.clone(), |a| a.name().to_owned()),
            status: RunStatus::Running,
            input: message.clone(),
            output: None,
            error: None,
            started_at: now(),
            finished_at: None,
        };
        self.store.start_run(&run).await?;
        let events = Events(stream);
        let outcome = match agent {
            Ok(agent) => self.run(run.id, agent, history, &message, &events).await,
            Err(error) => Err((String::new(), error.to_string())),
        };
        let result = match outcome {
            Ok(text) => ExecuteResult { run_id: run.id, status: RunStatus::Completed, text, error: None },
            Err((text, error)) => {
                events.send(StreamEvent::Error { error: error.clone() }).await;
                ExecuteResult { run_id: run.id, status: RunStatus::Failed, text, error: Some(error) }
            }
        };
        // What was said before a failure is kept with the run.
        let output = (result.status == RunStatus::Completed || !result.text.is_empty()).then_some(result.text.as_str());
        self.store.finish_run(run.id, result.status, output, result.error.as_deref()).await?;
        Ok(result)
    }

    /// Runs `agent`; the answer, or what was said before the error and the error.
    async fn run(
        &self,
        run_id: Uuid,
        agent: Arc<dyn sinew_adk::Agent>,
        history: Vec<ChatMessage>,
        message: &str,
        events: &Events,
    ) -> Result<String, (String, String)> {
        let fail = |error: &dyn std::fmt::Display| (String::new(), error.to_string());
        let messages = RunMessages {
            store: self.store.clone(),
            run_id,
            history,
            appended: Mutex::new(Vec::new()),
            state: Mutex::new(Map::new()),
        };
        let sessions = SessionServiceAdapter::new(Arc::new(messages)).root_agent_name(agent.name());
        let session_id = run_id.to_string();
        sessions.create_session(APP, USER, Some(&session_id), Map::new()).await.map_err(|e| fail(&e))?;
        let plugin = ToolCalls { store: self.store.clone(), run_id, events: events.clone(), started: Mutex::default() };
        let runner = Runner::new(APP, agent, Arc::new(sessions)).map_err(|e| fail(&e))?.with_plugin(Arc::new(plugin));
        let mut config = RunConfig::default();
        if events.0.is_some() {
            config = config.sse();
        }
        let mut stream = runner.run(USER, &session_id, Some(Content::user_text(message)), None, config);
        let mut text = String::new();
        let mut streamed = None;
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => return Err((text, error.to_string())),
            };
            if let Some(asked) = event.function_calls().find(|c| c.name() == sinew_adk::REQUEST_CONFIRMATION) {
                let tool = asked
                    .args
                    .as_ref()
                    .and_then(|a| a.get("originalFunctionCall"))
                    .and_then(|c| c["name"].as_str())
                    .unwrap_or("a tool")
                    .to_owned();
                return Err((
                    text,
                    format!(
                        "`{tool}` asks for a confirmation, which a chat conversation cannot give: serve it as an ADK app"
                    ),
                ));
            }
            let Some(content) = event.content.as_ref().filter(|_| &*event.author != "user") else { continue };
            let fragment = content.text();
            if event.is_partial() {
                if !fragment.is_empty() {
                    events.send(StreamEvent::TextDelta { text: fragment.clone() }).await;
                }
                text.push_str(&fragment);
                streamed = Some(event.id.clone());
            } else if streamed.as_ref() != Some(&event.id) {
                // A whole answer (not streamed in fragments) is one delta.
                if !fragment.is_empty() {
                    events.send(StreamEvent::TextDelta { text: fragment.clone() }).await;
                }
                text.push_str(&fragment);
            }
        }
        Ok(text)
    }
}

/// The callback, when there is one.
#[derive(Clone)]
struct Events(Option<StreamCallback>);

impl Events {
    async fn send(&self, event: StreamEvent) {
        if let Some(sender) = &self.0 {
            // A reader that went away misses the rest; the run is still recorded.
            let _ = sender.send(event).await;
        }
    }
}

/// A run's session as spec 000's adapters see it: the history, then what the run appends, each
/// appended message recorded in `agent_run_messages`.
struct RunMessages {
    store: Arc<dyn ChatStore>,
    run_id: Uuid,
    history: Vec<ChatMessage>,
    appended: Mutex<Vec<ChatMessage>>,
    state: Mutex<Map<String, Value>>,
}

fn store_error(error: ChatError) -> sinew_adk::Error {
    sinew_adk::Error::Store(Box::new(error))
}

impl RunMessages {
    fn conversation(&self, key: &ConversationKey) -> Conversation {
        let appended = self.appended.lock().unwrap_or_else(PoisonError::into_inner);
        let mut conversation = Conversation::default();
        conversation.key = key.clone();
        conversation.state = self.state.lock().unwrap_or_else(PoisonError::into_inner).clone();
        conversation.messages = self.history.iter().chain(appended.iter()).cloned().collect();
        conversation
    }
}

#[async_trait]
impl MessageStore for RunMessages {
    async fn create(
        &self,
        key: &ConversationKey,
        state: Map<String, Value>,
        _at: f64,
    ) -> sinew_adk::Result<Conversation> {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner) = state;
        Ok(self.conversation(key))
    }

    async fn load(&self, key: &ConversationKey) -> sinew_adk::Result<Option<Conversation>> {
        Ok((key.id == self.run_id.to_string()).then(|| self.conversation(key)))
    }

    async fn list(&self, _app_name: &str, _user_id: Option<&str>) -> sinew_adk::Result<Vec<Conversation>> {
        Ok(Vec::new())
    }

    async fn delete(&self, _key: &ConversationKey) -> sinew_adk::Result<()> {
        Ok(())
    }

    async fn append(
        &self,
        _key: &ConversationKey,
        message: Option<&ChatMessage>,
        state_delta: &Map<String, Value>,
        _at: f64,
    ) -> sinew_adk::Result<bool> {
        if let Some(message) = message {
            let record = RunMessage {
                id: Uuid::new_v4(),
                role: message.role.clone(),
                author: message.author.clone(),
                content: message.content.clone(),
                tool_calls: serde_json::to_value(&message.tool_calls).unwrap_or_default(),
                created_at: now(),
            };
            self.store.add_run_message(self.run_id, &record).await.map_err(store_error)?;
            self.appended.lock().unwrap_or_else(PoisonError::into_inner).push(message.clone());
        }
        self.state.lock().unwrap_or_else(PoisonError::into_inner).extend(state_delta.clone());
        Ok(true)
    }
}

/// Reports and records every tool call; a tool's error becomes the `{"error": …}` the model sees,
/// so the run goes on.
struct ToolCalls {
    store: Arc<dyn ChatStore>,
    run_id: Uuid,
    events: Events,
    /// Calls under way: when each started, with what input.
    started: Mutex<HashMap<String, (DateTime<Utc>, Value)>>,
}

impl ToolCalls {
    async fn end(&self, tool: &str, ctx: &ToolContext, output: Option<Value>, error: Option<String>) {
        let call_id = ctx.function_call_id().to_owned();
        let Some((started_at, input)) = self.started.lock().unwrap_or_else(PoisonError::into_inner).remove(&call_id)
        else {
            return;
        };
        let call = RunToolCall {
            id: Uuid::new_v4(),
            call_id: call_id.clone(),
            tool: tool.to_owned(),
            input,
            output: output.clone(),
            error: error.clone(),
            status: if error.is_some() { "error" } else { "completed" }.to_owned(),
            started_at,
            finished_at: Some(now()),
        };
        if let Err(error) = self.store.add_run_tool_call(self.run_id, &call).await {
            tracing::warn!(%error, run = %self.run_id, "could not record a tool call");
        }
        self.events.send(StreamEvent::ToolCallEnd { call_id, tool: tool.to_owned(), output, error }).await;
    }
}

#[async_trait]
impl Plugin for ToolCalls {
    fn name(&self) -> &str {
        "sinew_chat_tool_calls"
    }

    async fn before_tool(
        &self,
        tool: &dyn Tool,
        args: &mut Map<String, Value>,
        ctx: &ToolContext,
    ) -> Option<Map<String, Value>> {
        let input = Value::Object(args.clone());
        let call_id = ctx.function_call_id().to_owned();
        self.started.lock().unwrap_or_else(PoisonError::into_inner).insert(call_id.clone(), (now(), input.clone()));
        self.events.send(StreamEvent::ToolCallStart { call_id, tool: tool.name().to_owned(), input }).await;
        None
    }

    async fn after_tool(
        &self,
        tool: &dyn Tool,
        _args: &Map<String, Value>,
        ctx: &ToolContext,
        response: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        // ADK's convention: a response with `error` is a failure (a refused confirmation, say).
        let error = response.get("error").map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_owned));
        self.end(tool.name(), ctx, Some(Value::Object(response.clone())), error).await;
        None
    }

    async fn on_tool_error(
        &self,
        tool: &dyn Tool,
        _args: &Map<String, Value>,
        ctx: &ToolContext,
        error: &sinew_core::ToolError,
    ) -> Option<Map<String, Value>> {
        let message = error.to_string();
        self.end(tool.name(), ctx, None, Some(message.clone())).await;
        Some(Map::from_iter([("error".to_owned(), Value::String(message))]))
    }
}
