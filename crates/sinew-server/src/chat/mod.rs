//! Agent-backed chat over server-sent events (spec 001): conversations that an agent definition
//! answers (with tools, and tool calls streamed as they happen), beside plain ones a model answers
//! directly.
//!
//! Routes (JSON in camelCase, errors as `{"detail": …}`):
//! - `GET|POST /api/agent-definitions`, `GET|PUT|DELETE /api/agent-definitions/{id}`;
//! - `GET /api/conversations`, `GET|DELETE /api/conversations/{id}` (with its messages);
//! - `GET /api/agent-runs/{id}`: a run with its messages and tool calls;
//! - `POST /api/chat/stream`: a message in, `data:` frames out (`meta`, `token`, `mcp_tool`,
//!   `error`, `done`).

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt as _;
use http::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use sinew_adk::adapter::ChatMessage;
use sinew_adk::{Content, Llm, LlmRequest};
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::agents::AgentRegistry;
use crate::http::{Body, DecodeError, detail, json_response, read_json, refuse_unless_json, sse_response};

mod executor;
pub mod migrations;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;
mod store;

pub use executor::{AgentExecutor, ExecuteRequest, ExecuteResult, StreamCallback, StreamEvent};
#[cfg(feature = "postgres")]
pub use postgres::{DEFAULT_SCHEMA, PostgresChatStore};
pub use sqlite::SqliteChatStore;
pub use store::{
    AgentDefinition, AgentDefinitionSpec, AgentRun, ChatConversation, ChatError, ChatResult, ChatStore, RunMessage,
    RunStatus, RunToolCall, RunTrace, StoredMessage,
};

/// How many earlier messages an agent sees, unless configured.
pub const DEFAULT_HISTORY_LIMIT: usize = 10;

/// Frames a stream holds before the run waits for its reader.
const FRAME_BUFFER: usize = 64;

/// How long a frame waits for a reader, unless configured.
pub const DEFAULT_SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// A tool result larger than this (as JSON) is cut in its `mcp_tool` frame; the run's record
/// keeps it whole.
const MAX_RESULT_FRAME: usize = 64 * 1024;

/// A conversation's title, when the request gives none: the message's start.
const TITLE_CHARS: usize = 60;

/// The chat API: agent definitions, conversations, and messages answered over SSE.
#[derive(Clone)]
pub struct ChatApi {
    store: Arc<dyn ChatStore>,
    registry: Arc<AgentRegistry>,
    executor: AgentExecutor,
    plain_model: Option<Arc<dyn Llm>>,
    history_limit: usize,
    /// Conversations with a turn under way in this process.
    busy: Arc<std::sync::Mutex<std::collections::HashSet<Uuid>>>,
    send_timeout: std::time::Duration,
}

/// A conversation's turn under way; the conversation is free again when it is dropped.
struct Busy {
    conversations: Arc<std::sync::Mutex<std::collections::HashSet<Uuid>>>,
    id: Uuid,
}

impl Busy {
    /// Marks `id` busy; `None` when a turn is already under way.
    fn take(conversations: &Arc<std::sync::Mutex<std::collections::HashSet<Uuid>>>, id: Uuid) -> Option<Busy> {
        let mut set = conversations.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        set.insert(id).then(|| Busy { conversations: conversations.clone(), id })
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.conversations.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&self.id);
    }
}

impl std::fmt::Debug for ChatApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatApi")
            .field("store", &self.store)
            .field("history_limit", &self.history_limit)
            .finish_non_exhaustive()
    }
}

/// `POST /api/chat/stream`'s body. Fields it does not know are ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StreamRequest {
    message: String,
    #[serde(default)]
    conversation_id: Option<Uuid>,
    #[serde(default)]
    agent_definition_id: Option<Uuid>,
    /// A new conversation's title.
    #[serde(default)]
    title: Option<String>,
}

impl ChatApi {
    /// Chat over `store`, agents built from `registry`. Plain conversations need a model
    /// ([`ChatApi::plain_model`]).
    pub fn new(store: Arc<dyn ChatStore>, registry: Arc<AgentRegistry>) -> Self {
        let executor = AgentExecutor::new(store.clone(), registry.clone());
        ChatApi {
            store,
            registry,
            executor,
            plain_model: None,
            history_limit: DEFAULT_HISTORY_LIMIT,
            busy: Arc::default(),
            send_timeout: DEFAULT_SEND_TIMEOUT,
        }
    }

