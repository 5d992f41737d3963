//! The replay plugin of ADK's conformance harness, over HTTP. (The harness itself runs in
//! `cargo xtask conformance`: both recorded cases pass in both modes.)

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use sinew_adk::InMemorySessionService;
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_server::conformance::{ReplayPlugin, demo_agent};
use sinew_server::{AdkApi, ServerConfig, serve};

use crate::send;

fn case(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../sinew-adk/tests/data/conformance/tests")
        .join(name)
        .display()
        .to_string()
}

/// A server with the demo agent built by `agent` and the replay plugin.
async fn server(agent: sinew_adk::LlmAgent) -> std::net::SocketAddr {
    let api = AdkApi::new(Arc::new(InMemorySessionService::new()))
        .plugin(Arc::new(ReplayPlugin::new(case(""))))
        .app("demo_agent", Arc::new(agent))
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, api, ServerConfig::default(), std::future::pending()));
    addr
}

fn silent() -> Arc<ScriptedLlm> {
    Arc::new(ScriptedLlm::new(Vec::<ScriptedAnswer>::new()).named("fake-llm"))
}

/// Runs the echo case's first message as the harness sends it; the stream's frames.
async fn echo(addr: std::net::SocketAddr, mode: &str) -> Vec<Value> {
    let session =
        send(addr, "POST", "/apps/demo_agent/users/adk_conformance_test_user/sessions", Some("{}"), &[]).await;
    let id = session.json()["id"].as_str().unwrap().to_owned();
    let body = json!({
        "appName": "demo_agent", "userId": "adk_conformance_test_user", "sessionId": id,
        "newMessage": {"role": "user", "parts": [{"text": "hello"}]}, "streaming": mode == "sse",
        "stateDelta": {"_adk_replay_config": {"dir": case("core/demo_echo_001"), "user_message_index": 0, "streaming_mode": mode}},
    });
    send(addr, "POST", "/run_sse", Some(&body.to_string()), &[]).await.frames()
}

#[tokio::test]
async fn the_recorded_model_answers_in_both_modes() {
    let addr = server(demo_agent(silent()).unwrap()).await;
    for mode in ["none", "sse"] {
        let frames = echo(addr, mode).await;
        let last = frames.last().unwrap();
        assert!(last.get("error").is_none(), "{mode}: {last}");
        assert_eq!(last["content"]["parts"][0]["text"], "Echo: hello", "{mode}");
        assert_eq!(frames.iter().any(|f| f["partial"] == true), mode == "sse", "{mode}");
    }
}

/// An agent whose request differs from the recorded one fails the run, saying where.
#[tokio::test]
async fn a_request_that_differs_from_the_recording_fails_loudly() {
    let verbose = sinew_adk::LlmAgent::builder("demo_agent")
        .model(silent())
        .description("demo")
        .instruction("You are a demo agent. Be verbose.")
        .build()
        .unwrap();
    let addr = server(verbose).await;
    let frames = echo(addr, "none").await;
    let error = frames.last().unwrap()["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("ReplayVerificationError: LLM request mismatch in turn 0 for agent 'demo_agent' (index 0)"),
        "{error}"
    );
}

/// A replay that points at no recordings fails the run instead of calling the real model.
#[tokio::test]
async fn missing_recordings_are_a_configuration_error() {
    let addr = server(demo_agent(silent()).unwrap()).await;
    let session = send(addr, "POST", "/apps/demo_agent/users/u/sessions", None, &[]).await.json();
    let body = json!({
        "appName": "demo_agent", "userId": "u", "sessionId": session["id"],
        "newMessage": {"role": "user", "parts": [{"text": "hello"}]},
        "stateDelta": {"_adk_replay_config": {"dir": "/nonexistent", "user_message_index": 0, "streaming_mode": "none"}},
    });
    let frames = send(addr, "POST", "/run_sse", Some(&body.to_string()), &[]).await.frames();
    let error = frames.last().unwrap()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("ReplayConfigError: recordings file /nonexistent/generated-recordings.yaml"), "{error}");
}

