//! An agent calls a real MCP server's tool: a small stdio server (Python, standard library only)
//! answers the handshake, lists one tool and runs it.

use serde_json::json;
use sinew::mcp::{AgentMcpExt, StdioCommand};
use sinew::testing::{MockProvider, MockResponse};
use sinew::{Agent, AgentMessage, EndReason, Message};

const SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, mid = msg["method"], msg["id"]
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "upper", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "shout", "description": "Upper-cases text",
                             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": msg["params"]["arguments"]["text"].upper()}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_an_mcp_tool_by_its_prefixed_name() {
    let model = MockProvider::new([
        MockResponse::new().tool_call("call_1", "upper__shout", json!({"text": "hello"})),
        MockResponse::text("The server shouted HELLO."),
    ]);
    let mut agent = Agent::new(model, "scripted-model")
        .with_mcp_server_stdio(StdioCommand::new("python3").args(["-c", SERVER]), Some("upper"))
        .await
        .unwrap();
    let outcome = agent.prompt("Shout hello").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let result = agent
        .messages()
        .iter()
        .find_map(|m| match m {
            AgentMessage::Llm(Message::ToolResult(result)) => Some(result.clone()),
            _ => None,
        })
        .expect("a tool result");
    assert!(!result.is_error, "{result:?}");
    assert_eq!(sinew::content::join_text(&result.content, ""), "HELLO");
}
