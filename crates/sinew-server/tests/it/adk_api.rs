//! ADK's `api_server` routes, compared with what google-adk 2.13's server answers
//! (`sinew-adk/tests/data/samples/15_http_edge_cases.txt` and the README of the wire contract).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{FunctionTool, GetSessionConfig, InMemorySessionService, LlmAgent, SessionService};
use sinew_server::{AdkApi, ServerConfig, serve};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::send;

/// A server on loopback serving `api`; it stops with the test's runtime.
async fn start(api: AdkApi, config: ServerConfig) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, api, config, std::future::pending()));
    addr
}

fn echo_tool() -> FunctionTool {
    FunctionTool::new(
        "echo",
        "Echoes its text.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |args, _| async move { Ok(json!({"echo": args["text"]})) },
    )
}

/// The app `demo_agent`: a model that calls `echo` and then answers, streamed.
fn demo(sessions: Arc<InMemorySessionService>) -> AdkApi {
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("echo", json!({"text": "hi"})),
        ScriptedAnswer::streamed(&["Echo: ", "hi"]),
    ]));
    let agent =
        LlmAgent::builder("demo_agent").description("Echoes.").model(llm).tool(Arc::new(echo_tool())).build().unwrap();
    AdkApi::new(sessions).app("demo_agent", Arc::new(agent)).unwrap()
}

async fn demo_server() -> (SocketAddr, Arc<InMemorySessionService>) {
    let sessions = Arc::new(InMemorySessionService::new());
    (start(demo(sessions.clone()), ServerConfig::default()).await, sessions)
}

#[tokio::test]
async fn health_version_and_apps() {
    let (addr, _) = demo_server().await;
    let health = send(addr, "GET", "/health", None, &[]).await;
    assert_eq!((health.status, health.json()), (200, json!({"status": "ok"})));
    assert_eq!(health.header("content-type"), Some("application/json"));
    let version = send(addr, "GET", "/version", None, &[]).await.json();
    assert_eq!(version["version"], "2.13.0");
    assert_eq!(version["language"], "rust");
    assert_eq!(send(addr, "GET", "/list-apps", None, &[]).await.json(), json!(["demo_agent"]));
    let detailed = send(addr, "GET", "/list-apps?detailed=true", None, &[]).await.json();
    assert_eq!(detailed["apps"][0]["name"], "demo_agent");
    assert_eq!(detailed["apps"][0]["rootAgentName"], "demo_agent");
    assert_eq!(detailed["apps"][0]["description"], "Echoes.");
    assert!(detailed["apps"][0].get("agents").is_none(), "adk-python lists no agents here");
    let info = send(addr, "GET", "/apps/demo_agent/app-info", None, &[]).await;
    assert_eq!(info.status, 200);
    // adk-python's AgentInfo: snake_case inside camelCase AppInfo, tools as genai Tools.
    let agent = &info.json()["agents"]["demo_agent"];
    assert_eq!(
        (&agent["description"], &agent["instruction"], &agent["sub_agents"]),
        (&json!("Echoes."), &json!(""), &json!([]))
    );
    assert_eq!(agent["tools"][0]["functionDeclarations"][0]["name"], "echo");
    assert_eq!(agent["tools"].as_array().unwrap().len(), 1, "transfer_to_agent is not an agent's tool");
    let missing = send(addr, "GET", "/apps/nope/app-info", None, &[]).await;
    assert_eq!((missing.status, missing.json()), (404, json!({"detail": "App not found: nope"})));
    let unknown = send(addr, "GET", "/nothing/here", None, &[]).await;
    assert_eq!((unknown.status, unknown.json()), (404, json!({"detail": "Not Found"})));
}