/// Recordings outside the plugin's root are never read, whatever the session state says.
#[tokio::test]
async fn recordings_outside_the_root_are_refused() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::copy(
        PathBuf::from(case("core/demo_echo_001")).join("generated-recordings.yaml"),
        outside.path().join("generated-recordings.yaml"),
    )
    .unwrap();
    let addr = server(demo_agent(silent()).unwrap()).await;
    let session = send(addr, "POST", "/apps/demo_agent/users/u/sessions", None, &[]).await.json();
    let body = json!({
        "appName": "demo_agent", "userId": "u", "sessionId": session["id"],
        "newMessage": {"role": "user", "parts": [{"text": "hello"}]},
        "stateDelta": {"_adk_replay_config": {"dir": outside.path(), "user_message_index": 0, "streaming_mode": "none"}},
    });
    let frames = send(addr, "POST", "/run_sse", Some(&body.to_string()), &[]).await.frames();
    let error = frames.last().unwrap()["error"].as_str().unwrap().to_owned();
    assert!(error.contains("is not under the replay root"), "{error}");
}

/// The confirmation case's first message, against recordings whose first tool call is changed by
/// `change`: the function response the run gives for `delete_file`.
async fn replayed_tool_response(change: impl Fn(&str) -> String) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let recorded =
        std::fs::read_to_string(PathBuf::from(case("tool/demo_confirm_001")).join("generated-recordings.yaml"))
            .unwrap();
    std::fs::write(dir.path().join("generated-recordings.yaml"), change(&recorded)).unwrap();
    let api = AdkApi::new(Arc::new(InMemorySessionService::new()))
        .plugin(Arc::new(ReplayPlugin::new(dir.path())))
        .app("demo_agent", Arc::new(demo_agent(silent()).unwrap()))
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, api, ServerConfig::default(), std::future::pending()));
    let session = send(addr, "POST", "/apps/demo_agent/users/u/sessions", None, &[]).await.json();
    let body = json!({
        "appName": "demo_agent", "userId": "u", "sessionId": session["id"],
        "newMessage": {"role": "user", "parts": [{"text": "please delete it"}]},
        "stateDelta": {"_adk_replay_config": {"dir": dir.path(), "user_message_index": 0, "streaming_mode": "none"}},
    });
    let frames = send(addr, "POST", "/run_sse", Some(&body.to_string()), &[]).await.frames();
    frames
        .iter()
        .flat_map(|f| f["content"]["parts"].as_array().cloned().unwrap_or_default())
        .find_map(|p| {
            (p["functionResponse"]["name"] == "delete_file").then(|| p["functionResponse"]["response"].clone())
        })
        .unwrap_or_else(|| panic!("no delete_file response: {frames:#?}"))
}

/// The recorded tool call of the first message: the first `tool_call:` block's `path` and `name`.
fn first_tool_call(recorded: &str, path: &str, name: &str) -> String {
    let at = recorded.find("tool_recording:").unwrap();
    let (head, tail) = recorded.split_at(at);
    let tail = tail.replacen("path: /tmp/x", &format!("path: {path}"), 1).replacen(
        "name: delete_file",
        &format!("name: {name}"),
        1,
    );
    format!("{head}{tail}")
}

/// A tool call that differs from the recorded one is not answered with the recording: its
/// response says where it differs, as adk-python's plugin words it.
#[tokio::test]
async fn tool_calls_that_differ_from_the_recording_are_refused() {
    let unchanged = replayed_tool_response(|r| first_tool_call(r, "/tmp/x", "delete_file")).await;
    assert_eq!(unchanged["error"], "This tool call requires confirmation, please approve or reject.");

    let args = replayed_tool_response(|r| first_tool_call(r, "/tmp/elsewhere", "delete_file")).await;
    let error = args["error"].as_str().unwrap();
    assert!(
        error.starts_with("ReplayVerificationError: Tool args mismatch for agent 'demo_agent' at index 0"),
        "{error}"
    );
    assert!(error.contains("/tmp/elsewhere") && error.contains("/tmp/x"), "{error}");

    let name = replayed_tool_response(|r| first_tool_call(r, "/tmp/x", "get_weather")).await;
    let error = name["error"].as_str().unwrap();
    assert!(
        error.starts_with("ReplayVerificationError: Tool name mismatch for agent 'demo_agent' at index 0"),
        "{error}"
    );
}
