//! Tool execution: errors, strategies, steering, updates (REQ-045, 046, 078…080, 084…090, 142, 143).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use sinew_agent::SKIPPED_FOR_STEERING;
use sinew_core::*;
use sinew_testing::{EchoTool, FnTool, MockResponse, assert_history_valid};

use crate::{Log, agent, tool_result_texts, user_texts};

fn calls(ids: &[&str]) -> MockResponse {
    ids.iter().fold(MockResponse::new(), |r, id| r.tool_call(*id, "step", json!({"id": id})))
}

/// `step`: logs its call id; on the call named `steer_on` it queues a steering message.
fn step_tool(log: &Log, agent_handle: Option<(sinew_agent::AgentHandle, &'static str)>) -> FnTool {
    let log = log.clone();
    FnTool::new("step", move |args, _ctx| {
        let log = log.clone();
        let handle = agent_handle.clone();
        async move {
            let id = args["id"].as_str().unwrap_or_default().to_owned();
            log.push(id.clone());
            if let Some((handle, steer_on)) = handle
                && id == steer_on
            {
                handle.steer(AgentMessage::user("change of plan"));
            }
            Ok(ToolResult::text(format!("ran {id}")))
        }
    })
}

#[tokio::test]
async fn tool_errors_become_error_results_the_model_sees() {
    let failing = FnTool::new("fail", |_, _| async { Err(ToolError::Failed("oops".into())) });
    let picky = FnTool::new("picky", |_, _| async { Err(ToolError::InvalidArgs("need x".into())) });
    let (agent, mock) = agent([
        MockResponse::new()
            .tool_call("1", "fail", json!({}))
            .tool_call("2", "picky", json!({}))
            .tool_call("3", "nope", json!({}))
            .tool_call("4", "echo", json!({"text": 5})),
        MockResponse::text("I see"),
    ]);
    let mut agent = agent.with_tool(failing).with_tool(picky).with_tool(EchoTool);
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(
        tool_result_texts(&events),
        [
            ("1".into(), "oops".into(), true),
            ("2".into(), "invalid arguments: need x".into(), true),
            ("3".into(), "Tool nope not found".into(), true),
            ("4".into(), "invalid arguments: `text` must be a string".into(), true),
        ]
    );
    assert_eq!(mock.requests()[1].messages.len(), 6, "the model gets every error result");
}

#[tokio::test]
async fn parallel_results_keep_call_order_although_they_finish_out_of_order() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    let sleepy = FnTool::new("step", move |args, _| {
        let (running, peak) = (r.clone(), p.clone());
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(ToolResult::text(format!("slept {ms}")))
        }
    });
    let (agent, _) = agent([
        MockResponse::new()
            .tool_call("a", "step", json!({"ms": 30}))
            .tool_call("b", "step", json!({"ms": 10}))
            .tool_call("c", "step", json!({"ms": 20})),
        MockResponse::text("ok"),
    ]);
    let mut agent = agent.with_tool(sleepy);
    let (events, _) = agent.prompt("q").collect().await;
    let ends: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ends, ["b", "c", "a"], "ends arrive as tools finish");
    let ids: Vec<String> = tool_result_texts(&events).into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(ids, ["a", "b", "c"], "results keep call order");
    assert_eq!(peak.load(Ordering::SeqCst), 3, "all three ran at once");
}

