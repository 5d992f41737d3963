//! The happy path: construction, one turn, tool cycles, history persistence.

use std::sync::Arc;

use serde_json::json;
use sinew_agent::{Agent, AgentContext, AgentLoopConfig, Hooks, event_channel};
use sinew_core::*;
use sinew_testing::{EchoTool, MockProvider, MockResponse, assert_history_valid, shape, streamed_text};

use crate::{agent, roles, user_texts};

#[test]
fn smoke_agent_has_documented_defaults_and_builders_apply() {
    let (agent, _) = agent([]);
    let c = agent.config();
    assert_eq!(agent.messages().len(), 0);
    assert!(agent.tools().is_empty());
    assert_eq!(c.thinking_level, ThinkingLevel::Off);
    assert_eq!(c.tool_execution, ToolExecution::Parallel);
    assert_eq!((agent.steering_mode(), agent.follow_up_mode()), (QueueMode::OneAtATime, QueueMode::OneAtATime));
    assert_eq!(c.context_config.as_ref().map(|c| c.max_context_tokens), Some(100_000));
    assert_eq!(c.execution_limits, Some(ExecutionLimits::default()));
    assert_eq!(c.retry_config, RetryConfig::default());
    assert!(!agent.is_streaming());

    let agent = agent
        .with_system_prompt("x")
        .with_model("other")
        .with_max_tokens(100)
        .with_temperature(0.5)
        .with_thinking(ThinkingLevel::High)
        .with_tool(EchoTool)
        .with_tool_execution(ToolExecution::Batched { size: 2 })
        .with_steering_mode(QueueMode::All)
        .with_follow_up_mode(QueueMode::All)
        .with_retry_config(RetryConfig::none())
        .with_cache_config(CacheConfig::new(false, CacheStrategy::Disabled))
        .with_execution_limits(None)
        .with_context_config(None)
        .with_provider(MockProvider::new([]).with_provider_id("other-provider"));
    let c = agent.config();
    assert_eq!(agent.system_prompt(), "x");
    assert_eq!((c.model.as_str(), c.max_tokens, c.temperature), ("other", Some(100), Some(0.5)));
    assert_eq!(c.thinking_level, ThinkingLevel::High);
    assert_eq!(agent.tools().len(), 1);
    assert_eq!(c.tool_execution, ToolExecution::Batched { size: 2 });
    assert_eq!((agent.steering_mode(), agent.follow_up_mode()), (QueueMode::All, QueueMode::All));
    assert_eq!(c.retry_config.max_retries, 0);
    assert!(!c.cache_config.enabled);
    assert_eq!(c.execution_limits, None);
    assert!(c.context_config.is_none());
    assert_eq!(c.provider.provider_id(), "other-provider");
}

#[tokio::test]
async fn single_turn_streams_deltas_and_assembles_the_message() {
    let (agent, mock) = agent([MockResponse::new().text_delta("Hel").text_delta("lo").usage(10, 2)]);
    let mut agent = agent.with_system_prompt("sys");
    let (events, outcome) = agent.prompt("hi").collect().await;
    assert_eq!(
        shape(&events),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    assert_eq!(streamed_text(&events), "Hello");
    let Some(AgentEvent::MessageEnd { message, .. }) = events.iter().rev().find(|e| e.kind() == "message_end") else {
        panic!("no message end");
    };
    assert_eq!(message.as_assistant().map(AssistantMessage::text).as_deref(), Some("Hello"));
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.usage.total_tokens, 12);
    assert_eq!(roles(agent.messages()), ["user", "assistant"]);
    let request = &mock.requests()[0];
    assert_eq!((request.model.as_str(), request.system_prompt.as_str()), ("mock-model", "sys"));
    assert_eq!(user_texts(request), ["hi"]);
    assert!(matches!(events.last(), Some(AgentEvent::AgentEnd { messages, .. }) if messages.len() == 2));
}

