//! Agent-backed chat (spec 001): every scenario of the spec is a test named after it, run over a
//! real server on loopback with the SQLite store (PostgreSQL in `chat_store.rs`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{FunctionTool, Llm};
use sinew_server::chat::{
    AgentDefinition, AgentDefinitionSpec, AgentExecutor, ChatStore, ExecuteRequest, RunStatus, StreamEvent,
};
use sinew_server::{AgentRegistry, ChatApi, ServerConfig, SqliteChatStore, serve};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::{Reply, send};

pub(crate) fn echo_tool() -> FunctionTool {
    FunctionTool::new(
        "echo",
        "Echoes its text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |args, _| async move { Ok(json!({"echo": args["text"]})) },
    )
}

/// Takes a moment: a client can go away while it runs.
fn slow_tool() -> FunctionTool {
    FunctionTool::new("wait", "Waits a moment.", json!({"type": "object"}), |_, _| async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(json!({"waited": true}))
    })
}

fn failing_tool() -> FunctionTool {
    FunctionTool::new("lookup", "Looks a thing up.", json!({"type": "object"}), |_, _| async move {
        Err(sinew_core::ToolError::Failed("the index is offline".into()))
    })
}

/// Models by name, as a provider registry would resolve them.
#[derive(Clone, Default)]
pub(crate) struct Models(HashMap<String, Arc<ScriptedLlm>>);

impl Models {
    pub(crate) fn with(mut self, name: &str, model: ScriptedLlm) -> Self {
        self.0.insert(name.to_owned(), Arc::new(model.named(name)));
        self
    }

    pub(crate) fn get(&self, name: &str) -> Arc<ScriptedLlm> {
        self.0[name].clone()
    }

    pub(crate) fn registry(&self) -> AgentRegistry {
        let models = self.0.clone();
        AgentRegistry::new(move |name| models.get(name).map(|m| m.clone() as Arc<dyn Llm>))
            .tool(Arc::new(echo_tool()))
            .tool(Arc::new(failing_tool()))
            .tool(Arc::new(slow_tool()))
            .tool(Arc::new(big_tool()))
    }
}

pub(crate) struct Chat {
    pub(crate) addr: SocketAddr,
    pub(crate) store: Arc<dyn ChatStore>,
    pub(crate) models: Models,
    _dir: Option<tempfile::TempDir>,
}

/// A chat server over a fresh SQLite file; model `plain` answers plain conversations.
async fn chat(models: Models, configure: impl FnOnce(ChatApi) -> ChatApi) -> Chat {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteChatStore::open(dir.path().join("chat.db")).unwrap());
    let mut chat = start_chat(store, models, configure).await;
    chat._dir = Some(dir);
    chat
}

pub(crate) async fn start_chat(
    store: Arc<dyn ChatStore>,
    models: Models,
    configure: impl FnOnce(ChatApi) -> ChatApi,
) -> Chat {
    let models =
        if models.0.contains_key("plain") { models } else { models.with("plain", ScriptedLlm::texts(["Plain."])) };
    let api = ChatApi::new(store.clone(), Arc::new(models.registry())).plain_model(models.get("plain"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(
        listener,
        configure(api),
        ServerConfig::default().max_body_bytes(64 * 1024),
        std::future::pending(),
    ));
    Chat { addr, store, models, _dir: None }
}

impl Chat {
    pub(crate) async fn define(&self, spec: Value) -> Value {
        let reply = send(self.addr, "POST", "/api/agent-definitions", Some(&spec.to_string()), &[]).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        reply.json()
    }

    pub(crate) async fn stream(&self, body: Value) -> Reply {
        send(self.addr, "POST", "/api/chat/stream", Some(&body.to_string()), &[]).await
    }

    /// Sends a message and returns the frames, checking the stream's shape: `meta` first,
    /// `done` last.
    pub(crate) async fn turn(&self, body: Value) -> Vec<Value> {
        let reply = self.stream(body).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.header("content-type"), Some("text/event-stream; charset=utf-8"));
        let frames = reply.frames();
        assert_eq!(frames.first().map(|f| &f["type"]), Some(&json!("meta")), "{frames:#?}");
        assert_eq!(frames.last().map(|f| &f["type"]), Some(&json!("done")), "{frames:#?}");
        frames
    }
}

fn of_type<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames.iter().filter(|f| f["type"] == kind).collect()
}

fn tokens(frames: &[Value]) -> String {
    of_type(frames, "token").iter().map(|f| f["token"].as_str().unwrap()).collect()
}

fn uuid(value: &Value) -> uuid::Uuid {
    uuid::Uuid::parse_str(value.as_str().unwrap_or_else(|| panic!("not an id: {value}"))).unwrap()
}

/// The texts of a model request's contents, as `role: text` lines.
fn request_texts(model: &ScriptedLlm, call: usize) -> Vec<String> {
    let (request, _) = &model.requests()[call];
    request.contents.iter().map(|c| format!("{}: {}", c.role.as_deref().unwrap_or_default(), c.text())).collect()
}

/// An agent whose model calls `echo` and then streams its answer.
fn echoing_model() -> ScriptedLlm {
    ScriptedLlm::new([
        ScriptedAnswer::call("echo", json!({"text": "hi"})),
        ScriptedAnswer::streamed(&["Echo ", "said hi."]),
    ])
}

