//! An agent calls an OpenAPI operation: the document from text, a file or a URL, chosen and
//! named by the toolset's settings (REQ-158), against a local server.

use serde_json::json;
use sinew::openapi::{AgentOpenApiExt, OperationFilter};
use sinew::testing::{MockProvider, MockResponse, MockServer, ReceivedRequest, ServedResponse};
use sinew::{Agent, EndReason};

mod common;

const DOCUMENT: &str = r#"
openapi: 3.0.3
paths:
  /greetings/{name}:
    get:
      operationId: greet
      tags: [people]
      parameters: [{name: name, in: path, required: true, schema: {type: string}}]
  /admin/reset:
    post: {operationId: reset, tags: [admin]}
"#;

fn names(agent: &Agent) -> Vec<&str> {
    agent.tools().iter().map(|tool| tool.name()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_an_operation_of_a_document() {
    let api = MockServer::start(|request: &ReceivedRequest| match request.path.as_str() {
        "/greetings/ada" => ServedResponse::new(200).header("content-type", "text/plain").chunk("Hello, ada"),
        "/openapi.yaml" => ServedResponse::new(200).chunk(DOCUMENT),
        _ => ServedResponse::new(404),
    })
    .await;
    let model = MockProvider::new([
        MockResponse::new().tool_call("call_1", "people__greet", json!({"name": "ada"})),
        MockResponse::text("It said hello."),
    ]);
    let mut agent = Agent::new(model, "scripted-model")
        .with_openapi_spec(DOCUMENT, |tools| {
            tools.base_url(api.url()).filter(OperationFilter::ByTag(vec!["people".into()])).name_prefix("people")
        })
        .unwrap();
    assert_eq!(names(&agent), ["people__greet"], "the admin operation is left out");
    let outcome = agent.prompt("Greet ada").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    let result = common::first_tool_result(agent.messages());
    assert!(!result.is_error, "{result:?}");
    assert!(sinew::content::join_text(&result.content, "").ends_with("Hello, ada"), "{result:?}");

    // The same document from a file and from a URL.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("api.yaml"), DOCUMENT).unwrap();
    let agent = Agent::new(MockProvider::new([]), "m")
        .with_openapi_file(dir.path().join("api.yaml"), |tools| tools.base_url(api.url()).name_prefix("file"))
        .await
        .unwrap()
        .with_openapi_url(&format!("{}/openapi.yaml", api.url()), |tools| tools.base_url(api.url()).name_prefix("url"))
        .await
        .unwrap();
    assert_eq!(names(&agent), ["file__reset", "file__greet", "url__reset", "url__greet"]);
    let broken = Agent::new(MockProvider::new([]), "m").with_openapi_spec("openapi: [", |tools| tools).err().unwrap();
    assert!(broken.to_string().contains("cannot parse the document"), "{broken}");
}