#[tokio::test]
async fn tool_call_cycle_calls_the_model_again_with_results() {
    let (agent, mock) = agent([
        MockResponse::new().tool_call("c1", "echo", json!({"text": "one"})).tool_call(
            "c2",
            "echo",
            json!({"text": "two"}),
        ),
        MockResponse::text("done"),
    ]);
    let mut agent = agent.with_tool(EchoTool);
    let (events, outcome) = agent.prompt("go").collect().await;
    assert_eq!(mock.calls(), 2);
    assert_eq!(outcome.final_text().as_deref(), Some("done"));
    assert_eq!(roles(agent.messages()), ["user", "assistant", "toolResult", "toolResult", "assistant"]);
    let results: Vec<&ToolResultMessage> = agent.messages().iter().filter_map(AgentMessage::as_tool_result).collect();
    assert_eq!(
        results.iter().map(|r| (r.tool_call_id.as_str(), crate::first_text(&r.content))).collect::<Vec<_>>(),
        [("c1", "one"), ("c2", "two")]
    );
    // The second request carries the tool results.
    let second = &mock.requests()[1];
    assert_eq!(second.messages.len(), 4);
    assert_eq!(second.tools.len(), 1);
    assert_eq!(second.tools[0].name, "echo");
    let kinds = shape(&events);
    assert_eq!(kinds.iter().filter(|k| **k == "tool_execution_start").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "turn_start").count(), 2);
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn extension_messages_never_reach_the_model() {
    let (mut agent, mock) = agent([MockResponse::text("ok")]);
    agent.set_messages(vec![
        AgentMessage::user("earlier"),
        AgentMessage::Extension(ExtensionMessage { kind: "ui-note".into(), data: json!({"x": 1}) }),
    ]);
    agent.prompt("now").finish().await;
    let request = &mock.requests()[0];
    assert_eq!(request.messages.len(), 2);
    assert_eq!(user_texts(request), ["earlier", "now"]);
    assert_eq!(roles(agent.messages()), ["user", "extension", "user", "assistant"]);
}

#[tokio::test]
async fn messages_save_and_restore_losslessly() {
    let (agent, _) = agent([
        MockResponse::new().thinking_delta("think").thinking_signature("sig").tool_call(
            "c1",
            "echo",
            json!({"text": "x"}),
        ),
        MockResponse::text("done"),
    ]);
    let mut agent = agent.with_tool(EchoTool);
    agent.prompt("go").finish().await;
    let json = agent.save_messages().unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&json).unwrap().is_array());
    let (mut other, _) = crate::agent([]);
    other.restore_messages(&json).unwrap();
    assert_eq!(other.messages(), agent.messages());
    let thinking = other.messages()[1].as_assistant().unwrap().content[0].clone();
    assert_eq!(
        thinking,
        Content::Thinking { thinking: "think".into(), signature: Some("sig".into()), redacted: false, id: None }
    );
    assert!(matches!(other.restore_messages("[{\"role\":\"nobody\"}]"), Err(sinew_agent::Error::Json(_))));
    assert_eq!(other.messages(), agent.messages(), "a failed restore keeps the history");
}

#[tokio::test]
async fn reset_clears_history_queues_and_suspension() {
    let (mut agent, _) = agent([MockResponse::text("a")]);
    agent.prompt("q").finish().await;
    agent.steer(AgentMessage::user("s"));
    agent.follow_up(AgentMessage::user("f"));
    agent.reset();
    assert!(agent.messages().is_empty());
    assert!(!agent.is_streaming());
    // Queues are empty: the next run sees neither message.
    let (mut agent2, mock) = crate::agent([MockResponse::text("x")]);
    agent2.steer(AgentMessage::user("s"));
    agent2.reset();
    agent2.prompt("q").finish().await;
    assert_eq!(user_texts(&mock.requests()[0]), ["q"]);
}

#[tokio::test]
async fn prompt_with_sender_multiplexes_one_channel() {
    let (mut agent, _) = agent([MockResponse::text("one"), MockResponse::text("two")]);
    let (tx, mut rx) = event_channel();
    agent.prompt_with_sender("a", tx.clone()).await;
    agent.prompt_with_sender("b", tx).await;
    let mut ends = 0;
    while let Some(event) = rx.recv().await {
        ends += usize::from(event.kind() == "agent_end");
    }
    assert_eq!(ends, 2);
    assert_eq!(agent.messages().len(), 4);
}

