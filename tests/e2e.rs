//! End to end through the facade: a coding-assistant-shaped run with approval, a checkpoint saved
//! to disk, and a resume in a fresh agent.

use futures::StreamExt;
use serde_json::json;
use sinew::testing::{EchoTool, FnTool, MockProvider, MockResponse, assert_history_valid};
use sinew::{Agent, AgentEvent, AgentSnapshot, Decisions, EndReason, StreamDelta, ToolResult};

fn write_tool() -> FnTool {
    FnTool::new("write_file", |args, _| async move {
        Ok(ToolResult::text(format!("wrote {}", args["path"].as_str().unwrap_or_default())))
    })
}

#[tokio::test]
async fn a_guarded_session_survives_a_checkpoint_and_finishes_elsewhere() {
    let script = [
        MockResponse::new().text_words("Let me check first. ").tool_call("c1", "echo", json!({"text": "ls"})),
        MockResponse::new().tool_call("c2", "write_file", json!({"path": "notes.md"})),
    ];
    let mut agent = Agent::new(MockProvider::new(script), "mock-model")
        .with_tool(EchoTool)
        .with_tool(write_tool())
        .with_approval_required_for(["write_file"]);

    let mut run = agent.prompt("Write my notes");
    let mut text = String::new();
    let mut approval_requests = Vec::new();
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } => text.push_str(&delta),
            AgentEvent::ToolApprovalRequest { tool_call_id, .. } => approval_requests.push(tool_call_id),
            _ => {}
        }
    }
    assert_eq!(run.outcome().map(|o| o.reason), Some(EndReason::Suspended));
    drop(run);
    assert_eq!(text, "Let me check first. ");
    assert_eq!(approval_requests, ["c2"]);
    assert_history_valid(agent.messages());

    let path = std::env::temp_dir().join(format!("sinew-e2e-{}.json", std::process::id()));
    agent.snapshot().save(&path).unwrap();

    let mut resumed = Agent::new(MockProvider::new([MockResponse::text("Notes written.")]), "mock-model")
        .with_tool(EchoTool)
        .with_tool(write_tool())
        .with_approval_required_for(["write_file"]);
    resumed.restore(AgentSnapshot::load(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
    let outcome = resumed.resume(Decisions::new().approve("c2")).unwrap().finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("Notes written."));
    // prompt, call c1, its result, call c2, its result, answer
    assert_eq!(resumed.messages().len(), 6);
    assert_history_valid(resumed.messages());
    assert_eq!(resumed.agent_id(), agent.agent_id());
}
