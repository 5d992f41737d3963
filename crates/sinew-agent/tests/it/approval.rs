//! Human-in-the-loop: approval, rejection, edits, client-side tools, suspension across a save/load.

use serde_json::json;
use sinew_agent::{Agent, AgentSnapshot, Decisions, Error, SUPERSEDED, ToolDecision};
use sinew_core::*;
use sinew_testing::{EchoTool, FnTool, MockProvider, MockResponse, assert_history_valid, kinds};

use crate::{Log, agent, roles, tool_result_texts};

fn danger_tool(log: &Log) -> FnTool {
    let log = log.clone();
    FnTool::new("danger", move |args, _| {
        let log = log.clone();
        async move {
            log.push(args.to_string());
            Ok(ToolResult::text(format!("did {}", args["what"].as_str().unwrap_or_default())))
        }
    })
}

fn suspending_script() -> Vec<MockResponse> {
    vec![
        MockResponse::new().tool_call("d1", "danger", json!({"what": "delete"})).tool_call(
            "e1",
            "echo",
            json!({"text": "safe"}),
        ),
        MockResponse::text("all done"),
    ]
}

fn suspended_agent(log: &Log) -> (Agent, std::sync::Arc<MockProvider>) {
    let (agent, mock) = agent(suspending_script());
    (agent.with_tool(danger_tool(log)).with_tool(EchoTool).with_approval_required_for(["danger"]), mock)
}

#[tokio::test]
async fn a_call_needing_approval_suspends_the_run() {
    let log = Log::default();
    let (mut agent, mock) = suspended_agent(&log);
    let (events, outcome) = agent.prompt("clean up").collect().await;
    assert_eq!(outcome.reason, EndReason::Suspended);
    let requests: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolApprovalRequest { tool_call_id, kind, args, .. } => {
                Some((tool_call_id.clone(), *kind, args.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(requests, [("d1".to_owned(), PendingKind::Approval, json!({"what": "delete"}))]);
    let tail = kinds(&events);
    assert_eq!(tail[tail.len() - 3..], ["tool_approval_request", "turn_end", "agent_end"]);
    assert!(log.entries().is_empty(), "nothing ran");
    assert_eq!(mock.calls(), 1);
    // The stored history stays valid while waiting: the call enters it with its result.
    assert_eq!(roles(agent.messages()), ["user"]);
    let suspension = agent.suspension().unwrap();
    assert_eq!(suspension.calls.len(), 2);
    assert_eq!(suspension.waiting().map(|c| c.tool_call_id.as_str()).collect::<Vec<_>>(), ["d1"]);
    assert_eq!(outcome.suspension.as_ref(), Some(suspension));
}

#[tokio::test]
async fn approve_runs_the_batch_and_the_model_continues() {
    let log = Log::default();
    let (mut agent, mock) = suspended_agent(&log);
    let suspended = agent.prompt("clean up").finish().await;
    let (events, outcome) = agent.resume(Decisions::new().approve("d1")).unwrap().collect().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("all done"));
    assert_eq!(log.entries(), [json!({"what": "delete"}).to_string()]);
    assert_eq!(
        tool_result_texts(&events),
        [("d1".into(), "did delete".into(), false), ("e1".into(), "safe".into(), false)]
    );
    assert!(
        matches!(&events[0], AgentEvent::AgentStart { parent_loop_id: Some(p), continuation_kind: Some(ContinuationKind::Default), .. } if *p == suspended.loop_id)
    );
    assert_eq!(roles(agent.messages()), ["user", "assistant", "toolResult", "toolResult", "assistant"]);
    assert_eq!(mock.requests()[1].messages.len(), 4);
    assert!(agent.suspension().is_none());
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn reject_tells_the_model_why_and_runs_nothing() {
    let log = Log::default();
    let (mut agent, mock) = suspended_agent(&log);
    agent.prompt("clean up").finish().await;
    let (events, _) = agent.resume(Decisions::new().reject("d1", "not on prod")).unwrap().collect().await;
    assert!(log.entries().is_empty());
    assert_eq!(
        tool_result_texts(&events)[0],
        ("d1".into(), "The user rejected this tool call: not on prod".into(), true)
    );
    assert_eq!(mock.calls(), 2, "the model hears about the rejection");
}

#[tokio::test]
async fn edit_runs_the_call_with_the_new_arguments() {
    let log = Log::default();
    let (mut agent, _) = suspended_agent(&log);
    agent.prompt("clean up").finish().await;
    let (events, _) = agent.resume(Decisions::new().edit("d1", json!({"what": "archive"}))).unwrap().collect().await;
    assert_eq!(log.entries(), [json!({"what": "archive"}).to_string()]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolExecutionStart { args, .. } if *args == json!({"what": "archive"})))
    );
}

/// Resumed blind (`finish`: no event is built), an edited call runs with the new arguments, and
/// its `after_tool_execution` hook sees them too.
#[tokio::test]
async fn an_edit_resumed_blind_reaches_the_tool_and_its_after_hook() {
    let log = Log::default();
    let (agent, _) = suspended_agent(&log);
    let after = Log::default();
    let seen = after.clone();
    let mut hooks = sinew_agent::Hooks::default();
    hooks.after_tool_execution = Some(std::sync::Arc::new(move |call: ToolCallRef<'_>, _: &ToolResult, _: bool| {
        seen.push(format!("{} {}", call.id, call.arguments));
    }));
    let mut agent = agent.with_hooks(hooks);
    agent.prompt("clean up").finish().await;
    let outcome = agent.resume(Decisions::new().edit("d1", json!({"what": "archive"}))).unwrap().finish().await;
    assert_eq!(outcome.final_text().as_deref(), Some("all done"));
    assert_eq!(log.entries(), [json!({"what": "archive"}).to_string()]);
    let mut after = after.entries();
    after.sort();
    assert_eq!(after, [format!("d1 {}", json!({"what": "archive"})), format!("e1 {}", json!({"text": "safe"}))]);
}

