//! Interop with real MCP servers: server-everything (stdio, Streamable HTTP, legacy SSE),
//! server-filesystem (stdio, answering its `roots/list`), and the Python SDK and FastMCP servers
//! in both protocol eras. They need `SINEW_PEERS_DIR` (see `build.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sinew_core::{Content, ToolContext, ToolError};
use sinew_mcp::{McpClient, McpClientBuilder, ProtocolEra, RequestOptions, Root, StdioCommand};
use sinew_testing::peers::{PeerProcess, free_port, peers_dir};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// `sinew-testing/peers`, where the Python servers' sources and the loopback preload are.
fn peers_sources() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sinew-testing/peers");
    assert!(dir.join("servers").is_dir(), "{} is missing", dir.display());
    dir
}

fn everything() -> String {
    peers_dir().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js").display().to_string()
}

fn python() -> String {
    peers_dir().join("venv/bin/python").display().to_string()
}

fn server_script(name: &str) -> String {
    peers_sources().join("servers").join(name).display().to_string()
}

fn builder() -> McpClientBuilder {
    McpClient::builder().request_timeout(Duration::from_secs(30))
}

async fn start_http_peer(program: &str, args: &[String], env: &[(&str, String)], port: u16) -> PeerProcess {
    let mut command = Command::new(program);
    command.args(args).envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    PeerProcess::start(command, port).await
}

async fn everything_http(mode: &str) -> PeerProcess {
    let port = free_port();
    let preload = peers_sources().join("loopback-only.cjs").display().to_string();
    let args = vec!["--require".to_owned(), preload, everything(), mode.to_owned()];
    start_http_peer("node", &args, &[("PORT", port.to_string())], port).await
}

fn text_of(content: &[Value]) -> String {
    content.iter().filter_map(|c| c["text"].as_str()).collect::<Vec<_>>().join("\n")
}

/// Lists, echoes, and runs the long operation watching its progress notifications.
async fn exercise_everything(client: &McpClient) {
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let echoed = client.call_tool("echo", json!({"message": "hello from sinew"})).await.unwrap();
    assert_eq!(text_of(&echoed.content), "Echo: hello from sinew");
    assert!(!echoed.is_error);

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = RequestOptions {
        on_progress: Some(Arc::new(move |p| sink.lock().unwrap().push(p))),
        ..RequestOptions::default()
    };
    let long = client
        .call_tool_with("trigger-long-running-operation", json!({"duration": 1, "steps": 3}), &options)
        .await
        .unwrap();
    assert!(text_of(&long.content).contains("completed"), "{long:?}");
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "progress notifications: {seen:?}");
    assert_eq!(seen.last().unwrap().total, Some(3.0), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the MCP interop tests")]
async fn server_everything_over_stdio_falls_back_to_the_handshake() {
    let client = builder().connect_stdio(StdioCommand::new("node").args([everything(), "stdio".into()])).await.unwrap();
    let server = client.server();
    assert!(!server.stateless, "server-everything answers server/discover with -32601");
    assert_eq!(server.protocol_version, "2025-11-25");
    assert_eq!(client.name(), "mcp-servers/everything");
    exercise_everything(&client).await;

    // As agent tools, prefixed; progress reaches the tool context.
    let tools = client.agent_tools(Some("everything")).await.unwrap();
    let long = tools.iter().find(|t| t.name() == "everything__trigger-long-running-operation").unwrap();
    let notes = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&notes);
    let mut ctx = ToolContext::new("call-1", long.name(), CancellationToken::new());
    ctx.on_progress = Some(Arc::new(move |text: &str| sink.lock().unwrap().push(text.to_owned())));
    let result = long.execute(json!({"duration": 1, "steps": 2}), ctx).await.unwrap();
    assert!(result.content[0].as_text().unwrap().contains("completed"));
    assert!(notes.lock().unwrap().iter().any(|n| n.contains("/2")), "{:?}", notes.lock().unwrap());
    client.close().await;
    assert!(client.ping().await.is_err(), "a closed client refuses requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the MCP interop tests")]