    /// Plain conversations (no agent definition) stream `model`'s answer directly.
    #[must_use]
    pub fn plain_model(mut self, model: Arc<dyn Llm>) -> Self {
        self.plain_model = Some(model);
        self
    }

    /// How many earlier messages of the conversation a run sees (10 unless set).
    #[must_use]
    pub fn history_limit(mut self, messages: usize) -> Self {
        self.history_limit = messages;
        self
    }

    /// How long a frame waits for a client that does not read (30 s unless set); after that
    /// the client gets no more frames, and the turn goes on to its end.
    #[must_use]
    pub fn send_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.send_timeout = timeout;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ChatStore> {
        &self.store
    }

    /// The executor runs go through.
    pub fn executor(&self) -> &AgentExecutor {
        &self.executor
    }

    /// Whether `path` is one of this API's.
    pub fn owns(path: &str) -> bool {
        path == "/api" || path.starts_with("/api/")
    }

    /// Answers one request of this API (see the module's routes); other paths are 404.
    /// Bodies are read up to `max_body` bytes (413 beyond), without a deadline of their own:
    /// [`serve`](crate::serve) gives each request [`ServerConfig::body_timeout`](crate::ServerConfig),
    /// and a caller of its own bounds the body likewise.
    pub async fn handle<B>(&self, request: Request<B>, max_body: usize) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        if let Some(refused) = refuse_unless_json(&parts.headers) {
            return refused;
        }
        let segments: Vec<&str> = parts.uri.path().split('/').skip(1).collect();
        let id = |text: &str| Uuid::parse_str(text).ok();
        let result = match (&parts.method, segments.as_slice()) {
            (&Method::GET, ["api", "agent-definitions"]) => self.store.definitions().await.map(ok),
            (&Method::POST, ["api", "agent-definitions"]) => match read_json(body, max_body).await {
                Ok(spec) => self.create_definition(spec).await,
                Err(error) => Ok(error.response()),
            },
            (_, ["api", "agent-definitions", raw]) if id(raw).is_none() => Ok(not_found("agent definition", raw)),
            (&Method::GET, ["api", "agent-definitions", raw]) => {
                let id = id(raw).unwrap_or_default();
                self.store.definition(id).await.map(|d| d.map_or_else(|| not_found("agent definition", raw), ok))
            }
            (&Method::PUT, ["api", "agent-definitions", raw]) => match read_json(body, max_body).await {
                Ok(spec) => self.update_definition(id(raw).unwrap_or_default(), spec).await,
                Err(error) => Ok(error.response()),
            },
            (&Method::DELETE, ["api", "agent-definitions", raw]) => {
                let deleted = self.store.delete_definition(id(raw).unwrap_or_default()).await;
                deleted.map(|found| if found { ok(Value::Null) } else { not_found("agent definition", raw) })
            }
            (&Method::GET, ["api", "conversations"]) => match list_limit(parts.uri.query()) {
                Ok(limit) => self.store.conversations(limit).await.map(ok),
                Err(error) => Ok(error_response(&error)),
            },
            (_, ["api", "conversations", raw]) if id(raw).is_none() => Ok(not_found("conversation", raw)),
            (&Method::GET, ["api", "conversations", raw]) => self.conversation(id(raw).unwrap_or_default(), raw).await,
            (&Method::DELETE, ["api", "conversations", raw]) => {
                let deleted = self.store.delete_conversation(id(raw).unwrap_or_default()).await;
                deleted.map(|found| if found { ok(Value::Null) } else { not_found("conversation", raw) })
            }
            (&Method::GET, ["api", "agent-runs", raw]) => match id(raw) {
                None => Ok(not_found("agent run", raw)),
                Some(id) => self.store.run(id).await.map(|r| r.map_or_else(|| not_found("agent run", raw), ok)),
            },
            (&Method::POST, ["api", "chat", "stream"]) => self.stream(read_json(body, max_body).await).await,
            _ => Ok(detail(StatusCode::NOT_FOUND, "Not Found")),
        };
        result.unwrap_or_else(|error| error_response(&error))
    }

    fn check(&self, spec: &AgentDefinitionSpec) -> ChatResult<()> {
        if spec.name.trim().is_empty() {
            return Err(ChatError::Invalid("an agent definition needs a name".into()));
        }
        self.registry.definition_agent(spec).map(drop).map_err(|e| ChatError::Invalid(e.to_string()))
    }

    async fn create_definition(&self, spec: AgentDefinitionSpec) -> ChatResult<Response<Body>> {
        self.check(&spec)?;
        let definition = self.store.create_definition(&spec).await?;
        Ok(json_response(StatusCode::CREATED, &definition))
    }

    async fn update_definition(&self, id: Uuid, spec: AgentDefinitionSpec) -> ChatResult<Response<Body>> {
        self.check(&spec)?;
        let updated = self.store.update_definition(id, &spec).await?;
        Ok(updated.map_or_else(|| not_found("agent definition", &id.to_string()), ok))
    }

    async fn conversation(&self, id: Uuid, raw: &str) -> ChatResult<Response<Body>> {
        let Some(conversation) = self.store.conversation(id).await? else { return Ok(not_found("conversation", raw)) };
        let messages = self.store.messages(id).await?;
        let mut value = serde_json::to_value(&conversation).unwrap_or_default();
        value["messages"] = serde_json::to_value(&messages).unwrap_or_default();
        Ok(ok(value))
    }

    /// `POST /api/chat/stream`: everything that can be refused is refused before anything is
    /// stored; then the user's message is stored and the answer streams.
    async fn stream(&self, request: Result<StreamRequest, DecodeError>) -> ChatResult<Response<Body>> {
        let request = match request {
            Ok(request) => request,
            Err(error) => return Ok(error.response()),
        };
        if request.message.trim().is_empty() {
            return Err(ChatError::Invalid("the message is empty".into()));
        }
        let conversation = match request.conversation_id {
            // The conversation's own definition counts; the body's is ignored.
            Some(id) => match self.store.conversation(id).await? {
                Some(conversation) => conversation,
                None => return Ok(not_found("conversation", &id.to_string())),
            },
            None => {
                if request.agent_definition_id.is_none() && self.plain_model.is_none() {
                    return Err(no_plain_model());
                }
                let title = request.title.clone().unwrap_or_else(|| title_of(&request.message));
                self.store.create_conversation(&title, request.agent_definition_id).await?
            }
        };
        if conversation.agent_definition_id.is_none() && self.plain_model.is_none() {
            return Err(no_plain_model());
        }
        // One turn at a time: a second message while the first is answered would be answered
        // without it.
        let Some(busy) = Busy::take(&self.busy, conversation.id) else {
            return Ok(detail(
                StatusCode::CONFLICT,
                &format!(
                    "conversation {} is still answering a message: send this one when it is done",
                    conversation.id
                ),
            ));
        };
        let (frames, receiver) = mpsc::channel::<Bytes>(FRAME_BUFFER);
        let frames = Frames::new(frames, self.send_timeout);
        let (stored, accepted) = tokio::sync::oneshot::channel();
        let api = self.clone();
        // From here the turn runs in a task of its own: a client that goes away, even before the
        // stream starts, does not leave a message stored and unanswered, and the answer is worked
        // out to its end and stored.
        tokio::spawn(async move {
            let message = api.store.add_message(conversation.id, "user", &request.message, None).await;
            match message {
                Ok(user_message) => {
                    let _ = stored.send(Ok(()));
                    api.answer(conversation, user_message, frames).await;
                    drop(busy);
                }
                Err(error) => {
                    // Free before the refusal is answered: a retry must not find it busy.
                    drop(busy);
                    let _ = stored.send(Err(error));
                }
            }
        });
        accepted.await.map_err(|e| ChatError::store("storing the message", e))??;
        let stream = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|frame| (frame, receiver))
        });
        Ok(sse_response(stream))
    }

    async fn answer(&self, conversation: ChatConversation, user_message: StoredMessage, frames: Frames) {
        frames
            .send(json!({
                "type": "meta",
                "conversationId": conversation.id,
                "agentDefinitionId": conversation.agent_definition_id,
                "userMessageId": user_message.id,
            }))
            .await;
        let done = match conversation.agent_definition_id {
            Some(definition) => self.answer_with_agent(definition, &conversation, &user_message, &frames).await,
            None => self.answer_plainly(&conversation, &user_message, &frames).await,
        };
        let done = match done {
            Ok(done) => done,
            Err(error) => {
                tracing::warn!(%error, conversation = %conversation.id, "chat turn failed");
                let message = match &error {
                    ChatError::Store { .. } => "the chat store failed; the server's log says why".to_owned(),
                    other => other.to_string(),
                };
                frames.send(json!({"type": "error", "error": message})).await;
                json!({"type": "done", "conversationId": conversation.id})
            }
        };
        frames.send(done).await;
    }

    /// The `limit` messages before `user_message`, as spec 000's adapters take them.
    async fn history(&self, user_message: &StoredMessage) -> ChatResult<Vec<ChatMessage>> {
        let earlier =
            self.store.messages_before(user_message.conversation_id, user_message.id, self.history_limit).await?;
        Ok(earlier
            .into_iter()
            .map(|m| {
                ChatMessage::new(m.role, m.content)
                    .with_id(m.id.to_string())
                    .at(m.created_at.timestamp_micros() as f64 / 1e6)
            })
            .collect())
    }

    async fn answer_with_agent(
        &self,
        definition: Uuid,
        conversation: &ChatConversation,
        user_message: &StoredMessage,
        frames: &Frames,
    ) -> ChatResult<Value> {
        let definition =
            self.store.definition(definition).await?.ok_or(ChatError::UnknownAgentDefinition(definition))?;
        let history = self.history(user_message).await?;
        let (events, mut received) = mpsc::channel(FRAME_BUFFER);
        let request = ExecuteRequest::new(definition, user_message.content.clone())
            .conversation(conversation.id)
            .history(history)
            .stream(events);
        let forward = async {
            while let Some(event) = received.recv().await {
                frames.send(frame_of(event)).await;
            }
        };
        let (result, ()) = tokio::join!(self.executor.execute(request), forward);
        let result = result?;
        let mut done = json!({"type": "done", "conversationId": conversation.id, "agentRunId": result.run_id});
        if result.status == RunStatus::Completed {
            let context = json!({"agent_run_id": result.run_id});
            let answer = self.store.add_message(conversation.id, "assistant", &result.text, Some(&context)).await?;
            done["messageId"] = json!(answer.id);
        }
        Ok(done)
    }

    async fn answer_plainly(
        &self,
        conversation: &ChatConversation,
        user_message: &StoredMessage,
        frames: &Frames,
    ) -> ChatResult<Value> {
        let model = self.plain_model.clone().ok_or_else(no_plain_model)?;
        let mut request = LlmRequest::default();
        request.model = Some(model.name().to_owned());
        for message in self.history(user_message).await? {
            request.contents.push(if message.role == "user" {
                Content::user_text(message.content)
            } else {
                Content::model_text(message.content)
            });
        }
        request.contents.push(Content::user_text(user_message.content.clone()));
        let mut responses = model.generate_content(request, true);
        let (mut text, mut streamed) = (String::new(), false);
        while let Some(response) = responses.next().await {
            let response = match response {
                Ok(response) => response,
                Err(error) => return Ok(plain_failure(conversation, frames, error.to_string()).await),
            };
            if let Some(message) = response.error_message {
                return Ok(plain_failure(conversation, frames, message).await);
            }
            let fragment = response.content.as_ref().map(Content::text).unwrap_or_default();
            if response.is_partial() {
                streamed = true;
            } else if streamed {
                // The aggregated final response repeats the fragments.
                continue;
            }
            if !fragment.is_empty() {
                frames.send(json!({"type": "token", "token": fragment})).await;
                text.push_str(&fragment);
            }
        }
        let answer = self.store.add_message(conversation.id, "assistant", &text, None).await?;
        Ok(json!({"type": "done", "conversationId": conversation.id, "messageId": answer.id}))
    }
}

