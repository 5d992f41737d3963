//! `sinew serve`: a directory of ADK apps served over HTTP, the model a scripted
//! Anthropic-compatible server, a client talking ADK's api_server dialect.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use sinew_testing::MockServer;
use sinew_testing::wire::{WireTurn, anthropic_events, sse_response};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

use crate::support::{BINARY, Sandbox};

/// One request over a fresh connection; the status and the body.
async fn request(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let status = raw.split(' ').nth(1).unwrap().parse().unwrap();
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// `sinew serve APPS` on a free port: the process, its first line and its address.
async fn start(sandbox: &Sandbox, apps: &std::path::Path) -> (tokio::process::Child, String, String) {
    let mut child = tokio::process::Command::new(BINARY)
        .args(["serve", apps.to_str().unwrap(), "--port", "0", "--session_service_uri", "memory://"])
        .env_clear()
        .envs(sandbox.vars())
        .current_dir(sandbox.workspace.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await.unwrap().unwrap().unwrap();
    let addr = line.split("http://").nth(1).and_then(|rest| rest.split('/').next()).unwrap().to_owned();
    (child, line, addr)
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_runs_yaml_apps_in_adks_dialect() {
    let model =
        MockServer::start(|_| sse_response(anthropic_events(&WireTurn::new().text("Hello from YAML.")), None)).await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &model.url())]);
    let apps = sandbox.workspace.path().join("apps");
    std::fs::create_dir_all(apps.join("greeter")).unwrap();
    std::fs::write(
        apps.join("greeter/root_agent.yaml"),
        "name: greeter\nmodel: anthropic/claude-sonnet-4-5\ninstruction: Greet.\ntools:\n  - name: read_file\n",
    )
    .unwrap();

    let (_child, line, addr) = start(&sandbox, &apps).await;
    assert!(line.contains("(apps: greeter)"), "{line}");

    let (status, apps_listed) = request(&addr, "GET", "/list-apps", "").await;
    assert_eq!((status, serde_json::from_str::<Value>(&apps_listed).unwrap()), (200, json!(["greeter"])));
    request(&addr, "POST", "/apps/greeter/users/u/sessions", r#"{"sessionId": "s1"}"#).await;
    let body = json!({"appName": "greeter", "userId": "u", "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]}});
    let (status, events) = request(&addr, "POST", "/run", &body.to_string()).await;
    assert_eq!(status, 200, "{events}");
    let events: Value = serde_json::from_str(&events).unwrap();
    assert_eq!(events[0]["content"]["parts"][0]["text"], "Hello from YAML.");
    assert_eq!(events[0]["author"], "greeter");
    // The model got the YAML's instruction and the built-in tool it named.
    let sent = model.requests()[0].json();
    assert!(sent["system"].to_string().contains("Greet."), "{sent}");
    assert_eq!(sent["tools"][0]["name"], "read_file");
}

#[tokio::test]
async fn serve_refuses_a_broken_app_at_start() {
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test")]);
    let apps = sandbox.workspace.path().join("apps");
    std::fs::create_dir_all(apps.join("broken")).unwrap();
    let yaml = "name: broken\nmodel: anthropic/claude-sonnet-4-5\ntools:\n  - name: no_such_tool\n";
    std::fs::write(apps.join("broken/root_agent.yaml"), yaml).unwrap();
    let run =
        sandbox.run(&["serve", apps.to_str().unwrap(), "--port", "0", "--session_service_uri", "memory://"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("no tool named `no_such_tool`"), "{}", run.stderr);
    assert!(run.stderr.contains("root_agent.yaml"), "the file is named: {}", run.stderr);
}

#[tokio::test]
async fn serve_refuses_other_machines_without_a_token() {
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test")]);
    let apps = sandbox.workspace.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let run = sandbox.run(&["serve", apps.to_str().unwrap(), "--host", "0.0.0.0", "--port", "0"], "").await;
    run.assert_code(2);
    assert!(run.stderr.contains("set SINEW_SERVER_TOKEN"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_answers_agent_backed_chat_and_serves_the_page() {
    let model =
        MockServer::start(|_| sse_response(anthropic_events(&WireTurn::new().text("Hello from chat.")), None)).await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &model.url())]);
    let apps = sandbox.workspace.path().join("apps");
    std::fs::create_dir_all(&apps).unwrap();
    let (_child, line, addr) = start(&sandbox, &apps).await;
    assert!(line.contains("chat on http://"), "{line}");

    let (status, page) = request(&addr, "GET", "/", "").await;
    assert_eq!(status, 200);
    assert!(page.contains("<title>sinew chat</title>"), "{page}");
    let definition = json!({"name": "Reader", "model": "anthropic/claude-sonnet-4-5", "instruction": "Read.", "tools": ["read_file"]});
    let (status, created) = request(&addr, "POST", "/api/agent-definitions", &definition.to_string()).await;
    assert_eq!(status, 201, "{created}");
    let id = serde_json::from_str::<Value>(&created).unwrap()["id"].clone();
    let (status, stream) =
        request(&addr, "POST", "/api/chat/stream", &json!({"message": "hi", "agentDefinitionId": id}).to_string())
            .await;
    assert_eq!(status, 200, "{stream}");
    assert!(stream.contains(r#""token":"Hello from chat.""#), "{stream}");
    assert!(stream.contains(r#""type":"done""#), "{stream}");
    let sent = model.requests()[0].json();
    assert!(sent["system"].to_string().contains("Read."), "{sent}");
    // The chat tables are beside the sessions, in the apps directory.
    assert!(apps.join(".adk/chat.db").is_file());
}
