//! Spec 000 (ADK adapters over an application's message store): one test per scenario, named
//! after it. The model adapter's scenarios ("Model adapter streams LLM responses",
//! "SystemInstruction Forwarding", "convertMessages forwards FunctionCall ID") are in `model.rs`.
//! The scenarios run over the in-memory store; `message_stores.rs` runs the SQL stores.

use std::sync::Arc;

use futures::StreamExt as _;
use serde_json::{Map, Value, json};
use sinew_adk::adapter::{DEFAULT_AUTHOR, correction_message, message_from_event, truncate_to_budget};
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{
    ChatMessage, Content, ConversationKey, Error, Event, EventsAdapter, FunctionCall, FunctionResponse,
    GetSessionConfig, InMemoryMessageStore, LlmAgent, MessageStore, ModelAdapter, Part, RunConfig, Runner,
    SessionService, SessionServiceAdapter, StreamingMode, ToolAdapter, ToolCall, run_and_collect,
};
use sinew_compaction::HeuristicTokenCounter;
use sinew_testing::{EchoTool, MockProvider, MockResponse};

fn key() -> ConversationKey {
    ConversationKey::new("app", "u", "s1")
}

fn map(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// An adapter over a fresh store holding conversation `s1` with `messages`.
async fn adapter_with(messages: &[ChatMessage]) -> (SessionServiceAdapter, Arc<InMemoryMessageStore>) {
    let store = Arc::new(InMemoryMessageStore::new());
    store.create(&key(), Map::new(), 1.0).await.unwrap();
    for message in messages {
        store.append(&key(), Some(message), &Map::new(), message.timestamp).await.unwrap();
    }
    (SessionServiceAdapter::new(store.clone()).root_agent_name("root"), store)
}

async fn load(adapter: &SessionServiceAdapter) -> sinew_adk::Session {
    adapter.get_session("app", "u", "s1", GetSessionConfig::default()).await.unwrap().unwrap()
}

fn model_event(parts: Vec<Part>) -> Event {
    Event::from_response("e-1", "root", sinew_adk::LlmResponse::new(Content::new("model", parts)))
}

fn texts(events: &[Event]) -> Vec<String> {
    events.iter().map(|e| e.content.as_ref().map(Content::text).unwrap_or_default()).collect()
}

// ---- Requirement: ADK Agent Abstraction; Tool Adapter ----

/// The agent is made from the configured model (any sinew provider) and tools (any sinew tool).
#[tokio::test]
async fn agent_initialization() {
    let provider = Arc::new(MockProvider::new([MockResponse::text("hello")]));
    let agent = LlmAgent::builder("root")
        .model(Arc::new(ModelAdapter::new(provider.clone(), "mock-model")))
        .instruction("Be brief.")
        .tool(Arc::new(ToolAdapter::new(Arc::new(EchoTool))))
        .build()
        .unwrap();
    let (adapter, _) = adapter_with(&[]).await;
    let runner = Runner::new("app", Arc::new(agent), Arc::new(adapter)).unwrap();
    let answer = run_and_collect(&runner, "u", "s1", Content::user_text("hi"), RunConfig::default()).await.unwrap();
    assert_eq!(answer, "hello");
    let seen = &provider.requests()[0];
    assert_eq!(seen.model, "mock-model");
    assert!(seen.system_prompt.contains("Be brief."), "{}", seen.system_prompt);
    assert_eq!(seen.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["echo"]);
}

/// ADK calls a sinew tool through the adapter: the arguments go in, the result comes back to
/// the model, and both land in the store.
#[tokio::test]
async fn execute_legacy_tool() {
    let provider = Arc::new(MockProvider::new([
        MockResponse::new().tool_call("call-1", "echo", json!({"text": "ping"})),
        MockResponse::text("done"),
    ]));
    let agent = LlmAgent::builder("root")
        .model(Arc::new(ModelAdapter::new(provider.clone(), "mock-model")))
        .tool(Arc::new(ToolAdapter::new(Arc::new(EchoTool))))
        .build()
        .unwrap();
    let (adapter, store) = adapter_with(&[]).await;
    let runner = Runner::new("app", Arc::new(agent), Arc::new(adapter)).unwrap();
    let answer = run_and_collect(&runner, "u", "s1", Content::user_text("echo ping"), RunConfig::default()).await;
    assert_eq!(answer.unwrap(), "done");
    let stored = store.load(&key()).await.unwrap().unwrap().messages;
    let roles: Vec<&str> = stored.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(stored[1].tool_calls, [ToolCall::call("call-1", "echo", r#"{"text":"ping"}"#)]);
    assert_eq!(stored[2].tool_calls[0].output.as_deref(), Some(r#"{"result":"ping"}"#));
    // The second request carried the tool's result under the call's id.
    let second = &provider.requests()[1];
    assert!(format!("{:?}", second.messages).contains("call-1"));
}

// ---- Requirement: Ent State Adapter ----

#[tokio::test]
async fn load_session() {
    let store = InMemoryMessageStore::new();
    store.create(&key(), map(json!({"topic": "weather"})), 1.0).await.unwrap();
    for (i, message) in
        [ChatMessage::new("user", "hi"), ChatMessage::new("assistant", "hello").author("root")].into_iter().enumerate()
    {
        let message = message.at(10.0 + i as f64);
        store.append(&key(), Some(&message), &Map::new(), message.timestamp).await.unwrap();
    }
    let adapter = SessionServiceAdapter::new(Arc::new(store));
    let session = load(&adapter).await;
    assert_eq!(texts(&session.events), ["hi", "hello"]);
    assert_eq!(session.events[0].content.as_ref().unwrap().role(), "user");
    assert_eq!(session.events[1].content.as_ref().unwrap().role(), "model");
    assert_eq!((&*session.events[0].author, &*session.events[1].author), ("user", "root"));
    assert_eq!(session.events[1].timestamp, 11.0);
    assert_eq!(session.state["topic"], "weather");
    assert!(adapter.get_session("app", "u", "nope", GetSessionConfig::default()).await.unwrap().is_none());
}

#[tokio::test]
async fn save_session() {
    let (adapter, store) = adapter_with(&[]).await;
    let mut session = load(&adapter).await;
    let mut event = model_event(vec![Part::text("noted")]);
    event.actions.state_delta = map(json!({"topic": "weather", "temp:scratch": 1}));
    adapter.append_event(&mut session, event).await.unwrap();
    let stored = store.load(&key()).await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 1);
    assert_eq!(stored.messages[0].content, "noted");
    assert_eq!(stored.state, map(json!({"topic": "weather"})), "temp: state is never stored");
    assert_eq!(texts(&session.events), ["noted"], "the in-memory history shows the persisted message");
    assert_eq!(session.state["temp:scratch"], 1);
}

// ---- Requirement: AppendEvent In-Memory History Sync ----

#[tokio::test]
async fn user_message_visible_after_append_event() {
    let (adapter, store) = adapter_with(&[]).await;
    let mut session = load(&adapter).await;
    adapter.append_event(&mut session, Event::user("e-1", Content::user_text("hello"))).await.unwrap();
    assert_eq!(store.load(&key()).await.unwrap().unwrap().messages[0].content, "hello");
    assert_eq!(texts(&session.events), ["hello"]);
    assert_eq!(&*session.events[0].author, "user");
}

#[tokio::test]
async fn multiple_events_accumulate_in_memory() {
    let (adapter, store) = adapter_with(&[]).await;
    let mut session = load(&adapter).await;
    adapter.append_event(&mut session, Event::user("e-1", Content::user_text("one"))).await.unwrap();
    adapter.append_event(&mut session, model_event(vec![Part::text("two")])).await.unwrap();
    adapter.append_event(&mut session, Event::user("e-2", Content::user_text("three"))).await.unwrap();
    assert_eq!(texts(&session.events), ["one", "two", "three"]);
    // The same event again is stored once, and shown once.
    let again = session.events[1].clone();
    adapter.append_event(&mut session, again).await.unwrap();
    assert_eq!(texts(&session.events), ["one", "two", "three"]);
    let reloaded = load(&adapter).await;
    assert_eq!(texts(&reloaded.events), ["one", "two", "three"]);
    assert_eq!(store.load(&key()).await.unwrap().unwrap().messages.len(), 3);
}

#[tokio::test]
async fn state_delta_only_events_skip_history() {
    let (adapter, store) = adapter_with(&[]).await;
    let mut session = load(&adapter).await;
    let mut event = Event::from_response("e-1", "root", sinew_adk::LlmResponse::default());
    event.actions.state_delta = map(json!({"step": 2}));
    adapter.append_event(&mut session, event).await.unwrap();
    assert!(session.events.is_empty(), "not in the in-memory history");
    let stored = store.load(&key()).await.unwrap().unwrap();
    assert!(stored.messages.is_empty(), "not stored as a message");
    assert_eq!((&session.state["step"], &stored.state["step"]), (&json!(2), &json!(2)), "its state is kept");
}

// ---- Requirement: History Management ----

/// Ten messages of about 100 tokens each (400 bytes at 4 bytes a token).
fn long_history() -> Vec<ChatMessage> {
    (0..10)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            ChatMessage::new(role, format!("{i}{}", "x".repeat(399)))
        })
        .collect()
}

#[tokio::test]
async fn history_truncation_with_explicit_budget() {
    let history = long_history();
    let (adapter, _) = adapter_with(&history).await;
    let adapter = adapter.token_budget(350);
    let session = load(&adapter).await;
    // 104 tokens a message: three fit in 350, the newest three.
    let firsts: Vec<char> = texts(&session.events).iter().map(|t| t.chars().next().unwrap()).collect();
    assert_eq!(firsts, ['7', '8', '9']);
}

#[tokio::test]
async fn default_token_budget() {
    // 400 messages of ~104 tokens: 41,600 tokens, more than the default 32,000.
    let history: Vec<ChatMessage> =
        (0..400).map(|i| ChatMessage::new("user", format!("{i:04}{}", "x".repeat(396)))).collect();
    let kept = truncate_to_budget(&history, 0, &HeuristicTokenCounter);
    assert_eq!(kept.len(), 32_000 / 104);
    assert_eq!(kept.last(), history.last());
    let (adapter, _) = adapter_with(&history).await;
    assert_eq!(load(&adapter).await.events.len(), 32_000 / 104, "the adapter's budget is 0 unless set");
}

#[tokio::test]
async fn event_author_mapping() {
    let events = EventsAdapter::new("root").events(&[
        ChatMessage::new("user", "hi"),
        ChatMessage::new("assistant", "hello"),
        ChatMessage::new("assistant", "from a sub-agent").author("helper"),
    ]);
    let authors: Vec<&str> = events.iter().map(|e| &*e.author).collect();
    assert_eq!(authors, ["user", "root", "helper"]);
}

#[tokio::test]
async fn model_role_mapping() {
    let message = ChatMessage::new("model", "hello");
    assert_eq!(&*EventsAdapter::new("root").events(std::slice::from_ref(&message))[0].author, "root");
    let unnamed = EventsAdapter::new("").events(&[message]);
    assert_eq!(&*unnamed[0].author, DEFAULT_AUTHOR);
    assert_ne!(&*unnamed[0].author, "model");
    assert_eq!(unnamed[0].content.as_ref().unwrap().role(), "model");
}

#[tokio::test]
async fn unknown_role_fallback() {
    for role in ["critic", "system", ""] {
        let events = EventsAdapter::new("root").events(&[ChatMessage::new(role, "note")]);
        assert_eq!(&*events[0].author, "root", "{role:?}");
        let events = EventsAdapter::new("").events(&[ChatMessage::new(role, "note")]);
        assert_eq!(&*events[0].author, DEFAULT_AUTHOR, "{role:?}");
    }
}

// ---- Requirement: Agent hallucination retry in RunAndCollect ----

/// A root agent with sub-agents `billing` and `support` whose model answers `answers`.
fn team(answers: Vec<ScriptedAnswer>) -> (Runner, Arc<ScriptedLlm>) {
    let llm = Arc::new(ScriptedLlm::new(answers));
    let sub = |name: &str| Arc::new(LlmAgent::builder(name).model(llm.clone()).build().unwrap());
    let root = LlmAgent::builder("root").model(llm.clone()).sub_agent(sub("billing")).sub_agent(sub("support"));
    let sessions = Arc::new(sinew_adk::InMemorySessionService::new());
    (Runner::new("app", Arc::new(root.build().unwrap()), sessions).unwrap().auto_create_session(), llm)
}

fn transfer(to: &str) -> ScriptedAnswer {
    ScriptedAnswer::call("transfer_to_agent", json!({"agent_name": to}))
}

/// The user turns the model saw in its last request.
fn last_user_texts(llm: &ScriptedLlm) -> Vec<String> {
    let (request, _) = llm.requests().pop().unwrap();
    request.contents.iter().filter(|c| c.role() == "user").map(Content::text).filter(|t| !t.is_empty()).collect()
}

#[tokio::test]
async fn hallucinated_agent_name_triggers_retry() {
    let (runner, llm) = team(vec![transfer("sales"), ScriptedAnswer::text("sorry, the right team is billing")]);
    run_and_collect(&runner, "u", "s1", Content::user_text("refund?"), RunConfig::default()).await.unwrap();
    let correction = correction_message("sales", &["billing", "support"]);
    assert_eq!(
        correction,
        "[System: Agent \"sales\" does not exist. Valid agents: billing, support. Please retry using one of the valid agent names listed above.]"
    );
    assert_eq!(last_user_texts(&llm).last(), Some(&correction));
    assert_eq!(llm.requests().len(), 2, "retried exactly once");
}

#[tokio::test]
async fn retry_succeeds() {
    let (runner, _) = team(vec![transfer("sales"), transfer("billing"), ScriptedAnswer::text("Billing here.")]);
    let answer = run_and_collect(&runner, "u", "s1", Content::user_text("refund?"), RunConfig::default()).await;
    assert_eq!(answer.unwrap(), "Billing here.");
}

#[tokio::test]
async fn retry_also_fails() {
    let (runner, llm) = team(vec![transfer("sales"), transfer("marketing")]);
    let error = run_and_collect(&runner, "u", "s1", Content::user_text("refund?"), RunConfig::default()).await;
    assert!(matches!(&error, Err(Error::UnknownAgent { name }) if name == "marketing"), "the retry's error: {error:?}");
    assert_eq!(llm.requests().len(), 2, "no second retry");
}

#[tokio::test]
async fn non_hallucination_error_is_not_retried() {
    // The transfer works, and the sub-agent's model call is one too many.
    let (runner, llm) = team(vec![transfer("billing"), ScriptedAnswer::text("Billing here.")]);
    let mut config = RunConfig::default();
    config.max_llm_calls = 1;
    let error = run_and_collect(&runner, "u", "s1", Content::user_text("refund?"), config).await;
    assert!(matches!(error, Err(Error::LlmCallsLimitExceeded(1))), "{error:?}");
    assert_eq!(llm.requests().len(), 1, "returned at once");
}

#[tokio::test]
async fn no_sub_agents_means_no_retry() {
    let llm = Arc::new(ScriptedLlm::new([transfer("sales"), ScriptedAnswer::text("never")]));
    // A lone agent has no transfer tool; a custom one fails the same way a transfer would.
    let agent = LlmAgent::builder("root")
        .model(llm.clone())
        .tool(Arc::new(sinew_adk::FunctionTool::new(
            "transfer_to_agent",
            "Transfers.",
            json!({"type": "object"}),
            |args, _| async move {
                Err(sinew_core::ToolError::Failed(
                    format!("failed to find agent: {}", args["agent_name"].as_str().unwrap_or_default()).into(),
                ))
            },
        )))
        .build()
        .unwrap();
    let runner = Runner::new("app", Arc::new(agent), Arc::new(sinew_adk::InMemorySessionService::new()))
        .unwrap()
        .auto_create_session();
    let error = run_and_collect(&runner, "u", "s1", Content::user_text("x"), RunConfig::default()).await;
    assert!(error.unwrap_err().to_string().contains("failed to find agent: sales"));
    assert_eq!(llm.requests().len(), 1, "no retry");
}

// ---- Requirement: Agent text collection avoids duplication ----

#[tokio::test]
async fn streaming_mode_collects_from_partial_events_only() {
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::streamed(&["Hello ", "world"])]));
    let agent = LlmAgent::builder("root").model(llm).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), Arc::new(sinew_adk::InMemorySessionService::new()))
        .unwrap()
        .auto_create_session();
    let mut config = RunConfig::default();
    config.streaming_mode = StreamingMode::Sse;
    // The run yields the fragments and then the whole text again.
    let events: Vec<Event> =
        runner.run("u", "s0", Some(Content::user_text("hi")), None, config.clone()).map(Result::unwrap).collect().await;
    assert!(
        events.iter().any(Event::is_partial)
            && events.iter().any(|e| !e.is_partial() && texts(std::slice::from_ref(e)) == ["Hello world"])
    );
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::streamed(&["Hello ", "world"])]));
    let agent = LlmAgent::builder("root").model(llm).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), Arc::new(sinew_adk::InMemorySessionService::new()))
        .unwrap()
        .auto_create_session();
    let answer = run_and_collect(&runner, "u", "s1", Content::user_text("hi"), config).await.unwrap();
    assert_eq!(answer, "Hello world");
}