#[tokio::test]
async fn sequential_steering_skips_the_rest_of_the_batch() {
    let log = Log::default();
    let (agent, mock) = agent([calls(&["1", "2", "3"]), MockResponse::text("ok")]);
    let handle = agent.handle();
    let mut agent =
        agent.with_tool(step_tool(&log, Some((handle, "1")))).with_tool_execution(ToolExecution::Sequential);
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(log.entries(), ["1"]);
    let results = tool_result_texts(&events);
    assert_eq!(results[0], ("1".into(), "ran 1".into(), false));
    assert_eq!(
        results[1..],
        [("2".into(), SKIPPED_FOR_STEERING.into(), true), ("3".into(), SKIPPED_FOR_STEERING.into(), true)]
    );
    // The steering message is in the context before the next model call.
    assert_eq!(user_texts(&mock.requests()[1]), ["q", "change of plan"]);
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn parallel_steering_is_returned_after_the_whole_batch() {
    let log = Log::default();
    let (agent, mock) = agent([calls(&["1", "2", "3"]), MockResponse::text("ok")]);
    let handle = agent.handle();
    let mut agent = agent.with_tool(step_tool(&log, Some((handle, "1"))));
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(log.entries(), ["1", "2", "3"]);
    assert!(tool_result_texts(&events).iter().all(|(_, _, is_error)| !is_error));
    assert_eq!(user_texts(&mock.requests()[1]), ["q", "change of plan"]);
}

#[tokio::test]
async fn batched_runs_groups_and_checks_steering_between_them() {
    let log = Log::default();
    let (agent, _) = agent([calls(&["1", "2", "3", "4", "5"]), MockResponse::text("ok")]);
    let mut agent = agent.with_tool(step_tool(&log, None)).with_tool_execution(ToolExecution::Batched { size: 2 });
    agent.prompt("q").finish().await;
    assert_eq!(log.entries(), ["1", "2", "3", "4", "5"]);

    let log = Log::default();
    let (agent, _) = crate::agent([calls(&["1", "2", "3", "4", "5"]), MockResponse::text("ok")]);
    let handle = agent.handle();
    let mut agent =
        agent.with_tool(step_tool(&log, Some((handle, "2")))).with_tool_execution(ToolExecution::Batched { size: 2 });
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(log.entries(), ["1", "2"], "groups [3,4] and [5] are skipped");
    let skipped: Vec<String> =
        tool_result_texts(&events).into_iter().filter(|(_, _, e)| *e).map(|(id, _, _)| id).collect();
    assert_eq!(skipped, ["3", "4", "5"]);
}

#[tokio::test]
async fn steering_before_the_prompt_is_injected_first() {
    let (mut agent, mock) = agent([MockResponse::text("ok")]);
    agent.steer(AgentMessage::user("early steer"));
    agent.prompt("q").finish().await;
    assert_eq!(user_texts(&mock.requests()[0]), ["q", "early steer"]);
}

#[tokio::test]
async fn follow_ups_re_enter_the_loop() {
    let (mut agent, mock) = agent([MockResponse::text("first"), MockResponse::text("second")]);
    agent.follow_up(AgentMessage::user("and then?"));
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(mock.calls(), 2);
    assert_eq!(outcome.final_text().as_deref(), Some("second"));
    assert_eq!(user_texts(&mock.requests()[1]), ["q", "and then?"]);
    assert_eq!(events.iter().filter(|e| e.kind() == "turn_start").count(), 2);
}

#[tokio::test]
async fn queue_modes_take_one_or_all() {
    let (agent, mock) = agent([MockResponse::text("1"), MockResponse::text("2"), MockResponse::text("3")]);
    let mut agent = agent.with_follow_up_mode(QueueMode::OneAtATime);
    agent.follow_up(AgentMessage::user("f1"));
    agent.follow_up(AgentMessage::user("f2"));
    agent.prompt("q").finish().await;
    assert_eq!(mock.calls(), 3, "one follow-up per re-entry");

    let (agent, mock) = crate::agent([MockResponse::text("1"), MockResponse::text("2")]);
    let mut agent = agent.with_follow_up_mode(QueueMode::All);
    agent.follow_up(AgentMessage::user("f1"));
    agent.follow_up(AgentMessage::user("f2"));
    agent.prompt("q").finish().await;
    assert_eq!(mock.calls(), 2);
    assert_eq!(user_texts(&mock.requests()[1]), ["q", "f1", "f2"]);
}

#[tokio::test]
async fn queues_are_safe_to_fill_from_other_threads_while_running() {
    let (agent, _) = agent([MockResponse::new().delay(Duration::from_millis(5)).text_delta("a")]);
    let mut agent = agent.with_follow_up_mode(QueueMode::All);
    let handle = agent.handle();
    let pusher = std::thread::spawn(move || {
        for i in 0..100 {
            handle.follow_up(AgentMessage::user(format!("f{i}")));
        }
    });
    let first = agent.prompt("q").finish().await;
    pusher.join().unwrap();
    // Whatever the first run did not see is still queued: a second run takes the rest.
    let second = agent.prompt("again").finish().await;
    assert_eq!((first.reason, second.reason), (EndReason::Completed, EndReason::Completed));
    let follow_ups: Vec<String> =
        agent.messages().iter().filter(|m| m.is_user()).map(crate::text_of).filter(|t| t.starts_with('f')).collect();
    let expected: Vec<String> = (0..100).map(|i| format!("f{i}")).collect();
    assert_eq!(follow_ups, expected, "every follow-up arrives once, in order");
}

#[tokio::test]
async fn updates_and_progress_become_events_before_the_end() {
    let tool = FnTool::new("work", |_, ctx: ToolContext| async move {
        ctx.progress("starting");
        ctx.update(ToolResult::text("25%"));
        ctx.update(ToolResult::text("75%"));
        Ok(ToolResult::text("100%"))
    });
    let (agent, _) = agent([MockResponse::new().tool_call("w", "work", json!({})), MockResponse::text("ok")]);
    let mut agent = agent.with_tool(tool);
    let (events, _) = agent.prompt("q").collect().await;
    let tool_events: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ProgressMessage { text, .. } => Some(format!("progress {text}")),
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                Some(format!("update {}", crate::first_text(&partial_result.content)))
            }
            AgentEvent::ToolExecutionEnd { result, .. } => Some(format!("end {}", crate::first_text(&result.content))),
            _ => None,
        })
        .collect();
    assert_eq!(tool_events, ["progress starting", "update 25%", "update 75%", "end 100%"]);
}

