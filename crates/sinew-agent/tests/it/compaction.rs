//! Compaction in the loop: the default cascade, and 1,000 turns with bounded history
//! (REQ-060, REQ-171, REQ-172).

use std::sync::Arc;

use serde_json::json;
use sinew_agent::Agent;
use sinew_compaction::total_tokens;
use sinew_core::{AgentEvent, AgentMessage, ContextConfig, HeuristicTokenCounter, Message};
use sinew_testing::{EchoTool, MockProvider, MockResponse, assert_history_valid};

/// A model that calls `echo` with a bulky text when the user spoke, and answers once the tool did.
fn tool_user() -> Arc<MockProvider> {
    Arc::new(
        MockProvider::from_fn(|request| match request.messages.last() {
            Some(Message::User(_)) => {
                let n = request.messages.len();
                MockResponse::new()
                    .tool_call(format!("call-{n}"), "echo", json!({"text": format!("{n} ").repeat(300)}))
                    .usage(40 * n as u64, 20)
            }
            _ => MockResponse::text("done: the echo came back").usage(40 * request.messages.len() as u64, 10),
        })
        .without_recording(),
    )
}

fn small_context() -> ContextConfig {
    ContextConfig::default()
        .with_max_context_tokens(6_000)
        .with_system_prompt_tokens(500)
        .with_keep_recent(10)
        .with_keep_first(2)
        .with_tool_output_max_lines(20)
}

#[tokio::test]
async fn a_thousand_turns_stay_bounded_and_valid() {
    let config = small_context();
    let mut agent = Agent::new(tool_user(), "mock-model").with_tool(EchoTool).with_context_config(Some(config.clone()));
    let first = AgentMessage::user("turn 0: please echo");
    let counter = HeuristicTokenCounter;
    let budget = config.history_budget();
    let mut compactions = Vec::new();
    // The longest history of turns 100…549, and of turns 550…999.
    let mut longest = [0, 0];
    for turn in 0..1_000 {
        let (events, outcome) = agent.prompt(format!("turn {turn}: please echo")).collect().await;
        assert_eq!(outcome.reason, sinew_core::EndReason::Completed, "turn {turn}");
        for event in events {
            if let AgentEvent::ContextCompacted { tokens_before, messages_after, tokens_after, .. } = event {
                // Compaction fires when, and only when, the history outgrew the budget.
                assert!(tokens_before > budget, "turn {turn}: compacted {tokens_before} tokens");
                assert!(tokens_after <= budget, "turn {turn}: {tokens_after} tokens left");
                compactions.push(messages_after);
            }
        }
        let history = agent.messages();
        assert_history_valid(history);
        assert_eq!(super::text_of(&history[0]), super::text_of(&first), "turn {turn}: the first prompt is kept");
        // The model's last call saw the compacted history; its answer then adds one turn.
        assert!(total_tokens(history, &counter) <= budget + 1_000, "turn {turn}");
        if turn >= 100 {
            let half = usize::from(turn >= 550);
            longest[half] = longest[half].max(history.len());
        }
    }
    assert!(compactions.len() > 100, "{} compactions", compactions.len());
    // Right after compacting: the first prompt, a summary or marker, and the recent turns.
    let most_kept = compactions.iter().max().unwrap();
    assert!(*most_kept <= config.keep_first + config.keep_recent + 2, "{most_kept} messages kept");
    // Steady state: the history swings between compactions but does not grow over time.
    assert!(longest[1] <= longest[0], "the history grew: {longest:?}");
    assert!(longest[0] < 60, "{longest:?}");
}

#[tokio::test]
async fn without_a_context_config_nothing_is_compacted() {
    let mut agent = Agent::new(tool_user(), "mock-model").with_tool(EchoTool).with_context_config(None);
    for turn in 0..20 {
        let (events, _) = agent.prompt(format!("turn {turn}")).collect().await;
        assert!(!events.iter().any(|e| matches!(e, AgentEvent::ContextCompacted { .. })));
    }
    assert_eq!(agent.messages().len(), 80);
}