#[tokio::test]
async fn transform_context_and_convert_to_llm_shape_every_request() {
    let (agent, mock) =
        agent([MockResponse::new().tool_call("c", "echo", json!({"text": "x"})), MockResponse::text("ok")]);
    let hooks = {
        let mut hooks = Hooks::default();
        hooks.transform_context = Some(Arc::new(|messages: &[AgentMessage]| {
            let mut out = vec![AgentMessage::user("PREFIX")];
            out.extend_from_slice(messages);
            out
        }));
        hooks
    };
    let mut agent = agent.with_tool(EchoTool).with_hooks(hooks);
    agent.prompt("q").finish().await;
    for request in mock.requests() {
        assert_eq!(user_texts(&request)[0], "PREFIX");
    }
    assert_eq!(roles(agent.messages())[0], "user");
    assert_eq!(crate::text_of(&agent.messages()[0]), "q", "the stored history is not transformed");

    let (agent, mock) = crate::agent([MockResponse::text("ok")]);
    let hooks = {
        let mut hooks = Hooks::default();
        hooks.convert_to_llm = Some(Arc::new(|messages: &[AgentMessage]| {
            messages.iter().map(|m| Message::user(format!("converted {}", crate::text_of(m)))).collect()
        }));
        hooks
    };
    let mut agent = agent.with_hooks(hooks);
    agent.set_messages(vec![AgentMessage::Extension(ExtensionMessage { kind: "ext".into(), data: json!(null) })]);
    agent.prompt("q").finish().await;
    assert_eq!(user_texts(&mock.requests()[0]), ["converted ext", "converted q"]);
}

/// A strategy that forgets everything: the model then sees no history.
struct Forget;

#[async_trait::async_trait]
impl CompactionStrategy for Forget {
    async fn compact(&self, _: &[AgentMessage], _: &ContextConfig) -> Option<Vec<AgentMessage>> {
        Some(Vec::new())
    }
}

#[tokio::test]
async fn a_custom_compaction_strategy_runs_before_each_call() {
    let (agent, mock) = agent([MockResponse::text("ok")]);
    let mut agent = agent.with_compaction_strategy(Forget);
    agent.prompt("q").finish().await;
    assert!(mock.requests()[0].messages.is_empty());

    // Without a context config there is no compaction.
    let (agent, mock) = crate::agent([MockResponse::text("ok")]);
    let mut agent = agent.with_compaction_strategy(Forget).with_context_config(None);
    agent.prompt("q").finish().await;
    assert_eq!(mock.requests()[0].messages.len(), 1);
}

/// Records the budgets it was asked for and drops everything but the last message.
struct KeepLast(Arc<std::sync::Mutex<Vec<usize>>>);

#[async_trait::async_trait]
impl CompactionStrategy for KeepLast {
    async fn compact(&self, messages: &[AgentMessage], config: &ContextConfig) -> Option<Vec<AgentMessage>> {
        self.0.lock().unwrap().push(config.max_context_tokens);
        (config.max_context_tokens < 100_000).then(|| messages[messages.len() - 1..].to_vec())
    }
}

#[tokio::test]
async fn context_overflow_triggers_compaction_before_the_next_call() {
    let overflow = ProviderError::ContextOverflow { message: "prompt is too long: 300000 tokens".into() };
    let (agent, mock) = agent([MockResponse::error(overflow), MockResponse::text("fits now")]);
    let budgets = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut agent =
        agent.with_compaction_strategy(KeepLast(Arc::clone(&budgets))).with_retry_config(RetryConfig::none());
    let long = "x".repeat(4000);
    agent.set_messages(vec![AgentMessage::user(long.clone()), AgentMessage::from(assistant_text("old"))]);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("fits now"));
    let budgets = budgets.lock().unwrap().clone();
    assert_eq!(budgets[0], 100_000, "normal pass first");
    assert!(budgets[1] < 100_000, "the second pass aims below what overflowed: {budgets:?}");
    assert_eq!(mock.requests()[1].messages.len(), 1, "the retry was compacted");
}

pub(crate) fn assistant_text(text: &str) -> AssistantMessage {
    let mut m = AssistantMessage::new("mock", "mock-model");
    m.content.push(Content::text(text));
    m
}

