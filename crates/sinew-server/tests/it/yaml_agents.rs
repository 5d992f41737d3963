//! Agents from ADK AgentConfig YAML directories, served.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use sinew_adk::testing::ScriptedLlm;
use sinew_adk::{FunctionTool, InMemorySessionService, Llm};
use sinew_server::{AdkApi, AgentRegistry, ServerConfig, serve};

use crate::send;

fn write(dir: &Path, file: &str, text: &str) {
    let path = dir.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Models: `mock/echo` answers "from yaml", anything else is unknown. Tools: `lookup`.
fn registry() -> AgentRegistry {
    AgentRegistry::new(|name| {
        (name == "mock/echo").then(|| Arc::new(ScriptedLlm::texts(["from yaml"; 8]).named("mock/echo")) as Arc<dyn Llm>)
    })
    .tool(Arc::new(FunctionTool::new("lookup", "Looks up.", json!({"type": "object"}), |_, _| async { Ok(json!({})) })))
}

#[tokio::test]
async fn a_directory_of_apps_is_served() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "helper/root_agent.yaml",
        "
name: helper
description: Helps.
model: mock/echo
instruction: Be brief.
tools:
  - name: lookup
sub_agents:
  - config_path: team/pipeline.yaml
",
    );
    write(
        dir.path(),
        "helper/team/pipeline.yaml",
        "
agent_class: SequentialAgent
name: pipeline
sub_agents:
  - config_path: step.yaml
  - config_path: loop.yaml
",
    );
    write(dir.path(), "helper/team/step.yaml", "name: step\nmodel: mock/echo\noutput_key: last\n");
    write(
        dir.path(),
        "helper/team/loop.yaml",
        "agent_class: LoopAgent\nname: again\nmax_iterations: 2\nsub_agents: []\n",
    );
    write(dir.path(), "not_an_app/readme.txt", "no root_agent.yaml here");
    let api = AdkApi::new(Arc::new(InMemorySessionService::new())).apps_from_dir(dir.path(), &registry()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, api, ServerConfig::default(), std::future::pending()));

    assert_eq!(send(addr, "GET", "/list-apps", None, &[]).await.json(), json!(["helper"]));
    let info = send(addr, "GET", "/apps/helper/app-info", None, &[]).await.json();
    // As adk-python lists them: LlmAgents reached through LlmAgents (the workflow agents and what
    // is under them are left out).
    let agents: Vec<&String> = info["agents"].as_object().unwrap().keys().collect();
    assert_eq!(agents, ["helper"]);
    assert_eq!(info["agents"]["helper"]["sub_agents"], json!([]));
    assert_eq!(info["agents"]["helper"]["instruction"], "Be brief.");
    assert_eq!(info["agents"]["helper"]["tools"][0]["functionDeclarations"][0]["name"], "lookup");
    assert_eq!(info["description"], "Helps.");

    send(addr, "POST", "/apps/helper/users/u/sessions", Some(r#"{"sessionId": "s1"}"#), &[]).await;
    let body = json!({"appName": "helper", "userId": "u", "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]}});
    let events = send(addr, "POST", "/run", Some(&body.to_string()), &[]).await.json();
    assert_eq!(events[0]["content"]["parts"][0]["text"], "from yaml");
    assert_eq!(events[0]["author"], "helper");
}

#[test]
fn broken_files_are_errors_that_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let load = |yaml: &str| {
        write(dir.path(), "app/root_agent.yaml", yaml);
        registry().load_app(dir.path(), "app").err().map(|e| e.to_string()).unwrap_or_default()
    };
    let error = load("name: a\nmodel: other/model\n");
    assert!(error.contains("root_agent.yaml") && error.contains("no provider serves model `other/model`"), "{error}");
    let error = load("name: a\nmodel: mock/echo\ntools:\n  - name: nope\n");
    assert!(error.contains("no tool named `nope` (known: lookup)"), "{error}");
    let error = load("name: a\n");
    assert!(
        error.contains("agent `a` has no model, and no agent above it has one"),
        "found at start, not at the first run: {error}"
    );
    let error = load("name: a\nmodle: typo\n");
    assert!(error.contains("unknown field `modle`"), "{error}");
    let error = load("agent_class: CustomAgent\nname: a\n");
    assert!(error.contains("agent_class `CustomAgent`"), "{error}");
    write(dir.path(), "outside.yaml", "name: outside\n");
    let error = load("name: a\nmodel: mock/echo\nsub_agents:\n  - config_path: ../outside.yaml\n");
    assert!(error.contains("leaves the app's directory"), "{error}");
    let error = load("name: a\nmodel: mock/echo\nsub_agents:\n  - config_path: root_agent.yaml\n");
    assert!(error.contains("nest deeper"), "a cycle ends: {error}");
}

#[test]
fn app_names_that_are_paths_never_reach_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["../etc", "a/b", "", ".hidden", "1app"] {
        let error = registry().load_app(dir.path(), name).err().unwrap().to_string();
        assert!(error.contains("is not a plain identifier"), "{name}: {error}");
    }
}

/// A pipeline built with sinew-fluent, written as YAML, is an app the server serves.
#[tokio::test]
async fn a_fluent_pipeline_is_served_from_its_yaml() {
    use sinew_fluent::Agent;

    let dir = tempfile::tempdir().unwrap();
    let pipeline =
        (Agent::new("classifier", "mock/echo").instruct("Classify.").outputs("intent").tool(registry_lookup())
            >> Agent::new("resolver", "mock/echo").instruct("Resolve {intent}."))
        .build()
        .unwrap();
    sinew_fluent::yaml::write_yaml_dir(&pipeline, &dir.path().join("support")).unwrap();

    let api = AdkApi::new(Arc::new(InMemorySessionService::new())).apps_from_dir(dir.path(), &registry()).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, api, ServerConfig::default(), std::future::pending()));
    assert_eq!(send(addr, "GET", "/list-apps", None, &[]).await.json(), json!(["support"]));
    send(addr, "POST", "/apps/support/users/u/sessions", Some(r#"{"sessionId": "s1"}"#), &[]).await;
    let body = json!({"appName": "support", "userId": "u", "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]}});
    let events = send(addr, "POST", "/run", Some(&body.to_string()), &[]).await.json();
    let authors: Vec<&str> = events.as_array().unwrap().iter().map(|e| e["author"].as_str().unwrap()).collect();
    assert_eq!(authors, ["classifier", "resolver"]);
    assert_eq!(events[0]["actions"]["stateDelta"]["intent"], "from yaml");
}

/// The registry's `lookup` tool, for agents built in code.
fn registry_lookup() -> Arc<dyn sinew_adk::Tool> {
    Arc::new(FunctionTool::new("lookup", "Looks up.", json!({"type": "object"}), |_, _| async { Ok(json!({})) }))
}