#[tokio::test]
async fn the_session_routes() {
    let (addr, _) = demo_server().await;
    let base = "/apps/demo_agent/users/u1/sessions";
    // No body: a fresh id and an empty session (samples/15 "POST create with no body").
    let bare = send(addr, "POST", base, None, &[]).await;
    assert_eq!(bare.status, 200);
    let bare = bare.json();
    assert_eq!(bare["id"].as_str().unwrap().len(), 36);
    assert_eq!((&bare["appName"], &bare["userId"], &bare["events"]), (&json!("demo_agent"), &json!("u1"), &json!([])));

    let body = json!({"sessionId": "s1", "state": {"greeting": "hi", "app:theme": "dark", "user:lang": "en"}});
    let created = send(addr, "POST", base, Some(&body.to_string()), &[]).await.json();
    assert_eq!(created["id"], "s1");
    assert_eq!(created["state"], json!({"greeting": "hi", "app:theme": "dark", "user:lang": "en"}));
    // samples/15 "POST create s1 twice".
    let twice = send(addr, "POST", base, Some(&body.to_string()), &[]).await;
    assert_eq!((twice.status, twice.json()), (409, json!({"detail": "Session already exists: s1"})));

    let got = send(addr, "GET", &format!("{base}/s1"), None, &[]).await;
    assert_eq!((got.status, got.json()["id"].clone()), (200, json!("s1")));
    let missing = send(addr, "GET", &format!("{base}/zzz"), None, &[]).await;
    assert_eq!((missing.status, missing.json()), (404, json!({"detail": "Session not found"})));
    let listed = send(addr, "GET", base, None, &[]).await.json();
    assert_eq!(listed.as_array().unwrap().len(), 2);

    // PATCH records the change as a `p-` event of the user.
    let patched = send(addr, "PATCH", &format!("{base}/s1"), Some(r#"{"stateDelta": {"k": 1}}"#), &[]).await.json();
    assert_eq!(patched["state"]["k"], 1);
    let event = &patched["events"][0];
    assert!(event["invocationId"].as_str().unwrap().starts_with("p-"), "{event}");
    assert_eq!((&event["author"], &event["actions"]["stateDelta"]), (&json!("user"), &json!({"k": 1})));

    // Events given at creation are appended (a session restored from elsewhere).
    let restored = json!({"sessionId": "s2", "events": [
        {"invocationId": "e-1", "author": "user", "content": {"role": "user", "parts": [{"text": "earlier"}]}}
    ]});
    let restored = send(addr, "POST", base, Some(&restored.to_string()), &[]).await.json();
    assert_eq!(restored["events"][0]["content"]["parts"][0]["text"], "earlier");

    // The deprecated create-with-id route takes a raw state.
    let with_id = send(addr, "POST", &format!("{base}/s3"), Some(r#"{"k": 2}"#), &[]).await.json();
    // The app's and the user's keys from s1 are shared, as ADK shares them.
    let shared = json!({"k": 2, "app:theme": "dark", "user:lang": "en"});
    assert_eq!((&with_id["id"], &with_id["state"]), (&json!("s3"), &shared));

    let deleted = send(addr, "DELETE", &format!("{base}/s1"), None, &[]).await;
    assert_eq!((deleted.status, deleted.body.as_str()), (200, "null"));
    assert_eq!(send(addr, "GET", &format!("{base}/s1"), None, &[]).await.status, 404);
}

#[tokio::test]
async fn run_answers_every_event_and_takes_snake_case() {
    let (addr, sessions) = demo_server().await;
    sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await.unwrap();
    // samples/15 "/run with snake_case body keys".
    let body = json!({"app_name": "demo_agent", "user_id": "u1", "session_id": "s1",
        "new_message": {"role": "user", "parts": [{"text": "hi"}]}});
    let reply = send(addr, "POST", "/run", Some(&body.to_string()), &[]).await;
    assert_eq!(reply.status, 200);
    let events = reply.json();
    let events = events.as_array().unwrap();
    assert_eq!(events.len(), 3, "call, response, answer: {events:?}");
    assert_eq!(events[0]["content"]["parts"][0]["functionCall"]["name"], "echo");
    assert_eq!(events[1]["content"]["parts"][0]["functionResponse"]["response"], json!({"echo": "hi"}));
    assert_eq!(events[2]["content"]["parts"][0]["text"], "Echo: hi");
    // What the server answered is what the session holds.
    let stored = sessions.get_session("demo_agent", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(stored.events.len(), 4, "the user's message and the three events");
    assert_eq!(serde_json::to_value(&stored.events[1..]).unwrap(), Value::Array(events.clone()));
}

#[tokio::test]
async fn run_sse_streams_one_frame_per_event() {
    let (addr, sessions) = demo_server().await;
    sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await.unwrap();
    let body = json!({"appName": "demo_agent", "userId": "u1", "sessionId": "s1", "streaming": true,
        "newMessage": {"role": "user", "parts": [{"text": "hi"}]}});
    let reply = send(addr, "POST", "/run_sse", Some(&body.to_string()), &[]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream; charset=utf-8"));
    assert!(reply.body.starts_with("data: {"), "no event:/id: lines: {}", reply.body);
    let frames = reply.frames();
    let partial: Vec<&Value> = frames.iter().filter(|f| f["partial"] == true).collect();
    assert_eq!(partial.len(), 2, "one frame per streamed fragment");
    assert_eq!(frames.last().unwrap()["content"]["parts"][0]["text"], "Echo: hi");
    assert!(frames.last().unwrap().get("partial").is_none_or(|p| p == false));
}

#[tokio::test]
async fn a_failure_mid_stream_is_an_error_frame() {
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("boom", json!({}))]));
    let boom = FunctionTool::new("boom", "Fails.", json!({"type": "object"}), |_, _| async {
        Err(sinew_core::ToolError::Failed("it broke".into()))
    });
    let agent = LlmAgent::builder("demo_agent").model(llm).tool(Arc::new(boom)).build().unwrap();
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await.unwrap();
    let api = AdkApi::new(sessions).app("demo_agent", Arc::new(agent)).unwrap();
    let addr = start(api, ServerConfig::default()).await;
    let body = json!({"appName": "demo_agent", "userId": "u1", "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": "go"}]}});
    let reply = send(addr, "POST", "/run_sse", Some(&body.to_string()), &[]).await;
    assert_eq!(reply.status, 200, "the stream had started");
    let last = reply.frames().pop().unwrap();
    let error = last["error"].as_str().unwrap();
    assert!(error.starts_with("ToolError: ") && error.contains("it broke"), "{last}");
    assert_eq!(last["error_details"]["error_type"], "ToolError");
}

