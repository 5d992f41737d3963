//! MCP authorization against one server playing the MCP server and its authorization server:
//! what the conformance suite does not exercise (refresh, stored tokens, the loopback redirect,
//! hostile metadata). The suite itself runs in `cargo xtask conformance`.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::json;
use sinew_http::{HttpClient, HttpRequest};
use sinew_mcp::{
    AuthorizationHandler, FileTokenStore, FollowRedirect, LoopbackRedirect, McpClient, McpError, OAuth, OAuthConfig,
    ProtocolEra,
};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};

const REDIRECT: &str = "http://127.0.0.1:9/callback";

#[derive(Default)]
struct Auth {
    /// The access tokens the MCP endpoint takes.
    valid: Vec<String>,
    issued: usize,
    /// `expires_in` of the tokens issued.
    lifetime: u64,
    refuse_refresh: bool,
}

/// The MCP server at `/mcp` (handshake era, one tool), its protected resource metadata, and an
/// authorization server at the same origin that approves at once.
fn server(
    auth: Arc<Mutex<Auth>>,
    base: Arc<OnceLock<String>>,
) -> impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync {
    move |request| {
        let base = base.get().cloned().unwrap_or_default();
        let path = request.path.split('?').next().unwrap_or_default();
        match (request.method.as_str(), path) {
            ("GET", "/.well-known/oauth-protected-resource/mcp") => ServedResponse::json(
                200,
                &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base], "scopes_supported": ["mcp"]}),
            ),
            ("GET", "/.well-known/oauth-authorization-server") => ServedResponse::json(
                200,
                &json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "registration_endpoint": format!("{base}/register"),
                    "code_challenge_methods_supported": ["S256"],
                    "authorization_response_iss_parameter_supported": true,
                }),
            ),
            ("POST", "/register") => ServedResponse::json(201, &json!({"client_id": "c-1"})),
            ("GET", "/authorize") => {
                let state = query(&request.path, "state").unwrap_or_default();
                let location = format!("{REDIRECT}?code=code-1&state={state}&iss={}", encode(&base));
                ServedResponse::new(302).header("location", location)
            }
            ("POST", "/token") => {
                let form = String::from_utf8_lossy(&request.body).into_owned();
                let mut auth = auth.lock().unwrap();
                let grant_ok = form.contains("grant_type=authorization_code&code=code-1")
                    || (form.contains("grant_type=refresh_token&refresh_token=refresh-") && !auth.refuse_refresh);
                if !grant_ok {
                    return ServedResponse::json(400, &json!({"error": "invalid_grant"}));
                }
                auth.issued += 1;
                let token = format!("token-{}", auth.issued);
                auth.valid.push(token.clone());
                let refresh = format!("refresh-{}", auth.issued);
                ServedResponse::json(
                    200,
                    &json!({"access_token": token, "token_type": "Bearer", "expires_in": auth.lifetime, "refresh_token": refresh}),
                )
            }
            (_, "/mcp") => {
                let bearer = request.header("authorization").and_then(|h| h.strip_prefix("Bearer ")).map(str::to_owned);
                if !bearer.is_some_and(|token| auth.lock().unwrap().valid.contains(&token)) {
                    let challenge = format!(
                        r#"Bearer error="invalid_token", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
                    );
                    return ServedResponse::json(401, &json!({"error": "invalid_token"}))
                        .header("www-authenticate", challenge);
                }
                mcp(request)
            }
            _ => ServedResponse::new(404),
        }
    }
}

fn mcp(request: &ReceivedRequest) -> ServedResponse {
    if request.method != "POST" {
        return ServedResponse::new(405);
    }
    let body = request.json();
    let result = match body["method"].as_str() {
        Some("initialize") => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}),
        Some("tools/call") => json!({"content": [{"type": "text", "text": "done"}]}),
        _ => return ServedResponse::new(202),
    };
    ServedResponse::json(200, &json!({"jsonrpc": "2.0", "id": body["id"], "result": result}))
}