#[tokio::test]
async fn the_providers_count_triggers_compaction_our_estimate_would_miss() {
    // The model reports 5,900 tokens of context although the history is small by our estimate.
    let mock =
        Arc::new(MockProvider::new([MockResponse::text("first").usage(5_900, 100), MockResponse::text("second")]));
    let mut agent = Agent::new(Arc::clone(&mock), "mock-model").with_context_config(Some(small_context()));
    let history: Vec<AgentMessage> =
        (0..30).map(|i| AgentMessage::user(format!("note {i}: {}", "x".repeat(400)))).collect();
    agent.set_messages(history);
    let (events, _) = agent.prompt("one").collect().await;
    assert!(!events.iter().any(|e| matches!(e, AgentEvent::ContextCompacted { .. })), "our estimate fits");
    let (events, _) = agent.prompt("two").collect().await;
    let compacted = events.iter().find_map(|e| match e {
        AgentEvent::ContextCompacted { messages_before, messages_after, .. } => {
            Some((*messages_before, *messages_after))
        }
        _ => None,
    });
    let (before, after) = compacted.expect("the reported usage made the loop compact");
    assert!(after < before);
    assert_eq!(mock.requests()[1].messages.len(), after);
}

#[tokio::test]
async fn a_report_is_forgotten_once_the_history_is_rewritten() {
    // The provider reports 6,000 tokens; truncating one tool output brings the history under the
    // budget without moving the reported answer. The next call must not trust that report again.
    let mock = Arc::new(MockProvider::new([
        MockResponse::text("first").usage(5_900, 100),
        MockResponse::new().tool_call("b", "echo", json!({"text": "again"})),
        MockResponse::text("second"),
    ]));
    let mut agent =
        Agent::new(Arc::clone(&mock), "mock-model").with_tool(EchoTool).with_context_config(Some(small_context()));
    let mut call = sinew_core::AssistantMessage::new("mock", "mock-model");
    call.content = vec![sinew_core::Content::tool_call("a", "echo", json!({}))];
    let output: String = (0..400).map(|i| format!("line {i}\n")).collect();
    let result = sinew_core::ToolResultMessage {
        tool_call_id: "a".into(),
        tool_name: "echo".into(),
        content: vec![sinew_core::Content::text(output)],
        is_error: false,
        timestamp: 1,
        details: serde_json::Value::Null,
    };
    agent.set_messages(vec![AgentMessage::user("start"), call.into(), result.into()]);
    let compactions =
        |events: &[AgentEvent]| events.iter().filter(|e| matches!(e, AgentEvent::ContextCompacted { .. })).count();
    let (events, _) = agent.prompt("one").collect().await;
    assert_eq!(compactions(&events), 0);
    // Two model calls: compaction before the first; the second must not compact again.
    let (events, _) = agent.prompt("two").collect().await;
    assert_eq!(compactions(&events), 1, "the report said the context is over budget, then was forgotten");
    assert_eq!(agent.messages().len(), 9, "only the tool output was cut");
}

