//! The tools against Prism (`prism mock`), which validates every request against the document:
//! Petstore 3.0 (JSON and YAML), Train Travel 3.1, and the `$ref`-heavy Star Trek API without
//! operationIds. They need `SINEW_PEERS_DIR` (see `build.rs`).

use serde_json::{Map, Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError};
use sinew_openapi::{Credential, OpenApiDocument, OpenApiTool, OpenApiToolset};
use sinew_testing::peers::{PeerProcess, free_port, peers_dir};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

fn spec(name: &str) -> OpenApiDocument {
    OpenApiDocument::from_path(peers_dir().join("specs").join(name)).unwrap()
}

/// `prism mock` serving `spec` on a free port.
async fn prism(spec: &str) -> PeerProcess {
    let port = free_port();
    let dir = peers_dir();
    let mut command = Command::new(dir.join("node_modules/.bin/prism"));
    command.args(["mock", "-h", "127.0.0.1", "-p", &port.to_string()]).arg(dir.join("specs").join(spec));
    PeerProcess::start(command, port).await
}

fn ctx(name: &str) -> ToolContext {
    ToolContext::new("call", name, CancellationToken::new())
}

/// A value the schema accepts: its example, enum, default, or one made from its type.
fn example(schema: &Value, depth: usize) -> Value {
    for key in ["example", "default"] {
        if let Some(value) = schema.get(key) {
            return value.clone();
        }
    }
    if let Some(first) = schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(first) = ["oneOf", "anyOf"].iter().find_map(|k| schema.get(*k)?.as_array()?.first()) {
        return example(first, depth + 1);
    }
    if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
        let mut merged = Map::new();
        for part in parts {
            if let Value::Object(fields) = example(part, depth + 1) {
                merged.extend(fields);
            }
        }
        return Value::Object(merged);
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.as_str(),
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" if depth < 6 => {
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut fields = Map::new();
            for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
                if required.contains(&name.as_str()) {
                    fields.insert(name.clone(), example(property, depth + 1));
                }
            }
            Value::Object(fields)
        }
        "object" => json!({}),
        "array" => json!([example(schema.get("items").unwrap_or(&json!({})), depth + 1)]),
        "integer" => json!(schema.get("minimum").and_then(Value::as_i64).unwrap_or(1).max(1)),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => match schema.get("format").and_then(Value::as_str) {
            Some("date-time") => json!("2026-05-01T10:00:00Z"),
            Some("date") => json!("2026-05-01"),
            Some("uuid") => json!("3fa85f64-5717-4562-b3fc-2c963f66afa6"),
            Some("email") => json!("someone@example.com"),
            Some("uri" | "url") => json!("https://example.com/x"),
            _ => json!("text"),
        },
    }
}

/// Arguments for a tool: every required argument, and the body if there is one.
fn arguments(tool: &OpenApiTool) -> Value {
    let mut schema = tool.parameters_schema();
    if let Some(body) = &tool.operation().body {
        let mut required = schema["required"].as_array().cloned().unwrap_or_default();
        if !required.iter().any(|r| r == body.argument.as_str()) {
            required.push(Value::from(body.argument.clone()));
        }
        schema["required"] = Value::Array(required);
    }
    example(&schema, 0)
}

