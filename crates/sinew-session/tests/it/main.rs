//! Integration tests of sinew-session.

mod conformance;
mod json_files;
#[cfg(feature = "sqlite")]
mod load;
#[cfg(feature = "postgres")]
mod postgres;
mod recorder;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod workload;

use sinew_core::{AgentMessage, AssistantMessage, Content, Usage};
use sinew_session::{LoopRecord, LoopStatus, Session};

/// A session with `loops` completed loops, each with a prompt and an answer.
pub(crate) fn session(id: &str, agent: &str, loops: usize) -> Session {
    let mut session = Session::new(id, agent, 1_000);
    for i in 0..loops {
        session.loops.push(record(id, agent, &format!("{id}.mock.m.{}", i + 1)));
    }
    session
}

pub(crate) fn record(session_id: &str, agent: &str, loop_id: &str) -> LoopRecord {
    let mut answer = AssistantMessage::new("mock", "m");
    answer.content = vec![Content::text(format!("answer of {loop_id}"))];
    answer.usage = Usage::new(10, 5).with_cache(0, 0).with_total(15);
    LoopRecord {
        loop_id: loop_id.into(),
        session_id: session_id.into(),
        agent_id: agent.into(),
        status: LoopStatus::Completed,
        started_at: 1_000,
        ended_at: Some(2_000),
        messages: vec![AgentMessage::user(format!("prompt of {loop_id}")), answer.into()],
        usage: Usage::new(10, 5).with_cache(0, 0).with_total(15),
        ..LoopRecord::default()
    }
}