#[tokio::test]
async fn details_and_child_loop_ids_flow_to_events_and_history() {
    let tool = FnTool::new("sub", |_, _| async {
        Ok(ToolResult {
            child_loop_id: Some("child.loop.1".into()),
            ..ToolResult::text("delegated").with_details(json!({"turns": 2}))
        })
    });
    let (agent, _) = agent([MockResponse::new().tool_call("s", "sub", json!({})), MockResponse::text("ok")]);
    let mut agent = agent.with_tool(tool);
    let (events, _) = agent.prompt("q").collect().await;
    assert!(events.iter().any(|e| matches!(e,
        AgentEvent::ToolExecutionEnd { child_loop_id: Some(id), .. } if id == "child.loop.1")));
    let result = agent.messages().iter().find_map(AgentMessage::as_tool_result).unwrap();
    assert_eq!(result.details, json!({"turns": 2}));
}

#[tokio::test]
async fn every_tool_gets_a_child_token_of_the_run() {
    let tokens = Arc::new(std::sync::Mutex::new(Vec::<CancellationToken>::new()));
    let t = Arc::clone(&tokens);
    let waiter = FnTool::new("wait", move |_, ctx: ToolContext| {
        t.lock().unwrap().push(ctx.cancel.clone());
        async move {
            std::future::pending::<()>().await;
            Ok(ToolResult::text("never"))
        }
    });
    let (agent, _) = agent([MockResponse::new().tool_call("1", "wait", json!({})).tool_call("2", "wait", json!({}))]);
    let mut agent = agent.with_tool(waiter);
    let handle = agent.handle();
    let mut run = agent.prompt("q");
    let mut started = 0;
    while let Some(event) = run.next().await {
        if event.kind() == "tool_execution_start" {
            started += 1;
            if started == 2 {
                let tokens = tokens.lock().unwrap();
                assert_eq!(tokens.len(), 2);
                assert!(tokens.iter().all(|t| !t.is_cancelled()));
                handle.abort();
                assert!(tokens.iter().all(CancellationToken::is_cancelled), "abort reaches every tool at once");
            }
        }
    }
    let outcome = run.outcome().cloned().unwrap();
    drop(run);
    assert_eq!(outcome.reason, EndReason::Aborted);
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn a_thousand_deltas_arrive_in_order() {
    let response = (0..1000).fold(MockResponse::new(), |r, i| r.text_delta(format!("{i},")));
    let (mut agent, _) = agent([response]);
    let (events, _) = agent.prompt("q").collect().await;
    let expected: String = (0..1000).map(|i| format!("{i},")).collect();
    assert_eq!(sinew_testing::streamed_text(&events), expected);
    assert_eq!(events.iter().filter(|e| e.kind() == "message_update").count(), 1000);
}

#[tokio::test]
async fn updates_from_a_tool_thread_arrive_while_the_tool_runs() {
    // The tool finishes only once the host has seen its update: without a wake-up for events
    // sent from other threads, this would never end.
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let go_rx = Arc::new(std::sync::Mutex::new(Some(go_rx)));
    let tool = FnTool::new("threaded", move |_, ctx: ToolContext| {
        let go_rx = go_rx.lock().unwrap().take();
        async move {
            let (done_tx, done_rx) = tokio::sync::oneshot::channel();
            std::thread::spawn(move || {
                ctx.update(ToolResult::text("from thread"));
                if let Some(go) = go_rx {
                    go.recv().unwrap();
                }
                done_tx.send(()).unwrap();
            });
            done_rx.await.map_err(|e| ToolError::Failed(e.to_string().into()))?;
            Ok(ToolResult::text("finished"))
        }
    });
    let (agent, _) = agent([MockResponse::new().tool_call("t", "threaded", json!({})), MockResponse::text("ok")]);
    let mut agent = agent.with_tool(tool);
    let mut run = agent.prompt("q");
    let mut seen = Vec::new();
    while let Some(event) = run.next().await {
        if event.kind() == "tool_execution_update" {
            go_tx.send(()).unwrap();
        }
        seen.push(event.kind());
    }
    let position = |k: &str| seen.iter().position(|s| *s == k).unwrap();
    assert!(position("tool_execution_update") < position("tool_execution_end"));
}

#[tokio::test]
async fn a_thousand_deltas_arrive_in_order_through_a_host_channel() {
    let response = (0..1000).fold(MockResponse::new(), |r, i| r.text_delta(format!("{i},")));
    let (mut agent, _) = agent([response]);
    let (tx, mut rx) = sinew_agent::event_channel();
    agent.prompt_with_sender("q", tx).await;
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    let expected: String = (0..1000).map(|i| format!("{i},")).collect();
    assert_eq!(sinew_testing::streamed_text(&events), expected);
    assert_eq!(events.last().map(AgentEvent::kind), Some("agent_end"));
}

/// A forced tool choice holds until the model has called a tool; the other options stay on
/// every call.
#[tokio::test]
async fn a_forced_tool_choice_is_spent_by_the_first_tool_call() {
    let (agent, mock) =
        crate::agent([MockResponse::new().tool_call("c1", "echo", json!({"text": "hi"})), MockResponse::text("Done.")]);
    let options =
        RequestOptions::default().with_tool_choice(ToolChoice::tool("echo")).with_seed(7).with_stop_sequences(["END"]);
    let mut agent = agent.with_tool(EchoTool).with_request_options(options.clone());
    let outcome = agent.prompt("Echo hi").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let requests = mock.requests();
    assert_eq!(requests[0].options, options);
    assert_eq!(requests[1].options.tool_choice, ToolChoice::Auto);
    assert_eq!((requests[1].options.seed, &requests[1].options.stop_sequences[..]), (Some(7), &["END".to_owned()][..]));
    // A new run forces again.
    mock.push(MockResponse::text("No tool this time."));
    agent.prompt("Again").finish().await;
    assert_eq!(mock.requests()[2].options, options);
}

/// A call the output token limit cut off is never run: it is answered with an error saying why,
/// and the calls that arrived whole still run (issue 16).
#[tokio::test]
async fn a_tool_call_cut_off_by_the_token_limit_is_answered_not_run() {
    let (agent, mock) = crate::agent([
        MockResponse::new()
            .tool_call("whole", "echo", json!({"text": "first"}))
            .tool_call("cut", "echo", json!("{\"text\": \"sec"))
            .stop_reason(StopReason::Length),
        MockResponse::text("I will send a shorter call."),
    ]);
    let mut agent = agent.with_tool(EchoTool);
    let (events, outcome) = agent.prompt("Echo twice").collect().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_history_valid(agent.messages());
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["whole"], "the cut call never starts");
    let results = tool_result_texts(&events);
    assert_eq!(results[0], ("whole".into(), "first".into(), false));
    assert_eq!(results[1], ("cut".into(), sinew_agent::CUT_OFF.into(), true));
    // The model saw why, and answered.
    let second = &mock.requests()[1];
    assert!(matches!(second.messages.last(), Some(Message::ToolResult(r)) if r.tool_call_id == "cut" && r.is_error));
    // A complete call in an answer that stopped for another reason runs as usual.
    mock.push(MockResponse::new().tool_call("ok", "echo", json!({"text": "x"})).stop_reason(StopReason::Length));
    mock.push(MockResponse::text("Done."));
    let (events, _) = agent.prompt("Once more").collect().await;
    assert_eq!(tool_result_texts(&events), [("ok".into(), "x".into(), false)]);
}

