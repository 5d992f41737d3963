//! The client against scripted servers: framing, timeouts, cancellation, a server dying
//! mid-call, hostile output, server requests, `tools/list_changed`, both lifecycles.
//!
//! Most servers here are scripted in the test over in-memory pipes (`connect_io`); the crash
//! tests use real processes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError};
use sinew_mcp::{
    McpClient, McpClientBuilder, McpError, McpToolAdapter, ProtocolEra, RequestOptions, Root, StdioCommand,
};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio_util::sync::CancellationToken;

/// The server's end of the pipes.
struct Server {
    lines: Lines<BufReader<DuplexStream>>,
    out: DuplexStream,
}

impl Server {
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("the client sent nothing for 5 s")
            .unwrap()
            .expect("the client closed its output");
        serde_json::from_str(&line).unwrap()
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(format!("{message}\n").as_bytes()).await;
    }

    async fn send_raw(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).await.unwrap();
        self.out.flush().await.unwrap();
    }

    async fn reply(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result})).await;
    }

    /// Answers `initialize` and takes `notifications/initialized`.
    async fn handshake(&mut self) {
        let init = self.recv().await;
        assert_eq!(init["method"], "initialize");
        self.reply(
            &init,
            json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "scripted", "version": "1"}}),
        )
        .await;
        let initialized = self.recv().await;
        assert_eq!(initialized["method"], "notifications/initialized");
    }
}

/// A scripted server, and the client connecting to it over in-memory pipes.
fn start(builder: McpClientBuilder) -> (Server, tokio::task::JoinHandle<Result<McpClient, McpError>>) {
    let (client_read, server_write) = tokio::io::duplex(1 << 16);
    let (server_read, client_write) = tokio::io::duplex(1 << 16);
    let server = Server { lines: BufReader::new(server_read).lines(), out: server_write };
    (server, tokio::spawn(builder.connect_io(client_read, client_write)))
}

/// A client connected to a scripted server through the handshake.
async fn connect(builder: McpClientBuilder) -> (McpClient, Server) {
    let (mut server, connecting) = start(builder.era(ProtocolEra::Handshake));
    server.handshake().await;
    (connecting.await.unwrap().unwrap(), server)
}

fn quick() -> McpClientBuilder {
    McpClient::builder().request_timeout(Duration::from_secs(5))
}

#[tokio::test]
async fn concurrent_requests_are_matched_by_id_whatever_the_answer_order() {
    let (client, mut server) = connect(quick()).await;
    let calls: Vec<_> = (0..20)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("echo", json!({"n": i})).await })
        })
        .collect();
    let mut requests = Vec::new();
    for _ in 0..20 {
        requests.push(server.recv().await);
    }
    // Answers in reverse order, as a batch split across two writes.
    let answers: Vec<Value> = requests
        .iter()
        .rev()
        .map(|r| json!({"jsonrpc": "2.0", "id": r["id"], "result": {"content": [{"type": "text", "text": r["params"]["arguments"]["n"].to_string()}]}}))
        .collect();
    let batch = format!("{}\n", Value::Array(answers));
    let (head, tail) = batch.split_at(batch.len() / 2);
    server.send_raw(head.as_bytes()).await;
    server.send_raw(tail.as_bytes()).await;
    for (i, call) in calls.into_iter().enumerate() {
        let result = call.await.unwrap().unwrap();
        assert_eq!(result.content[0]["text"], i.to_string());
    }
}

#[tokio::test]
async fn json_rpc_errors_and_malformed_results_are_errors() {
    let (client, mut server) = connect(quick()).await;
    let client2 = client.clone();
    let call = tokio::spawn(async move { client2.request("tools/call", json!({"name": "x"})).await });
    let request = server.recv().await;
    // An answer to no pending request is ignored.
    server.send(json!({"jsonrpc": "2.0", "id": 9999, "result": {}})).await;
    server
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32602, "message": "Unknown tool: x", "data": {"hint": 1}}}))
        .await;
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(
        error,
        McpError::JsonRpc { code: -32602, message: "Unknown tool: x".into(), data: Some(json!({"hint": 1})) }
    );

    let client2 = client.clone();
    let call = tokio::spawn(async move { client2.call_tool("x", json!({})).await });
    let request = server.recv().await;
    server.reply(&request, json!({"content": "not a list"})).await;
    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(&error, McpError::Protocol(m) if m.contains("malformed tools/call result")), "{error}");
}