/// What the loop tells a provider about an agent's history holds: the first `unchanged` messages
/// of a request are those of the previous request with the same history cache, through prompts
/// with tool calls, compaction, and every way the agent rewrites its history; a history a hook
/// transforms claims nothing.
#[tokio::test]
async fn the_history_a_request_says_is_unchanged_is_unchanged() {
    let mock = Arc::new(MockProvider::from_fn(|request| match request.messages.last() {
        Some(Message::User(_)) => {
            let n = request.messages.len();
            MockResponse::new().tool_call(format!("call-{n}"), "echo", json!({"text": format!("{n} ").repeat(300)}))
        }
        _ => MockResponse::text("done"),
    }));
    let mut agent = Agent::with_provider_arc(mock.clone(), "mock-model")
        .with_tool(EchoTool)
        .with_context_config(Some(small_context()));
    let mut compacted = false;
    let mut rewritten = Vec::new();
    for turn in 0..40 {
        match turn {
            10 => agent.set_messages(vec![AgentMessage::user("another story"), AgentMessage::user("and more")]),
            15 => {
                let saved = agent.save_messages().unwrap();
                agent.restore_messages(&saved).unwrap();
            }
            20 => agent.reset(),
            25 => {
                let snapshot = agent.snapshot();
                agent.restore(snapshot);
            }
            _ => {}
        }
        if matches!(turn, 10 | 15 | 20 | 25) {
            rewritten.push(mock.calls());
        }
        let (events, _) = agent.prompt(format!("turn {turn}: please echo")).collect().await;
        for event in &events {
            if let AgentEvent::ContextCompacted { tokens_before, .. } = event {
                // This model reports no usage: the history counted as it grows decides, and it
                // compacts when, and only when, the history outgrew the budget.
                assert!(*tokens_before > small_context().history_budget(), "turn {turn}: {tokens_before}");
                compacted = true;
            }
        }
        let history: Vec<AgentMessage> = agent.messages().to_vec();
        assert!(total_tokens(&history, &HeuristicTokenCounter) <= small_context().history_budget() * 2);
    }
    let requests = mock.requests();
    assert!(compacted, "the history was compacted on the way");
    let mut reused = 0;
    for (index, pair) in requests.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        let unchanged = after.history_unchanged.expect("an agent's requests carry its history cache");
        assert!(unchanged <= before.messages.len() && unchanged <= after.messages.len(), "request {}", index + 1);
        assert_eq!(after.messages[..unchanged], before.messages[..unchanged], "request {}", index + 1);
        if rewritten.contains(&(index + 1)) {
            assert_eq!(unchanged, 0, "request {}: the history was rewritten before it", index + 1);
        }
        reused += unchanged;
    }
    assert!(reused > requests.len() * 4, "most of the history is reused: {reused}");
    assert_eq!(requests[0].history_unchanged, Some(0));

    // A hook that rewrites what is sent every call: nothing is claimed.
    let mock = Arc::new(MockProvider::new([]));
    let mut hooks = sinew_agent::Hooks::default();
    hooks.transform_context = Some(Arc::new(|messages: &[AgentMessage]| messages.to_vec()));
    let mut agent = Agent::with_provider_arc(mock.clone(), "mock-model").with_hooks(hooks);
    for turn in 0..3 {
        agent.prompt(format!("turn {turn}")).finish().await;
    }
    assert!(mock.requests().iter().all(|r| r.history_unchanged.is_none()));
}

/// A model that calls `echo` with a bulky text `calls` times, then answers.
fn many_calls(calls: usize) -> Arc<MockProvider> {
    let asked = std::sync::atomic::AtomicUsize::new(0);
    Arc::new(
        MockProvider::from_fn(move |request| {
            if asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < calls {
                let n = request.messages.len();
                MockResponse::new().tool_call(format!("call-{n}"), "echo", json!({"text": format!("{n} ").repeat(500)}))
            } else {
                MockResponse::text("done")
            }
        })
        .without_recording(),
    )
}

/// A run that compacts its own messages still reports each of them whole, in order, whether its
/// events are read or not (`finish` builds none): the history keeps one copy, the outcome its own.
#[tokio::test]
async fn a_run_reports_every_message_it_added_also_those_compaction_rewrote() {
    const CALLS: usize = 16;
    for read_events in [true, false] {
        let mut agent =
            Agent::new(many_calls(CALLS), "mock-model").with_tool(EchoTool).with_context_config(Some(small_context()));
        let run = agent.prompt("echo many times");
        let (events, outcome) = if read_events { run.collect().await } else { (Vec::new(), run.finish().await) };
        assert_eq!(outcome.reason, sinew_core::EndReason::Completed);
        // The prompt, the calls with their results, the answer.
        let total = 2 * CALLS + 2;
        assert_eq!(outcome.messages.len(), total, "read_events {read_events}");
        assert_eq!(super::text_of(&outcome.messages[0]), "echo many times");
        for (i, pair) in outcome.messages[1..total - 1].chunks(2).enumerate() {
            let call = pair[0].as_assistant().expect("an answer").tool_calls().next().expect("a call");
            let AgentMessage::Llm(Message::ToolResult(result)) = &pair[1] else { panic!("a result after call {i}") };
            assert_eq!(result.tool_call_id, call.id);
            // Whole: compaction shortens old tool outputs in the history, not in the outcome.
            assert_eq!(sinew_core::content::join_text(&result.content, ""), call.arguments["text"].as_str().unwrap());
        }
        assert_eq!(super::text_of(&outcome.messages[total - 1]), "done");
        let history = agent.messages();
        assert!(history.len() < total, "the history was compacted: {} messages", history.len());
        assert_history_valid(history);
        if read_events {
            assert!(events.iter().any(|e| matches!(e, AgentEvent::ContextCompacted { .. })));
            let Some(AgentEvent::AgentEnd { messages, .. }) = events.last() else { panic!("AgentEnd last") };
            assert_eq!(messages, &outcome.messages);
        }
    }
}
