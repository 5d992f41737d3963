//! The Streamable HTTP transport against a scripted HTTP server: failures it must explain.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use sinew_mcp::{McpClient, McpError, ProtocolEra};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};

#[path = "http/oauth.rs"]
mod oauth;

/// A handshake-era server: `initialize` gives a session, the GET stream is refused, and
/// `tools/call` is answered by `call`.
fn server(
    call: impl Fn(&Value) -> ServedResponse + Send + Sync + 'static,
) -> impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync + 'static {
    session_server(call, |_| ServedResponse::new(405))
}

/// The same server, whose GET requests `get` answers.
fn session_server(
    call: impl Fn(&Value) -> ServedResponse + Send + Sync + 'static,
    get: impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync + 'static,
) -> impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync + 'static {
    move |request| {
        match request.method.as_str() {
            "GET" => return get(request),
            "DELETE" => return ServedResponse::new(200),
            _ => {}
        }
        let body = request.json();
        match body["method"].as_str() {
            Some("initialize") => ServedResponse::json(
                200,
                &json!({"jsonrpc": "2.0", "id": body["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
            )
            .header("mcp-session-id", "s-1"),
            Some("tools/call") => {
                assert_eq!(request.header("mcp-session-id"), Some("s-1"));
                assert_eq!(request.header("mcp-protocol-version"), Some("2025-11-25"));
                call(&body)
            }
            _ => ServedResponse::new(202),
        }
    }
}

async fn connect(server: &MockServer) -> McpClient {
    McpClient::builder().era(ProtocolEra::Handshake).connect_http(format!("{}/mcp", server.url())).await.unwrap()
}

#[tokio::test]
async fn a_response_stream_that_ends_unanswered_and_without_an_event_id_fails_the_call() {
    let server = MockServer::start(server(|_| ServedResponse::sse("event: message\ndata: \n\n"))).await;
    let client = connect(&server).await;
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(error, McpError::ConnectionClosed("the server ended the response stream before answering".into()));
}

#[tokio::test]
async fn an_expired_session_says_so() {
    let server = MockServer::start(server(|_| ServedResponse::new(404))).await;
    let client = connect(&server).await;
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    let McpError::Http { status: 404, message } = &error else { panic!("{error}") };
    assert!(message.contains("does not know this session"), "{message}");
}

#[tokio::test]
async fn json_rpc_errors_in_failure_statuses_reach_the_request() {
    let server = MockServer::start(server(|body| {
        ServedResponse::json(
            400,
            &json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32602, "message": "bad arguments"}}),
        )
    }))
    .await;
    let client = connect(&server).await;
    let error = client.call_tool("t", json!({})).await.unwrap_err();
    assert_eq!(error.code(), Some(-32602));
}

#[tokio::test]
async fn a_stateless_client_never_falls_back_to_legacy_sse() {
    let server = MockServer::start(|_: &ReceivedRequest| ServedResponse::new(404)).await;
    let error = McpClient::builder()
        .era(ProtocolEra::Stateless)
        .connect_http(format!("{}/mcp", server.url()))
        .await
        .unwrap_err();
    assert!(matches!(error, McpError::Http { status: 404, .. }), "{error}");
    assert!(server.requests().iter().all(|r| r.method == "POST"), "no GET for a legacy stream");

    // Auto: discovery and the handshake are refused with a 4xx, so the legacy transport is tried.
    let error = McpClient::builder().connect_http(format!("{}/mcp", server.url())).await.unwrap_err();
    assert!(error.to_string().contains("not an SSE endpoint"), "{error}");
    assert!(server.requests().iter().any(|r| r.method == "GET"));
}