#[tokio::test]
async fn a_hung_server_times_out_and_is_told_the_request_is_cancelled() {
    let (client, mut server) = connect(quick().request_timeout(Duration::from_millis(200))).await;
    let client2 = client.clone();
    let call = tokio::spawn(async move { client2.call_tool("slow", json!({})).await });
    let request = server.recv().await;
    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(&error, McpError::Timeout { method, .. } if method == "tools/call"), "{error}");
    let cancelled = server.recv().await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
    assert!(cancelled["params"]["reason"].as_str().unwrap().contains("timed out"));
    // A late answer is dropped; the connection still works.
    server.reply(&request, json!({"content": []})).await;
    let client2 = client.clone();
    let ping = tokio::spawn(async move { client2.ping().await });
    let request = server.recv().await;
    server.reply(&request, json!({})).await;
    ping.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn progress_restarts_the_timeout() {
    let (client, mut server) = connect(quick().request_timeout(Duration::from_millis(300))).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options = RequestOptions {
        on_progress: Some(Arc::new(move |p| sink.lock().unwrap().push(p))),
        ..RequestOptions::default()
    };
    let client2 = client.clone();
    let call = tokio::spawn(async move { client2.call_tool_with("long", json!({}), &options).await });
    let request = server.recv().await;
    let token = request["params"]["_meta"]["progressToken"].clone();
    assert!(token.is_string(), "{request}");
    // 5 × 150 ms is well past the 300 ms timeout, but each notification restarts it.
    for step in 1..=5 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": step, "total": 5, "message": "working"}}))
            .await;
    }
    server.reply(&request, json!({"content": [{"type": "text", "text": "done"}]})).await;
    let result = call.await.unwrap().unwrap();
    assert_eq!(result.content[0]["text"], "done");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 5);
    assert_eq!((seen[4].progress, seen[4].total, seen[4].message.as_deref()), (5.0, Some(5.0), Some("working")));
}

#[tokio::test]
async fn cancelling_a_tool_call_sends_notifications_cancelled() {
    let (client, mut server) = connect(quick()).await;
    server
        .send(json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}))
        .await;
    let info: sinew_mcp::McpToolInfo =
        serde_json::from_value(json!({"name": "wait", "inputSchema": {"type": "object"}})).unwrap();
    let tool = McpToolAdapter::new(client.clone(), info, Some("srv"));
    assert_eq!(tool.name(), "srv__wait");
    // A name the providers refuse is made valid; the server is still called by its own.
    let dotted: sinew_mcp::McpToolInfo =
        serde_json::from_value(json!({"name": "files.read", "inputSchema": {"type": "object"}})).unwrap();
    let dotted = McpToolAdapter::new(client.clone(), dotted, Some("srv"));
    assert!(dotted.name().starts_with("srv__files_read_") && sinew_core::is_valid_tool_name(dotted.name()));
    assert_eq!(dotted.info().name, "files.read");
    let cancel = CancellationToken::new();
    let ctx = ToolContext::new("call-1", "srv__wait", cancel.clone());
    let call = tokio::spawn(async move { tool.execute(json!({}), ctx).await });
    let request = server.recv().await;
    assert_eq!(request["params"]["name"], "wait", "the server is called by the tool's own name");
    cancel.cancel();
    assert_eq!(call.await.unwrap().unwrap_err(), ToolError::Cancelled);
    let cancelled = server.recv().await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], request["id"]);
}