#[tokio::test]
async fn suspension_survives_a_json_save_and_load_into_a_new_agent() {
    let log = Log::default();
    let (mut agent, _) = suspended_agent(&log);
    agent.prompt("clean up").finish().await;
    let dir = std::env::temp_dir().join(format!("sinew-approval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("agent.json");
    agent.snapshot().save(&path).unwrap();
    drop(agent);

    // A new agent, as another process would build it: same tools, a fresh provider.
    let log2 = Log::default();
    let mock = std::sync::Arc::new(MockProvider::new([MockResponse::text("resumed fine")]));
    let mut agent = Agent::new(std::sync::Arc::clone(&mock), "mock-model")
        .with_tool(danger_tool(&log2))
        .with_tool(EchoTool)
        .with_approval_required_for(["danger"]);
    agent.restore(AgentSnapshot::load(&path).unwrap());
    assert_eq!(agent.suspension().map(|s| s.calls.len()), Some(2));
    let outcome = agent.resume(Decisions::new().approve("d1")).unwrap().finish().await;
    assert_eq!(outcome.final_text().as_deref(), Some("resumed fine"));
    assert_eq!(log2.entries().len(), 1);
    assert_history_valid(agent.messages());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn tools_can_demand_approval_themselves() {
    let log = Log::default();
    let (agent, _) = agent(suspending_script());
    let mut agent = agent.with_tool(danger_tool(&log).requiring_approval()).with_tool(EchoTool);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(outcome.reason, EndReason::Suspended);
}

#[tokio::test]
async fn pause_on_tool_calls_hands_every_call_to_the_host() {
    let (agent, mock) = agent(suspending_script());
    let mut agent = agent.with_pause_on_tool_calls(true);
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(outcome.reason, EndReason::Suspended);
    let kinds: Vec<PendingKind> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolApprovalRequest { kind, .. } => Some(*kind),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [PendingKind::ClientSide, PendingKind::ClientSide]);
    // The host runs both tools itself (no tools are registered here).
    let decisions = Decisions::new().result("d1", ToolResult::text("client deleted"), false).result(
        "e1",
        ToolResult::text("client echo"),
        true,
    );
    let (events, outcome) = agent.resume(decisions).unwrap().collect().await;
    assert_eq!(outcome.final_text().as_deref(), Some("all done"));
    assert_eq!(
        tool_result_texts(&events),
        [("d1".into(), "client deleted".into(), false), ("e1".into(), "client echo".into(), true)]
    );
    assert_eq!(mock.requests()[1].messages.len(), 4);
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn decisions_are_checked_before_resuming() {
    let log = Log::default();
    let (mut agent, _) = suspended_agent(&log);
    assert!(matches!(agent.resume(Decisions::new()), Err(Error::NotSuspended)));
    agent.prompt("q").finish().await;
    assert!(matches!(agent.resume(Decisions::new()), Err(Error::MissingDecision(id)) if id == "d1"));
    assert!(
        matches!(agent.resume(Decisions::new().approve("d1").approve("zz")), Err(Error::UnknownToolCall(id)) if id == "zz")
    );
    let wrong = Decisions::new().decide("d1", ToolDecision::Result { result: ToolResult::text("x"), is_error: false });
    assert!(matches!(agent.resume(wrong), Err(Error::InvalidDecision { decision: "result", .. })));
    // Errors leave the suspension in place.
    assert!(agent.suspension().is_some());
    assert!(agent.continue_run(ContinuationKind::Default).is_err());
}

#[tokio::test]
async fn a_new_prompt_answers_pending_calls_instead_of_running_them() {
    let log = Log::default();
    let (mut agent, mock) = suspended_agent(&log);
    agent.prompt("clean up").finish().await;
    let outcome = agent.prompt("actually, stop").finish().await;
    assert_eq!(outcome.final_text().as_deref(), Some("all done"));
    assert_eq!(mock.requests()[1].messages.len(), 5, "the model sees the unanswered calls as not executed");
    assert!(log.entries().is_empty());
    assert!(agent.suspension().is_none());
    assert_history_valid(agent.messages());
    let results: Vec<&str> = agent
        .messages()
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .map(|r| crate::first_text(&r.content))
        .collect();
    assert_eq!(results, [SUPERSEDED, SUPERSEDED]);
}

#[test]
fn decisions_round_trip_through_json() {
    let decisions = Decisions::new().approve("a").reject("b", "no").edit("c", json!({"x": 1})).result(
        "d",
        ToolResult::text("r"),
        true,
    );
    let json = serde_json::to_string(&decisions).unwrap();
    assert_eq!(serde_json::from_str::<Decisions>(&json).unwrap(), decisions);
}

#[test]
fn snapshots_refuse_unknown_formats() {
    let err = AgentSnapshot::from_json(r#"{"formatVersion": 99}"#).unwrap_err();
    assert_eq!(err.to_string(), "unsupported snapshot format version 99 (this build reads version 1)");
    assert!(matches!(AgentSnapshot::from_json("{"), Err(Error::Json(_))));
    assert!(matches!(AgentSnapshot::load("/nonexistent/sinew.json"), Err(Error::Io { .. })));
}

#[tokio::test]
async fn steering_sent_while_suspended_follows_the_resumed_results() {
    let log = Log::default();
    let (mut agent, mock) = suspended_agent(&log);
    agent.prompt("clean up").finish().await;
    agent.steer(AgentMessage::user("also tidy the desk"));
    agent.resume(Decisions::new().approve("d1")).unwrap().finish().await;
    assert_eq!(roles(agent.messages()), ["user", "assistant", "toolResult", "toolResult", "user", "assistant"]);
    assert_eq!(crate::user_texts(&mock.requests()[1]), ["clean up", "also tidy the desk"]);
    assert_history_valid(agent.messages());
}
