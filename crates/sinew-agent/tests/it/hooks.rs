//! Hooks fire where and in the order documented (REQ-091…093, REQ-182…185).

use std::sync::Arc;

use serde_json::json;
use sinew_agent::{Hooks, SKIPPED_BY_HOOK};
use sinew_core::*;
use sinew_testing::{EchoTool, FnTool, MockResponse, assert_history_valid};

use crate::{Log, agent, tool_result_texts};

/// Every hook, each writing its name (and the observer writing each event) into one log.
fn logging_hooks(log: &Log) -> Hooks {
    let l = log.clone();
    let before_loop = Arc::new(move |_: &sinew_agent::AgentContext| {
        l.push("before_loop");
        true
    });
    let l = log.clone();
    let after_loop = Arc::new(move |_: &[AgentMessage], _: &Usage| l.push("after_loop"));
    let l = log.clone();
    let before_turn = Arc::new(move |_: &[AgentMessage], turn: usize| {
        l.push(format!("before_turn {turn}"));
        true
    });
    let l = log.clone();
    let after_turn = Arc::new(move |_: &[AgentMessage], _: &Usage| l.push("after_turn"));
    let l = log.clone();
    let before_tool = Arc::new(move |call: ToolCallRef<'_>| {
        l.push(format!("before_tool {}", call.id));
        true
    });
    let l = log.clone();
    let after_tool =
        Arc::new(move |call: ToolCallRef<'_>, _: &ToolResult, _: bool| l.push(format!("after_tool {}", call.id)));
    let l = log.clone();
    let before_update = Arc::new(move |id: &str, _: &str, _: &ToolResult| {
        l.push(format!("before_update {id}"));
        true
    });
    let l = log.clone();
    let after_update = Arc::new(move |id: &str, _: &str, _: &ToolResult| l.push(format!("after_update {id}")));
    let l = log.clone();
    let on_event = Arc::new(move |event: &AgentEvent| match event {
        AgentEvent::ToolExecutionStart { tool_call_id, .. }
        | AgentEvent::ToolExecutionUpdate { tool_call_id, .. }
        | AgentEvent::ToolExecutionEnd { tool_call_id, .. } => l.push(format!("{} {tool_call_id}", event.kind())),
        AgentEvent::TurnStart { turn, .. } => l.push(format!("turn_start {turn}")),
        AgentEvent::MessageUpdate { .. } | AgentEvent::MessageStart { .. } | AgentEvent::MessageEnd { .. } => {}
        other => l.push(other.kind()),
    });
    {
        let mut hooks = Hooks::default();
        hooks.before_loop = Some(before_loop);
        hooks.after_loop = Some(after_loop);
        hooks.before_turn = Some(before_turn);
        hooks.after_turn = Some(after_turn);
        hooks.before_tool_execution = Some(before_tool);
        hooks.after_tool_execution = Some(after_tool);
        hooks.before_tool_execution_update = Some(before_update);
        hooks.after_tool_execution_update = Some(after_update);
        hooks.on_event = Some(on_event);
        hooks
    }
}

fn updating_tool() -> FnTool {
    FnTool::new("work", |_args, ctx: ToolContext| async move {
        ctx.update(ToolResult::text("half"));
        Ok(ToolResult::text("done"))
    })
}

#[tokio::test]
async fn hooks_and_events_fire_in_the_documented_order() {
    let log = Log::default();
    let (agent, _) = agent([
        MockResponse::new().tool_call("a", "work", json!({})).tool_call("b", "work", json!({})),
        MockResponse::new().tool_call("c", "work", json!({})),
        MockResponse::text("done"),
    ]);
    let mut agent =
        agent.with_tool(updating_tool()).with_tool_execution(ToolExecution::Sequential).with_hooks(logging_hooks(&log));
    agent.prompt("go").finish().await;
    let tool = |id: &str| {
        vec![
            format!("before_tool {id}"),
            format!("tool_execution_start {id}"),
            format!("before_update {id}"),
            format!("tool_execution_update {id}"),
            format!("after_update {id}"),
            format!("tool_execution_end {id}"),
            format!("after_tool {id}"),
        ]
    };
    let mut expected: Vec<String> = vec!["before_loop".into(), "agent_start".into()];
    expected.extend(["before_turn 1".into(), "turn_start 1".into()]);
    expected.extend(tool("a"));
    expected.extend(tool("b"));
    expected.extend(["turn_end".into(), "after_turn".into(), "before_turn 2".into(), "turn_start 2".into()]);
    expected.extend(tool("c"));
    expected.extend(["turn_end".into(), "after_turn".into(), "before_turn 3".into(), "turn_start 3".into()]);
    expected.extend(["turn_end".into(), "after_turn".into(), "agent_end".into(), "after_loop".into()]);
    assert_eq!(log.entries(), expected);
}