/// A cut-off call that would need approval is answered at once, without suspending the run.
#[tokio::test]
async fn a_cut_off_call_does_not_wait_for_approval() {
    let (agent, _) = crate::agent([
        MockResponse::new().tool_call("cut", "echo", Value::Null).stop_reason(StopReason::Length),
        MockResponse::text("Sorry."),
    ]);
    let mut agent = agent.with_tool(EchoTool).with_approval_required_for(["echo"]);
    let (events, outcome) = agent.prompt("Echo").collect().await;
    assert_eq!(outcome.reason, EndReason::Completed, "no suspension");
    assert_eq!(tool_result_texts(&events), [("cut".into(), sinew_agent::CUT_OFF.into(), true)]);
}

/// Anthropic's `pause_turn`: the loop sends the history back, the paused answer last, and the
/// model continues; the run does not end there (issue 16).
#[tokio::test]
async fn a_paused_turn_is_continued() {
    let (agent, mock) = crate::agent([
        MockResponse::new().text_delta("Searching the web...").stop_reason(StopReason::PauseTurn),
        MockResponse::text("Found it."),
    ]);
    let mut agent = agent;
    let outcome = agent.prompt("Find it").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("Found it."));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].messages.last().unwrap();
    assert!(
        matches!(last, Message::Assistant(m) if m.stop_reason == StopReason::PauseTurn && m.text() == "Searching the web..."),
        "{last:?}"
    );
    assert_eq!(requests[1].messages.len(), 2, "no message was added between");
    assert_history_valid(agent.messages());
}