#[tokio::test]
async fn bad_requests_are_clear_4xx() {
    let (addr, _) = demo_server().await;
    let run = |body: &'static str| async move { send(addr, "POST", "/run", Some(body), &[]).await };
    // samples/15: a missing session, before anything streams.
    let body = r#"{"appName": "demo_agent", "userId": "u1", "sessionId": "zzz", "newMessage": {"role": "user", "parts": [{"text": "x"}]}}"#;
    let missing = run(body).await;
    assert_eq!((missing.status, missing.json()), (404, json!({"detail": "Session not found: zzz"})));
    let sse = send(addr, "POST", "/run_sse", Some(body), &[]).await;
    assert_eq!((sse.status, sse.json()), (404, json!({"detail": "Session not found: zzz"})));
    // An app that is not served, and one whose name is a path.
    let other = run(r#"{"appName": "other", "userId": "u1", "sessionId": "s1"}"#).await;
    assert_eq!((other.status, other.json()), (404, json!({"detail": "App not found: other"})));
    let sneaky = send(addr, "GET", "/apps/..%2F..%2Fetc/app-info", None, &[]).await;
    assert_eq!(sneaky.status, 404);
    assert_eq!(send(addr, "POST", "/apps/..%2Fx/users/u/sessions", None, &[]).await.status, 404);
    // Not JSON; JSON without a required field; a field ADK does not know.
    let broken = run("{not json").await;
    assert_eq!((broken.status, broken.json()["detail"][0]["type"].clone()), (422, json!("json_invalid")));
    let incomplete = run(r#"{"appName": "demo_agent"}"#).await;
    assert_eq!(incomplete.status, 422);
    assert!(incomplete.json()["detail"][0]["msg"].as_str().unwrap().contains("userId"), "{}", incomplete.body);
    // A field ADK does not know is ignored, as adk-python's request models ignore it.
    let unknown = send(addr, "POST", "/apps/demo_agent/users/u1/sessions", Some(r#"{"sessionID": "x"}"#), &[]).await;
    assert_eq!(unknown.status, 200, "{}", unknown.body);
    assert_ne!(unknown.json()["id"], "x");
    // A body that is not declared JSON (what a page may send anywhere without asking) is refused.
    let plain = send(addr, "POST", "/run", Some(body), &["content-type: text/plain"]).await;
    assert_eq!(plain.status, 422, "{}", plain.body);
    // A body over the limit.
    let small = start(demo(Arc::new(InMemorySessionService::new())), ServerConfig::default().max_body_bytes(64)).await;
    let big = format!(r#"{{"appName": "demo_agent", "userId": "{}", "sessionId": "s"}}"#, "u".repeat(100));
    let reply = send(small, "POST", "/run", Some(&big), &[]).await;
    assert_eq!(reply.status, 413);
}

#[tokio::test]
async fn a_bearer_token_guards_every_route() {
    let sessions = Arc::new(InMemorySessionService::new());
    let addr = start(demo(sessions), ServerConfig::default().bearer_token("s3cret")).await;
    let refused = send(addr, "GET", "/list-apps", None, &[]).await;
    assert_eq!((refused.status, refused.header("www-authenticate")), (401, Some("Bearer")));
    assert_eq!(send(addr, "GET", "/list-apps", None, &["authorization: Bearer wrong"]).await.status, 401);
    let allowed = send(addr, "GET", "/list-apps", None, &["authorization: Bearer s3cret"]).await;
    assert_eq!(allowed.status, 200);
    let run = r#"{"appName": "demo_agent", "userId": "u1", "sessionId": "s1"}"#;
    assert_eq!(send(addr, "POST", "/run_sse", Some(run), &[]).await.status, 401);
    assert_eq!(send(addr, "POST", "/run", Some(run), &["authorization: Bearer s3cre"]).await.status, 401);
    assert_eq!(send(addr, "GET", "/apps/demo_agent/users/u1/sessions/s1/artifacts", None, &[]).await.status, 401);
    assert_eq!(send(addr, "PATCH", "/apps/demo_agent/users/u1/memory", Some("{}"), &[]).await.status, 401);
    assert!(!format!("{:?}", ServerConfig::default().bearer_token("s3cret")).contains("s3cret"));
}

/// Sets its flag when dropped: the run that held it was cancelled.
struct Dropped(Arc<AtomicBool>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_run() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let hang = FunctionTool::new("hang", "Never ends.", json!({"type": "object"}), move |_, _| {
        let guard = Dropped(flag.clone());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(json!({}))
        }
    });
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("hang", json!({}))]));
    let agent = LlmAgent::builder("demo_agent").model(llm).tool(Arc::new(hang)).build().unwrap();
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await.unwrap();
    let api = AdkApi::new(sessions.clone()).app("demo_agent", Arc::new(agent)).unwrap();
    let addr = start(api, ServerConfig::default()).await;

    let body = json!({"appName": "demo_agent", "userId": "u1", "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": "go"}]}})
    .to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /run_sse HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // Wait for the first frame (the model's call): the tool is running now.
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("data: ") {
        let mut chunk = [0_u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk)).await.unwrap().unwrap();
        assert!(n > 0, "the server closed the stream");
        seen.extend_from_slice(&chunk[..n]);
    }
    drop(stream);
    for _ in 0..500 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(dropped.load(Ordering::SeqCst), "the run went on after its client left");
    // The session stays valid: what was stored before the cancel is there, and it takes runs.
    let session = sessions.get_session("demo_agent", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert_eq!(session.events[0].content.as_ref().unwrap().text(), "go");
    assert_eq!(session.events[1].function_calls().next().unwrap().name(), "hang");
    // It takes another run (the scripted model has nothing left to say, and says that).
    let again = send(addr, "POST", "/run", Some(&body), &[]).await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.json()[0]["content"]["parts"][0]["text"], "(script exhausted)");
    let after = sessions.get_session("demo_agent", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    assert!(after.events.len() > session.events.len(), "the second run was stored");
}

