//! Sub-agents end to end through `MockProvider` (REQ-141, REQ-148…REQ-151, REQ-163, REQ-194,
//! REQ-195).

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::json;
use sinew_agent::{NO_TEXT_OUTPUT, SubAgentTool, extract_final_text};
use sinew_core::*;
use sinew_testing::{EchoTool, MockProvider, MockResponse, assert_history_valid};

use crate::{agent, tool_result_texts};

fn check(messages: Vec<AgentMessage>, expected: &str) {
    assert_eq!(extract_final_text(&messages), expected);
}

fn answer(text: &str) -> AgentMessage {
    let mut message = AssistantMessage::new("mock", "m");
    if !text.is_empty() {
        message.content = vec![Content::text(text)];
    }
    message.into()
}

fn failed(error: &str) -> AgentMessage {
    let mut message = AssistantMessage::new("mock", "m");
    message.stop_reason = StopReason::Error;
    message.error_message = Some(error.into());
    message.into()
}

fn tool_only() -> AgentMessage {
    let mut message = AssistantMessage::new("mock", "m");
    message.content = vec![Content::tool_call("c1", "echo", json!({}))];
    message.into()
}

#[test]
fn final_text_is_the_last_assistant_text() {
    check(vec![AgentMessage::user("q"), answer("first"), AgentMessage::user("more"), answer("second")], "second");
    // A last message with tool calls only: the text before it.
    check(vec![answer("thinking aloud"), tool_only()], "thinking aloud");
    check(vec![AgentMessage::user("q")], NO_TEXT_OUTPUT);
    check(vec![], NO_TEXT_OUTPUT);
    check(vec![tool_only(), answer("")], NO_TEXT_OUTPUT);
    // AMB-003: the error reaches the calling model.
    check(vec![AgentMessage::user("q"), failed("overloaded")], &format!("{NO_TEXT_OUTPUT}: error: overloaded"));
}

/// The events a sub-agent's observer saw.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<AgentEvent>>>);

impl Seen {
    fn observe(&self) -> impl Fn(&AgentEvent) + Send + Sync + 'static {
        let seen = self.clone();
        move |event| seen.0.lock().unwrap().push(event.clone())
    }

    fn events(&self) -> Vec<AgentEvent> {
        self.0.lock().unwrap().clone()
    }
}