/// A cut-off call beside one that waits for approval: the run suspends for the whole call only,
/// and after the approval the cut call is answered, not run.
#[tokio::test]
async fn a_cut_off_call_stays_unrun_across_a_suspension() {
    let (agent, _) = crate::agent([
        MockResponse::new()
            .tool_call("whole", "echo", json!({"text": "ok"}))
            .tool_call("cut", "echo", json!("{\"te"))
            .stop_reason(StopReason::Length),
        MockResponse::text("Done."),
    ]);
    let mut agent = agent.with_tool(EchoTool).with_approval_required_for(["echo"]);
    let outcome = agent.prompt("Echo").finish().await;
    assert_eq!(outcome.reason, EndReason::Suspended);
    let pending: Vec<&str> = agent
        .suspension()
        .unwrap()
        .calls
        .iter()
        .filter(|c| c.kind != PendingKind::Ready)
        .map(|c| c.tool_call_id.as_str())
        .collect();
    assert_eq!(pending, ["whole"], "only the whole call waits");
    let (events, outcome) = agent.resume(sinew_agent::Decisions::new().approve("whole")).unwrap().collect().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(
        tool_result_texts(&events),
        [("whole".into(), "ok".into(), false), ("cut".into(), sinew_agent::CUT_OFF.into(), true)]
    );
    assert_history_valid(agent.messages());
}
