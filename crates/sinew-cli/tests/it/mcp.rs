//! MCP servers from the configuration file: a stdio server and a Streamable HTTP server are
//! connected at start, their tools reach the model with a prefix, and one that cannot start is
//! reported without stopping the others.

use serde_json::{Value, json};
use sinew_testing::mcp_script::SHOUT_SERVER;
use sinew_testing::wire::{WireTurn, anthropic_events, sse_response};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};

use crate::support::{Sandbox, answers_tools, messages};

/// A Streamable HTTP MCP server answering in JSON: one tool, `add`.
fn http_server(request: &ReceivedRequest) -> ServedResponse {
    match request.method.as_str() {
        "GET" => return ServedResponse::new(405),
        "DELETE" => return ServedResponse::new(200),
        _ => {}
    }
    let body = request.json();
    let answer =
        |result: Value| ServedResponse::json(200, &json!({"jsonrpc": "2.0", "id": body["id"], "result": result}));
    match body["method"].as_str() {
        Some("initialize") => answer(json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "calc", "version": "1"}})),
        Some("tools/list") => answer(json!({"tools": [{"name": "add", "description": "Adds two numbers",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}]})),
        Some("tools/call") => {
            let args = &body["params"]["arguments"];
            let sum = args["a"].as_i64().unwrap_or_default() + args["b"].as_i64().unwrap_or_default();
            answer(json!({"content": [{"type": "text", "text": sum.to_string()}]}))
        }
        Some(method) if body.get("id").is_some() => ServedResponse::json(
            200,
            &json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": format!("no {method}")}}),
        ),
        _ => ServedResponse::new(202),
    }
}

fn model(request: &ReceivedRequest) -> ServedResponse {
    let turn = if answers_tools(&messages(request)) {
        WireTurn::new().text("Shouted and added.")
    } else {
        WireTurn::new().tool_call("toolu_1", "upper__shout", json!({"text": "hi"})).tool_call(
            "toolu_2",
            "calc__add",
            json!({"a": 2, "b": 3}),
        )
    };
    sse_response(anthropic_events(&turn), None)
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_servers_lend_their_tools_with_a_prefix() {
    let llm = MockServer::start(model).await;
    let mcp = MockServer::start(http_server).await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &llm.url())]);
    let config = sandbox.home.path().join(".config/sinew/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let toml = format!(
        r#"
[mcp.servers.upper]
command = "python3"
args = ["-c", {script}]

[mcp.servers.remote]
url = "{url}/mcp"
headers = {{ Authorization = "Bearer mcp-token" }}
prefix = "calc"
require_approval = true

[mcp.servers.broken]
command = "/nonexistent/mcp-server"
"#,
        script = toml_string(SHOUT_SERVER),
        url = mcp.url()
    );
    std::fs::write(&config, toml).unwrap();

    let run = sandbox.run(&["shout hi and add 2 and 3"], "y\n").await;
    run.assert_code(0);
    let stderr = &run.stderr;
    assert!(
        stderr.contains("MCP server `upper`: 1 tools") && stderr.contains("MCP server `remote`: 1 tools"),
        "{stderr}"
    );
    assert!(stderr.contains("warning: MCP server `broken` is not available"), "{stderr}");
    assert_eq!(stderr.matches("allow ").count(), 1, "only the server that asks for it is gated:\n{stderr}");
    assert!(stderr.contains("allow calc__add(a=2, b=3)?"), "{stderr}");
    assert_eq!(run.stdout, "Shouted and added.\n");

    let requests = llm.requests();
    let first = requests[0].json();
    let tools: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"upper__shout") && tools.contains(&"calc__add"), "{tools:?}");
    let history = messages(&requests[1]);
    let results = history.last().unwrap()["content"].as_array().unwrap();
    let result = |id: &str| results.iter().find(|r| r["tool_use_id"] == id).unwrap()["content"].to_string();
    assert!(result("toolu_1").contains(r#""text":"HI""#), "{results:?}");
    assert!(result("toolu_2").contains(r#""text":"5""#), "{results:?}");
    assert!(
        mcp.requests()
            .iter()
            .filter(|r| r.method == "POST")
            .all(|r| r.header("authorization") == Some("Bearer mcp-token")),
        "the configured headers reach every request"
    );
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}