#[tokio::test]
async fn a_sub_agent_runs_its_own_tools_and_answers_the_parent() {
    let child = Arc::new(MockProvider::new([
        MockResponse::new().tool_call("k1", "echo", json!({"text": "from the child's tool"})),
        MockResponse::new().text_delta("The tool ").text_delta("said hello."),
    ]));
    let seen = Seen::default();
    let helper = SubAgentTool::new("helper", Arc::clone(&child), "child-model")
        .with_system_prompt("You help.")
        .with_tool(EchoTool)
        .with_event_observer(seen.observe());
    let (agent, parent) = agent([
        MockResponse::new().tool_call("p1", "helper", json!({"task": "Ask your tool"})),
        MockResponse::text("Done."),
    ]);
    let mut agent = agent.with_tool(helper);
    let (events, outcome) = agent.prompt("Delegate").collect().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_history_valid(agent.messages());

    // The child ran on its own prompt, system prompt and tools.
    let request = &child.requests()[0];
    assert_eq!(request.system_prompt, "You help.");
    assert_eq!(request.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["echo"]);
    assert_eq!(request.messages.len(), 1, "a fresh history: the task only");
    // Its answer is the tool result the parent model saw.
    assert_eq!(tool_result_texts(&events), [("p1".into(), "The tool said hello.".into(), false)]);
    // Its streamed text reached the parent as tool updates.
    let updates: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionUpdate { tool_call_id, partial_result, .. } if tool_call_id == "p1" => {
                Some(partial_result.content[0].as_text().unwrap().to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["The tool ", "said hello."]);
    // Parent and child are linked both ways.
    let child_events = seen.events();
    let AgentEvent::AgentStart { loop_id: child_loop, parent_loop_id, agent_id, .. } = &child_events[0] else {
        panic!("the child's first event is its start: {:?}", child_events[0]);
    };
    assert_eq!(parent_loop_id.as_deref(), Some(outcome.loop_id.as_str()));
    assert_eq!(&**agent_id, "helper");
    assert!(
        child_events
            .iter()
            .any(|e| matches!(e, AgentEvent::TurnStart { turn: 1, triggered_by: TurnTrigger::SubAgent, .. }))
    );
    let end = events.iter().find_map(|e| match e {
        AgentEvent::ToolExecutionEnd { tool_call_id, child_loop_id, result, .. } if tool_call_id == "p1" => {
            Some((child_loop_id.clone(), result.child_loop_id.clone(), result.details.clone()))
        }
        _ => None,
    });
    let (event_child, result_child, details) = end.unwrap();
    assert_eq!(event_child.as_deref(), Some(&**child_loop));
    assert_eq!(result_child, event_child);
    assert_eq!(details["reason"], "completed");
    assert_eq!(details["loopId"], json!(&**child_loop));
    // REQ-137: which sub-agent answered, in how many turns (a tool call, then the answer).
    assert_eq!((&details["subAgent"], &details["turns"]), (&json!("helper"), &json!(2)));
    assert_eq!(parent.calls(), 2);
}

/// REQ-195: an explicit parent loop id wins over the calling run's.
#[tokio::test]
async fn an_explicit_parent_loop_id_names_the_childs_parent() {
    let seen = Seen::default();
    let helper = SubAgentTool::new("helper", MockProvider::new([MockResponse::text("ok")]), "child-model")
        .with_parent_loop_id("loop-of-the-orchestrator")
        .with_event_observer(seen.observe());
    let (agent, _) =
        agent([MockResponse::new().tool_call("p1", "helper", json!({"task": "Go"})), MockResponse::text("Done.")]);
    let mut agent = agent.with_tool(helper);
    let (_, outcome) = agent.prompt("Delegate").collect().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let starts: Vec<Option<String>> = seen
        .events()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AgentStart { parent_loop_id, .. } => Some(parent_loop_id.as_deref().map(str::to_owned)),
            _ => None,
        })
        .collect();
    assert_eq!(starts, [Some("loop-of-the-orchestrator".to_owned())]);
}

