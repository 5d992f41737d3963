//! Which operations become tools, and under which names: `OperationFilter` (REQ-155) and the
//! name prefix (REQ-156).

use sinew_core::AgentTool as _;
use sinew_openapi::{OpenApiDocument, OpenApiToolset, OperationFilter};

const PETS: &str = r#"
openapi: 3.0.3
servers: [{url: "https://pets.example/v1"}]
paths:
  /pets:
    get: {operationId: listPets, tags: [pets]}
    post: {operationId: createPet, tags: [pets, admin]}
  /pets/{id}:
    get:
      operationId: getPet
      tags: [pets]
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
  /health:
    get: {tags: [ops]}
"#;

fn names(toolset: OpenApiToolset) -> Vec<String> {
    toolset.build().unwrap().iter().map(|tool| tool.name().to_owned()).collect()
}

fn pets() -> OpenApiToolset {
    OpenApiToolset::new(OpenApiDocument::parse(PETS).unwrap())
}

#[test]
fn every_filter_keeps_what_it_names() {
    assert_eq!(names(pets()), ["get_health", "listPets", "createPet", "getPet"]);
    let by_id = OperationFilter::ByOperationId(vec!["getPet".into(), "nope".into()]);
    assert_eq!(names(pets().filter(by_id)), ["getPet"]);
    assert_eq!(
        names(pets().filter(OperationFilter::ByTag(vec!["admin".into(), "ops".into()]))),
        ["get_health", "createPet"]
    );
    assert_eq!(names(pets().filter(OperationFilter::ByMethod(vec![http::Method::POST]))), ["createPet"]);
    assert_eq!(names(pets().filter(OperationFilter::ByPathPrefix("/pets/".into()))), ["getPet"]);
    // An operation without an operationId has no id to be chosen by.
    assert!(names(pets().filter(OperationFilter::ByOperationId(vec!["get_health".into()]))).is_empty());
    let operation = &pets().build().unwrap()[2];
    assert_eq!(
        (operation.operation().operation_id.as_deref(), &operation.operation().tags),
        (Some("createPet"), &vec!["pets".to_owned(), "admin".to_owned()])
    );
}

#[test]
fn a_prefix_keeps_two_documents_with_the_same_ids_apart() {
    let mut tools = names(pets().name_prefix("zoo"));
    tools.extend(names(pets().name_prefix("shelter api")));
    assert_eq!(&tools[..4], ["zoo__get_health", "zoo__listPets", "zoo__createPet", "zoo__getPet"]);
    assert_eq!(tools[7], "shelter_api__getPet", "the prefix is sanitized as names are");
    let mut unique = tools.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), tools.len(), "{tools:?}");
    // Long prefixes keep names within 64 characters, and apart.
    let long = names(pets().name_prefix("p".repeat(70)));
    assert!(long.iter().all(|name| name.len() <= 64), "{long:?}");
    let mut apart = long.clone();
    apart.dedup();
    assert_eq!(apart.len(), 4);
}

/// A document from a file or a URL gives the same tools as the same text parsed (REQ-157).
#[tokio::test]
async fn documents_from_files_and_urls() {
    use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};
    let names_of = |document: OpenApiDocument| names(OpenApiToolset::new(document));
    let expected = names(pets());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pets.yaml");
    std::fs::write(&file, PETS).unwrap();
    assert_eq!(names_of(OpenApiDocument::from_file(&file).await.unwrap()), expected);
    let missing = OpenApiDocument::from_file(dir.path().join("nope.yaml")).await.unwrap_err();
    assert!(missing.to_string().contains("cannot read"), "{missing}");

    let server = MockServer::start(|request: &ReceivedRequest| match request.path.as_str() {
        "/pets.yaml" => ServedResponse::new(200).header("content-type", "application/yaml").chunk(PETS),
        "/huge.yaml" => ServedResponse::new(200).chunk("x".repeat(sinew_openapi::MAX_DOCUMENT_BYTES + 1)),
        _ => ServedResponse::new(404).chunk("no such document"),
    })
    .await;
    let client = sinew_http::HttpClient::new();
    let fetched = OpenApiDocument::from_url(&format!("{}/pets.yaml", server.url()), &client).await.unwrap();
    assert_eq!(names_of(fetched), expected);
    let absent = OpenApiDocument::from_url(&format!("{}/gone.yaml", server.url()), &client).await.unwrap_err();
    assert!(absent.to_string().contains("404"), "{absent}");
    let huge = OpenApiDocument::from_url(&format!("{}/huge.yaml", server.url()), &client).await.unwrap_err();
    assert!(matches!(huge, sinew_openapi::OpenApiError::Fetch(_)), "{huge}");
    let nowhere = OpenApiDocument::from_url("http://user:hunter2@127.0.0.1:9/doc.yaml", &client).await.unwrap_err();
    assert!(!nowhere.to_string().contains("hunter2"), "{nowhere}");
}