async fn server_everything_over_streamable_http() {
    let peer = everything_http("streamableHttp").await;
    let client = builder().connect_http(format!("http://127.0.0.1:{}/mcp", peer.port)).await.unwrap();
    let server = client.server();
    assert!(!server.stateless);
    assert_eq!(server.protocol_version, "2025-11-25");
    exercise_everything(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the MCP interop tests")]
async fn server_everything_over_legacy_sse_is_reached_by_fallback() {
    let peer = everything_http("sse").await;
    let client = builder().connect_http(format!("http://127.0.0.1:{}/sse", peer.port)).await.unwrap();
    assert!(!client.server().stateless);
    exercise_everything(&client).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the MCP interop tests")]
async fn server_filesystem_uses_the_roots_we_answer() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("notes.txt"), "written by the test\n").unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let cli_dir = tempfile::tempdir().unwrap();
    let server = peers_dir().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    let client = builder()
        .roots(vec![Root::directory(&root_path)])
        .connect_stdio(
            StdioCommand::new("node").args([server.display().to_string(), cli_dir.path().display().to_string()]),
        )
        .await
        .unwrap();
    // The server asks for our roots after the handshake and replaces its own directories.
    let mut allowed = String::new();
    for _ in 0..100 {
        let result = client.call_tool("list_allowed_directories", json!({})).await.unwrap();
        allowed = text_of(&result.content);
        if allowed.contains(&root_path.display().to_string()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(allowed.contains(&root_path.display().to_string()), "{allowed}");

    let tools = client.agent_tools(Some("fs")).await.unwrap();
    let read = tools.iter().find(|t| t.name() == "fs__read_text_file").unwrap();
    let path = root_path.join("notes.txt").display().to_string();
    let ctx = || ToolContext::new("c", "fs__read_text_file", CancellationToken::new());
    let result = read.execute(json!({"path": path}), ctx()).await.unwrap();
    assert_eq!(result.content, [Content::text("written by the test\n")]);
    let denied = read.execute(json!({"path": "/etc/passwd"}), ctx()).await.unwrap_err();
    let ToolError::Failed(message) = denied else { panic!("{denied:?}") };
    assert!(message.contains("Access denied"), "{message}");
    client.close().await;
}

async fn exercise_python_peer(client: &McpClient, add: &str, arguments: Value, expected: &str) {
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == add), "{tools:?}");
    let result = client.call_tool(add, arguments).await.unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(text_of(&result.content), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the MCP interop tests")]
async fn python_sdk_over_stdio_in_both_eras() {
    let command = || StdioCommand::new(python()).args([server_script("py_sdk_server.py"), "stdio".into()]);
    let stateless = builder().connect_stdio(command()).await.unwrap();
    let server = stateless.server();
    assert!(server.stateless, "{server:?}");
    assert_eq!(server.protocol_version, "2026-07-28");
    assert_eq!(server.server_info.as_ref().unwrap().name, "py-sdk-peer");
    assert_eq!(server.instructions.as_deref(), Some("Test peer for a Rust MCP client."));
    exercise_python_peer(&stateless, "add", json!({"a": 2, "b": 40}), "42").await;
    let structured = stateless.call_tool("add", json!({"a": 1, "b": 1})).await.unwrap();
    assert_eq!(structured.structured_content, Some(json!({"result": 2})));
    let failed = stateless.call_tool("fail", json!({"reason": "on purpose"})).await.unwrap();
    assert!(failed.is_error);
    // The SDK does not show the exception to the client.
    assert_eq!(text_of(&failed.content), "Error executing tool fail");
    let greeting = stateless.read_resource("peer://greeting").await.unwrap();
    assert_eq!(greeting["contents"][0]["text"], "hello from the python peer");
    stateless.close().await;

    let handshake = builder().era(ProtocolEra::Handshake).connect_stdio(command()).await.unwrap();
    let server = handshake.server();
    assert!(!server.stateless);
    assert_eq!(server.protocol_version, "2025-11-25");
    exercise_python_peer(&handshake, "add", json!({"a": 2, "b": 40}), "42").await;
    handshake.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the MCP interop tests")]
async fn python_sdk_over_streamable_http_in_both_eras() {
    let port = free_port();
    let args = vec![server_script("py_sdk_server.py"), "streamable-http".into(), port.to_string()];
    let _peer = start_http_peer(&python(), &args, &[], port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");

    let stateless = builder().connect_http(&url).await.unwrap();
    assert!(stateless.server().stateless);
    exercise_python_peer(&stateless, "echo", json!({"text": "über"}), "über").await;
    stateless.close().await;

    let handshake = builder().era(ProtocolEra::Handshake).connect_http(&url).await.unwrap();
    assert_eq!(handshake.server().protocol_version, "2025-11-25");
    exercise_python_peer(&handshake, "add", json!({"a": 20, "b": 22}), "42").await;
    handshake.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the MCP interop tests")]
async fn fastmcp_over_stdio_and_http_in_both_eras() {
    let command = || StdioCommand::new(python()).args([server_script("fastmcp_server.py"), "stdio".into()]);
    for era in [ProtocolEra::Auto, ProtocolEra::Handshake] {
        let client = builder().era(era).connect_stdio(command()).await.unwrap();
        assert_eq!(client.server().stateless, era == ProtocolEra::Auto);
        exercise_python_peer(&client, "multiply", json!({"a": 6, "b": 7}), "42.0").await;
        client.close().await;
    }

    let port = free_port();
    let args = vec![server_script("fastmcp_server.py"), "http".into(), port.to_string()];
    let _peer = start_http_peer(&python(), &args, &[], port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    for era in [ProtocolEra::Auto, ProtocolEra::Handshake] {
        let client = builder().era(era).connect_http(&url).await.unwrap();
        assert_eq!(client.server().stateless, era == ProtocolEra::Auto);
        exercise_python_peer(&client, "greet", json!({"name": "sinew"}), "Hello, sinew!").await;
        client.close().await;
    }
}