#[tokio::test]
async fn before_loop_false_ends_the_run_before_agent_start() {
    let (agent, mock) = agent([MockResponse::text("never")]);
    let log = Log::default();
    let l = log.clone();
    let hooks = {
        let mut hooks = Hooks::default();
        hooks.before_loop = Some(Arc::new(|_: &sinew_agent::AgentContext| false));
        hooks.after_loop = Some(Arc::new(move |messages: &[AgentMessage], _: &Usage| {
            l.push(format!("after_loop {}", messages.len()))
        }));
        hooks
    };
    let mut agent = agent.with_hooks(hooks);
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(sinew_testing::kinds(&events), ["agent_end"]);
    assert_eq!(outcome.reason, EndReason::Stopped);
    assert_eq!(log.entries(), ["after_loop 0"]);
    assert_eq!(mock.calls(), 0);
}

#[tokio::test]
async fn before_turn_false_stops_after_the_previous_turn() {
    let (agent, mock) =
        agent([MockResponse::new().tool_call("a", "echo", json!({"text": "x"})), MockResponse::text("never")]);
    let hooks = {
        let mut hooks = Hooks::default();
        hooks.before_turn = Some(Arc::new(|_: &[AgentMessage], turn| turn < 2));
        hooks
    };
    let mut agent = agent.with_tool(EchoTool).with_hooks(hooks);
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(mock.calls(), 1);
    assert_eq!(outcome.reason, EndReason::Stopped);
    // Deliberate: AgentEnd is always emitted (the abort policy), also when a hook stops the run.
    assert_eq!(events.last().map(AgentEvent::kind), Some("agent_end"));
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn after_turn_runs_once_per_turn_including_failed_ones_and_on_error_gets_the_message() {
    let (agent, _) = agent([
        MockResponse::new().tool_call("a", "echo", json!({"text": "x"})),
        MockResponse::error(ProviderError::Auth("bad key".into())),
    ]);
    let log = Log::default();
    let (l1, l2) = (log.clone(), log.clone());
    let hooks = {
        let mut hooks = Hooks::default();
        hooks.after_turn = Some(Arc::new(move |_: &[AgentMessage], _: &Usage| l1.push("after_turn")));
        hooks.on_error = Some(Arc::new(move |message: &str| l2.push(format!("on_error {message}"))));
        hooks
    };
    let mut agent = agent.with_tool(EchoTool).with_hooks(hooks);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(outcome.reason, EndReason::Failed);
    assert_eq!(outcome.error.as_deref(), Some("authentication failed: bad key"));
    assert_eq!(log.entries(), ["after_turn", "on_error authentication failed: bad key", "after_turn"]);
    let last = agent.messages().last().unwrap().as_assistant().unwrap();
    assert_eq!(last.stop_reason, StopReason::Error);
    assert!(last.content.is_empty());
    assert_eq!(last.error_message.as_deref(), Some("authentication failed: bad key"));
}

#[tokio::test]
async fn before_tool_execution_false_skips_only_that_call() {
    let (agent, _) = agent([
        MockResponse::new()
            .tool_call("a", "echo", json!({"text": "1"}))
            .tool_call("b", "echo", json!({"text": "2"}))
            .tool_call("c", "echo", json!({"text": "3"})),
        MockResponse::text("done"),
    ]);
    let log = Log::default();
    let l = log.clone();
    let hooks = {
        let mut hooks = Hooks::default();
        hooks.before_tool_execution = Some(Arc::new(|call: ToolCallRef<'_>| call.id != "b"));
        hooks.after_tool_execution = Some(Arc::new(move |call: ToolCallRef<'_>, _: &ToolResult, _| l.push(call.id)));
        hooks
    };
    let mut agent = agent.with_tool(EchoTool).with_hooks(hooks);
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(
        tool_result_texts(&events),
        [("a".into(), "1".into(), false), ("b".into(), SKIPPED_BY_HOOK.into(), true), ("c".into(), "3".into(), false)]
    );
    assert_eq!(log.entries(), ["a", "c"]);
    assert_eq!(events.iter().filter(|e| e.kind() == "tool_execution_start").count(), 2);
}

#[tokio::test]
async fn a_suppressed_update_emits_nothing_and_the_result_is_unchanged() {
    let (agent, _) = agent([MockResponse::new().tool_call("a", "work", json!({})), MockResponse::text("ok")]);
    let log = Log::default();
    let l = log.clone();
    let hooks = {
        let mut hooks = Hooks::default();
        hooks.before_tool_execution_update = Some(Arc::new(|_: &str, _: &str, _: &ToolResult| false));
        hooks.after_tool_execution_update =
            Some(Arc::new(move |_: &str, _: &str, _: &ToolResult| l.push("after_update")));
        hooks
    };
    let mut agent = agent.with_tool(updating_tool()).with_hooks(hooks);
    let (events, _) = agent.prompt("q").collect().await;
    assert!(!events.iter().any(|e| e.kind() == "tool_execution_update"));
    assert!(log.entries().is_empty());
    assert_eq!(tool_result_texts(&events), [("a".into(), "done".into(), false)]);
}

/// `finish` drops the run's events and the loop builds none for its stream; an `on_event`
/// observer still sees each one a reader of the stream would, with the same content.
#[tokio::test]
async fn an_observer_of_a_finished_run_sees_every_event_a_reader_would() {
    let script = || {
        [
            MockResponse::new().tool_call("a", "work", json!({"n": 1})).tool_call("b", "work", json!({"n": 2})),
            MockResponse::text("all done"),
        ]
    };
    let (read, _) = agent(script());
    let mut read = read.with_tool(updating_tool());
    let (events, read_outcome) = read.prompt("go").collect().await;

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hooks = {
        let seen = Arc::clone(&seen);
        let mut hooks = Hooks::default();
        hooks.on_event = Some(Arc::new(move |event: &AgentEvent| seen.lock().unwrap().push(event.clone())));
        hooks
    };
    let (observed, _) = agent(script());
    let mut observed = observed.with_tool(updating_tool()).with_hooks(hooks);
    let outcome = observed.prompt("go").finish().await;
    let seen = seen.lock().unwrap().clone();

    assert!(sinew_testing::kinds(&events).contains(&"message_update"), "{:?}", sinew_testing::kinds(&events));
    assert_eq!(sinew_testing::kinds(&seen), sinew_testing::kinds(&events));
    // The same messages, whatever their timestamps and loop ids.
    let messages = |events: &[AgentEvent]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                AgentEvent::MessageEnd { message, .. } => Some(crate::text_of(message)),
                AgentEvent::ToolExecutionEnd { result, .. } => Some(content::join_text(&result.content, "")),
                _ => None,
            })
            .collect()
    };
    assert_eq!(messages(&seen), messages(&events));
    assert_eq!(outcome.messages.len(), read_outcome.messages.len());
    assert_eq!(outcome.final_text(), read_outcome.final_text());
}

/// A tool's context has update and progress callbacks when something receives them: a reader of
/// the run's events, an observer, or an update hook; a run finished blind gives it none.
#[tokio::test]
async fn a_tool_gets_callbacks_only_when_something_receives_them() {
    let probe = || {
        let callbacks = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = Arc::clone(&callbacks);
        let tool = FnTool::new("probe", move |_args, ctx: ToolContext| {
            seen.lock().unwrap().push((ctx.on_update.is_some(), ctx.on_progress.is_some()));
            async move { Ok(ToolResult::text("probed")) }
        });
        (tool, callbacks)
    };
    let script = || [MockResponse::new().tool_call("a", "probe", json!({})), MockResponse::text("done")];
    let update_hook = || {
        let mut hooks = Hooks::default();
        hooks.after_tool_execution_update = Some(Arc::new(|_: &str, _: &str, _: &ToolResult| {}));
        hooks
    };
    let observer = || {
        let mut hooks = Hooks::default();
        hooks.on_event = Some(Arc::new(|_: &AgentEvent| {}));
        hooks
    };
    for (case, hooks, read, expected) in [
        ("read", Hooks::default(), true, (true, true)),
        ("finished blind", Hooks::default(), false, (false, false)),
        ("observed", observer(), false, (true, true)),
        ("update hook", update_hook(), false, (true, true)),
    ] {
        let (tool, callbacks) = probe();
        let (agent, _) = agent(script());
        let mut agent = agent.with_tool(tool).with_hooks(hooks);
        let run = agent.prompt("go");
        let outcome = if read { run.collect().await.1 } else { run.finish().await };
        assert_eq!(outcome.final_text().as_deref(), Some("done"), "{case}");
        assert_eq!(*callbacks.lock().unwrap(), [expected], "{case}");
    }
}

/// Without an observer, a finished run builds no events, and its hooks fire as before, in order,
/// `after_tool_execution` with the arguments the tool ran with (an edit's: `approval.rs`).
#[tokio::test]
async fn a_run_finished_blind_fires_every_hook_with_the_real_arguments() {
    let log = Log::default();
    let mut hooks = logging_hooks(&log);
    hooks.on_event = None;
    let l = log.clone();
    hooks.after_tool_execution = Some(Arc::new(move |call: ToolCallRef<'_>, _: &ToolResult, _: bool| {
        l.push(format!("after_tool {} {}", call.id, call.arguments))
    }));
    let (agent, _) = agent([
        MockResponse::new().tool_call("a", "work", json!({"n": 1})).tool_call("b", "work", json!({"n": 2})),
        MockResponse::text("done"),
    ]);
    let mut agent = agent.with_tool(updating_tool()).with_tool_execution(ToolExecution::Sequential).with_hooks(hooks);
    let outcome = agent.prompt("go").finish().await;
    assert_eq!(outcome.final_text().as_deref(), Some("done"));
    let tool = |id: &str, n: u32| {
        vec![
            format!("before_tool {id}"),
            format!("before_update {id}"),
            format!("after_update {id}"),
            format!("after_tool {id} {}", json!({"n": n})),
        ]
    };
    let mut expected: Vec<String> = vec!["before_loop".into(), "before_turn 1".into()];
    expected.extend(tool("a", 1));
    expected.extend(tool("b", 2));
    expected.extend(["after_turn".into(), "before_turn 2".into(), "after_turn".into(), "after_loop".into()]);
    assert_eq!(log.entries(), expected);
}

/// A host that dropped its receiver gets the run's outcome and hooks; the run builds no events
/// for the closed channel (a tool gets no callbacks).
#[tokio::test]
async fn a_host_that_dropped_its_receiver_still_gets_the_outcome() {
    let callbacks = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&callbacks);
    let probe = FnTool::new("probe", move |args: serde_json::Value, ctx: ToolContext| {
        seen.lock().unwrap().push((ctx.on_update.is_some(), args));
        async { Ok(ToolResult::text("probed")) }
    });
    let turns = Arc::new(std::sync::Mutex::new(0));
    let counted = Arc::clone(&turns);
    let mut hooks = Hooks::default();
    hooks.after_turn = Some(Arc::new(move |_: &[AgentMessage], _: &Usage| *counted.lock().unwrap() += 1));
    let (agent, _) =
        agent([MockResponse::new().tool_call("a", "probe", json!({"x": "y"})), MockResponse::text("done")]);
    let mut agent = agent.with_tool(probe).with_hooks(hooks);
    let (tx, rx) = sinew_agent::event_channel();
    drop(rx);
    let outcome = agent.prompt_with_sender("go", tx).await;
    assert_eq!(outcome.final_text().as_deref(), Some("done"));
    assert_eq!(outcome.messages.len(), 4, "the prompt, the call, its result, the answer");
    assert_eq!(*turns.lock().unwrap(), 2);
    assert_eq!(*callbacks.lock().unwrap(), [(false, json!({"x": "y"}))]);
}