#[tokio::test]
async fn a_cut_response_stream_is_resumed_with_last_event_id_after_the_retry_delay() {
    let call_id = Arc::new(Mutex::new(Value::Null));
    let seen = Arc::clone(&call_id);
    let call = move |body: &Value| {
        *seen.lock().unwrap() = body["id"].clone();
        ServedResponse::sse("id: e1\nretry: 50\ndata: \n\n")
    };
    // The standalone stream is refused; the resumption gets the answer.
    let get = move |request: &ReceivedRequest| match request.header("last-event-id") {
        Some("e1") => {
            let answer = json!({"jsonrpc": "2.0", "id": *call_id.lock().unwrap(),
                "result": {"content": [{"type": "text", "text": "resumed"}]}});
            ServedResponse::sse(format!("id: e2\nevent: message\ndata: {answer}\n\n"))
        }
        _ => ServedResponse::new(405),
    };
    let handler = session_server(call, get);
    let server = MockServer::start(handler).await;
    let client = connect(&server).await;
    let result = client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(result.content[0]["text"], "resumed");
    let resumed = server.requests().into_iter().find(|r| r.header("last-event-id").is_some()).unwrap();
    assert_eq!(resumed.method, "GET");
    assert_eq!(resumed.header("mcp-session-id"), Some("s-1"));
}

#[tokio::test]
async fn header_providers_reach_every_request_and_closing_deletes_the_session() {
    let server = MockServer::start(server(|body| {
        ServedResponse::json(200, &json!({"jsonrpc": "2.0", "id": body["id"], "result": {"content": []}}))
    }))
    .await;
    let client = McpClient::builder()
        .era(ProtocolEra::Handshake)
        .headers(vec![("authorization".to_owned(), "Bearer t0ken".to_owned())])
        .connect_http(format!("{}/mcp", server.url()))
        .await
        .unwrap();
    client.call_tool("t", json!({})).await.unwrap();
    client.close().await;
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.header("authorization") == Some("Bearer t0ken")), "{requests:?}");
    let methods: Vec<&str> = requests.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods.first(), Some(&"POST"));
    assert!(methods.contains(&"GET"), "the server stream was opened: {methods:?}");
    let delete = requests.iter().find(|r| r.method == "DELETE").expect("DELETE on close");
    assert_eq!(delete.header("mcp-session-id"), Some("s-1"));
}

#[tokio::test]
async fn stateless_requests_carry_the_revision_headers_and_mirrored_parameters() {
    let server = MockServer::start(|request: &ReceivedRequest| {
        let body = request.json();
        let result = match body["method"].as_str() {
            Some("server/discover") => json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
            Some("tools/list") => json!({"tools": [{"name": "deploy", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "note": {"type": "string"}}}}]}),
            _ => json!({"content": []}),
        };
        ServedResponse::json(200, &json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
    })
    .await;
    let client = McpClient::builder().connect_http(format!("{}/mcp", server.url())).await.unwrap();
    assert!(client.server().stateless);
    client.list_tools().await.unwrap();
    client.call_tool("deploy", json!({"region": "eu west", "note": "x"})).await.unwrap();
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.method == "POST"), "no GET stream, no DELETE in the stateless revision");
    for request in &requests {
        let body = request.json();
        assert_eq!(request.header("mcp-method"), body["method"].as_str());
        assert_eq!(request.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
    }
    let call = requests.iter().find(|r| r.header("mcp-method") == Some("tools/call")).unwrap();
    assert_eq!(call.header("mcp-name"), Some("deploy"));
    assert_eq!(call.header("mcp-param-region"), Some("eu west"));
    assert_eq!(call.header("mcp-param-note"), None);
}

#[tokio::test]
async fn a_legacy_sse_message_over_the_limit_ends_the_connection_with_a_clear_error() {
    let huge = format!("event: message\ndata: {}\n\n", "x".repeat(4096));
    let server = MockServer::start(move |request: &ReceivedRequest| match request.method.as_str() {
        "GET" => ServedResponse::sse("event: endpoint\ndata: /message\n\n").chunk(huge.clone()).then_hang(),
        _ if request.path.starts_with("/message") => ServedResponse::new(202),
        _ => ServedResponse::new(404),
    })
    .await;
    let error =
        McpClient::builder().max_message_bytes(1024).connect_http(format!("{}/mcp", server.url())).await.unwrap_err();
    assert!(error.to_string().contains("over the 1024-byte limit"), "{error}");
}