#[tokio::test]
async fn aborting_the_parent_mid_child_cancels_the_child() {
    let child = MockProvider::new([MockResponse::new().text_delta("working on it").hang()]);
    let seen = Seen::default();
    let helper = SubAgentTool::new("helper", child, "child-model").with_event_observer(seen.observe());
    let (agent, _) = agent([
        MockResponse::new().tool_call("p1", "helper", json!({"task": "Take forever"})),
        MockResponse::text("never asked"),
    ]);
    let mut agent = agent.with_tool(helper);
    let handle = agent.handle();
    let mut run = agent.prompt("Delegate");
    let mut events = Vec::new();
    while let Some(event) = run.next().await {
        // The child is streaming: abort the parent.
        if matches!(&event, AgentEvent::ToolExecutionUpdate { .. }) {
            handle.abort();
        }
        events.push(event);
    }
    drop(run);
    assert!(matches!(events.last(), Some(AgentEvent::AgentEnd { reason: EndReason::Aborted, .. })));
    // The child ends its run on its own task, right after the parent dropped the call.
    let child_end = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            if let Some(AgentEvent::AgentEnd { reason, .. }) = seen.events().last() {
                return *reason;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    assert_eq!(child_end.await.expect("the child run ended"), EndReason::Aborted);
    let results = tool_result_texts(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "the call is an error result");
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn a_child_at_its_turn_limit_or_failing_still_answers() {
    let looping = MockProvider::from_fn(|_| MockResponse::new().tool_call("k", "echo", json!({"text": "again"})));
    let helper = SubAgentTool::new("looper", looping, "m").with_tool(EchoTool).with_max_turns(3);
    let failing = SubAgentTool::new(
        "failer",
        MockProvider::new([MockResponse::error(ProviderError::Auth("bad key".into()))]),
        "m",
    );
    let (agent, _) = agent([
        MockResponse::new()
            .tool_call("p1", "looper", json!({"task": "loop"}))
            .tool_call("p2", "failer", json!({"task": "fail"}))
            .tool_call("p3", "looper", json!({"task": "  "})),
        MockResponse::text("ok"),
    ]);
    let mut agent = agent.with_tool(helper).with_tool(failing);
    let (events, _) = agent.prompt("go").collect().await;
    let results = tool_result_texts(&events);
    assert_eq!(results[0].0, "p1");
    assert!(!results[0].2);
    assert_eq!(results[0].1, format!("{NO_TEXT_OUTPUT}\n\n(the sub-agent stopped at its limits before finishing)"));
    assert!(!results[1].2, "a failed child is an answer, not a tool error (AMB-003)");
    assert!(results[1].1.starts_with(&format!("{NO_TEXT_OUTPUT}: error: ")), "{}", results[1].1);
    assert!(results[1].1.contains("(the sub-agent ended: failed: "), "{}", results[1].1);
    assert_eq!(results[2], ("p3".into(), "invalid arguments: `task` must be a non-empty string".into(), true));
}

#[tokio::test]
async fn a_child_that_crashes_is_an_error_result_and_the_parent_goes_on() {
    let boom = sinew_testing::FnTool::new("boom", |_, _| async { panic!("the tool exploded") });
    let child = MockProvider::new([MockResponse::new().tool_call("k1", "boom", json!({}))]);
    let helper = SubAgentTool::new("helper", child, "m").with_tool(boom);
    let (agent, _) = agent([
        MockResponse::new().tool_call("p1", "helper", json!({"task": "explode"})),
        MockResponse::text("I see it failed."),
    ]);
    let mut agent = agent.with_tool(helper);
    let (events, outcome) = agent.prompt("go").collect().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let results = tool_result_texts(&events);
    assert_eq!(results.len(), 1);
    assert!(results[0].2, "an error result");
    assert!(results[0].1.starts_with("the sub-agent helper crashed: "), "{}", results[0].1);
    assert_history_valid(agent.messages());
}

/// A child whose events would reach no one (its parent finished blind, no observer of its own)
/// builds none: its tools get no callbacks. Read by the parent, they do; the answer is the same.
#[tokio::test]
async fn a_child_builds_events_only_when_they_reach_someone() {
    for read in [true, false] {
        let callbacks = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&callbacks);
        let probe = sinew_testing::FnTool::new("probe", move |_, ctx: ToolContext| {
            seen.lock().unwrap().push(ctx.on_update.is_some());
            async { Ok(ToolResult::text("probed")) }
        });
        let child = Arc::new(MockProvider::new([
            MockResponse::new().tool_call("k1", "probe", json!({})),
            MockResponse::text("The probe answered."),
        ]));
        let helper = SubAgentTool::new("helper", child, "child-model").with_tool(probe);
        let (agent, _) = agent([
            MockResponse::new().tool_call("p1", "helper", json!({"task": "Probe"})),
            MockResponse::text("Done."),
        ]);
        let mut agent = agent.with_tool(helper);
        let run = agent.prompt("Delegate");
        let outcome = if read { run.collect().await.1 } else { run.finish().await };
        assert_eq!(outcome.final_text().as_deref(), Some("Done."), "read {read}");
        let AgentMessage::Llm(Message::ToolResult(result)) = &outcome.messages[2] else { panic!("the child's result") };
        assert_eq!(content::join_text(&result.content, ""), "The probe answered.");
        assert_eq!(*callbacks.lock().unwrap(), [read], "read {read}");
    }
}