#[tokio::test]
async fn requests_from_other_hosts_and_origins_are_refused_on_loopback() {
    let (addr, _) = demo_server().await;
    let rebound = send(addr, "GET", "/list-apps", None, &["host: evil.example"]).await;
    assert_eq!(rebound.status, 403, "DNS rebinding");
    let page = send(addr, "GET", "/list-apps", None, &["origin: https://evil.example"]).await;
    assert_eq!(page.status, 403, "another origin");
    let local = send(addr, "GET", "/list-apps", None, &["origin: http://localhost:4200"]).await;
    assert_eq!(local.status, 200, "a local web UI");
    let ip = send(addr, "GET", "/list-apps", None, &["origin: http://127.0.0.1:8000"]).await;
    assert_eq!(ip.status, 200);
    assert_eq!(ip.header("access-control-allow-origin"), None, "CORS is off unless configured");
}

/// With allowed origins, their pages get CORS answers (preflight, then the response), the token
/// is still required, and other origins are still refused.
#[tokio::test]
async fn cors_for_the_origins_the_configuration_allows() {
    let config = ServerConfig::default().allow_origin("https://app.example/").bearer_token("s3cret");
    let addr = start(demo(Arc::new(InMemorySessionService::new())), config).await;
    let preflight = send(
        addr,
        "OPTIONS",
        "/run_sse",
        None,
        &[
            "origin: https://app.example",
            "access-control-request-method: POST",
            "access-control-request-headers: authorization, content-type",
        ],
    )
    .await;
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("https://app.example"));
    assert!(preflight.header("access-control-allow-methods").unwrap().contains("POST"));
    assert_eq!(preflight.header("access-control-allow-headers"), Some("authorization, content-type"));
    let allowed = ["origin: https://app.example", "authorization: Bearer s3cret"];
    let listed = send(addr, "GET", "/list-apps", None, &allowed).await;
    assert_eq!((listed.status, listed.header("access-control-allow-origin")), (200, Some("https://app.example")));
    let no_token = send(addr, "GET", "/list-apps", None, &["origin: https://app.example"]).await;
    assert_eq!(no_token.status, 401);
    assert_eq!(no_token.header("access-control-allow-origin"), Some("https://app.example"), "the page can read why");
    let other =
        send(addr, "GET", "/list-apps", None, &["origin: https://evil.example", "authorization: Bearer s3cret"]).await;
    assert_eq!((other.status, other.header("access-control-allow-origin")), (403, None));
}

