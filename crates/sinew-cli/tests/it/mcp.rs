//! MCP servers from the configuration file: a stdio server and a Streamable HTTP server are
//! connected at start, their tools reach the model with a prefix, and one that cannot start is
//! reported without stopping the others.

use serde_json::{Value, json};
use sinew_testing::mcp_script::SHOUT_SERVER;
use sinew_testing::wire::{WireTurn, anthropic_events, sse_response};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};

use crate::support::{Sandbox, answers_tools, messages};

/// A Streamable HTTP MCP server answering in JSON: one tool, `add`.
fn http_server(request: &ReceivedRequest) -> ServedResponse {
    match request.method.as_str() {
        "GET" => return ServedResponse::new(405),
        "DELETE" => return ServedResponse::new(200),
        _ => {}
    }
    let body = request.json();
    let answer =
        |result: Value| ServedResponse::json(200, &json!({"jsonrpc": "2.0", "id": body["id"], "result": result}));
    match body["method"].as_str() {
        Some("initialize") => answer(json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "calc", "version": "1"}})),
        Some("tools/list") => answer(json!({"tools": [{"name": "add", "description": "Adds two numbers",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}]})),
        Some("tools/call") => {
            let args = &body["params"]["arguments"];
            let sum = args["a"].as_i64().unwrap_or_default() + args["b"].as_i64().unwrap_or_default();
            answer(json!({"content": [{"type": "text", "text": sum.to_string()}]}))
        }
        Some(method) if body.get("id").is_some() => ServedResponse::json(
            200,
            &json!({"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": format!("no {method}")}}),
        ),
        _ => ServedResponse::new(202),
    }
}

fn model(request: &ReceivedRequest) -> ServedResponse {
    let turn = if answers_tools(&messages(request)) {
        WireTurn::new().text("Shouted and added.")
    } else {
        WireTurn::new().tool_call("toolu_1", "upper__shout", json!({"text": "hi"})).tool_call(
            "toolu_2",
            "calc__add",
            json!({"a": 2, "b": 3}),
        )
    };
    sse_response(anthropic_events(&turn), None)
}

