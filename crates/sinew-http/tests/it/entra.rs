//! Entra ID tokens (`entra`) from each source of the chain, against a loopback fake of Entra
//! ID's token endpoint, App Service's identity endpoint and the instance metadata service, and
//! a fake `az` on the `PATH` the chain is given.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use serde_json::json;
use sinew_core::{CancellationToken, Message, ProviderError, StreamEvent, StreamProvider, StreamRequest};
use sinew_http::{Auth, EntraCredential, HttpProvider, TokenSource};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse, env_vars};

use crate::limits::{Lines, LinesConfig};

struct Fake {
    server: MockServer,
    secret_grants: Arc<AtomicUsize>,
}

async fn fake() -> Fake {
    let secret_grants = Arc::new(AtomicUsize::new(0));
    let grants = Arc::clone(&secret_grants);
    let server = MockServer::start(move |request: &ReceivedRequest| answer(request, &grants)).await;
    Fake { server, secret_grants }
}

fn in_an_hour() -> String {
    (SystemTime::now() + Duration::from_secs(3600))
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string()
}

fn answer(request: &ReceivedRequest, secret_grants: &AtomicUsize) -> ServedResponse {
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let path = request.path.as_str();
    let scoped = body.contains("scope=https%3A%2F%2Fcognitiveservices.azure.com%2F.default");
    let resource = path.split(['?', '&']).any(|pair| pair == "resource=https%3A%2F%2Fcognitiveservices.azure.com");
    match (request.method.as_str(), path) {
        ("POST", "/TENANT/oauth2/v2.0/token") if scoped && body.contains("grant_type=client_credentials") => {
            if body.contains("client_secret=CLIENT-SECRET") {
                // The first token lives 10 s: too short to be handed out twice.
                let lifetime = if secret_grants.fetch_add(1, Ordering::SeqCst) == 0 { 10 } else { 3599 };
                ServedResponse::json(
                    200,
                    &json!({"token_type": "Bearer", "expires_in": lifetime, "access_token": "SECRET-TOKEN"}),
                )
            } else if body.contains("client_assertion=K8S-TOKEN")
                && body
                    .contains("client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer")
            {
                ServedResponse::json(
                    200,
                    &json!({"token_type": "Bearer", "expires_in": "3599", "access_token": "WORKLOAD-TOKEN"}),
                )
            } else {
                ServedResponse::json(
                    401,
                    &json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."}),
                )
            }
        }
        ("GET", p) if p.starts_with("/appservice?api-version=2019-08-01&") && resource => {
            match request.header("x-identity-header") {
                Some("APP-HEADER") => ServedResponse::json(
                    200,
                    &json!({"access_token": "APP-TOKEN", "expires_on": in_an_hour(), "token_type": "Bearer"}),
                ),
                _ => ServedResponse::json(401, &json!({"error": "unauthorized"})),
            }
        }
        ("GET", p) if p.starts_with("/metadata/identity/oauth2/token?api-version=2018-02-01&") && resource => {
            match (request.header("metadata"), p.contains("client_id=NO-SUCH-ID")) {
                (Some("true"), false) => ServedResponse::json(
                    200,
                    &json!({"access_token": "IMDS-TOKEN", "expires_on": in_an_hour(), "expires_in": "3599"}),
                ),
                (Some("true"), true) => ServedResponse::json(
                    400,
                    &json!({"error": "invalid_request", "error_description": "Identity not found"}),
                ),
                _ => ServedResponse::json(400, &json!({"error": "bad_request"})),
            }
        }
        ("POST", "/llm") => ServedResponse::sse("data: ok\n\ndata: [DONE]\n\n"),
        _ => ServedResponse::json(404, &json!({"error": "not served"})),
    }
}

