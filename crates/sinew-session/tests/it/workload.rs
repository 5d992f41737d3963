//! The load workload of REQ-170, shared by the load test and `cargo xtask bench sessions`: many
//! agents at once, each answering one prompt with many concurrent tool calls, every run recorded
//! by one `SessionRecorder` and merged into a store.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::json;
use sinew_agent::Agent;
use sinew_core::{AgentTool, ToolResult};
use sinew_session::{Formation, SessionRecorder, SessionStore};
use sinew_testing::{FnTool, MockProvider, MockResponse};

/// What tool call `call` of agent `agent` returns.
pub(crate) fn result_text(agent: usize, call: usize) -> String {
    format!("agent {agent} call {call}")
}

/// The prompt of agent `agent`.
pub(crate) fn prompt_text(agent: usize) -> String {
    format!("agent {agent}: run the tools")
}

/// A tool that takes 0 to 4 ms (varying by call, so calls finish out of order) and answers
/// [`result_text`].
fn work_tool() -> Arc<dyn AgentTool> {
    Arc::new(FnTool::new("work", |args, _ctx| async move {
        let (agent, call) = (args["agent"].as_u64().unwrap_or(0), args["call"].as_u64().unwrap_or(0));
        let delay = (agent * 7 + call * 13) % 5;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        Ok(ToolResult::text(result_text(agent as usize, call as usize)))
    }))
}

/// Runs `agents` agents concurrently, each making `calls` concurrent tool calls in one turn, then
/// answering; records every event and merges each completed session into `store` as soon as the
/// recorder hands it over.
pub(crate) async fn run_agents(store: Arc<dyn SessionStore>, agents: usize, calls: usize) {
    let recorder = Arc::new(Mutex::new(SessionRecorder::new(Formation::PerSessionId)));
    let tasks: Vec<_> = (0..agents)
        .map(|a| {
            let (store, recorder) = (Arc::clone(&store), Arc::clone(&recorder));
            tokio::spawn(async move {
                let batch = (0..calls).fold(MockResponse::new(), |response, c| {
                    response.tool_call(format!("c{c}"), "work", json!({"agent": a, "call": c}))
                });
                let mock = MockProvider::new([batch, MockResponse::text("done")]).without_recording();
                let mut agent = Agent::new(mock, "mock-model").with_tools([work_tool()]);
                let mut run = agent.prompt(prompt_text(a));
                while let Some(event) = run.next().await {
                    recorder.lock().unwrap().on_event(&event);
                }
                drop(run);
                let completed = recorder.lock().unwrap().flush();
                for session in completed {
                    store.merge(&session).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    // Whatever the last flushes left behind.
    let rest = recorder.lock().unwrap().flush();
    for session in rest {
        store.merge(&session).await.unwrap();
    }
}