/// A plain answer's model failed: the error frame is sent, nothing is stored, and the turn ends.
async fn plain_failure(conversation: &ChatConversation, frames: &Frames, error: String) -> Value {
    frames.send(json!({"type": "error", "error": error})).await;
    json!({"type": "done", "conversationId": conversation.id})
}

/// The frames of one stream. A client that went away, or stopped reading for the send timeout,
/// misses the rest: the turn goes on without it.
struct Frames {
    sender: mpsc::Sender<Bytes>,
    timeout: std::time::Duration,
    gone: std::sync::atomic::AtomicBool,
}

impl Frames {
    fn new(sender: mpsc::Sender<Bytes>, timeout: std::time::Duration) -> Self {
        Frames { sender, timeout, gone: std::sync::atomic::AtomicBool::new(false) }
    }

    async fn send(&self, value: Value) {
        use std::sync::atomic::Ordering::Relaxed;
        if self.gone.load(Relaxed) {
            return;
        }
        let sent = tokio::time::timeout(self.timeout, self.sender.send(frame(&value))).await;
        if !matches!(sent, Ok(Ok(()))) {
            self.gone.store(true, Relaxed);
        }
    }
}

fn frame(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// The SSE frame of a run's event.
fn frame_of(event: StreamEvent) -> Value {
    match event {
        StreamEvent::TextDelta { text } => json!({"type": "token", "token": text}),
        StreamEvent::ToolCallStart { call_id, tool, input } => {
            json!({"type": "mcp_tool", "tool": tool, "status": "started", "callId": call_id, "input": input})
        }
        StreamEvent::ToolCallEnd { call_id, tool, output, error: None } => {
            let text = output.as_ref().map(Value::to_string).unwrap_or_default();
            if text.len() > MAX_RESULT_FRAME {
                let cut = text.char_indices().take_while(|(i, _)| *i < MAX_RESULT_FRAME).last().map_or(0, |(i, _)| i);
                let preview = &text[..cut];
                json!({"type": "mcp_tool", "tool": tool, "status": "completed", "callId": call_id,
                       "result": preview, "truncated": true})
            } else {
                json!({"type": "mcp_tool", "tool": tool, "status": "completed", "callId": call_id, "result": output})
            }
        }
        StreamEvent::ToolCallEnd { call_id, tool, error: Some(error), .. } => {
            json!({"type": "mcp_tool", "tool": tool, "status": "error", "callId": call_id, "error": error})
        }
        StreamEvent::Error { error } => json!({"type": "error", "error": error}),
    }
}

/// Conversations listed unless `?limit=` says otherwise, and the most it may say.
const DEFAULT_LIST_LIMIT: usize = 100;
const MAX_LIST_LIMIT: usize = 1000;

/// `?limit=N` (1 to 1,000; 100 when absent).
fn list_limit(query: Option<&str>) -> ChatResult<usize> {
    let Some(value) = query.unwrap_or_default().split('&').find_map(|pair| pair.strip_prefix("limit=")) else {
        return Ok(DEFAULT_LIST_LIMIT);
    };
    match value.parse::<usize>() {
        Ok(limit) if (1..=MAX_LIST_LIMIT).contains(&limit) => Ok(limit),
        _ => Err(ChatError::Invalid(format!("limit is a number from 1 to {MAX_LIST_LIMIT}"))),
    }
}

fn title_of(message: &str) -> String {
    let line = message.trim().lines().next().unwrap_or_default();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_owned(),
    }
}

fn no_plain_model() -> ChatError {
    ChatError::Invalid("this server has no model for plain conversations: give an agentDefinitionId".into())
}

fn ok(value: impl serde::Serialize) -> Response<Body> {
    json_response(StatusCode::OK, &value)
}

fn not_found(what: &str, id: &str) -> Response<Body> {
    detail(StatusCode::NOT_FOUND, &format!("{what} not found: {id}"))
}

fn error_response(error: &ChatError) -> Response<Body> {
    match error {
        ChatError::Invalid(_) | ChatError::UnknownAgentDefinition(_) => {
            detail(StatusCode::BAD_REQUEST, &error.to_string())
        }
        ChatError::DefinitionInUse(..) => detail(StatusCode::CONFLICT, &error.to_string()),
        ChatError::Store { .. } => {
            tracing::error!(%error, "chat store failed");
            detail(StatusCode::INTERNAL_SERVER_ERROR, "the chat store failed; the server's log says why")
        }
    }
}
