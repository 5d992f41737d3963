//! adk-python's own models judge what the routes answer (`validate_adk_json.py`, run with the
//! python of `SINEW_ADK_PYTHON`): sessions, `/run`'s events and `/run_sse`'s frames.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::json;
use sinew_adk::InMemorySessionService;
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{FunctionTool, LlmAgent};
use sinew_server::{AdkApi, ServerConfig, serve};

use crate::send;

/// Has adk-python validate `text` as `kind` (`session`, `events`, `sse`).
fn validate(dir: &Path, name: &str, kind: &str, text: &str) {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let python = std::env::var("SINEW_ADK_PYTHON").expect("SINEW_ADK_PYTHON names a python with google-adk 2.13.0");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../sinew-adk/tests/data/scripts/validate_adk_json.py");
    let output = Command::new(python).arg(script).arg(kind).arg(&file).output().unwrap();
    assert!(
        output.status.success(),
        "adk-python rejects {name}:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
#[cfg_attr(not(sinew_test_adk_python), ignore = "set SINEW_ADK_PYTHON to a python with google-adk 2.13.0")]
async fn adk_python_accepts_what_the_routes_answer() {
    let echo = FunctionTool::new("echo", "Echoes.", json!({"type": "object"}), |args, ctx| {
        ctx.set_state("echoed", args["text"].clone());
        async move { Ok(json!({"echo": args["text"]})) }
    });
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("echo", json!({"text": "hi"})),
        ScriptedAnswer::streamed(&["Echo: ", "hi"]),
        ScriptedAnswer::text("Again."),
    ]));
    let agent = LlmAgent::builder("demo_agent").model(llm).tool(Arc::new(echo)).build().unwrap();
    let api = AdkApi::new(Arc::new(InMemorySessionService::new())).app("demo_agent", Arc::new(agent)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, api, ServerConfig::default(), std::future::pending()));
    let dir = tempfile::tempdir().unwrap();

    let base = "/apps/demo_agent/users/u1/sessions";
    let created =
        send(addr, "POST", base, Some(r#"{"sessionId": "s1", "state": {"app:a": 1, "user:b": 2, "k": 3}}"#), &[]).await;
    validate(dir.path(), "created.json", "session", &created.body);
    let body = |streaming: bool, text: &str| {
        json!({"appName": "demo_agent", "userId": "u1", "sessionId": "s1", "streaming": streaming,
            "newMessage": {"role": "user", "parts": [{"text": text}]}})
        .to_string()
    };
    let sse = send(addr, "POST", "/run_sse", Some(&body(true, "hi")), &[]).await;
    assert!(sse.frames().iter().any(|f| f["partial"] == true), "fragments are judged too");
    validate(dir.path(), "run.sse", "sse", &sse.body);
    let run = send(addr, "POST", "/run", Some(&body(false, "again")), &[]).await;
    validate(dir.path(), "run.json", "events", &run.body);
    let patched = send(addr, "PATCH", &format!("{base}/s1"), Some(r#"{"stateDelta": {"k": 4}}"#), &[]).await;
    validate(dir.path(), "patched.json", "session", &patched.body);
    let got = send(addr, "GET", &format!("{base}/s1"), None, &[]).await;
    assert!(got.json()["events"].as_array().unwrap().len() >= 6);
    validate(dir.path(), "session.json", "session", &got.body);
    for (i, session) in send(addr, "GET", base, None, &[]).await.json().as_array().unwrap().iter().enumerate() {
        validate(dir.path(), &format!("listed-{i}.json"), "session", &session.to_string());
    }
}