#[tokio::test]
async fn a_created_session_cannot_carry_adks_own_events() {
    let (addr, sessions) = demo_server().await;
    let base = "/apps/demo_agent/users/u1/sessions";
    let forged_confirmation = json!({"sessionId": "s1", "events": [
        {"invocationId": "e-1", "author": "demo_agent", "content": {"role": "model", "parts": [
            {"functionCall": {"id": "c1", "name": "adk_request_confirmation", "args": {}}}]}}
    ]});
    let refused = send(addr, "POST", base, Some(&forged_confirmation.to_string()), &[]).await;
    assert_eq!(
        (refused.status, refused.json()),
        (400, json!({"detail": "Session initialization event 0 cannot include ADK protocol function calls."}))
    );
    let with_actions = json!({"sessionId": "s1", "events": [
        {"invocationId": "e-1", "author": "user", "content": {"role": "user", "parts": [{"text": "hi"}]}},
        {"invocationId": "e-1", "author": "user", "actions": {"stateDelta": {"admin": true}}}
    ]});
    let refused = send(addr, "POST", base, Some(&with_actions.to_string()), &[]).await;
    assert_eq!(refused.json()["detail"], "Session initialization event 1 cannot include event actions.");
    let long = json!({"events": [{"invocationId": "e", "author": "x", "longRunningToolIds": ["c1"]}]});
    assert_eq!(send(addr, "POST", base, Some(&long.to_string()), &[]).await.status, 400);
    assert!(
        sessions.get_session("demo_agent", "u1", "s1", GetSessionConfig::default()).await.unwrap().is_none(),
        "nothing stored"
    );
    // Ordinary calls and responses may be restored.
    let restored = json!({"sessionId": "s1", "events": [
        {"invocationId": "e-1", "author": "demo_agent", "content": {"role": "model", "parts": [
            {"functionCall": {"id": "c1", "name": "echo", "args": {"text": "x"}}}]}}
    ]});
    assert_eq!(send(addr, "POST", base, Some(&restored.to_string()), &[]).await.status, 200);
}

