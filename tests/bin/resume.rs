//! Resumes a suspended agent from a snapshot file in a process of its own:
//! `sinew-e2e-resume <snapshot.json> approve|reject <tool_call_id>`. Prints the outcome as JSON.

#![allow(clippy::print_stdout)]

use serde_json::json;
use sinew::testing::{MockProvider, MockResponse};
use sinew::{AgentSnapshot, Decisions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, decision, call_id] = args.as_slice() else {
        return Err("usage: sinew-e2e-resume <snapshot.json> approve|reject <tool_call_id>".into());
    };
    let mut agent = sinew_e2e::guarded_agent(MockProvider::new([MockResponse::text("Notes written.")]));
    agent.restore(AgentSnapshot::load(path)?);
    let decisions = match decision.as_str() {
        "approve" => Decisions::new().approve(call_id),
        _ => Decisions::new().reject(call_id, "not now"),
    };
    let outcome = agent.resume(decisions)?.finish().await;
    let report = json!({
        "reason": outcome.reason,
        "finalText": outcome.final_text(),
        "agentId": agent.agent_id(),
        "history": agent.messages(),
    });
    println!("{report}");
    Ok(())
}
