//! An agent calls a real MCP server's tool: `sinew_testing`'s small stdio server (Python,
//! standard library only) answers the handshake, lists one tool and runs it.

use serde_json::json;
use sinew::mcp::{AgentMcpExt, StdioCommand};
use sinew::testing::mcp_script::SHOUT_SERVER;
use sinew::testing::{MockProvider, MockResponse};
use sinew::{Agent, EndReason};

mod common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_an_mcp_tool_by_its_prefixed_name() {
    let model = MockProvider::new([
        MockResponse::new().tool_call("call_1", "upper__shout", json!({"text": "hello"})),
        MockResponse::text("The server shouted HELLO."),
    ]);
    let mut agent = Agent::new(model, "scripted-model")
        .with_mcp_server_stdio(StdioCommand::new("python3").args(["-c", SHOUT_SERVER]), Some("upper"))
        .await
        .unwrap();
    let outcome = agent.prompt("Shout hello").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let result = common::first_tool_result(agent.messages());
    assert!(!result.is_error, "{result:?}");
    assert_eq!(sinew::content::join_text(&result.content, ""), "HELLO");
}