/// A fake `az` in `dir` that prints a token, noting its arguments and environment.
fn fake_az(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let expires_on = in_an_hour();
    let script = format!(
        "#!/bin/sh\necho \"$@\" > '{dir}/az-args'\n/usr/bin/env > '{dir}/az-env'\n\
         printf '{{\"accessToken\": \"CLI-TOKEN\", \"expires_on\": {expires_on}, \"tokenType\": \"Bearer\"}}'\n",
        dir = dir.display()
    );
    let path = dir.join("az");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A port on loopback where nothing listens.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

fn chain(vars: &[(&str, &str)]) -> EntraCredential {
    EntraCredential::from_vars(env_vars(vars))
}

/// A case: its name, the variables, the token expected.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

#[tokio::test]
async fn each_source_of_the_chain_gives_a_token() {
    let fake = fake().await;
    let url = fake.server.url();
    let dir = tempfile::tempdir().unwrap();
    fake_az(dir.path());
    let bin = dir.path().display().to_string();
    let token_file = dir.path().join("k8s-token");
    std::fs::write(&token_file, "K8S-TOKEN\n").unwrap();
    let token_file = token_file.display().to_string();
    let appservice = format!("{url}/appservice");
    let nothing = closed_port();
    let cases: [Case<'_>; 6] = [
        (
            "client secret",
            vec![
                ("AZURE_TENANT_ID", "TENANT"),
                ("AZURE_CLIENT_ID", "app"),
                ("AZURE_CLIENT_SECRET", "CLIENT-SECRET"),
                ("AZURE_AUTHORITY_HOST", &url),
            ],
            "SECRET-TOKEN",
        ),
        (
            "workload identity",
            vec![
                ("AZURE_TENANT_ID", "TENANT"),
                ("AZURE_CLIENT_ID", "app"),
                ("AZURE_FEDERATED_TOKEN_FILE", &token_file),
                ("AZURE_AUTHORITY_HOST", &url),
            ],
            "WORKLOAD-TOKEN",
        ),
        (
            "App Service managed identity",
            vec![("IDENTITY_ENDPOINT", &appservice), ("IDENTITY_HEADER", "APP-HEADER")],
            "APP-TOKEN",
        ),
        ("instance metadata", vec![("AZURE_POD_IDENTITY_AUTHORITY_HOST", &url), ("PATH", &bin)], "IMDS-TOKEN"),
        (
            "Azure CLI, when no metadata service answers",
            vec![("AZURE_POD_IDENTITY_AUTHORITY_HOST", &nothing), ("PATH", &bin)],
            "CLI-TOKEN",
        ),
        (
            "Azure CLI, when the machine has no identity",
            vec![("AZURE_POD_IDENTITY_AUTHORITY_HOST", &url), ("AZURE_CLIENT_ID", "NO-SUCH-ID"), ("PATH", &bin)],
            "CLI-TOKEN",
        ),
    ];
    for (name, vars, expected) in cases {
        let credential = chain(&vars);
        assert_eq!(credential.token().await.unwrap_or_else(|e| panic!("{name}: {e}")).token, expected, "{name}");
        let shown = format!("{credential:?}");
        assert!(
            !shown.contains("TOKEN") && !shown.contains("SECRET") && !shown.contains("APP-HEADER"),
            "{name}: {shown}"
        );
    }
    let args = std::fs::read_to_string(dir.path().join("az-args")).unwrap();
    assert_eq!(
        args.trim(),
        "account get-access-token --output json --scope https://cognitiveservices.azure.com/.default"
    );
}

#[tokio::test]
async fn the_azure_cli_gets_only_the_variables_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    fake_az(dir.path());
    let bin = dir.path().display().to_string();
    let nothing = closed_port();
    let credential = chain(&[
        ("PATH", &bin),
        ("AZURE_POD_IDENTITY_AUTHORITY_HOST", &nothing),
        ("AZURE_CLIENT_SECRET", "CLIENT-SECRET"),
        ("OPENAI_API_KEY", "OTHER-SECRET"),
        ("HOME", "/home/someone"),
    ]);
    assert_eq!(credential.token().await.unwrap().token, "CLI-TOKEN");
    let env = std::fs::read_to_string(dir.path().join("az-env")).unwrap();
    assert!(env.contains("HOME=/home/someone") && env.contains(&format!("PATH={bin}")), "{env}");
    assert!(!env.contains("SECRET"), "{env}");
    // Nothing of this process's own environment (cargo sets CARGO_MANIFEST_DIR for tests).
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some() && !env.contains("CARGO_MANIFEST_DIR"), "{env}");
}

#[tokio::test]
async fn a_source_that_is_set_up_and_fails_ends_the_search_with_its_error() {
    let fake = fake().await;
    let dir = tempfile::tempdir().unwrap();
    fake_az(dir.path());
    let (url, bin) = (fake.server.url(), dir.path().display().to_string());
    let credential = chain(&[
        ("AZURE_TENANT_ID", "TENANT"),
        ("AZURE_CLIENT_ID", "app"),
        ("AZURE_CLIENT_SECRET", "WRONG-SECRET"),
        ("AZURE_AUTHORITY_HOST", &url),
        ("PATH", &bin),
    ]);
    let error = credential.token().await.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Auth(
            "Entra ID refused the client secret (status 401): invalid_client: AADSTS7000215: Invalid client secret provided."
                .into()
        )
    );
    assert!(!dir.path().join("az-args").exists(), "the CLI was not asked");
}

#[tokio::test]
async fn nothing_set_up_names_every_source_tried() {
    let empty = tempfile::tempdir().unwrap();
    let bin = empty.path().display().to_string();
    let nothing = closed_port();
    let error = chain(&[("AZURE_POD_IDENTITY_AUTHORITY_HOST", &nothing), ("PATH", &bin)]).token().await.unwrap_err();
    let ProviderError::Auth(message) = &error else { panic!("{error:?}") };
    assert!(
        message.starts_with("no Entra ID credentials found (managed identity: no instance metadata service answered"),
        "{message}"
    );
    assert!(message.ends_with("Azure CLI: the Azure CLI (`az`) is not installed)"), "{message}");
}

#[tokio::test]
async fn tokens_are_kept_until_shortly_before_they_expire() {
    let fake = fake().await;
    let credential =
        EntraCredential::client_secret("TENANT", "app", "CLIENT-SECRET").with_authority_host(&fake.server.url());
    for _ in 0..4 {
        assert_eq!(credential.token().await.unwrap().token, "SECRET-TOKEN");
    }
    // The first lived 10 s: fetched again at once; the second lives an hour.
    assert_eq!(fake.secret_grants.load(Ordering::SeqCst), 2);
    // A token the service refused is forgotten: the next request gets a new one.
    assert!(credential.invalidate());
    assert_eq!(credential.token().await.unwrap().token, "SECRET-TOKEN");
    assert_eq!(fake.secret_grants.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn model_calls_carry_the_entra_token() {
    let fake = fake().await;
    let url = fake.server.url();
    let credential = EntraCredential::client_secret("TENANT", "app", "CLIENT-SECRET").with_authority_host(&url);
    let config = LinesConfig { url: format!("{url}/llm"), auth: Auth::Token(Arc::new(credential)) };
    let provider = HttpProvider::<Lines>::new(config);
    let prompt = Message::user("hi");
    let messages = [&prompt];
    let events: Vec<StreamEvent> =
        provider.stream(&StreamRequest::new("m", "", &messages), CancellationToken::new()).collect().await;
    assert!(matches!(events.last(), Some(StreamEvent::Done(_))), "{events:?}");
    let requests = fake.server.requests();
    let call = requests.iter().find(|r| r.path == "/llm").unwrap();
    assert_eq!(call.header("authorization"), Some("Bearer SECRET-TOKEN"));
}