#[tokio::test]
async fn the_low_level_loop_runs_on_a_context() {
    let mock = Arc::new(MockProvider::new([MockResponse::text("hi")]));
    let config = AgentLoopConfig::new(mock.clone(), "m");
    let mut context = AgentContext::default();
    let (tx, mut rx) = event_channel();
    let outcome =
        sinew_agent::agent_loop(vec![AgentMessage::user("q")], &mut context, &config, &tx, &Default::default()).await;
    drop(tx);
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(context.messages.len(), 2);
    assert!(context.agent_id.is_some() && context.session_id.is_some());
    let loop_id = context.loop_id.clone().unwrap();
    assert!(loop_id.ends_with(".mock.m.1"), "{loop_id}");
    let mut first = None;
    while let Some(e) = rx.recv().await {
        first.get_or_insert(e);
    }
    assert!(matches!(first, Some(AgentEvent::AgentStart { continuation_kind: None, parent_loop_id: None, .. })));

    // Continue reuses the identity, without regenerating it.
    let agent_id = context.agent_id.clone();
    context.messages.push(AgentMessage::user("more"));
    mock.push(MockResponse::text("again"));
    let outcome =
        sinew_agent::agent_loop_continue(&mut context, &config, &tx_sink(), &Default::default()).await.unwrap();
    assert_eq!(outcome.final_text().as_deref(), Some("again"));
    assert_eq!(context.agent_id, agent_id);
}

fn tx_sink() -> sinew_agent::EventSender {
    event_channel().0
}

#[tokio::test]
async fn continue_checks_its_preconditions() {
    let config = AgentLoopConfig::new(Arc::new(MockProvider::new([])), "m");
    let cancel = CancellationToken::new();
    let mut context = AgentContext::default();
    let err = sinew_agent::agent_loop_continue(&mut context, &config, &tx_sink(), &cancel).await.unwrap_err();
    assert_eq!(err.to_string(), "cannot continue: agent_loop_continue requires context.agent_id to be set");

    let mut context = AgentContext {
        agent_id: Some("a".into()),
        session_id: Some("s".into()),
        loop_id: Some("l".into()),
        ..AgentContext::default()
    };
    let err = sinew_agent::agent_loop_continue(&mut context, &config, &tx_sink(), &cancel).await.unwrap_err();
    assert_eq!(err.to_string(), "cannot continue: the context has no messages");
    context.messages.push(assistant_text("x").into());
    let err = sinew_agent::agent_loop_continue(&mut context, &config, &tx_sink(), &cancel).await.unwrap_err();
    assert!(err.to_string().contains("last message is from the assistant"), "{err}");

    let (mut agent, _) = crate::agent([]);
    assert!(agent.continue_run(ContinuationKind::Default).is_err());
}

#[tokio::test]
async fn send_chooses_origin_or_continuation() {
    let (mut agent, mock) = agent([MockResponse::text("a"), MockResponse::text("b"), MockResponse::text("c")]);
    let (events, _) = agent.send(AgentMessage::user("first")).collect().await;
    assert!(matches!(events[0], AgentEvent::AgentStart { continuation_kind: None, .. }));
    // Last message is the model's: a new origin call.
    let (events, _) = agent.send(AgentMessage::user("second")).collect().await;
    assert!(matches!(events[0], AgentEvent::AgentStart { continuation_kind: None, .. }));
    // A history awaiting the model: continuation including the new message.
    let mut history = agent.messages().to_vec();
    history.push(AgentMessage::user("pending"));
    agent.set_messages(history);
    let (events, _) = agent.send(AgentMessage::user("third")).collect().await;
    assert!(matches!(
        &events[0],
        AgentEvent::AgentStart { continuation_kind: Some(ContinuationKind::Default), parent_loop_id: Some(_), .. }
    ));
    assert_eq!(user_texts(&mock.requests()[2]), ["first", "second", "pending", "third"]);
}

#[tokio::test]
async fn stateless_runs_leave_the_history_alone() {
    let (agent, mock) = agent([MockResponse::text("one-off")]);
    let mut agent = agent.with_system_prompt("sys");
    let outcome = agent.run_stateless("before").finish().await;
    assert_eq!(outcome.final_text().as_deref(), Some("one-off"));
    agent.run_stateless("q").finish().await;
    assert!(agent.messages().is_empty());
    assert_eq!(mock.requests()[0].system_prompt, "sys");
    assert_eq!(user_texts(&mock.requests()[1]), ["q"], "no history from the first stateless run");
    agent.prompt("stateful").finish().await;
    assert_eq!(agent.messages().len(), 2);
}