/// Calls every tool with valid arguments: Prism must not find a violation in any request.
async fn every_request_validates(tools: &[OpenApiTool]) -> usize {
    let mut succeeded = 0;
    for tool in tools {
        let args = arguments(tool);
        match tool.execute(args.clone(), ctx(tool.name())).await {
            Ok(_) => succeeded += 1,
            Err(ToolError::Failed(message)) => {
                // Some operations only declare error responses (addPet: 405), which Prism returns
                // for a valid request; a request Prism rejects says so.
                assert!(
                    !message.contains("validation:")
                        && !["HTTP 401", "HTTP 415", "HTTP 422"].iter().any(|s| message.starts_with(s)),
                    "{} {args}: {message}",
                    tool.name()
                );
            }
            Err(other) => panic!("{}: {other:?}", tool.name()),
        }
    }
    succeeded
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the Prism tests")]
async fn petstore_3_0_requests_pass_prism_validation() {
    let yaml = spec("petstore-3.0.yaml");
    let json = spec("petstore-3.0.json");
    let names = |doc: &OpenApiDocument| {
        let mut names: Vec<String> =
            OpenApiToolset::new(doc.clone()).build().unwrap().iter().map(|t| t.name().to_owned()).collect();
        names.sort();
        names
    };
    assert_eq!(names(&yaml), names(&json), "JSON and YAML give the same tools");
    assert_eq!(names(&yaml).len(), 20);

    let prism = prism("petstore-3.0.yaml").await;
    let tools = OpenApiToolset::new(yaml.clone())
        .base_url(prism.url())
        .credential("api_key", Credential::Secret("special-key".into()))
        .credential("petstore_auth", Credential::Secret("token-123".into()))
        .build()
        .unwrap();
    let tool = |name: &str| tools.iter().find(|t| t.name() == name).unwrap();

    // Path + API key header; query array; query pair; JSON body.
    let pet = tool("getPetById").execute(json!({"petId": 42}), ctx("getPetById")).await.unwrap();
    assert_eq!(pet.details["status"], 200);
    let pet: Value = serde_json::from_str(pet.content[0].as_text().unwrap()).unwrap();
    assert!(pet["name"].is_string(), "{pet}");
    let found = tool("findPetsByStatus").execute(json!({"status": ["available", "sold"]}), ctx("f")).await.unwrap();
    assert_eq!(found.details["status"], 200);
    let login = tool("loginUser").execute(json!({"username": "u", "password": "p"}), ctx("l")).await.unwrap();
    assert_eq!(login.details["status"], 200);
    let order = json!({"body": {"id": 1, "petId": 42, "quantity": 2, "shipDate": "2026-05-01T10:00:00Z", "status": "placed", "complete": false}});
    assert_eq!(tool("placeOrder").execute(order, ctx("o")).await.unwrap().details["status"], 200);

    // Prism's validation errors come back as error results.
    let ToolError::Failed(bad_path) = tool("getPetById").execute(json!({"petId": "abc"}), ctx("g")).await.unwrap_err()
    else {
        panic!()
    };
    assert!(bad_path.starts_with("HTTP 400") && bad_path.contains("validation:"), "{bad_path}");
    let anonymous = OpenApiToolset::new(yaml).base_url(prism.url()).build().unwrap();
    let get = anonymous.iter().find(|t| t.name() == "getPetById").unwrap();
    let ToolError::Failed(unauthorized) = get.execute(json!({"petId": 42}), ctx("g")).await.unwrap_err() else {
        panic!()
    };
    assert!(unauthorized.starts_with("HTTP 401"), "{unauthorized}");
    // A missing required argument never reaches the server.
    assert!(matches!(get.execute(json!({}), ctx("g")).await, Err(ToolError::InvalidArgs(m)) if m.contains("petId")));

    // 7 operations declare no 2xx answer (addPet: only 405), so Prism answers those with the
    // error they declare; every other one succeeds.
    let succeeded = every_request_validates(&tools).await;
    assert_eq!(succeeded, 13, "operations answered 2xx");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the Prism tests")]
async fn petstore_json_document_serves_the_same_requests() {
    let prism = prism("petstore-3.0.json").await;
    let tools = OpenApiToolset::new(spec("petstore-3.0.json"))
        .base_url(prism.url())
        .credential("api_key", Credential::Secret("special-key".into()))
        .credential("petstore_auth", Credential::Secret("token-123".into()))
        .build()
        .unwrap();
    every_request_validates(&tools).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the Prism tests")]
async fn train_travel_3_1_requests_pass_prism_validation() {
    let document = spec("train-travel-3.1.yaml");
    assert!(document.version().starts_with("3.1"));
    let prism = prism("train-travel-3.1.yaml").await;
    let tools = OpenApiToolset::new(document)
        .base_url(prism.url())
        .credential("OAuth2", Credential::Secret("token-123".into()))
        .build()
        .unwrap();
    let stations = tools.iter().find(|t| t.name() == "get-stations").unwrap();
    let result = stations.execute(json!({"country": "DE"}), ctx("s")).await.unwrap();
    assert_eq!(result.details["status"], 200);
    assert!(result.content[0].as_text().unwrap().contains("data"));
    let succeeded = every_request_validates(&tools).await;
    assert!(succeeded >= tools.len() - 1, "{succeeded} of {} operations answered 2xx", tools.len());
}

#[tokio::test]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the Prism tests")]
async fn a_ref_heavy_document_without_operation_ids_yields_the_documented_names() {
    let tools = OpenApiToolset::new(spec("star-trek-3.0.yaml")).build().unwrap();
    assert_eq!(tools.len(), 120);
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    for expected in
        ["get_animal", "get_animal_search", "post_animal_search", "get_spacecraft", "post_spacecraft_search"]
    {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len());
    for tool in &tools {
        assert!(tool.name().len() <= 64);
        let schema = tool.parameters_schema().to_string();
        assert!(!schema.contains("$ref"), "{}: {schema}", tool.name());
    }
    let search = tools.iter().find(|t| t.name() == "post_animal_search").unwrap();
    assert_eq!(search.operation().body.as_ref().unwrap().content_type, "application/x-www-form-urlencoded");

    let simple = OpenApiToolset::new(spec("petstore-simple-no-opid.yaml")).build().unwrap();
    let names: Vec<&str> = simple.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["get_pet_by_id", "put_pet_by_id"]);
    assert_eq!(simple[0].parameters_schema()["required"], json!(["id"]), "the path-level parameter is there");
}

#[tokio::test]
#[cfg_attr(not(sinew_test_peers), ignore = "set SINEW_PEERS_DIR to run the Prism tests")]
async fn a_circular_schema_loads() {
    let tools = OpenApiToolset::new(spec("schema-circular-3.0.yaml")).base_url("http://127.0.0.1:9").build().unwrap();
    assert!(!tools.is_empty());
    for tool in &tools {
        let schema = tool.parameters_schema().to_string();
        assert!(!schema.contains("$ref"), "{schema}");
    }
}
