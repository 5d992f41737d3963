//! `cargo xtask bench loop [turns]`: the agent loop's own overhead.
//!
//! Each turn is a prompt; the mock model answers it with one `echo` tool call, then, seeing the
//! tool result, streams 200 text deltas. The mock streams instantly, so what is measured is the
//! loop: event emission and delivery, tool dispatch, history bookkeeping (and the mock's own
//! message assembly). The conversation is reset every 100 turns so histories stay realistic.

#![allow(clippy::print_stdout)]

use std::time::Instant;

use futures::StreamExt;
use serde_json::json;
use sinew_agent::Agent;
use sinew_core::{Message, StreamRequest};
use sinew_testing::{EchoTool, MockProvider, MockResponse};

const DELTAS: usize = 200;
const TURNS_PER_CONVERSATION: usize = 100;

fn respond(request: &StreamRequest<'_>) -> MockResponse {
    match request.messages.last() {
        Some(Message::ToolResult(_)) => {
            (0..DELTAS).fold(MockResponse::new(), |r, i| r.text_delta(format!("t{i} "))).usage(100, DELTAS as u64)
        }
        _ => MockResponse::new().tool_call("call-0", "echo", json!({"text": "call-0"})).usage(100, 10),
    }
}

fn peak_rss_kb() -> u64 {
    sinew_testing::memory_kb("VmHWM").unwrap_or(0)
}

fn main() {
    let turns: usize =
        std::env::args().skip(1).find(|a| !a.starts_with('-')).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        let mut agent =
            Agent::new(MockProvider::from_fn(respond).without_recording(), "mock-model").with_tool(EchoTool);
        let mut events = 0usize;
        let mut tool_calls = 0usize;
        let mut text_deltas = 0usize;
        let start = Instant::now();
        for turn in 0..turns {
            if turn % TURNS_PER_CONVERSATION == 0 {
                agent.reset();
            }
            let mut run = agent.prompt("go");
            while let Some(event) = run.next().await {
                events += 1;
                tool_calls += usize::from(event.kind() == "tool_execution_end");
                text_deltas += usize::from(matches!(
                    event,
                    sinew_core::AgentEvent::MessageUpdate { delta: sinew_core::StreamDelta::Text { .. }, .. }
                ));
            }
        }
        let elapsed = start.elapsed();
        assert_eq!(tool_calls, turns, "every turn ran its tool call");
        assert_eq!(text_deltas, turns * DELTAS, "every delta reached the host");
        println!("turns:           {turns}");
        println!("events:          {events}");
        println!("text deltas:     {text_deltas}");
        println!("wall:            {:.3} s", elapsed.as_secs_f64());
        println!("turns/s:         {:.0}", turns as f64 / elapsed.as_secs_f64());
        println!("us per event:    {:.3}", elapsed.as_secs_f64() * 1e6 / events as f64);
        println!("us per turn:     {:.1}", elapsed.as_secs_f64() * 1e6 / turns as f64);
        println!("peak RSS:        {} KB", peak_rss_kb());
    });
}