fn query(path: &str, name: &str) -> Option<String> {
    let query = path.split_once('?')?.1;
    query.split('&').find_map(|pair| pair.strip_prefix(&format!("{name}="))).map(str::to_owned)
}

fn encode(value: &str) -> String {
    value.replace(':', "%3A").replace('/', "%2F")
}

async fn start(lifetime: u64) -> (MockServer, Arc<Mutex<Auth>>) {
    let auth = Arc::new(Mutex::new(Auth { lifetime, ..Auth::default() }));
    let base = Arc::new(OnceLock::new());
    let server = MockServer::start(server(auth.clone(), base.clone())).await;
    base.set(server.url()).unwrap();
    (server, auth)
}

async fn connect(server: &MockServer, oauth: OAuth) -> Result<McpClient, McpError> {
    McpClient::builder().era(ProtocolEra::Handshake).headers(oauth).connect_http(format!("{}/mcp", server.url())).await
}

fn oauth(server: &MockServer) -> OAuth {
    OAuth::new(format!("{}/mcp", server.url()), OAuthConfig::new(REDIRECT), FollowRedirect::default())
}

fn paths(server: &MockServer, method: &str) -> Vec<String> {
    server
        .requests()
        .iter()
        .filter(|r| r.method == method && r.path != "/mcp")
        .map(|r| r.path.split('?').next().unwrap_or_default().to_owned())
        .collect()
}

fn form_of(server: &MockServer, path: &str) -> Vec<String> {
    server.requests().iter().filter(|r| r.path == path).map(|r| String::from_utf8_lossy(&r.body).into_owned()).collect()
}

#[tokio::test]
async fn a_refused_request_discovers_registers_authorizes_and_is_sent_again_with_the_token() {
    let (server, auth) = start(3600).await;
    let client = connect(&server, oauth(&server)).await.unwrap();
    client.call_tool("t", json!({})).await.unwrap();
    client.close().await;
    assert_eq!(auth.lock().unwrap().issued, 1, "one authorization serves every request");
    assert_eq!(
        paths(&server, "GET"),
        ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-authorization-server", "/authorize"]
    );
    let registration: serde_json::Value = serde_json::from_str(&form_of(&server, "/register")[0]).unwrap();
    assert_eq!(registration["redirect_uris"], json!([REDIRECT]));
    assert_eq!(registration["grant_types"], json!(["authorization_code", "refresh_token"]));
    let authorize = server.requests().into_iter().find(|r| r.path.starts_with("/authorize")).unwrap();
    let resource = encode(&format!("{}/mcp", server.url()));
    for part in ["response_type=code", "client_id=c-1", "code_challenge_method=S256", "scope=mcp"] {
        assert!(authorize.path.contains(part), "{part} in {}", authorize.path);
    }
    assert!(authorize.path.contains(&format!("resource={resource}")), "{}", authorize.path);
    let token = &form_of(&server, "/token")[0];
    assert!(token.contains("code_verifier=") && token.contains(&format!("resource={resource}")), "{token}");
    assert!(token.contains("client_id=c-1"), "a public client names itself: {token}");
    let mcp: Vec<_> = server.requests().into_iter().filter(|r| r.path == "/mcp").collect();
    assert_eq!(mcp[0].header("authorization"), None);
    assert!(mcp[1..].iter().all(|r| r.header("authorization") == Some("Bearer token-1")), "{mcp:?}");
}

fn refreshes(server: &MockServer) -> Vec<String> {
    form_of(server, "/token").into_iter().filter(|f| f.starts_with("grant_type=refresh_token")).collect()
}