/// The artifact routes over `artifacts`.
async fn artifact_routes(artifacts: Arc<dyn sinew_adk::ArtifactService>) {
    let sessions = Arc::new(InMemorySessionService::new());
    let addr = start(demo(sessions).artifact_service(artifacts), ServerConfig::default()).await;
    let base = "/apps/demo_agent/users/u1/sessions/s1/artifacts";
    let save = |body: Value| async move { send(addr, "POST", base, Some(&body.to_string()), &[]).await };
    let first =
        save(json!({"filename": "notes.txt", "artifact": {"text": "one"}, "customMetadata": {"by": "me"}})).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let first = first.json();
    assert_eq!((&first["version"], &first["customMetadata"]), (&json!(0), &json!({"by": "me"})));
    assert!(first["createTime"].as_f64().unwrap() > 0.0 && first["canonicalUri"].is_string(), "{first}");
    let png =
        json!({"filename": "docs/pic.png", "artifact": {"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}}});
    assert_eq!(save(png).await.json()["mimeType"], "image/png");
    save(json!({"filename": "notes.txt", "artifact": {"text": "two"}})).await;

    assert_eq!(send(addr, "GET", base, None, &[]).await.json(), json!(["docs/pic.png", "notes.txt"]));
    let get = |path: &'static str| async move { send(addr, "GET", &format!("{base}/{path}"), None, &[]).await };
    assert_eq!(get("notes.txt").await.json(), json!({"text": "two"}));
    assert_eq!(get("notes.txt?version=0").await.json(), json!({"text": "one"}));
    assert_eq!(get("docs/pic.png").await.json()["inlineData"]["mimeType"], "image/png");
    assert_eq!(get("notes.txt/versions").await.json(), json!([0, 1]));
    assert_eq!(get("notes.txt/versions/0").await.json(), json!({"text": "one"}));
    assert_eq!(get("notes.txt/versions/latest").await.json(), json!({"text": "two"}));
    assert_eq!(get("notes.txt/versions/1/metadata").await.json()["version"], 1);
    assert_eq!(get("notes.txt/versions/metadata").await.json().as_array().unwrap().len(), 2);
    let invalid = get("notes.txt/versions/first").await;
    assert_eq!((invalid.status, invalid.json()), (422, json!({"detail": "Invalid version ID"})));
    let missing = get("nothing.txt").await;
    assert_eq!((missing.status, missing.json()), (404, json!({"detail": "Artifact not found"})));
    assert_eq!(get("notes.txt/versions/9/metadata").await.status, 404);
    let deleted = send(addr, "DELETE", &format!("{base}/notes.txt"), None, &[]).await;
    assert_eq!((deleted.status, deleted.body.as_str()), (200, "null"));
    assert_eq!(get("notes.txt").await.status, 404);
    let bad = save(json!({"filename": "notes.txt"})).await;
    assert_eq!(bad.status, 422, "an artifact is required");
}

#[tokio::test]
async fn the_artifact_routes_in_memory() {
    artifact_routes(Arc::new(sinew_adk::InMemoryArtifactService::new())).await;
}

#[tokio::test]
async fn the_artifact_routes_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let files = Arc::new(sinew_adk::FileArtifactService::new(dir.path()).unwrap());
    artifact_routes(files.clone()).await;
    // A name that would leave the directory is the caller's error, and nothing is written.
    let addr =
        start(demo(Arc::new(InMemorySessionService::new())).artifact_service(files), ServerConfig::default()).await;
    let body = json!({"filename": "../../escape.txt", "artifact": {"text": "x"}}).to_string();
    let reply = send(addr, "POST", "/apps/demo_agent/users/u1/sessions/s1/artifacts", Some(&body), &[]).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert!(files_named(dir.path(), "escape.txt").is_empty(), "nothing written anywhere");
    // An app that is not served has no artifacts, and nothing is created for it.
    let other = send(
        addr,
        "POST",
        "/apps/other/users/u1/sessions/s1/artifacts",
        Some(r#"{"filename": "a", "artifact": {"text": "x"}}"#),
        &[],
    )
    .await;
    assert_eq!(other.status, 404);
    assert!(!dir.path().join("apps/other").exists());
}

/// Every file named `name` below `dir`.
fn files_named(dir: &std::path::Path, name: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_named(&path, name));
        } else if entry.file_name() == name {
            found.push(path);
        }
    }
    found
}

