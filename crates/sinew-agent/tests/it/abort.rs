//! Abort anywhere: `AgentEnd` is always emitted and the history stays valid (REQ-067, 082, 161).

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use sinew_agent::{ABORTED, NOT_EXECUTED};
use sinew_core::*;
use sinew_testing::{EchoTool, FnTool, MockResponse, assert_history_valid, streamed_text};

use crate::{agent, tool_result_texts};

/// Runs a prompt, aborting when `when` matches an event; returns the events.
async fn run_and_abort(agent: &mut sinew_agent::Agent, when: impl Fn(&AgentEvent) -> bool) -> Vec<AgentEvent> {
    let handle = agent.handle();
    let mut run = agent.prompt("q");
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        if when(&event) {
            handle.abort();
        }
        events.push(event);
    }
    events
}

#[tokio::test]
async fn abort_mid_stream_keeps_the_partial_text() {
    let (mut agent, _) = agent([MockResponse::new().text_delta("half an ans").hang()]);
    let events = run_and_abort(&mut agent, |e| e.kind() == "message_update").await;
    assert_eq!(streamed_text(&events), "half an ans");
    assert!(matches!(events.last(), Some(AgentEvent::AgentEnd { reason: EndReason::Aborted, .. })));
    assert!(events.iter().any(|e| e.kind() == "turn_end"), "the turn is closed");
    let last = agent.messages().last().unwrap().as_assistant().unwrap();
    assert_eq!((last.stop_reason, last.text().as_str()), (StopReason::Aborted, "half an ans"));
    assert!(!agent.is_streaming());
}

#[tokio::test]
async fn abort_after_tool_calls_were_streamed_answers_them() {
    let (agent, _) = agent([MockResponse::new().tool_call("c1", "echo", json!({"text": "x"})).hang()]);
    let mut agent = agent.with_tool(EchoTool);
    let events = run_and_abort(&mut agent, |e| e.kind() == "message_update").await;
    assert_eq!(tool_result_texts(&events), [("c1".into(), NOT_EXECUTED.into(), true)]);
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn abort_mid_tool_cuts_even_a_tool_that_ignores_cancellation() {
    let stubborn = FnTool::new("stubborn", |_, _| async {
        std::future::pending::<()>().await;
        Ok(ToolResult::text("never"))
    });
    let (agent, mock) = agent([
        MockResponse::new().tool_call("c1", "stubborn", json!({})).tool_call("c2", "echo", json!({"text": "quick"})),
        MockResponse::text("never asked"),
    ]);
    let mut agent = agent.with_tool(stubborn).with_tool(EchoTool);
    let events = run_and_abort(&mut agent, |e| e.kind() == "tool_execution_end").await;
    let results = tool_result_texts(&events);
    assert_eq!(results, [("c1".into(), ABORTED.into(), true), ("c2".into(), "quick".into(), false)]);
    assert_eq!(mock.calls(), 1, "no model call after the abort");
    assert!(matches!(events.last(), Some(AgentEvent::AgentEnd { reason: EndReason::Aborted, .. })));
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn an_aborted_agent_can_be_prompted_again() {
    let (mut agent, _) = agent([MockResponse::new().text_delta("a").hang(), MockResponse::text("fresh")]);
    run_and_abort(&mut agent, |e| e.kind() == "message_update").await;
    let outcome = agent.prompt("again").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("fresh"));
}

#[tokio::test]
async fn dropping_a_run_mid_tool_leaves_a_valid_history() {
    let slow = FnTool::new("slow", |_, ctx: ToolContext| async move {
        ctx.cancel.cancelled().await;
        Err(ToolError::Cancelled)
    });
    let (agent, _) = agent([MockResponse::new().tool_call("c1", "slow", json!({}))]);
    let mut agent = agent.with_tool(slow);
    let handle = agent.handle();
    {
        let mut run = agent.prompt("q");
        while let Some(event) = run.next().await {
            if event.kind() == "tool_execution_start" {
                break;
            }
        }
        assert!(handle.is_running());
    }
    assert!(!handle.is_running());
    assert_history_valid(agent.messages());
    assert_eq!(crate::roles(agent.messages()), ["user"], "the unfinished turn is not recorded");
}

#[tokio::test(start_paused = true)]
async fn abort_is_prompt_during_a_slow_provider() {
    let (mut agent, _) = agent([MockResponse::new().delay(Duration::from_secs(3600)).text_delta("late")]);
    let handle = agent.handle();
    let start = tokio::time::Instant::now();
    let mut run = agent.prompt("q");
    let mut aborted = false;
    while let Some(event) = run.next().await {
        if event.kind() == "message_start" && !aborted {
            handle.abort();
            aborted = true;
        }
    }
    drop(run);
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(agent.messages().last().unwrap().as_assistant().unwrap().stop_reason, StopReason::Aborted);
}

#[tokio::test]
async fn an_abort_before_the_first_turn_still_announces_the_prompt() {
    let (agent, mock) = agent([MockResponse::text("never")]);
    // The observer runs synchronously inside the loop: the abort lands right after AgentStart.
    let handle = agent.handle();
    let hooks = {
        let mut hooks = sinew_agent::Hooks::default();
        hooks.on_event = Some(std::sync::Arc::new(move |event: &AgentEvent| {
            if event.kind() == "agent_start" {
                handle.abort();
            }
        }));
        hooks
    };
    let mut agent = agent.with_hooks(hooks);
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(sinew_testing::kinds(&events), ["agent_start", "message_start", "message_end", "agent_end"]);
    assert_eq!(outcome.reason, EndReason::Aborted);
    assert_eq!(mock.calls(), 0);
    assert_eq!(crate::roles(agent.messages()), ["user"]);
}