fn helper(model: &str) -> Value {
    json!({"name": "Helper", "model": model, "instruction": "Be brief.", "tools": ["echo"]})
}

// --- Requirement: Agent-backed conversation creation ---------------------------------------------

#[tokio::test]
async fn create_agent_backed_conversation() {
    let models = Models::default().with("mock/a", ScriptedLlm::texts(["First.", "Second."]));
    let chat = chat(models, |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    let frames = chat.turn(json!({"message": "Hello", "agentDefinitionId": definition["id"]})).await;
    let conversation_id = uuid(&frames[0]["conversationId"]);
    assert_eq!(frames[0]["agentDefinitionId"], definition["id"]);
    let stored = chat.store.conversation(conversation_id).await.unwrap().unwrap();
    assert_eq!(stored.agent_definition_id, Some(uuid(&definition["id"])));
    assert_eq!(tokens(&frames), "First.");
    // Later messages go through the agent executor too: each is an agent run.
    let later = chat.turn(json!({"message": "Again", "conversationId": conversation_id})).await;
    assert_eq!(tokens(&later), "Second.");
    let run = chat.store.run(uuid(&later.last().unwrap()["agentRunId"])).await.unwrap().unwrap();
    assert_eq!(run.run.conversation_id, Some(conversation_id));
    assert_eq!(run.run.agent_definition_id, Some(uuid(&definition["id"])));
    assert_eq!(chat.models.get("mock/a").requests().len(), 2);
    assert!(chat.models.get("plain").requests().is_empty());
}

#[tokio::test]
async fn continue_existing_agent_backed_conversation() {
    let models = Models::default()
        .with("mock/a", ScriptedLlm::texts(["From A.", "A again."]))
        .with("mock/b", ScriptedLlm::texts(["From B."]));
    let chat = chat(models, |api| api).await;
    let a = chat.define(helper("mock/a")).await;
    let b = chat.define(helper("mock/b")).await;
    let first = chat.turn(json!({"message": "Hello", "agentDefinitionId": a["id"]})).await;
    let id = first[0]["conversationId"].clone();
    // The body names B; the conversation's stored definition (A) answers.
    let frames = chat.turn(json!({"message": "More", "conversationId": id, "agentDefinitionId": b["id"]})).await;
    assert_eq!(frames[0]["agentDefinitionId"], a["id"]);
    assert_eq!(tokens(&frames), "A again.");
    assert!(chat.models.get("mock/b").requests().is_empty());
    let stored = chat.store.conversation(uuid(&id)).await.unwrap().unwrap();
    assert_eq!(stored.agent_definition_id, Some(uuid(&a["id"])));
}

#[tokio::test]
async fn create_plain_conversation_backward_compatible() {
    let models = Models::default().with("plain", ScriptedLlm::new([ScriptedAnswer::streamed(&["Plain ", "answer."])]));
    let chat = chat(models, |api| api).await;
    let frames = chat.turn(json!({"message": "Hello"})).await;
    assert_eq!(frames[0]["agentDefinitionId"], Value::Null);
    let id = uuid(&frames[0]["conversationId"]);
    assert_eq!(chat.store.conversation(id).await.unwrap().unwrap().agent_definition_id, None);
    // The direct model stream: its fragments, no agent run.
    assert_eq!(tokens(&frames), "Plain answer.");
    assert!(frames.last().unwrap().get("agentRunId").is_none());
    assert!(of_type(&frames, "mcp_tool").is_empty());
    let (_, streamed) = &chat.models.get("plain").requests()[0];
    assert!(*streamed);
}

#[tokio::test]
async fn invalid_agent_definition_id() {
    let chat = chat(Models::default(), |api| api).await;
    let missing = uuid::Uuid::new_v4();
    let reply = chat.stream(json!({"message": "Hello", "agentDefinitionId": missing})).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["detail"], format!("agent definition not found: {missing}"));
    assert!(chat.store.conversations(100).await.unwrap().is_empty(), "no conversation is created");
}

// --- Requirement: Agent executor streaming callback -----------------------------------------------

async fn executor_with(models: &Models) -> (AgentExecutor, Arc<dyn ChatStore>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ChatStore> = Arc::new(SqliteChatStore::open(dir.path().join("chat.db")).unwrap());
    (AgentExecutor::new(store.clone(), Arc::new(models.registry())), store, dir)
}

async fn definition(store: &Arc<dyn ChatStore>, model: &str) -> AgentDefinition {
    store.create_definition(&AgentDefinitionSpec::new("Helper", model).tool("echo").tool("lookup")).await.unwrap()
}

/// Runs `request` with a callback and returns the result and every event it got.
async fn execute_streaming(
    executor: &AgentExecutor,
    request: ExecuteRequest,
) -> (sinew_server::chat::ExecuteResult, Vec<StreamEvent>) {
    let (sender, mut receiver) = tokio::sync::mpsc::channel(4);
    let collect = async {
        let mut events = Vec::new();
        while let Some(event) = receiver.recv().await {
            events.push(event);
        }
        events
    };
    let (result, events) = tokio::join!(executor.execute(request.stream(sender)), collect);
    (result.unwrap(), events)
}