#[tokio::test]
async fn tool_errors_and_mcp_errors_become_failed_tool_results_with_context() {
    let (client, mut server) = connect(quick().name("files")).await;
    let info: sinew_mcp::McpToolInfo = serde_json::from_value(json!({"name": "read", "description": "Reads"})).unwrap();
    let tool = McpToolAdapter::new(client.clone(), info, None);
    let ctx = || ToolContext::new("c", "read", CancellationToken::new());

    let tool2 = tool.clone();
    let call = tokio::spawn(async move { tool2.execute(json!({"path": "/x"}), ctx()).await });
    let request = server.recv().await;
    server.reply(&request, json!({"content": [{"type": "text", "text": "no such file"}], "isError": true})).await;
    assert_eq!(call.await.unwrap().unwrap_err(), ToolError::Failed("no such file".into()));

    let tool2 = tool.clone();
    let call = tokio::spawn(async move { tool2.execute(json!({}), ctx()).await });
    let request = server.recv().await;
    server
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32603, "message": "disk on fire"}}))
        .await;
    let ToolError::Failed(message) = call.await.unwrap().unwrap_err() else { panic!() };
    assert_eq!(message, "MCP server `files`, tool `read`: JSON-RPC error -32603: disk on fire");

    drop(server);
    let ToolError::Failed(message) = tool.execute(json!({}), ctx()).await.unwrap_err() else { panic!() };
    assert!(message.starts_with("MCP server `files`, tool `read`: connection closed"), "{message}");
}

#[tokio::test]
async fn garbage_is_skipped_and_an_oversized_message_closes_the_connection() {
    let builder = quick().max_message_bytes(1024).era(ProtocolEra::Handshake);
    let (mut server, connecting) = start(builder);
    server.send_raw(b"Starting server on stdio...\n\n{not json\n").await;
    server.handshake().await;
    let client = connecting.await.unwrap().unwrap();

    let client2 = client.clone();
    let call = tokio::spawn(async move { client2.call_tool("big", json!({})).await });
    let request = server.recv().await;
    let huge = "x".repeat(4096);
    server.reply(&request, json!({"content": [{"type": "text", "text": huge}]})).await;
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error, McpError::Protocol("the server sent a message over the 1024-byte limit".into()));
    let later = client.ping().await.unwrap_err();
    assert_eq!(later, error, "the connection stays closed with its reason");
    assert_eq!(client.closed_reason(), Some(error));
}

#[tokio::test]
async fn server_requests_are_answered_through_handlers_or_refused() {
    let builder = quick().roots(vec![Root { uri: "file:///work".into(), name: Some("work".into()) }]).elicitation(
        |params: Value| async move {
            Ok(json!({"action": "accept", "content": sinew_mcp::schema_defaults(&params["requestedSchema"])}))
        },
    );
    let (client, mut server) = connect(builder).await;
    let _keep = client;
    server.send(json!({"jsonrpc": "2.0", "id": 0, "method": "roots/list"})).await;
    server.send(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"})).await;
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "sampling/createMessage", "params": {}})).await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create",
            "params": {"message": "?", "requestedSchema": {"properties": {"ok": {"type": "boolean", "default": true}}}}}))
        .await;
    let mut answers = std::collections::HashMap::new();
    for _ in 0..4 {
        let answer = server.recv().await;
        answers.insert(answer["id"].to_string(), answer);
    }
    assert_eq!(answers["0"]["result"], json!({"roots": [{"uri": "file:///work", "name": "work"}]}));
    assert_eq!(answers["\"p\""]["result"], json!({}));
    assert_eq!(answers["2"]["error"]["code"], -32601, "no sampling handler: method not found");
    assert_eq!(answers["3"]["result"], json!({"action": "accept", "content": {"ok": true}}));
}

#[tokio::test]
async fn the_handshake_declares_only_the_capabilities_we_handle() {
    let builder = quick().era(ProtocolEra::Handshake).roots(Vec::new()).client_info("host", "9");
    let (mut server, connecting) = start(builder);
    let init = server.recv().await;
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["capabilities"], json!({"roots": {}}));
    assert_eq!(init["params"]["clientInfo"], json!({"name": "host", "version": "9"}));
    // A revision we do not speak is refused.
    server.reply(&init, json!({"protocolVersion": "2023-01-01", "capabilities": {}})).await;
    let error = connecting.await.unwrap().unwrap_err();
    assert!(matches!(&error, McpError::UnsupportedVersion { theirs, .. } if theirs == "2023-01-01"), "{error}");
}