/// An event with both content and an artifact delta goes out as two frames, as ADK Web wants.
#[tokio::test]
async fn run_sse_splits_content_from_artifact_deltas() {
    let save = FunctionTool::new("save", "Saves a note.", json!({"type": "object"}), |_, ctx| {
        let ctx = ctx.clone();
        async move {
            ctx.save_artifact("note.txt", sinew_adk::Part::text("kept"))
                .await
                .map_err(|e| sinew_core::ToolError::Failed(e.to_string().into()))?;
            Ok(json!({"saved": true}))
        }
    });
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("save", json!({})), ScriptedAnswer::text("Saved.")]));
    let agent = LlmAgent::builder("demo_agent").model(llm).tool(Arc::new(save)).build().unwrap();
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await.unwrap();
    let addr = start(AdkApi::new(sessions).app("demo_agent", Arc::new(agent)).unwrap(), ServerConfig::default()).await;
    let body = json!({"appName": "demo_agent", "userId": "u1", "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": "save it"}]}});
    let frames = send(addr, "POST", "/run_sse", Some(&body.to_string()), &[]).await.frames();
    let response = frames.iter().position(|f| f["content"]["parts"][0]["functionResponse"].is_object()).unwrap();
    assert_eq!(frames[response]["actions"]["artifactDelta"], json!({}), "the content frame");
    assert!(frames[response + 1].get("content").is_none(), "then the action-only frame");
    assert_eq!(frames[response + 1]["actions"]["artifactDelta"], json!({"note.txt": 0}));
    let listed = send(addr, "GET", "/apps/demo_agent/users/u1/sessions/s1/artifacts", None, &[]).await.json();
    assert_eq!(listed, json!(["note.txt"]));
}