#[tokio::test]
async fn stream_callback_receives_text_deltas() {
    let models = Models::default().with("mock/a", ScriptedLlm::new([ScriptedAnswer::streamed(&["Hel", "lo", "!"])]));
    let (executor, store, _dir) = executor_with(&models).await;
    let definition = definition(&store, "mock/a").await;
    let (result, events) = execute_streaming(&executor, ExecuteRequest::new(definition, "Hi")).await;
    let deltas: Vec<&StreamEvent> = events.iter().filter(|e| matches!(e, StreamEvent::TextDelta { .. })).collect();
    assert_eq!(
        deltas,
        ["Hel", "lo", "!"].map(|t| StreamEvent::TextDelta { text: t.into() }).iter().collect::<Vec<_>>(),
        "one delta per fragment, the final aggregate not repeated"
    );
    assert_eq!(result.text, "Hello!");
    assert!(models.get("mock/a").requests()[0].1, "a streaming run asks the model to stream");
}

#[tokio::test]
async fn stream_callback_receives_tool_call_events() {
    let models = Models::default().with("mock/a", echoing_model());
    let (executor, store, _dir) = executor_with(&models).await;
    let definition = definition(&store, "mock/a").await;
    let (result, events) = execute_streaming(&executor, ExecuteRequest::new(definition, "Echo hi")).await;
    let tools: Vec<&StreamEvent> = events.iter().filter(|e| !matches!(e, StreamEvent::TextDelta { .. })).collect();
    let [
        StreamEvent::ToolCallStart { call_id, tool, input },
        StreamEvent::ToolCallEnd { call_id: end_id, tool: end_tool, output, error },
    ] = tools.as_slice()
    else {
        panic!("a start and an end: {events:#?}")
    };
    assert_eq!((tool.as_str(), input), ("echo", &json!({"text": "hi"})));
    assert_eq!((end_id, end_tool.as_str()), (call_id, "echo"));
    assert_eq!((output, error), (&Some(json!({"echo": "hi"})), &None));
    // The start came before the answer's text, the end before it too.
    let first_text = events.iter().position(|e| matches!(e, StreamEvent::TextDelta { .. })).unwrap();
    assert!(events.iter().position(|e| matches!(e, StreamEvent::ToolCallEnd { .. })).unwrap() < first_text);
    assert_eq!(result.status, RunStatus::Completed);
}

#[tokio::test]
async fn stream_callback_receives_errors() {
    let models =
        Models::default().with("mock/a", ScriptedLlm::new([ScriptedAnswer::Error("the model is overloaded".into())]));
    let (executor, store, _dir) = executor_with(&models).await;
    let definition = definition(&store, "mock/a").await;
    let (result, events) = execute_streaming(&executor, ExecuteRequest::new(definition, "Hi")).await;
    let Some(StreamEvent::Error { error }) = events.last() else { panic!("an error event: {events:#?}") };
    assert!(error.contains("the model is overloaded"), "{error}");
    assert_eq!(result.status, RunStatus::Failed);
    let run = store.run(result.run_id).await.unwrap().unwrap().run;
    assert_eq!(run.status, RunStatus::Failed);
    assert!(run.error.unwrap().contains("the model is overloaded"));
    assert!(run.finished_at.is_some());
}

#[tokio::test]
async fn no_stream_callback_backward_compatible() {
    let models = Models::default().with("mock/a", echoing_model());
    let (executor, store, _dir) = executor_with(&models).await;
    let definition = definition(&store, "mock/a").await;
    let result = executor.execute(ExecuteRequest::new(definition, "Echo hi")).await.unwrap();
    assert_eq!((result.status, result.text.as_str()), (RunStatus::Completed, "Echo said hi."));
    // Batch mode: the model is not asked to stream; the run is recorded all the same.
    assert!(models.get("mock/a").requests().iter().all(|(_, stream)| !stream));
    let trace = store.run(result.run_id).await.unwrap().unwrap();
    assert_eq!(trace.run.output.as_deref(), Some("Echo said hi."));
    assert_eq!(trace.tool_calls.len(), 1);
}

// --- Requirement: Chat handler agent branching ------------------------------------------------------

#[tokio::test]
async fn agent_backed_streaming_flow() {
    let models = Models::default().with("mock/a", echoing_model());
    let chat = chat(models, |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    let frames = chat.turn(json!({"message": "Echo hi", "agentDefinitionId": definition["id"]})).await;
    let kinds: Vec<&str> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["meta", "mcp_tool", "mcp_tool", "token", "token", "done"]);
    let id = uuid(&frames[0]["conversationId"]);
    let messages = chat.store.messages(id).await.unwrap();
    assert_eq!(
        messages.iter().map(|m| (m.role.as_str(), m.content.as_str())).collect::<Vec<_>>(),
        [("user", "Echo hi"), ("assistant", "Echo said hi.")]
    );
    assert_eq!(frames[0]["userMessageId"], json!(messages[0].id));
    assert_eq!(frames[5]["messageId"], json!(messages[1].id));
    // The agent ran on its definition: its instruction reached the model.
    let (request, _) = &chat.models.get("mock/a").requests()[0];
    let instruction = request.config.system_instruction.as_ref().map(|s| s.text()).unwrap_or_default();
    assert!(instruction.contains("Be brief."), "{instruction}");
}