fn authorizations(server: &MockServer) -> usize {
    paths(server, "GET").iter().filter(|p| *p == "/authorize").count()
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_used() {
    // Tokens that live 30 s are within the refresh margin as soon as they are issued.
    let (server, _) = start(30).await;
    let client = connect(&server, oauth(&server)).await.unwrap();
    client.close().await;
    let refresh = refreshes(&server);
    assert!(refresh[0].contains("refresh_token=refresh-1") && refresh[0].contains("resource="), "{refresh:?}");
    let first_sent = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/mcp")
        .find_map(|r| r.header("authorization").map(str::to_owned));
    assert_eq!(first_sent.as_deref(), Some("Bearer token-2"), "token-1 was never sent");
    assert_eq!(authorizations(&server), 1);
}

#[tokio::test]
async fn a_refused_token_is_refreshed_without_asking_the_user_again() {
    let (server, auth) = start(3600).await;
    let client = connect(&server, oauth(&server)).await.unwrap();
    assert!(refreshes(&server).is_empty());
    auth.lock().unwrap().valid.clear();
    client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(refreshes(&server).len(), 1, "the refused token was refreshed");
    assert_eq!(authorizations(&server), 1, "and nobody was asked again");
    let last = server.requests().into_iter().rev().find(|r| r.path == "/mcp").unwrap();
    assert_eq!(last.header("authorization"), Some("Bearer token-2"));

    // A refresh token the server no longer takes: the user is asked again.
    {
        let mut auth = auth.lock().unwrap();
        auth.valid.clear();
        auth.refuse_refresh = true;
    }
    client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(refreshes(&server).len(), 2);
    assert_eq!(authorizations(&server), 2);
    client.close().await;
}

#[tokio::test]
async fn a_stored_authorization_is_used_without_asking_again() {
    let (server, _) = start(3600).await;
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("mcp-tokens.json");
    let first = connect(&server, oauth(&server).with_store(FileTokenStore::new(&store))).await.unwrap();
    first.close().await;
    let text = std::fs::read_to_string(&store).unwrap();
    assert!(text.contains("token-1") && text.contains("c-1"), "{text}");

    let second = connect(&server, oauth(&server).with_store(FileTokenStore::new(&store))).await.unwrap();
    second.call_tool("t", json!({})).await.unwrap();
    assert_eq!(paths(&server, "GET").iter().filter(|p| *p == "/authorize").count(), 1);
    assert_eq!(form_of(&server, "/register").len(), 1);
}

#[tokio::test]
async fn a_refused_authorization_fails_the_connection_with_the_servers_reason() {
    let server = MockServer::start(|request: &ReceivedRequest| match request.path.as_str() {
        "/mcp" => ServedResponse::new(401).header("www-authenticate", "Bearer"),
        "/.well-known/oauth-protected-resource/mcp" => ServedResponse::new(200).chunk("{not json"),
        _ => ServedResponse::new(404),
    })
    .await;
    let error = connect(&server, oauth(&server)).await.unwrap_err();
    let McpError::Authorization(message) = &error else { panic!("{error:?}") };
    assert!(message.contains("is not JSON"), "{message}");

    let huge = format!(r#"{{"resource": "x", "pad": "{}"}}"#, "a".repeat(300 * 1024));
    let server = MockServer::start(move |request: &ReceivedRequest| match request.path.as_str() {
        "/mcp" => ServedResponse::new(401).header("www-authenticate", "Bearer"),
        "/.well-known/oauth-protected-resource/mcp" => ServedResponse::new(200).chunk(huge.clone()),
        _ => ServedResponse::new(404),
    })
    .await;
    let error = connect(&server, oauth(&server)).await.unwrap_err();
    let McpError::Authorization(message) = &error else { panic!("{error:?}") };
    assert!(message.contains("larger than"), "{message}");
}

/// A free loopback port, for a redirect URI.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test]
async fn the_loopback_redirect_shows_the_url_and_takes_the_browsers_callback() {
    let port = free_port();
    let shown = Arc::new(Mutex::new(Vec::new()));
    let seen = shown.clone();
    let handler = LoopbackRedirect::new(format!("http://127.0.0.1:{port}/callback"), move |url: &str| {
        seen.lock().unwrap().push(url.to_owned());
        // The "browser": a stray request first, then the redirect.
        tokio::spawn(async move {
            let http = HttpClient::new();
            let get = |path: String| HttpRequest {
                method: http::Method::GET,
                url: format!("http://127.0.0.1:{port}{path}"),
                headers: Vec::new(),
                body: bytes::Bytes::new(),
            };
            let stray = http.send_once(&get("/favicon.ico".into())).await.unwrap();
            assert_eq!(stray.status.as_u16(), 404);
            let forged = http.send_once(&get("/callback?code=evil&state=other".into())).await.unwrap();
            assert_eq!(forged.status.as_u16(), 400, "a redirect without this request's state is not taken");
            let mut page = http.send_once(&get("/callback?code=c%2B1&state=s".into())).await.unwrap();
            assert_eq!(page.status.as_u16(), 200);
            let body = page.bytes(4096).await.unwrap();
            assert!(String::from_utf8_lossy(&body).contains("close this window"));
        });
    });
    let callback = handler.authorize("https://as.example/authorize?x=1&state=s").await.unwrap();
    assert_eq!(callback, format!("http://127.0.0.1/callback?code=c%2B1&state=s"));
    assert_eq!(*shown.lock().unwrap(), ["https://as.example/authorize?x=1&state=s"]);
}

#[tokio::test]
async fn a_loopback_redirect_that_never_comes_or_cannot_listen_fails_clearly() {
    let port = free_port();
    let handler =
        LoopbackRedirect::new(format!("http://127.0.0.1:{port}/cb"), |_: &str| {}).timeout(Duration::from_millis(50));
    let error = handler.authorize("https://as.example/authorize").await.unwrap_err();
    assert!(matches!(&error, McpError::Authorization(m) if m.contains("no authorization came back")), "{error:?}");

    let handler = LoopbackRedirect::new("https://example.com/cb", |_: &str| {});
    let error = handler.authorize("https://as.example/authorize").await.unwrap_err();
    assert!(matches!(&error, McpError::Authorization(m) if m.contains("is not an http://127.0.0.1")), "{error:?}");
}

#[tokio::test]
async fn an_unattended_client_credentials_client_renews_its_token_by_running_the_grant_again() {
    // The authorization server issues short tokens and no refresh token.
    let base = Arc::new(OnceLock::new());
    let issued = Arc::new(Mutex::new(0usize));
    let handler = {
        let (base, issued) = (base.clone(), issued.clone());
        move |request: &ReceivedRequest| -> ServedResponse {
            let base: String = base.get().cloned().unwrap_or_default();
            match request.path.as_str() {
                "/.well-known/oauth-protected-resource/mcp" => ServedResponse::json(
                    200,
                    &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
                ),
                "/.well-known/oauth-authorization-server" => ServedResponse::json(
                    200,
                    &json!({"issuer": base, "authorization_endpoint": format!("{base}/authorize"),
                        "token_endpoint": format!("{base}/token"), "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["client_secret_basic"]}),
                ),
                "/token" => {
                    let form = String::from_utf8_lossy(&request.body).into_owned();
                    assert!(form.starts_with("grant_type=client_credentials&resource="), "{form}");
                    assert_eq!(request.header("authorization"), Some("Basic bWFjaGluZTpzM2NyZXQ="), "machine:s3cret");
                    let mut issued = issued.lock().unwrap();
                    *issued += 1;
                    ServedResponse::json(
                        200,
                        &json!({"access_token": format!("cc-{issued}"), "token_type": "Bearer", "expires_in": 10}),
                    )
                }
                "/mcp" if request.header("authorization").is_some_and(|a| a.starts_with("Bearer cc-")) => mcp(request),
                "/mcp" => ServedResponse::new(401).header("www-authenticate", "Bearer"),
                _ => ServedResponse::new(404),
            }
        }
    };
    let server = MockServer::start(handler).await;
    base.set(server.url()).unwrap();
    let client = sinew_mcp::ClientCredentials {
        client_id: "machine".into(),
        client_secret: Some("s3cret".into()),
        token_endpoint_auth_method: None,
    };
    let config = OAuthConfig::default().client(client).grant(sinew_mcp::Grant::ClientCredentials);
    let oauth = OAuth::unattended(format!("{}/mcp", server.url()), config);
    let connected = connect(&server, oauth).await.unwrap();
    connected.call_tool("t", json!({})).await.unwrap();
    assert!(*issued.lock().unwrap() >= 2, "a token within the margin is replaced by running the grant again");
    assert!(server.requests().iter().all(|r| !r.path.starts_with("/authorize")), "nobody was sent to approve");
}

#[tokio::test]
async fn an_unattended_client_refuses_a_flow_that_needs_a_person() {
    let (server, _) = start(3600).await;
    let oauth = OAuth::unattended(format!("{}/mcp", server.url()), OAuthConfig::default());
    let error = connect(&server, oauth).await.unwrap_err();
    assert!(
        matches!(&error, McpError::Authorization(m) if m.contains("no person") || m.contains("none to ask")),
        "{error:?}"
    );
}

/// A server whose `tools/call` needs the scope `write`: tokens carry the scope their approval
/// asked for, and a token without `write` gets 403 `insufficient_scope`.
fn scoped_server(base: Arc<OnceLock<String>>) -> impl Fn(&ReceivedRequest) -> ServedResponse + Send + Sync {
    let granted: Arc<Mutex<Vec<String>>> = Arc::default();
    let asked: Arc<Mutex<String>> = Arc::default();
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
            "/register" => ServedResponse::json(201, &json!({"client_id": "c-1"})),
            "/authorize" => {
                *asked.lock().unwrap() = query(&request.path, "scope").unwrap_or_default().replace("%20", " ");
                let state = query(&request.path, "state").unwrap_or_default();
                ServedResponse::new(302).header("location", format!("{REDIRECT}?code=code-1&state={state}"))
            }
            "/token" => {
                let scope = asked.lock().unwrap().clone();
                let mut granted = granted.lock().unwrap();
                granted.push(scope.clone());
                let token = format!("token-{}", granted.len());
                ServedResponse::json(200, &json!({"access_token": token, "token_type": "Bearer", "scope": scope}))
            }
            "/mcp" => {
                let token = request.header("authorization").and_then(|h| h.strip_prefix("Bearer token-"));
                let scope = token
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| granted.lock().unwrap().get(n.wrapping_sub(1)).cloned());
                let Some(scope) = scope else {
                    return ServedResponse::new(401).header(
                        "www-authenticate",
                        format!(r#"Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#),
                    );
                };
                let calls = request.json()["method"] == "tools/call";
                if calls && !scope.split(' ').any(|s| s == "write") {
                    return ServedResponse::new(403)
                        .header("www-authenticate", r#"Bearer error="insufficient_scope", scope="write""#);
                }
                mcp(request)
            }
            _ => ServedResponse::new(404),
        }
    }
}

#[tokio::test]
async fn a_call_refused_for_scope_asks_again_for_the_held_scopes_plus_the_named_one() {
    let base = Arc::new(OnceLock::new());
    let server = MockServer::start(scoped_server(base.clone())).await;
    base.set(server.url()).unwrap();
    // Configured scopes are asked for first; the step-up keeps them and adds the server's.
    let config = OAuthConfig::new(REDIRECT).scopes("read");
    let oauth = OAuth::new(format!("{}/mcp", server.url()), config, FollowRedirect::default());
    let client = connect(&server, oauth).await.unwrap();
    client.call_tool("t", json!({})).await.unwrap();
    let asked: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/authorize"))
        .map(|r| query(&r.path, "scope").unwrap_or_default())
        .collect();
    assert_eq!(asked, ["read", "read%20write"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_refused_for_scope_at_once_share_one_step_up() {
    let base = Arc::new(OnceLock::new());
    let server = MockServer::start(scoped_server(base.clone())).await;
    base.set(server.url()).unwrap();
    let oauth = OAuth::new(format!("{}/mcp", server.url()), OAuthConfig::new(REDIRECT), FollowRedirect::default());
    let client = connect(&server, oauth).await.unwrap();
    let calls = (0..4).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("t", json!({})).await })
    });
    for call in calls.collect::<Vec<_>>() {
        call.await.unwrap().unwrap();
    }
    let approvals = server.requests().iter().filter(|r| r.path.starts_with("/authorize")).count();
    assert_eq!(approvals, 2, "the first approval and one step-up, whatever the number of refused calls");
}