#[tokio::test]
async fn the_memory_route_remembers_a_session() {
    let sessions = Arc::new(InMemorySessionService::new());
    let mut session = sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await.unwrap();
    let said = sinew_adk::Event::user("e-1", sinew_adk::Content::user_text("My cat is called Miso"));
    sessions.append_event(&mut session, said).await.unwrap();
    let memory = Arc::new(sinew_adk::InMemoryMemoryService::new());
    let without = start(demo(sessions.clone()), ServerConfig::default()).await;
    let path = "/apps/demo_agent/users/u1/memory";
    let refused = send(without, "PATCH", path, Some(r#"{"sessionId": "s1"}"#), &[]).await;
    assert_eq!((refused.status, refused.json()), (400, json!({"detail": "Memory service is not configured."})));

    let addr = start(demo(sessions).memory_service(memory.clone()), ServerConfig::default()).await;
    let missing = send(addr, "PATCH", path, Some(r#"{"sessionId": "nope"}"#), &[]).await;
    assert_eq!((missing.status, missing.json()), (404, json!({"detail": "Session not found"})));
    let invalid = send(addr, "PATCH", path, Some("{}"), &[]).await;
    assert_eq!((invalid.status, invalid.json()), (400, json!({"detail": "Update memory request is invalid."})));
    let added = send(addr, "PATCH", path, Some(r#"{"sessionId": "s1"}"#), &[]).await;
    assert_eq!((added.status, added.body.as_str()), (200, "null"));

    use sinew_adk::MemoryService as _;
    let found = memory.search_memory("demo_agent", "u1", "what is my CAT called?").await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].content.text(), "My cat is called Miso");
    assert_eq!(found[0].author.as_deref(), Some("user"));
    assert!(found[0].timestamp.as_deref().unwrap().ends_with("+00:00"));
    assert!(memory.search_memory("demo_agent", "u1", "dogs").await.unwrap().is_empty());
    assert!(memory.search_memory("demo_agent", "u2", "cat").await.unwrap().is_empty(), "another user's memories");
}

/// Runs racing on one session stored in SQLite: each is served (200) or told that another run
/// changed the session meanwhile (409), and every answer served is in the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn runs_racing_on_one_session_are_served_or_refused_with_409() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = Arc::new(sinew_adk::SqliteSessionService::open(dir.path().join("s.db")).unwrap());
    let llm = Arc::new(ScriptedLlm::texts(["answer"; 16]));
    let agent = LlmAgent::builder("demo_agent").model(llm).build().unwrap();
    sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await.unwrap();
    let addr =
        start(AdkApi::new(sessions.clone()).app("demo_agent", Arc::new(agent)).unwrap(), ServerConfig::default()).await;
    let body = json!({"appName": "demo_agent", "userId": "u1", "sessionId": "s1",
        "newMessage": {"role": "user", "parts": [{"text": "go"}]}})
    .to_string();
    let runs: Vec<_> = (0..8)
        .map(|_| {
            let body = body.clone();
            tokio::spawn(async move { send(addr, "POST", "/run", Some(&body), &[]).await })
        })
        .collect();
    let mut served = 0;
    for run in runs {
        let reply = run.await.unwrap();
        match reply.status {
            200 => served += 1,
            409 => {
                assert!(reply.json()["detail"].as_str().unwrap().contains("was modified in storage"), "{}", reply.body)
            }
            other => panic!("{other}: {}", reply.body),
        }
    }
    assert!(served >= 1, "at least one run is served");
    let stored = sessions.get_session("demo_agent", "u1", "s1", GetSessionConfig::default()).await.unwrap().unwrap();
    let answers = stored.events.iter().filter(|e| &*e.author == "demo_agent").count();
    assert_eq!(answers, served, "every served answer is stored, and no refused run's");
}

/// app-info as adk-python builds it: LlmAgents reached through LlmAgents, each naming its
/// LlmAgent sub-agents; a root that is not an LlmAgent is a 400.
#[tokio::test]
async fn app_info_lists_llm_agents_as_adk_python_does() {
    let llm = Arc::new(ScriptedLlm::texts(["x"]));
    let leaf = LlmAgent::builder("leaf").description("Leaf.").model(llm.clone()).build().unwrap();
    let under_workflow = LlmAgent::builder("hidden").model(llm.clone()).build().unwrap();
    let workflow = sinew_adk::SequentialAgent::new("flow", vec![Arc::new(under_workflow)]);
    let root = LlmAgent::builder("root")
        .model(llm.clone())
        .instruction("Route {topic?}.")
        .sub_agent(Arc::new(leaf))
        .sub_agent(Arc::new(workflow))
        .build()
        .unwrap();
    let workflow_root = sinew_adk::SequentialAgent::new("steps", vec![]);
    let api = AdkApi::new(Arc::new(InMemorySessionService::new()))
        .app("tree", Arc::new(root))
        .unwrap()
        .app("steps", Arc::new(workflow_root))
        .unwrap();
    let addr = start(api, ServerConfig::default()).await;
    let info = send(addr, "GET", "/apps/tree/app-info", None, &[]).await.json();
    let agents: Vec<&String> = info["agents"].as_object().unwrap().keys().collect();
    assert_eq!(agents, ["leaf", "root"]);
    assert_eq!(info["agents"]["root"]["sub_agents"], json!(["leaf"]));
    assert_eq!(info["agents"]["root"]["instruction"], "Route {topic?}.", "the template, not resolved");
    assert_eq!(
        info["agents"]["leaf"],
        json!({"name": "leaf", "description": "Leaf.", "instruction": "", "tools": [], "sub_agents": []})
    );
    let refused = send(addr, "GET", "/apps/steps/app-info", None, &[]).await;
    assert_eq!((refused.status, refused.json()), (400, json!({"detail": "Root agent is not an LlmAgent"})));
}

/// A client that sends a body too slowly gets a 408 once the body timeout passes, and one that
/// never finishes its headers is disconnected once the header timeout passes.
#[tokio::test]
async fn slow_clients_are_cut_off() {
    let config =
        ServerConfig::default().body_timeout(Duration::from_millis(300)).header_timeout(Duration::from_millis(300));
    let addr = start(demo(Arc::new(InMemorySessionService::new())), config).await;
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(
        b"POST /apps/demo_agent/users/u/sessions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 20\r\n\r\n{\"st",
    )
    .await
    .unwrap();
    let mut reply = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read_to_string(&mut reply)).await;
    assert!(read.is_ok(), "the server answers in time");
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
    assert!(reply.contains("did not arrive in time"), "{reply}");

    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    silent.write_all(b"GET /health HTTP/1.1\r\nhost: loc").await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(10), silent.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the connection is closed");
}

/// Connections beyond the cap wait to be served until one closes.
#[tokio::test]
async fn connections_beyond_the_cap_wait() {
    let addr = start(demo(Arc::new(InMemorySessionService::new())), ServerConfig::default().max_connections(2)).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        // A keep-alive request makes sure the connection is being served.
        stream.write_all(b"GET /health HTTP/1.1\r\nhost: localhost\r\n\r\n").await.unwrap();
        let mut buffer = [0u8; 256];
        assert!(stream.read(&mut buffer).await.unwrap() > 0);
        held.push(stream);
    }
    let waiting = tokio::spawn(send(addr, "GET", "/health", None, &[]));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the third connection waits while two are served");
    drop(held.pop());
    let reply = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("served once one closes").unwrap();
    assert_eq!(reply.status, 200);
}