#[tokio::test]
async fn direct_llm_flow_unchanged() {
    let models = Models::default().with(
        "plain",
        ScriptedLlm::new([ScriptedAnswer::streamed(&["One."]), ScriptedAnswer::streamed(&["Tw", "o."])]),
    );
    let chat = chat(models, |api| api).await;
    let first = chat.turn(json!({"message": "First"})).await;
    let id = first[0]["conversationId"].clone();
    let second = chat.turn(json!({"message": "Second", "conversationId": id})).await;
    assert_eq!(tokens(&second), "Two.");
    // The model gets the conversation directly: earlier turns, then the message.
    assert_eq!(request_texts(&chat.models.get("plain"), 1), ["user: First", "model: One.", "user: Second"]);
    let messages = chat.store.messages(uuid(&id)).await.unwrap();
    assert_eq!(messages.len(), 4);
    assert!(messages.iter().all(|m| m.retrieval_context.is_none()));
}

// --- Requirement: SSE event streaming for tool calls ----------------------------------------------

async fn tool_frames(model: ScriptedLlm, tools: &[&str]) -> (Chat, Vec<Value>) {
    let chat = chat(Models::default().with("mock/a", model), |api| api).await;
    let definition = chat.define(json!({"name": "Helper", "model": "mock/a", "tools": tools})).await;
    let frames = chat.turn(json!({"message": "Go", "agentDefinitionId": definition["id"]})).await;
    (chat, frames)
}

#[tokio::test]
async fn tool_call_started_event() {
    let (_chat, frames) = tool_frames(echoing_model(), &["echo"]).await;
    let started = of_type(&frames, "mcp_tool")[0];
    assert_eq!((&started["tool"], &started["status"]), (&json!("echo"), &json!("started")));
    assert_eq!(started["input"], json!({"text": "hi"}));
}

#[tokio::test]
async fn tool_call_completed_event() {
    let (_chat, frames) = tool_frames(echoing_model(), &["echo"]).await;
    let completed = of_type(&frames, "mcp_tool")[1];
    assert_eq!((&completed["tool"], &completed["status"]), (&json!("echo"), &json!("completed")));
    assert_eq!(completed["result"], json!({"echo": "hi"}));
    assert_eq!(completed["callId"], of_type(&frames, "mcp_tool")[0]["callId"]);
}

#[tokio::test]
async fn tool_call_error_event() {
    let model = ScriptedLlm::new([ScriptedAnswer::call("lookup", json!({})), ScriptedAnswer::text("Lookup is down.")]);
    let (chat, frames) = tool_frames(model, &["lookup"]).await;
    let tools = of_type(&frames, "mcp_tool");
    assert_eq!(tools[1]["status"], "error");
    assert_eq!(tools[1]["error"], "the index is offline");
    // Non-fatal: the agent went on and answered.
    assert_eq!(tokens(&frames), "Lookup is down.");
    let trace = chat.store.run(uuid(&frames.last().unwrap()["agentRunId"])).await.unwrap().unwrap();
    assert_eq!(
        (trace.tool_calls[0].status.as_str(), trace.tool_calls[0].error.as_deref()),
        ("error", Some("the index is offline"))
    );
    assert_eq!(trace.run.status, RunStatus::Completed);
    assert!(of_type(&frames, "error").is_empty());
    assert!(frames.last().unwrap().get("messageId").is_some());
}

// --- Requirement: Dual persistence ----------------------------------------------------------------

#[tokio::test]
async fn user_message_persisted_to_chat_tables() {
    // A model that fails: the user's message was stored before the run started.
    let chat =
        chat(Models::default().with("mock/a", ScriptedLlm::new([ScriptedAnswer::Error("down".into())])), |api| api)
            .await;
    let definition = chat.define(helper("mock/a")).await;
    let frames = chat.turn(json!({"message": "Keep me", "agentDefinitionId": definition["id"]})).await;
    assert!(of_type(&frames, "error")[0]["error"].as_str().unwrap().contains("down"));
    let messages = chat.store.messages(uuid(&frames[0]["conversationId"])).await.unwrap();
    assert_eq!(
        messages.iter().map(|m| (m.role.as_str(), m.content.as_str())).collect::<Vec<_>>(),
        [("user", "Keep me")]
    );
}

