//! A tool's call against a scripted HTTP server: responses cut, failures, timeouts, cancellation.

use std::time::Duration;

use serde_json::json;
use sinew_core::{AgentTool, ToolContext, ToolError};
use sinew_openapi::{OpenApiDocument, OpenApiTool, OpenApiToolset};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};
use tokio_util::sync::CancellationToken;

fn tool(server: &MockServer, max_response_bytes: usize, timeout: Duration) -> OpenApiTool {
    let document = OpenApiDocument::parse(
        "openapi: 3.0.3\npaths:\n  /things/{id}:\n    get:\n      operationId: getThing\n      parameters: [{name: id, in: path, required: true, schema: {type: string}}]\n",
    )
    .unwrap();
    let tools = OpenApiToolset::new(document)
        .base_url(server.url())
        .max_response_bytes(max_response_bytes)
        .timeout(timeout)
        .build()
        .unwrap();
    tools.into_iter().next().unwrap()
}

fn ctx() -> ToolContext {
    ToolContext::new("call", "getThing", CancellationToken::new())
}

#[tokio::test]
async fn long_answers_are_cut_on_a_character_boundary_and_say_so() {
    let server = MockServer::start(|request: &ReceivedRequest| match request.path.as_str() {
        "/things/long" => ServedResponse::new(200).header("content-type", "text/plain").chunk("é".repeat(100)),
        _ => ServedResponse::new(204),
    })
    .await;
    let tool = tool(&server, 11, Duration::from_secs(30));
    let result = tool.execute(json!({"id": "long"}), ctx()).await.unwrap();
    assert_eq!(result.content[0].as_text(), Some("ééééé\n[response truncated at 11 bytes]"));
    assert_eq!(result.details, json!({"status": 200, "contentType": "text/plain", "truncated": true}));
    let empty = tool.execute(json!({"id": "none"}), ctx()).await.unwrap();
    assert_eq!(empty.content[0].as_text(), Some("HTTP 204 No Content (no content)"));
}

#[tokio::test]
async fn failures_are_error_results_with_status_body_and_violations() {
    let server = MockServer::start(|request: &ReceivedRequest| match request.path.as_str() {
        "/things/bad" => {
            ServedResponse::new(400).header("sl-violations", "[{\"message\":\"must be integer\"}]").chunk("{}")
        }
        _ => ServedResponse::new(500).chunk("boom"),
    })
    .await;
    let tool = tool(&server, 1024, Duration::from_secs(30));
    let bad = tool.execute(json!({"id": "bad"}), ctx()).await.unwrap_err();
    assert_eq!(
        bad,
        ToolError::Failed("HTTP 400 Bad Request: {}\nvalidation: [{\"message\":\"must be integer\"}]".into())
    );
    let down = tool.execute(json!({"id": "x"}), ctx()).await.unwrap_err();
    assert_eq!(down, ToolError::Failed("HTTP 500 Internal Server Error: boom".into()));
    let missing = tool.execute(json!({}), ctx()).await.unwrap_err();
    assert_eq!(missing, ToolError::InvalidArgs("missing required argument `id`".into()));
    assert_eq!(server.requests().len(), 2, "a refused call sends nothing");
}

#[tokio::test]
async fn hung_servers_time_out_and_aborted_runs_cancel_the_call() {
    let server = MockServer::start(|_: &ReceivedRequest| ServedResponse::new(200).chunk("{").then_hang()).await;
    let quick = tool(&server, 1024, Duration::from_millis(300));
    let slow = quick.execute(json!({"id": "1"}), ctx()).await.unwrap_err();
    assert_eq!(slow, ToolError::Failed("GET /things/{id}: no answer within 300ms".into()));

    let tool = tool(&server, 1024, Duration::from_secs(30));
    let cancel = CancellationToken::new();
    let call = ToolContext::new("call", "getThing", cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    assert_eq!(tool.execute(json!({"id": "1"}), call).await.unwrap_err(), ToolError::Cancelled);
    canceller.await.unwrap();
}