#[tokio::test]
async fn non_streaming_mode_collects_from_final_event() {
    let llm = Arc::new(ScriptedLlm::texts(["Hello world"]));
    let agent = LlmAgent::builder("root").model(llm).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), Arc::new(sinew_adk::InMemorySessionService::new()))
        .unwrap()
        .auto_create_session();
    let answer = run_and_collect(&runner, "u", "s1", Content::user_text("hi"), RunConfig::default()).await.unwrap();
    assert_eq!(answer, "Hello world");
}

// ---- Requirement: AppendEvent preserves FunctionCall metadata ----

#[tokio::test]
async fn function_call_with_original_id() {
    let call = FunctionCall::new(Some("adk-uuid-123".into()), "exec", map(json!({"cmd": "ls"})));
    let message = message_from_event(&model_event(vec![Part::function_call(call)])).unwrap();
    assert_eq!(message.role, "assistant");
    assert_eq!(message.tool_calls, [ToolCall::call("adk-uuid-123", "exec", r#"{"cmd":"ls"}"#)]);
}

#[tokio::test]
async fn function_call_without_id() {
    let call = FunctionCall::new(None, "search", map(json!({"q": "rust"})));
    let message = message_from_event(&model_event(vec![Part::function_call(call)])).unwrap();
    assert_eq!(message.tool_calls[0].id, "call_search");
    assert_eq!(message.tool_calls[0].name, "search");
}

// ---- Requirement: AppendEvent stores FunctionResponse metadata ----

#[tokio::test]
async fn function_response_with_full_metadata() {
    let (adapter, store) = adapter_with(&[]).await;
    let mut session = load(&adapter).await;
    let response = FunctionResponse::new(Some("adk-uuid-123".into()), "exec", map(json!({"output": "file.txt"})));
    let event = Event::from_response(
        "e-1",
        "root",
        sinew_adk::LlmResponse::new(Content::new("user", vec![Part::function_response(response)])),
    );
    adapter.append_event(&mut session, event).await.unwrap();
    let stored = &store.load(&key()).await.unwrap().unwrap().messages[0];
    assert_eq!(stored.role, "tool");
    assert_eq!(stored.tool_calls, [ToolCall::response("adk-uuid-123", "exec", r#"{"output":"file.txt"}"#)]);
    assert_eq!(stored.content, r#"{"output":"file.txt"}"#);
}

// ---- Requirement: EventsAdapter reconstructs FunctionCall with ID ----

#[tokio::test]
async fn assistant_message_with_function_call_tool_calls() {
    let message =
        ChatMessage::new("assistant", "").tool_call(ToolCall::call("adk-uuid-123", "exec", r#"{"cmd":"ls"}"#));
    let event = &EventsAdapter::new("root").events(&[message])[0];
    let calls: Vec<&FunctionCall> = event.function_calls().collect();
    assert_eq!(calls, [&FunctionCall::new(Some("adk-uuid-123".into()), "exec", map(json!({"cmd": "ls"})))]);
}

// ---- Requirement: EventsAdapter reconstructs FunctionResponse from new format ----

#[tokio::test]
async fn tool_message_with_function_response_metadata_in_tool_calls() {
    let message =
        ChatMessage::new("tool", "").tool_call(ToolCall::response("adk-uuid-123", "exec", r#"{"result":"ok"}"#));
    let event = &EventsAdapter::new("root").events(&[message])[0];
    let responses: Vec<&FunctionResponse> = event.function_responses().collect();
    assert_eq!(responses, [&FunctionResponse::new(Some("adk-uuid-123".into()), "exec", map(json!({"result": "ok"})))]);
    assert_eq!(event.content.as_ref().unwrap().role(), "function");
}

// ---- Requirement: EventsAdapter legacy FunctionResponse fallback ----

#[tokio::test]
async fn legacy_tool_message_without_tool_calls() {
    let events = EventsAdapter::new("root").events(&[
        ChatMessage::new("assistant", "").tool_call(ToolCall::call("call_exec", "exec", "{}")),
        ChatMessage::new("tool", r#"{"result":"file.txt"}"#),
    ]);
    let responses: Vec<&FunctionResponse> = events[1].function_responses().collect();
    assert_eq!(
        responses,
        [&FunctionResponse::new(Some("call_exec".into()), "exec", map(json!({"result": "file.txt"})))]
    );
    // Two calls, two legacy results: matched by position.
    let events = EventsAdapter::new("root").events(&[
        ChatMessage::new("assistant", "")
            .tool_call(ToolCall::call("c1", "a", "{}"))
            .tool_call(ToolCall::call("c2", "b", "{}")),
        ChatMessage::new("tool", "first"),
        ChatMessage::new("tool", "[2]"),
    ]);
    let second: Vec<&FunctionResponse> = events[2].function_responses().collect();
    assert_eq!(second, [&FunctionResponse::new(Some("c2".into()), "b", map(json!({"result": [2]})))]);
    let first: Vec<&FunctionResponse> = events[1].function_responses().collect();
    assert_eq!(first[0].response.as_ref().unwrap()["result"], "first", "text that is not JSON is kept as text");
}

#[tokio::test]
async fn tool_message_with_no_context_for_function_response() {
    let events =
        EventsAdapter::new("root").events(&[ChatMessage::new("user", "hi"), ChatMessage::new("tool", "orphan output")]);
    assert_eq!(events[1].function_responses().count(), 0);
    assert_eq!(texts(&events[1..]), ["orphan output"]);
}

// ---- Requirement: Token budget truncation preserves sequence safety ----

fn sized(role: &str, call: Option<ToolCall>) -> ChatMessage {
    let message = ChatMessage::new(role, "y".repeat(396));
    match call {
        Some(call) => message.tool_call(call),
        None => message,
    }
}

#[tokio::test]
async fn truncation_cuts_before_tool_message() {
    let history = vec![
        sized("user", None),
        sized("assistant", Some(ToolCall::call("c1", "exec", "{}"))),
        sized("tool", Some(ToolCall::response("c1", "exec", "{}"))),
        sized("assistant", None),
        sized("user", None),
    ];
    // Room for the last three: the cut falls on the tool message, which is skipped.
    let kept = truncate_to_budget(&history, 3 * 104 + 20, &HeuristicTokenCounter);
    assert_eq!(kept, &history[3..]);
    // A cut that starts on a call whose responses are not all there (one was lost) skips the
    // call, and then the response that was there.
    let two_calls =
        sized("assistant", Some(ToolCall::call("c1", "a", "{}"))).tool_call(ToolCall::call("c2", "b", "{}"));
    let history = vec![
        sized("user", None),
        two_calls,
        sized("tool", Some(ToolCall::response("c1", "a", "{}"))),
        sized("assistant", None),
        sized("user", None),
    ];
    let kept = truncate_to_budget(&history, 4 * 104 + 30, &HeuristicTokenCounter);
    assert_eq!(kept, &history[3..]);
    // Both answered: the cut may start on the call.
    let mut answered = history.clone();
    answered.insert(3, sized("tool", Some(ToolCall::response("c2", "b", "{}"))));
    let kept = truncate_to_budget(&answered, 5 * 104 + 30, &HeuristicTokenCounter);
    assert_eq!(kept, &answered[1..]);
}

#[tokio::test]
async fn no_truncation_preserves_trailing_function_call() {
    let history = vec![
        ChatMessage::new("user", "list files"),
        ChatMessage::new("assistant", "").tool_call(ToolCall::call("c1", "exec", r#"{"cmd":"ls"}"#)),
    ];
    let kept = truncate_to_budget(&history, 0, &HeuristicTokenCounter);
    assert_eq!(kept, &history[..], "the response is pending: the call stays");
}