#[tokio::test]
async fn assistant_response_persisted_to_chat_tables() {
    let chat = chat(Models::default().with("mock/a", echoing_model()), |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    let frames = chat.turn(json!({"message": "Echo hi", "agentDefinitionId": definition["id"]})).await;
    let done = frames.last().unwrap();
    let messages = chat.store.messages(uuid(&frames[0]["conversationId"])).await.unwrap();
    let answer = &messages[1];
    assert_eq!((answer.role.as_str(), answer.content.as_str()), ("assistant", "Echo said hi."));
    assert_eq!(answer.retrieval_context, Some(json!({"agent_run_id": done["agentRunId"]})));
    assert!(chat.store.run(uuid(&done["agentRunId"])).await.unwrap().is_some());
}

#[tokio::test]
async fn agent_execution_trace_persisted_to_agent_tables() {
    let chat = chat(Models::default().with("mock/a", echoing_model()), |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    let frames = chat.turn(json!({"message": "Echo hi", "agentDefinitionId": definition["id"]})).await;
    let trace = chat.store.run(uuid(&frames.last().unwrap()["agentRunId"])).await.unwrap().unwrap();
    assert_eq!(trace.run.status, RunStatus::Completed);
    assert_eq!(trace.run.input, "Echo hi");
    assert_eq!(trace.run.output.as_deref(), Some("Echo said hi."));
    let roles: Vec<(&str, &str)> = trace.messages.iter().map(|m| (m.role.as_str(), m.content.as_str())).collect();
    assert_eq!(
        roles,
        [("user", "Echo hi"), ("assistant", ""), ("tool", r#"{"echo":"hi"}"#), ("assistant", "Echo said hi.")]
    );
    assert_eq!(trace.messages[1].tool_calls[0]["name"], "echo");
    let [call] = trace.tool_calls.as_slice() else { panic!("one tool call: {:#?}", trace.tool_calls) };
    assert_eq!((call.tool.as_str(), call.status.as_str()), ("echo", "completed"));
    assert_eq!((&call.input, &call.output), (&json!({"text": "hi"}), &Some(json!({"echo": "hi"}))));
    assert!(call.finished_at.unwrap() >= call.started_at);
    // The same trace over HTTP.
    let path = format!("/api/agent-runs/{}", trace.run.id);
    let reply = send(chat.addr, "GET", &path, None, &[]).await.json();
    assert_eq!(reply["toolCalls"][0]["tool"], "echo");
    assert_eq!(reply["messages"].as_array().unwrap().len(), 4);
}

// --- Requirement: Multi-turn conversation context ---------------------------------------------------

#[tokio::test]
async fn load_conversation_history_for_agent() {
    let chat = chat(Models::default().with("mock/a", ScriptedLlm::texts(["Hi Ada.", "You are Ada."])), |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    let first = chat.turn(json!({"message": "I am Ada", "agentDefinitionId": definition["id"]})).await;
    chat.turn(json!({"message": "Who am I?", "conversationId": first[0]["conversationId"]})).await;
    assert_eq!(request_texts(&chat.models.get("mock/a"), 1), ["user: I am Ada", "model: Hi Ada.", "user: Who am I?"]);
}

#[tokio::test]
async fn first_message_in_conversation() {
    let chat = chat(Models::default().with("mock/a", ScriptedLlm::texts(["Hello."])), |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    chat.turn(json!({"message": "Hi", "agentDefinitionId": definition["id"]})).await;
    assert_eq!(request_texts(&chat.models.get("mock/a"), 0), ["user: Hi"]);
}

#[tokio::test]
async fn conversation_history_respects_turn_limit() {
    let answers = ["a1", "a2", "a3", "a4"];
    let chat = chat(Models::default().with("mock/a", ScriptedLlm::texts(answers)), |api| api.history_limit(3)).await;
    let definition = chat.define(helper("mock/a")).await;
    let first = chat.turn(json!({"message": "u1", "agentDefinitionId": definition["id"]})).await;
    let id = first[0]["conversationId"].clone();
    for message in ["u2", "u3", "u4"] {
        chat.turn(json!({"message": message, "conversationId": id})).await;
    }
    // Six earlier messages; the newest three, oldest first, then the message.
    assert_eq!(request_texts(&chat.models.get("mock/a"), 3), ["model: a2", "user: u3", "model: a3", "user: u4"]);
}

#[tokio::test]
async fn the_default_history_is_ten_messages() {
    let texts: Vec<String> = (1..=7).map(|i| format!("a{i}")).collect();
    let chat = chat(Models::default().with("mock/a", ScriptedLlm::texts(texts)), |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    let first = chat.turn(json!({"message": "u1", "agentDefinitionId": definition["id"]})).await;
    let id = first[0]["conversationId"].clone();
    for i in 2..=7 {
        chat.turn(json!({"message": format!("u{i}"), "conversationId": id})).await;
    }
    let seen = request_texts(&chat.models.get("mock/a"), 6);
    assert_eq!(seen.len(), 11);
    assert_eq!(seen[0], "user: u2");
    assert_eq!(seen[10], "user: u7");
}

// --- Definitions, conversations, bad input ------------------------------------------------------------

#[tokio::test]
async fn agent_definitions_crud() {
    let chat = chat(Models::default().with("mock/a", ScriptedLlm::texts(["x"])), |api| api).await;
    let created = chat.define(helper("mock/a")).await;
    assert_eq!(
        (&created["name"], &created["tools"], &created["mcpServers"]),
        (&json!("Helper"), &json!(["echo"]), &json!([]))
    );
    let path = format!("/api/agent-definitions/{}", created["id"].as_str().unwrap());
    assert_eq!(send(chat.addr, "GET", &path, None, &[]).await.json(), created);
    let listed = send(chat.addr, "GET", "/api/agent-definitions", None, &[]).await.json();
    assert_eq!(listed, json!([created]));
    let changed = json!({"name": "Renamed", "model": "mock/a", "instruction": "Be long."});
    let updated = send(chat.addr, "PUT", &path, Some(&changed.to_string()), &[]).await;
    assert_eq!(updated.status, 200);
    assert_eq!((&updated.json()["name"], &updated.json()["tools"]), (&json!("Renamed"), &json!([])));
    assert_eq!(send(chat.addr, "DELETE", &path, None, &[]).await.status, 200);
    assert_eq!(send(chat.addr, "GET", &path, None, &[]).await.status, 404);
    assert_eq!(send(chat.addr, "DELETE", &path, None, &[]).await.status, 404);
}

#[tokio::test]
async fn definitions_that_cannot_run_are_refused() {
    let chat = chat(Models::default().with("mock/a", ScriptedLlm::texts(["x"])), |api| api).await;
    for (body, says) in [
        (json!({"name": "X", "model": "mock/none"}), "no provider serves model `mock/none`"),
        (json!({"name": "X", "model": "mock/a", "tools": ["rm_rf"]}), "no tool named `rm_rf`"),
        (json!({"name": "X", "model": "mock/a", "mcpServers": ["github"]}), "no MCP server named `github`"),
        (json!({"name": " ", "model": "mock/a"}), "needs a name"),
    ] {
        let reply = send(chat.addr, "POST", "/api/agent-definitions", Some(&body.to_string()), &[]).await;
        assert_eq!(reply.status, 400, "{body}");
        assert!(reply.json()["detail"].as_str().unwrap().contains(says), "{}", reply.body);
    }
    let unknown_field = json!({"name": "X", "model": "mock/a", "temperature": 2});
    let reply = send(chat.addr, "POST", "/api/agent-definitions", Some(&unknown_field.to_string()), &[]).await;
    assert_eq!(reply.status, 422, "{}", reply.body);
    assert!(chat.store.definitions().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_definition_in_use_is_not_deleted() {
    let chat = chat(Models::default().with("mock/a", ScriptedLlm::texts(["x"])), |api| api).await;
    let definition = chat.define(helper("mock/a")).await;
    let frames = chat.turn(json!({"message": "Hi", "agentDefinitionId": definition["id"]})).await;
    let path = format!("/api/agent-definitions/{}", definition["id"].as_str().unwrap());
    let reply = send(chat.addr, "DELETE", &path, None, &[]).await;
    assert_eq!(reply.status, 409, "{}", reply.body);
    assert!(reply.json()["detail"].as_str().unwrap().contains("used by 1 conversation"));
    // Once its conversation is gone, it goes; the run stays, without it.
    let conversation = format!("/api/conversations/{}", frames[0]["conversationId"].as_str().unwrap());
    assert_eq!(send(chat.addr, "DELETE", &conversation, None, &[]).await.status, 200);
    assert_eq!(send(chat.addr, "DELETE", &path, None, &[]).await.status, 200);
    let run = chat.store.run(uuid(&frames.last().unwrap()["agentRunId"])).await.unwrap().unwrap().run;
    assert_eq!((run.agent_definition_id, run.conversation_id), (None, None));
}

#[tokio::test]
async fn conversations_list_and_show_their_messages() {
    let chat = chat(Models::default(), |api| api).await;
    let frames = chat.turn(json!({"message": "A question\nwith two lines"})).await;
    let id = frames[0]["conversationId"].as_str().unwrap().to_owned();
    let listed = send(chat.addr, "GET", "/api/conversations", None, &[]).await.json();
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["title"], "A question");
    let shown = send(chat.addr, "GET", &format!("/api/conversations/{id}"), None, &[]).await.json();
    let messages: Vec<(&str, &str)> = shown["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(messages, [("user", "A question\nwith two lines"), ("assistant", "Plain.")]);
}

#[tokio::test]
async fn bad_requests_are_clear_and_store_nothing() {
    let chat = chat(Models::default(), |api| api).await;
    let addr = chat.addr;
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, &'a [&'a str], u16);
    let cases: [Case<'_>; 8] = [
        ("POST", "/api/chat/stream", Some("{not json"), &[], 422),
        ("POST", "/api/chat/stream", Some(r#"{"message": "  "}"#), &[], 400),
        ("POST", "/api/chat/stream", Some(r#"{"conversationId": "x"}"#), &[], 422),
        ("POST", "/api/chat/stream", Some(r#"{"message": "hi"}"#), &["content-type: text/plain"], 422),
        ("GET", "/api/conversations/not-a-uuid", None, &[], 404),
        ("GET", "/api/agent-runs/00000000-0000-0000-0000-000000000000", None, &[], 404),
        ("GET", "/api/nothing-here", None, &[], 404),
        ("PATCH", "/api/agent-definitions", Some("{}"), &[], 404),
    ];
    for (method, path, body, extra, status) in cases {
        let reply = send(addr, method, path, body, extra).await;
        assert_eq!(reply.status, status, "{method} {path}: {}", reply.body);
        assert!(reply.json().get("detail").is_some(), "{}", reply.body);
    }
    let missing = uuid::Uuid::new_v4();
    let reply = chat.stream(json!({"message": "hi", "conversationId": missing})).await;
    assert_eq!(
        (reply.status, reply.json()["detail"].clone()),
        (404, json!(format!("conversation not found: {missing}")))
    );
    let big = json!({"message": "x".repeat(70 * 1024)}).to_string();
    assert_eq!(send(addr, "POST", "/api/chat/stream", Some(&big), &[]).await.status, 413);
    assert!(chat.store.conversations(100).await.unwrap().is_empty());
}

#[tokio::test]
async fn without_a_plain_model_plain_conversations_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteChatStore::open(dir.path().join("chat.db")).unwrap());
    let api = ChatApi::new(store.clone(), Arc::new(Models::default().registry()));
    let reply = api
        .handle(
            http::Request::post("/api/chat/stream")
                .header("content-type", "application/json")
                .body(http_body_util::Full::new(bytes::Bytes::from(r#"{"message": "hi"}"#)))
                .unwrap(),
            1024,
        )
        .await;
    assert_eq!(reply.status(), 400);
    assert!(store.conversations(100).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_client_that_goes_away_loses_nothing() {
    let slow = ScriptedLlm::new([ScriptedAnswer::call("wait", json!({})), ScriptedAnswer::text("Done.")]);
    let chat = chat(Models::default().with("mock/a", slow), |api| api).await;
    let definition = chat.define(json!({"name": "Patient", "model": "mock/a", "tools": ["wait"]})).await;
    let body = json!({"message": "Echo hi", "agentDefinitionId": definition["id"]}).to_string();
    let mut stream = tokio::net::TcpStream::connect(chat.addr).await.unwrap();
    let head = format!(
        "POST /api/chat/stream HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // Gone once the stream started, while the tool runs.
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("\"started\"") {
        let mut chunk = [0u8; 512];
        let read = stream.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the stream ended early: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&chunk[..read]);
    }
    drop(stream);
    let conversations = chat.store.conversations(100).await.unwrap();
    assert_eq!(chat.store.messages(conversations[0].id).await.unwrap().len(), 1, "the answer is still under way");
    // The answer is still worked out and stored.
    let conversation = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(c) = chat.store.conversations(100).await.unwrap().first().cloned()
                && chat.store.messages(c.id).await.unwrap().len() == 2
            {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the answer is stored");
    let messages = chat.store.messages(conversation.id).await.unwrap();
    assert_eq!(messages[1].content, "Done.");
}

#[tokio::test]
async fn the_page_is_served_without_the_token_and_the_api_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteChatStore::open(dir.path().join("chat.db")).unwrap());
    let api = ChatApi::new(store, Arc::new(Models::default().registry()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, api, ServerConfig::default().bearer_token("s3cret"), std::future::pending()));
    for (path, kind) in [("/", "text/html"), ("/app.js", "text/javascript"), ("/app.css", "text/css")] {
        let reply = send(addr, "GET", path, None, &[]).await;
        assert_eq!(reply.status, 200, "{path}");
        assert!(reply.header("content-type").unwrap().starts_with(kind), "{path}");
        assert!(reply.header("content-security-policy").unwrap().contains("default-src 'self'"));
        assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    }
    assert!(send(addr, "GET", "/", None, &[]).await.body.contains(r#"<script src="/app.js""#));
    assert_eq!(send(addr, "HEAD", "/app.js", None, &[]).await.status, 200);
    assert_eq!(send(addr, "GET", "/api/conversations", None, &[]).await.status, 401);
    let authorized = send(addr, "GET", "/api/conversations", None, &["authorization: Bearer s3cret"]).await;
    assert_eq!((authorized.status, authorized.json()), (200, json!([])));
    // Another site's page cannot reach the API, token or not.
    let foreign = send(
        addr,
        "GET",
        "/api/conversations",
        None,
        &["authorization: Bearer s3cret", "origin: https://evil.example"],
    )
    .await;
    assert_eq!(foreign.status, 403);
    // Without an ADK API, ADK's routes are not there.
    assert_eq!(send(addr, "GET", "/list-apps", None, &["authorization: Bearer s3cret"]).await.status, 404);
}

#[tokio::test]
async fn a_second_message_while_the_first_is_answered_is_a_409() {
    let slow = ScriptedLlm::new([
        ScriptedAnswer::text("First."),
        ScriptedAnswer::call("wait", json!({})),
        ScriptedAnswer::text("Waited."),
        ScriptedAnswer::text("Third."),
    ]);
    let chat = chat(Models::default().with("mock/a", slow), |api| api).await;
    let definition = chat.define(json!({"name": "Patient", "model": "mock/a", "tools": ["wait"]})).await;
    let first = chat.turn(json!({"message": "Hi", "agentDefinitionId": definition["id"]})).await;
    let id = first[0]["conversationId"].clone();
    let (slow_turn, racing) = tokio::join!(chat.turn(json!({"message": "Wait", "conversationId": id})), async {
        // While the tool runs.
        tokio::time::sleep(Duration::from_millis(100)).await;
        chat.stream(json!({"message": "Hurry", "conversationId": id})).await
    });
    assert_eq!(racing.status, 409, "{}", racing.body);
    assert!(racing.json()["detail"].as_str().unwrap().contains("still answering"));
    assert_eq!(tokens(&slow_turn), "Waited.");
    // Nothing of the refused message was stored; once done, the conversation takes messages again.
    let contents: Vec<String> = chat.store.messages(uuid(&id)).await.unwrap().into_iter().map(|m| m.content).collect();
    assert_eq!(contents, ["Hi", "First.", "Wait", "Waited."]);
    assert_eq!(tokens(&chat.turn(json!({"message": "Again", "conversationId": id})).await), "Third.");
}

/// A tool whose output is large.
fn big_tool() -> FunctionTool {
    FunctionTool::new("dump", "Dumps a lot.", json!({"type": "object"}), |_, _| async move {
        Ok(json!({"data": "x".repeat(100 * 1024)}))
    })
}

#[tokio::test]
async fn a_client_that_stops_reading_does_not_stall_the_turn() {
    // 200 calls at once, each result cut to 64 KiB in its frame: more than the frame buffer and
    // the socket's buffers hold.
    let calls = ScriptedAnswer::calls((0..200).map(|_| ("dump".to_owned(), json!({}))));
    let models = Models::default().with("mock/a", ScriptedLlm::new([calls, ScriptedAnswer::text("Dumped.")]));
    let chat = chat(models, |api| api.send_timeout(Duration::from_millis(200))).await;
    let (addr, store) = (chat.addr, chat.store.clone());
    let definition = chat.define(json!({"name": "D", "model": "mock/a", "tools": ["dump"]})).await;
    let body = json!({"message": "Dump", "agentDefinitionId": definition["id"]}).to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /api/chat/stream HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The connection stays open and is never read: the turn still ends and is stored.
    let stored = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(c) = store.conversations(1).await.unwrap().first().cloned() {
                let messages = store.messages(c.id).await.unwrap();
                if messages.len() == 2 {
                    return messages;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the turn ends although its client does not read");
    assert_eq!(stored[1].content, "Dumped.");
    drop(stream);
}

#[tokio::test]
async fn large_tool_results_are_cut_in_frames_and_kept_whole_in_the_run() {
    let model = ScriptedLlm::new([ScriptedAnswer::call("dump", json!({})), ScriptedAnswer::text("Done.")]);
    let chat = chat(Models::default().with("mock/a", model), |api| api).await;
    let definition = chat.define(json!({"name": "D", "model": "mock/a", "tools": ["dump"]})).await;
    let reply = chat.stream(json!({"message": "Dump", "agentDefinitionId": definition["id"]})).await;
    let frames = reply.frames();
    let completed = of_type(&frames, "mcp_tool").into_iter().find(|f| f["status"] == "completed").unwrap().clone();
    assert_eq!(completed["truncated"], true);
    assert!(completed["result"].as_str().unwrap().len() <= 64 * 1024);
    let trace = chat.store.run(uuid(&frames.last().unwrap()["agentRunId"])).await.unwrap().unwrap();
    assert_eq!(trace.tool_calls[0].output.as_ref().unwrap()["data"].as_str().unwrap().len(), 100 * 1024);
}

#[tokio::test]
async fn a_tool_that_asks_for_a_confirmation_fails_the_turn_clearly() {
    let cautious =
        FunctionTool::new(
            "wipe",
            "Wipes.",
            json!({"type": "object"}),
            |_, _| async move { Ok(json!({"wiped": true})) },
        )
        .require_confirmation();
    let model = ScriptedLlm::new([ScriptedAnswer::call("wipe", json!({}))]);
    let models = Models::default().with("mock/a", model);
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn ChatStore> = Arc::new(SqliteChatStore::open(dir.path().join("chat.db")).unwrap());
    let executor = AgentExecutor::new(store.clone(), Arc::new(models.registry().tool(Arc::new(cautious))));
    let definition = store.create_definition(&AgentDefinitionSpec::new("W", "mock/a").tool("wipe")).await.unwrap();
    let (result, events) = execute_streaming(&executor, ExecuteRequest::new(definition, "Wipe")).await;
    assert_eq!(result.status, RunStatus::Failed);
    assert!(result.error.as_deref().unwrap().contains("`wipe` asks for a confirmation"), "{result:?}");
    // The call is reported as not run.
    let ends: Vec<&StreamEvent> = events.iter().filter(|e| matches!(e, StreamEvent::ToolCallEnd { .. })).collect();
    assert!(matches!(ends[0], StreamEvent::ToolCallEnd { error: Some(_), .. }), "{events:#?}");
    assert!(matches!(events.last(), Some(StreamEvent::Error { .. })));
}

#[tokio::test]
async fn conversations_are_listed_newest_first_within_a_limit() {
    let chat = chat(Models::default().with("plain", ScriptedLlm::texts(["1", "2", "3"])), |api| api).await;
    for message in ["a", "b", "c"] {
        chat.turn(json!({"message": message})).await;
    }
    let two = send(chat.addr, "GET", "/api/conversations?limit=2", None, &[]).await.json();
    let titles: Vec<&str> = two.as_array().unwrap().iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["c", "b"]);
    for bad in ["0", "1001", "x"] {
        let reply = send(chat.addr, "GET", &format!("/api/conversations?limit={bad}"), None, &[]).await;
        assert_eq!(reply.status, 400, "{bad}");
    }
}