#[tokio::test(flavor = "multi_thread")]
async fn configured_servers_lend_their_tools_with_a_prefix() {
    let llm = MockServer::start(model).await;
    let mcp = MockServer::start(http_server).await;
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &llm.url())]);
    let config = sandbox.home.path().join(".config/sinew/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let toml = format!(
        r#"
[mcp.servers.upper]
command = "python3"
args = ["-c", {script}]

[mcp.servers.remote]
url = "{url}/mcp"
headers = {{ Authorization = "Bearer mcp-token" }}
prefix = "calc"
require_approval = true

[mcp.servers.broken]
command = "/nonexistent/mcp-server"
"#,
        script = toml_string(SHOUT_SERVER),
        url = mcp.url()
    );
    std::fs::write(&config, toml).unwrap();

    let run = sandbox.run(&["shout hi and add 2 and 3"], "y\n").await;
    run.assert_code(0);
    let stderr = &run.stderr;
    assert!(
        stderr.contains("MCP server `upper`: 1 tools") && stderr.contains("MCP server `remote`: 1 tools"),
        "{stderr}"
    );
    assert!(stderr.contains("warning: MCP server `broken` is not available"), "{stderr}");
    assert_eq!(stderr.matches("allow ").count(), 1, "only the server that asks for it is gated:\n{stderr}");
    assert!(stderr.contains("allow calc__add(a=2, b=3)?"), "{stderr}");
    assert_eq!(run.stdout, "Shouted and added.\n");

    let requests = llm.requests();
    let first = requests[0].json();
    let tools: Vec<&str> = first["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"upper__shout") && tools.contains(&"calc__add"), "{tools:?}");
    let history = messages(&requests[1]);
    let results = history.last().unwrap()["content"].as_array().unwrap();
    let result = |id: &str| results.iter().find(|r| r["tool_use_id"] == id).unwrap()["content"].to_string();
    assert!(result("toolu_1").contains(r#""text":"HI""#), "{results:?}");
    assert!(result("toolu_2").contains(r#""text":"5""#), "{results:?}");
    assert!(
        mcp.requests()
            .iter()
            .filter(|r| r.method == "POST")
            .all(|r| r.header("authorization") == Some("Bearer mcp-token")),
        "the configured headers reach every request"
    );
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

/// An MCP server that wants OAuth, and its authorization server on the same origin: tokens are
/// `token-N`; the authorization endpoint approves at once.
fn oauth_server(
    base: std::sync::Arc<std::sync::OnceLock<String>>,
) -> impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync {
    move |request| {
        let base = base.get().cloned().unwrap_or_default();
        let path = request.path.split('?').next().unwrap_or_default();
        match path {
            "/.well-known/oauth-protected-resource/mcp" => {
                ServedResponse::json(200, &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}))
            }
            "/.well-known/oauth-authorization-server" => ServedResponse::json(
                200,
                &json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"), "registration_endpoint": format!("{base}/register"),
                    "code_challenge_methods_supported": ["S256"]}),
            ),
            "/register" => ServedResponse::json(201, &json!({"client_id": "cli-1"})),
            "/authorize" => {
                let param = |name: &str| {
                    request.path.split(['?', '&']).find_map(|p| p.strip_prefix(&format!("{name}="))).unwrap_or_default()
                };
                let redirect = param("redirect_uri").replace("%3A", ":").replace("%2F", "/");
                ServedResponse::new(302).header("location", format!("{redirect}?code=c-1&state={}", param("state")))
            }
            "/token" => ServedResponse::json(
                200,
                &json!({"access_token": "token-1", "token_type": "Bearer", "expires_in": 3600}),
            ),
            "/mcp" if request.header("authorization") == Some("Bearer token-1") => http_server(request),
            "/mcp" => ServedResponse::new(401).header(
                "www-authenticate",
                format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#),
            ),
            _ => ServedResponse::new(404),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_asks_for_oauth_sends_the_user_to_sign_in_once_and_the_tokens_are_kept() {
    use tokio::io::AsyncBufReadExt as _;

    let llm =
        MockServer::start(|_: &ReceivedRequest| sse_response(anthropic_events(&WireTurn::new().text("ok")), None))
            .await;
    let base = std::sync::Arc::new(std::sync::OnceLock::new());
    let mcp = MockServer::start(oauth_server(base.clone())).await;
    base.set(mcp.url()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let sandbox = Sandbox::new(&[("ANTHROPIC_API_KEY", "sk-test"), ("ANTHROPIC_BASE_URL", &llm.url())]);
    let config = sandbox.home.path().join(".config/sinew/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let toml = format!("[mcp.servers.docs]\nurl = \"{}/mcp\"\noauth = {{ redirect_port = {port} }}\n", mcp.url());
    std::fs::write(&config, toml).unwrap();
    // No browser to open here: the URL printed is what the user follows.
    let no_programs = tempfile::tempdir().unwrap();
    let mut vars = sandbox.vars();
    vars.retain(|(k, _)| k != "PATH");
    vars.push(("PATH".into(), no_programs.path().display().to_string()));

    let mut child = tokio::process::Command::new(crate::support::BINARY)
        .arg("hello")
        .env_clear()
        .envs(vars.clone())
        .current_dir(sandbox.workspace.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let authorize_url = loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(60), stderr.next_line())
            .await
            .expect("the sign-in URL is printed")
            .unwrap()
            .unwrap_or_else(|| panic!("sinew ended before asking to sign in: {seen:?}"));
        if let Some(url) = line.trim().strip_prefix("http") {
            break format!("http{url}");
        }
        seen.push(line);
    };
    assert!(seen.iter().any(|l| l.contains("MCP server `docs` asks you to sign in")), "{seen:?}");
    // The user's browser: the authorization server approves and sends it back to sinew.
    let http = sinew_http::HttpClient::new();
    let get = |url: String| sinew_http::HttpRequest {
        method: http::Method::GET,
        url,
        headers: Vec::new(),
        body: bytes::Bytes::new(),
    };
    let approved = http.send_once(&get(authorize_url)).await.unwrap();
    let back = approved.headers.get("location").unwrap().to_str().unwrap().to_owned();
    assert!(back.starts_with(&format!("http://127.0.0.1:{port}/callback?code=c-1")), "{back}");
    assert_eq!(http.send_once(&get(back)).await.unwrap().status.as_u16(), 200);
    let mut rest = String::new();
    while let Some(line) = stderr.next_line().await.unwrap() {
        rest.push_str(&line);
        rest.push('\n');
    }
    let status = child.wait().await.unwrap();
    assert!(status.success(), "{rest}");
    assert!(rest.contains("MCP server `docs`: 1 tools"), "{rest}");

    let tokens = sandbox.home.path().join(".local/share/sinew/mcp-tokens.json");
    let kept = std::fs::read_to_string(&tokens).unwrap();
    assert!(kept.contains("token-1") && kept.contains("cli-1"), "{kept}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&tokens).unwrap().permissions().mode() & 0o777, 0o600);
    }

    // The next start signs in with the kept token: nobody is asked.
    let mut again = tokio::process::Command::new(crate::support::BINARY);
    again.arg("hello").env_clear().envs(vars).current_dir(sandbox.workspace.path());
    let output = again.stdin(std::process::Stdio::null()).output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && !stderr.contains("sign in"), "{stderr}");
    assert!(stderr.contains("MCP server `docs`: 1 tools"), "{stderr}");
    assert_eq!(mcp.requests().iter().filter(|r| r.path.starts_with("/authorize")).count(), 1);
}
