//! The Streamable HTTP transport against a scripted HTTP server: failures it must explain.

use serde_json::{Value, json};
use sinew_mcp::{McpClient, McpError, ProtocolEra};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};

/// A handshake-era server: `initialize` gives a session, the GET stream is refused, and
/// `tools/call` is answered by `call`.
fn server(call: fn(&Value) -> ServedResponse) -> impl Fn(&ReceivedRequest) -> ServedResponse {
    move |request| {
        if request.method == "GET" {
            return ServedResponse::new(405);
        }
        if request.method == "DELETE" {
            return ServedResponse::new(200);
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