#[tokio::test]
async fn the_instruction_provider_runs_before_every_turn() {
    let (agent, mock) =
        agent([MockResponse::new().tool_call("c", "echo", json!({"text": "x"})), MockResponse::text("ok")]);
    let mut agent = agent.with_tool(EchoTool).with_system_prompt("static").with_instruction_provider(
        |ctx: sinew_agent::InstructionContext<'_>| format!("turn {} of {}", ctx.turn, ctx.messages.len()),
    );
    agent.prompt("q").finish().await;
    let prompts: Vec<String> = mock.requests().into_iter().map(|r| r.system_prompt).collect();
    assert_eq!(prompts, ["turn 1 of 1", "turn 2 of 3"]);
}

#[tokio::test]
async fn an_exhausted_script_answers_with_an_empty_stop() {
    let mut agent = Agent::new(MockProvider::new([]), "m");
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let answer = agent.messages()[1].as_assistant().unwrap();
    assert_eq!((answer.stop_reason, answer.content.len()), (StopReason::Stop, 0));
}

#[tokio::test]
async fn duplicate_or_invalid_tool_names_fail_the_run_before_any_model_call() {
    let (agent, mock) = agent([MockResponse::text("never")]);
    let mut agent = agent.with_tool(EchoTool).with_tool(EchoTool);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(outcome.reason, EndReason::Failed);
    assert_eq!(outcome.error.as_deref(), Some("two tools are named `echo`: tool names must be unique"));
    assert_eq!(mock.calls(), 0, "nothing a provider would reject is sent");

    let (agent, mock) = crate::agent([MockResponse::text("never")]);
    let dotted = sinew_testing::FnTool::new("files.read", |_, _| async { Ok(ToolResult::text("x")) });
    let mut agent = agent.with_tool(dotted);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(outcome.reason, EndReason::Failed);
    assert!(outcome.error.as_deref().unwrap().starts_with("tool name `files.read` is not accepted"), "{outcome:?}");
    assert_eq!(mock.calls(), 0);
}

/// The session id is each model call's cache key, so services that route by one (OpenAI's
/// `prompt_cache_key`) keep a conversation on a warm cache.
#[tokio::test]
async fn the_session_id_is_the_cache_key() {
    let (mut agent, mock) = crate::agent([MockResponse::text("a"), MockResponse::text("b")]);
    agent.prompt("one").finish().await;
    agent.prompt("two").finish().await;
    let keys: Vec<Option<String>> = mock.requests().into_iter().map(|r| r.cache_key).collect();
    let session = Some(agent.session_id().to_owned());
    assert_eq!(keys, [session.clone(), session]);
}

/// A response whose deltas are all ready at once is handed to the run's consumer as it is
/// streamed: the run does not queue the whole answer's events before the first is taken.
#[tokio::test]
async fn a_response_ready_at_once_reaches_the_consumer_as_it_streams() {
    use futures::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let mut response = MockResponse::new();
    for i in 0..1_000 {
        response = response.text_delta(format!("t{i} "));
    }
    let (agent, _) = agent([response]);
    let emitted = Arc::new(AtomicUsize::new(0));
    let counter = emitted.clone();
    let mut hooks = Hooks::default();
    hooks.on_event = Some(Arc::new(move |event: &AgentEvent| {
        if matches!(event, AgentEvent::MessageUpdate { .. }) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }));
    let mut agent = agent.with_hooks(hooks);
    let mut run = agent.prompt("go");
    let mut taken = Vec::new();
    let mut emitted_at_first = None;
    while let Some(event) = run.next().await {
        if let AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } = event {
            emitted_at_first.get_or_insert(emitted.load(Ordering::Relaxed));
            taken.push(delta);
        }
    }
    let emitted_at_first = emitted_at_first.expect("deltas were streamed");
    assert!(emitted_at_first <= 64, "{emitted_at_first} deltas were queued before the first was taken");
    assert_eq!(taken.len(), 1_000, "every delta arrives, once");
    assert_eq!(taken.concat(), (0..1_000).map(|i| format!("t{i} ")).collect::<String>(), "in order");
}