#[tokio::test]
async fn tools_are_paginated_and_reloaded_when_the_list_changes() {
    let (client, mut server) = connect(quick()).await;
    let client2 = client.clone();
    let listing = tokio::spawn(async move { client2.list_tools().await });
    let page1 = server.recv().await;
    assert_eq!(page1["params"], Value::Null);
    server
        .reply(&page1, json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "c2"}))
        .await;
    let page2 = server.recv().await;
    assert_eq!(page2["params"]["cursor"], "c2");
    server.reply(&page2, json!({"tools": [{"name": "b"}, {"description": "no name"}]})).await;
    let tools = listing.await.unwrap().unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["a", "b"], "the malformed tool is skipped");

    let mut changes = client.tool_changes();
    changes.borrow_and_update();
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})).await;
    let reload = server.recv().await;
    assert_eq!(reload["method"], "tools/list");
    server.reply(&reload, json!({"tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})).await;
    tokio::time::timeout(Duration::from_secs(5), changes.changed()).await.unwrap().unwrap();
    assert_eq!(client.tools().len(), 3);
}

#[tokio::test]
async fn stateless_servers_get_meta_and_headers_and_fall_back_when_they_cannot() {
    // Auto: `server/discover` answered with -32022 naming only handshake revisions → initialize.
    let (mut server, connecting) = start(quick());
    let discover = server.recv().await;
    assert_eq!(discover["method"], "server/discover");
    assert_eq!(discover["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    assert!(discover["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"].is_object());
    server
        .send(json!({"jsonrpc": "2.0", "id": discover["id"], "error": {"code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2025-06-18"], "requested": "2026-07-28"}}}))
        .await;
    let init = server.recv().await;
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-06-18", "offers what -32022 said the server speaks");
    server.reply(&init, json!({"protocolVersion": "2025-06-18", "capabilities": {}})).await;
    assert_eq!(server.recv().await["method"], "notifications/initialized");
    let client = connecting.await.unwrap().unwrap();
    assert_eq!(client.server().protocol_version, "2025-06-18");
    assert!(!client.server().stateless);
}

#[tokio::test]
async fn stateless_input_required_results_are_answered_and_retried() {
    let builder = quick()
        .era(ProtocolEra::Stateless)
        .elicitation(|_params: Value| async { Ok(json!({"action": "accept", "content": {"confirmed": true}})) });
    let (mut server, connecting) = start(builder);
    let discover = server.recv().await;
    server
        .reply(
            &discover,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "stateless", "version": "1"}}),
        )
        .await;
    let client = connecting.await.unwrap().unwrap();
    assert!(client.server().stateless);
    assert_eq!(client.name(), "stateless");

    let client2 = client.clone();
    let call = tokio::spawn(async move { client2.call_tool("deploy", json!({"env": "prod"})).await });
    let first = server.recv().await;
    assert_eq!(first["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"], "sinew");
    server
        .reply(
            &first,
            json!({"resultType": "input_required", "requestState": "opaque-1",
            "inputRequests": {"confirm": {"method": "elicitation/create", "params": {"message": "sure?"}}}}),
        )
        .await;
    let retry = server.recv().await;
    assert_ne!(retry["id"], first["id"], "a retry is a new request");
    assert_eq!(retry["params"]["arguments"], json!({"env": "prod"}));
    assert_eq!(retry["params"]["requestState"], "opaque-1");
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"confirm": {"action": "accept", "content": {"confirmed": true}}})
    );
    server.reply(&retry, json!({"content": [{"type": "text", "text": "deployed"}]})).await;
    assert_eq!(call.await.unwrap().unwrap().content[0]["text"], "deployed");
}

/// A real server process that answers the handshake, then dies on the first tool call.
fn dying_server() -> StdioCommand {
    let script = r#"
read -r init
id=$(printf '%s' "$init" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"doomed","version":"1"}}}\n' "$id"
read -r initialized
read -r call
echo "fatal: out of memory" >&2
exit 3
"#;
    StdioCommand::new("bash").args(["-c", script])
}

