//! Helpers shared by the end-to-end tests and their helper binaries.

use sinew::ToolResult;
use sinew::testing::{EchoTool, FnTool, MockProvider};

/// `write_file`: pretends to write, answering `wrote <path>`.
pub fn write_tool() -> FnTool {
    FnTool::new("write_file", |args, _| async move {
        Ok(ToolResult::text(format!("wrote {}", args["path"].as_str().unwrap_or_default())))
    })
}

/// The agent both processes build: the same tools and approval policy, the given model.
pub fn guarded_agent(model: MockProvider) -> sinew::Agent {
    sinew::Agent::new(model, "mock-model")
        .with_tool(EchoTool)
        .with_tool(write_tool())
        .with_approval_required_for(["write_file"])
}

/// Loops each writer of the PostgreSQL crash tests appends.
pub const LOOPS_PER_WRITER: usize = 60;

/// A session with `loops` completed loops, each with a prompt and an answer.
pub fn session(id: &str, agent: &str, loops: usize) -> sinew::session::Session {
    let mut session = sinew::session::Session::new(id, agent, 1_000);
    for i in 0..loops {
        session.loops.push(record(id, agent, &format!("{id}.mock.m.{}", i + 1)));
    }
    session
}

/// A completed loop `loop_id` with a prompt and an answer.
pub fn record(session_id: &str, agent: &str, loop_id: &str) -> sinew::session::LoopRecord {
    let mut answer = sinew::AssistantMessage::new("mock", "m");
    answer.content = vec![sinew::Content::text(format!("answer of {loop_id}"))];
    let usage = sinew::Usage::new(10, 5).with_cache(0, 0).with_total(15);
    answer.usage = usage;
    sinew::session::LoopRecord {
        loop_id: loop_id.into(),
        session_id: session_id.into(),
        agent_id: agent.into(),
        status: sinew::session::LoopStatus::Completed,
        started_at: 1_000,
        ended_at: Some(2_000),
        messages: vec![sinew::AgentMessage::user(format!("prompt of {loop_id}")), answer.into()],
        usage,
        ..sinew::session::LoopRecord::default()
    }
}
