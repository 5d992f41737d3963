//! `cargo xtask bench compaction`: what compaction costs, and what it saves.
//!
//! 1. Memory over 1,000 agent turns with compaction on and off (REQ-172): history length and
//!    resident memory every 250 turns.
//! 2. Time to compact histories of 1k, 10k and 100k messages with the tiered cascade (each
//!    message a realistic coding-agent turn part: prompts, tool calls, 100-line tool outputs,
//!    answers) to the default 96,000-token budget, and the time of a pass that finds nothing to
//!    do (the cost paid before every model call).

#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::json;
use sinew_agent::Agent;
use sinew_compaction::{ContextConfig, HeuristicTokenCounter, compact_messages, total_tokens};
use sinew_core::{AgentMessage, AssistantMessage, Content, Message, StreamRequest, ToolResultMessage};
use sinew_testing::{EchoTool, MockProvider, MockResponse};

fn history(len: usize) -> Vec<AgentMessage> {
    let output: String = (0..100).map(|i| format!("src/module_{i}.rs:{i}: fn item_{i}() {{}}\n")).collect();
    let mut out = Vec::with_capacity(len);
    let mut i = 0;
    while out.len() < len {
        match i % 4 {
            0 => out.push(AgentMessage::user(format!("step {i}: look at the next module and fix it"))),
            1 => {
                let mut call = AssistantMessage::new("mock", "m");
                call.content = vec![
                    Content::text("Let me search for it."),
                    Content::tool_call(format!("c{i}"), "search", json!({"pattern": format!("item_{i}")})),
                ];
                out.push(call.into());
            }
            2 => out.push(
                ToolResultMessage {
                    tool_call_id: format!("c{}", i - 1),
                    tool_name: "search".into(),
                    content: vec![Content::text(output.clone())],
                    is_error: false,
                    timestamp: 0,
                    details: serde_json::Value::Null,
                }
                .into(),
            ),
            _ => {
                let mut answer = AssistantMessage::new("mock", "m");
                answer.content = vec![Content::text("Fixed: the function now returns the right value.")];
                out.push(answer.into());
            }
        }
        i += 1;
    }
    out
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn compaction_times() {
    let config = ContextConfig::default();
    println!("history budget: {} tokens", config.history_budget());
    println!("{:>9} {:>12} {:>10} {:>12} {:>12}", "messages", "tokens", "kept", "compact", "no-op pass");
    for len in [1_000, 10_000, 100_000] {
        let messages = history(len);
        let tokens = total_tokens(&messages, &HeuristicTokenCounter);
        let runs = if len >= 100_000 { 5 } else { 21 };
        let mut kept = 0;
        let compact = median(runs, || kept = black_box(compact_messages(black_box(&messages), &config)).len());
        // A history just within budget: the pass only counts.
        let roomy = ContextConfig::default().with_max_context_tokens(usize::MAX);
        let noop = median(runs, || assert_eq!(compact_messages(black_box(&messages), &roomy).len(), len));
        println!(
            "{len:>9} {tokens:>12} {kept:>10} {:>9.2} ms {:>9.3} ms",
            compact.as_secs_f64() * 1e3,
            noop.as_secs_f64() * 1e3
        );
    }
}

fn rss_kb() -> u64 {
    sinew_testing::memory_kb("VmRSS").unwrap_or(0)
}

/// The turn of the load test: the model calls `echo` with about 3,000 tokens, then answers.
fn respond(request: &StreamRequest<'_>) -> MockResponse {
    match request.messages.last() {
        Some(Message::User(_)) => {
            let n = request.messages.len();
            MockResponse::new().tool_call(format!("c{n}"), "echo", json!({"text": format!("{n:05} ").repeat(2_000)}))
        }
        _ => MockResponse::text("done"),
    }
}

async fn memory(compaction: bool) {
    let config = compaction.then(ContextConfig::default);
    let mut agent = Agent::new(MockProvider::from_fn(respond).without_recording(), "mock-model")
        .with_tool(EchoTool)
        .with_context_config(config);
    let label = if compaction { "on" } else { "off" };
    for turn in 1..=1_000 {
        agent.prompt(format!("turn {turn}")).finish().await;
        if turn % 250 == 0 {
            let messages = agent.messages();
            println!(
                "compaction {label:>3}  turn {turn:>5}  {:>6} messages  {:>9} tokens  RSS {:>8} KB",
                messages.len(),
                total_tokens(messages, &HeuristicTokenCounter),
                rss_kb()
            );
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    // Memory first, compaction on first: freed memory is not always given back to the system, so
    // a larger run before would hide a smaller one.
    runtime.block_on(memory(true));
    runtime.block_on(memory(false));
    compaction_times();
}