#[tokio::test]
async fn a_server_dying_mid_call_fails_the_call_with_its_exit_and_stderr_and_can_be_reconnected() {
    let client = quick().era(ProtocolEra::Handshake).connect_stdio(dying_server()).await.unwrap();
    assert_eq!(client.name(), "doomed");
    let error = client.call_tool("anything", json!({})).await.unwrap_err();
    let McpError::ConnectionClosed(message) = &error else { panic!("{error}") };
    assert!(message.contains("exit status: 3"), "{message}");
    assert!(message.contains("fatal: out of memory"), "{message}");
    assert!(client.ping().await.is_err());

    // A new connection to a new process works.
    let again = quick().era(ProtocolEra::Handshake).connect_stdio(dying_server()).await.unwrap();
    assert_eq!(again.name(), "doomed");
    again.close().await;
}

#[tokio::test]
async fn a_server_that_cannot_start_or_exits_at_once_is_a_clear_error() {
    let error = quick().connect_stdio(StdioCommand::new("/nonexistent/mcp-server")).await.unwrap_err();
    assert!(
        matches!(&error, McpError::Transport(m) if m.contains("cannot start MCP server `/nonexistent/mcp-server`")),
        "{error}"
    );

    let error = quick()
        .connect_stdio(StdioCommand::new("bash").args(["-c", "echo 'missing API key' >&2; exit 1"]))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("exit status: 1") && message.contains("missing API key"), "{message}");

    // Its stdin closed before we write: the write fails, and the error still says why it died.
    let error = quick()
        .connect_stdio(StdioCommand::new("bash").args(["-c", "exec 0<&-; echo 'bad config' >&2; sleep 0.2; exit 4"]))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("exit status: 4") && message.contains("bad config"), "{message}");
}

#[tokio::test]
async fn closing_ends_a_server_that_ignores_eof() {
    // Ignores EOF and SIGTERM's default (it traps it): close must still end it, with SIGKILL.
    let script = r#"
trap '' TERM
read -r init
id=$(printf '%s' "$init" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}\n' "$id"
read -r initialized
echo $$ > "$PIDFILE"
while true; do sleep 0.1; done
"#;
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let command = StdioCommand::new("bash").args(["-c", script]).env("PIDFILE", pidfile.display().to_string());
    let client = quick().era(ProtocolEra::Handshake).connect_stdio(command).await.unwrap();
    let mut pid = String::new();
    for _ in 0..100 {
        pid = std::fs::read_to_string(&pidfile).unwrap_or_default();
        if !pid.trim().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let proc_dir = format!("/proc/{}", pid.trim());
    assert!(std::path::Path::new(&proc_dir).exists());
    client.close().await;
    let gone = !std::path::Path::new(&proc_dir).exists()
        || std::fs::read_to_string(format!("{proc_dir}/stat")).is_ok_and(|s| s.contains(") Z"));
    assert!(gone, "the server survived close");
}

#[tokio::test]
async fn stderr_is_read_to_its_end_whatever_it_holds() {
    // Bytes that are not UTF-8, then a 100 KB line, then the reason it exits.
    let script = r#"
printf 'bad \377\376 bytes\n' >&2
head -c 100000 /dev/zero | tr '\0' x >&2
printf '\nthe real reason\n' >&2
exit 5
"#;
    let error = quick().connect_stdio(StdioCommand::new("bash").args(["-c", script])).await.unwrap_err();
    let message = error.to_string();
    assert!(message.contains("exit status: 5"), "{message}");
    assert!(message.contains("bad \u{fffd}\u{fffd} bytes"), "{message}");
    assert!(message.contains(&format!("{} …", "x".repeat(4096))), "a long line is cut");
    assert!(!message.contains(&"x".repeat(4097)), "and not kept whole");
    assert!(message.contains("the real reason"), "the lines after are still read: {message}");
}

#[tokio::test]
async fn a_stdio_server_inherits_only_the_default_variables_and_what_it_is_given() {
    let script = "env | cut -d= -f1 | sort >&2; exit 1";
    let command = StdioCommand::new("bash").args(["-c", script]).env("GIVEN", "1").inherit("CARGO");
    let message = quick().connect_stdio(command).await.unwrap_err().to_string();
    let (_, tail) = message.split_once("its stderr ended with:\n").expect("the stderr tail");
    let names: Vec<&str> = tail.lines().collect();
    // What bash itself sets (PWD, SHLVL, _), and nothing of the test process beyond the list.
    let allowed = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "GIVEN", "CARGO", "PWD", "SHLVL", "_", "OLDPWD"];
    assert!(names.iter().all(|n| allowed.contains(n)), "{names:?}");
    assert!(names.contains(&"GIVEN") && names.contains(&"PATH"), "{names:?}");
    assert!(names.contains(&"CARGO"), "cargo sets CARGO for tests, and it was inherited by name: {names:?}");
    assert!(!names.contains(&"CARGO_PKG_NAME"), "{names:?}");
}

#[tokio::test(start_paused = true)]
async fn progress_cannot_keep_a_request_alive_past_the_maximum() {
    let client_builder = quick().request_timeout(Duration::from_millis(300)).max_request_time(Duration::from_secs(1));
    let (client, mut server) = connect(client_builder).await;
    let options = RequestOptions { on_progress: Some(Arc::new(|_| {})), ..RequestOptions::default() };
    let client2 = client.clone();
    let call = tokio::spawn(async move { client2.call_tool_with("endless", json!({}), &options).await });
    let request = server.recv().await;
    let token = request["params"]["_meta"]["progressToken"].clone();
    let mut sent = 0;
    while !call.is_finished() {
        tokio::time::sleep(Duration::from_millis(150)).await;
        server
            .send(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": sent}}))
            .await;
        sent += 1;
        assert!(sent < 100, "progress kept the request alive");
    }
    let error = call.await.unwrap().unwrap_err();
    assert_eq!(error, McpError::Timeout { method: "tools/call".into(), after: Duration::from_secs(1) });
    assert_eq!(server.recv().await["method"], "notifications/cancelled");
}

#[tokio::test]
async fn a_flood_of_list_changed_notifications_refreshes_the_list_a_bounded_number_of_times() {
    let (client, mut server) = connect(quick()).await;
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})).await;
    let first = server.recv().await;
    assert_eq!(first["method"], "tools/list");
    // A hundred more while the first refresh waits for its answer: one more round, not 100.
    for _ in 0..100 {
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})).await;
    }
    server.reply(&first, json!({"tools": [{"name": "a"}]})).await;
    let second = server.recv().await;
    assert_eq!(second["method"], "tools/list");
    server.reply(&second, json!({"tools": [{"name": "a"}, {"name": "b"}]})).await;
    // The next message is our ping: no third refresh was sent.
    let client2 = client.clone();
    let ping = tokio::spawn(async move { client2.ping().await });
    let next = server.recv().await;
    assert_eq!(next["method"], "ping");
    server.reply(&next, json!({})).await;
    ping.await.unwrap().unwrap();
    assert_eq!(client.tools().len(), 2);
}

#[tokio::test]
async fn the_servers_requests_are_answered_sixteen_at_a_time_and_the_rest_refused_at_once() {
    // A sampling handler that never finishes holds its slot.
    let hold = |_params: Value| std::future::pending::<Result<Value, sinew_mcp::RpcError>>();
    let (_client, mut server) = connect(quick().sampling(hold)).await;
    for id in 0..20 {
        server
            .send(json!({"jsonrpc": "2.0", "id": format!("s{id}"), "method": "sampling/createMessage", "params": {"messages": []}}))
            .await;
    }
    let mut refused = Vec::new();
    for _ in 0..4 {
        let answer = server.recv().await;
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains("at most 16"), "{answer}");
        refused.push(answer["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(refused, ["s16", "s17", "s18", "s19"]);
}

#[tokio::test]
async fn timeouts_too_large_for_the_clock_never_fire() {
    let (client, mut server) = connect(quick().request_timeout(Duration::MAX).max_request_time(Duration::MAX)).await;
    let client2 = client.clone();
    let ping = tokio::spawn(async move { client2.ping().await });
    let request = server.recv().await;
    server.reply(&request, json!({})).await;
    ping.await.unwrap().unwrap();
}
