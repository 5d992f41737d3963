//! Application Default Credentials (`adc`) against local fakes of the services they ask: an
//! OAuth token endpoint, the metadata server, STS and the IAM credentials API on one loopback
//! server, with the credentials files in a temporary directory.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sinew_core::{CancellationToken, ProviderError};
use sinew_http::{Auth, TokenSource};
use sinew_provider_gemini::{CLOUD_PLATFORM_SCOPE, GeminiConfig, GeminiProvider, GoogleCredentials};
use sinew_testing::transport::{self, quick_retry};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse, env_vars, fixture_bytes};

/// A throwaway RSA key made for these tests, and its public half (PKCS#1 DER).
const SERVICE_ACCOUNT_KEY: &str = include_str!("data/test-service-account.pem");
const SERVICE_ACCOUNT_PUBLIC_KEY: &[u8] = include_bytes!("data/test-service-account.pub.der");

struct Fake {
    server: MockServer,
    /// Refusals left before the token endpoint grants a token.
    refusals: Arc<AtomicUsize>,
}

async fn fake() -> Fake {
    let refusals = Arc::new(AtomicUsize::new(0));
    let left = Arc::clone(&refusals);
    let server = MockServer::start(move |request: &ReceivedRequest| answer(request, &left)).await;
    Fake { server, refusals }
}

/// The body as text.
fn form(request: &ReceivedRequest) -> String {
    String::from_utf8_lossy(&request.body).into_owned()
}

fn answer(request: &ReceivedRequest, refusals: &AtomicUsize) -> ServedResponse {
    let path = request.path.as_str();
    match request.method.as_str() {
        // google-cloud-auth posts the refresh as JSON.
        "POST" if path == "/token" && form(request).contains("\"REFRESH-SECRET\"") => {
            if refusals.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
                return ServedResponse::json(
                    400,
                    &json!({"error": "invalid_grant", "error_description": "Token has been expired or revoked."}),
                );
            }
            ServedResponse::json(
                200,
                &json!({"access_token": "USER-TOKEN", "expires_in": 3599, "token_type": "Bearer"}),
            )
        }
        "GET"
            if path.starts_with("/computeMetadata/v1/instance/service-accounts/default/token")
                && request.header("metadata-flavor") == Some("Google") =>
        {
            ServedResponse::json(200, &json!({"access_token": "MDS-TOKEN", "expires_in": 3599, "token_type": "Bearer"}))
        }
        "POST" if path == "/sts" && form(request).contains("subject_token=OIDC-SUBJECT") => ServedResponse::json(
            200,
            &json!({"access_token": "FEDERATED-TOKEN", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 3600}),
        ),
        "POST"
            if path.ends_with(":generateAccessToken")
                && request.header("authorization") == Some("Bearer FEDERATED-TOKEN") =>
        {
            ServedResponse::json(
                200,
                &json!({"accessToken": "IMPERSONATED-TOKEN", "expireTime": "2099-01-01T00:00:00Z"}),
            )
        }
        "POST" if path.contains(":streamGenerateContent") => {
            ServedResponse::sse(fixture_bytes("gemini/function-call-thought-signature.sse"))
        }
        _ => ServedResponse::json(404, &json!({"error": "not served"})),
    }
}

fn authorized_user(url: &str) -> Value {
    json!({"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com", "client_secret": "CLIENT-SECRET", "refresh_token": "REFRESH-SECRET", "token_uri": format!("{url}/token")})
}

fn write(dir: &Path, name: &str, json: &Value) -> String {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, json.to_string()).unwrap();
    path.display().to_string()
}

/// ADC located through exactly these variables.
fn adc(vars: &[(&str, &str)]) -> GoogleCredentials {
    GoogleCredentials::from_vars(env_vars(vars))
}

/// A case: its name, the variables, the token expected.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);

#[tokio::test]
async fn each_place_and_kind_of_credentials_gives_a_token() {
    let fake = fake().await;
    let url = fake.server.url();
    let dir = tempfile::tempdir().unwrap();
    let user_file = write(dir.path(), "user.json", &authorized_user(&url));
    let subject = dir.path().join("subject-token");
    std::fs::write(&subject, "OIDC-SUBJECT").unwrap();
    let external = json!({
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/github",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("{url}/sts"),
        "credential_source": {"file": subject.display().to_string()},
    });
    let mut impersonated = external.clone();
    impersonated["service_account_impersonation_url"] =
        json!(format!("{url}/v1/projects/-/serviceAccounts/vertex@proj.iam.gserviceaccount.com:generateAccessToken"));
    let external_file = write(dir.path(), "external.json", &external);
    let impersonated_file = write(dir.path(), "impersonated.json", &impersonated);
    let gcloud = dir.path().join("gcloud-config");
    write(&gcloud, "application_default_credentials.json", &authorized_user(&url));
    let home = dir.path().join("home");
    write(&home, ".config/gcloud/application_default_credentials.json", &authorized_user(&url));
    let nowhere = dir.path().join("empty-home").display().to_string();
    let metadata_host = url.trim_start_matches("http://").to_owned();
    let (gcloud, home) = (gcloud.display().to_string(), home.display().to_string());

    let cases: [Case<'_>; 7] = [
        (
            "GOOGLE_APPLICATION_CREDENTIALS, authorized user",
            vec![("GOOGLE_APPLICATION_CREDENTIALS", &user_file)],
            "USER-TOKEN",
        ),
        ("gcloud's file in CLOUDSDK_CONFIG", vec![("CLOUDSDK_CONFIG", &gcloud), ("HOME", &nowhere)], "USER-TOKEN"),
        ("gcloud's file in HOME", vec![("HOME", &home)], "USER-TOKEN"),
        ("workload identity federation", vec![("GOOGLE_APPLICATION_CREDENTIALS", &external_file)], "FEDERATED-TOKEN"),
        (
            "workload identity federation with impersonation",
            vec![("GOOGLE_APPLICATION_CREDENTIALS", &impersonated_file)],
            "IMPERSONATED-TOKEN",
        ),
        (
            "the metadata server, when there is no file",
            vec![("HOME", &nowhere), ("GCE_METADATA_HOST", &metadata_host)],
            "MDS-TOKEN",
        ),
        (
            "the metadata server, when gcloud's file is missing",
            vec![("CLOUDSDK_CONFIG", &nowhere), ("GCE_METADATA_HOST", &metadata_host)],
            "MDS-TOKEN",
        ),
    ];
    for (name, vars, expected) in cases {
        let credentials = adc(&vars);
        let token = credentials.token().await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(token.token, expected, "{name}");
        assert_eq!(credentials.token().await.unwrap().token, expected, "{name}: again");
        let shown = format!("{credentials:?} {token:?}");
        assert!(!shown.contains("TOKEN") && !shown.contains("SECRET"), "{name}: {shown}");
    }
    let sent = fake.server.requests();
    let refresh = sent.iter().find(|r| r.path == "/token").unwrap();
    assert_eq!(refresh.json()["grant_type"], "refresh_token");
    let sts = sent.iter().find(|r| r.path == "/sts").unwrap();
    assert!(
        form(sts).contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"),
        "{}",
        form(sts)
    );
    let users = sent.iter().filter(|r| r.path == "/token").count();
    assert_eq!(users, 3, "each authorized user's token was fetched once and kept");
}

#[tokio::test]
async fn a_service_account_key_signs_its_own_token() {
    let key = json!({
        "type": "service_account",
        "project_id": "proj",
        "private_key_id": "KEY-ID-1",
        "private_key": SERVICE_ACCOUNT_KEY,
        "client_email": "vertex@proj.iam.gserviceaccount.com",
        "client_id": "1234",
        "token_uri": "https://oauth2.googleapis.com/token",
    });
    let token = GoogleCredentials::from_json(key).token().await.unwrap().token;
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "a JWT: {token}");
    let decode = |part: &str| -> Value { serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap() };
    let (header, claims) = (decode(parts[0]), decode(parts[1]));
    assert_eq!((header["alg"].as_str(), header["kid"].as_str()), (Some("RS256"), Some("KEY-ID-1")));
    assert_eq!(claims["iss"], "vertex@proj.iam.gserviceaccount.com");
    assert_eq!(claims["scope"], CLOUD_PLATFORM_SCOPE);
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    let public = ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        SERVICE_ACCOUNT_PUBLIC_KEY,
    );
    public.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).expect("signed with the account's key");
}

#[tokio::test]
async fn broken_credentials_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json").display().to_string();
    let not_json = dir.path().join("broken.json");
    std::fs::write(&not_json, "{ not json").unwrap();
    let not_json = not_json.display().to_string();
    let unknown = write(dir.path(), "unknown.json", &json!({"type": "gdch_service_account"}));
    let untyped = write(dir.path(), "untyped.json", &json!({"client_id": "x"}));
    let cases = [
        (missing.as_str(), "cannot read the Google credentials file"),
        (not_json.as_str(), "is not JSON"),
        (unknown.as_str(), "type `gdch_service_account` is not one sinew knows"),
        (untyped.as_str(), "has no `type`"),
    ];
    for (file, expected) in cases {
        let error = adc(&[("GOOGLE_APPLICATION_CREDENTIALS", file)]).token().await.unwrap_err();
        let ProviderError::Auth(message) = &error else { panic!("{file}: {error:?}") };
        assert!(message.contains(expected), "{file}: {message}");
    }
}

#[tokio::test]
async fn a_refused_refresh_is_an_auth_error_and_the_next_request_tries_again() {
    let fake = fake().await;
    fake.refusals.store(1, Ordering::SeqCst);
    let credentials = GoogleCredentials::from_json(authorized_user(&fake.server.url()));
    let error = credentials.token().await.unwrap_err();
    let ProviderError::Auth(message) = &error else { panic!("{error:?}") };
    assert!(message.starts_with("no Google access token: ") && message.contains("invalid_grant"), "{message}");
    assert!(!message.contains("REFRESH-SECRET") && !message.contains("CLIENT-SECRET"), "{message}");
    assert_eq!(credentials.token().await.unwrap().token, "USER-TOKEN", "built again, asked again");
    // A token the service refused is forgotten with the credentials that kept it.
    let refreshes = || fake.server.requests().iter().filter(|r| r.path == "/token").count();
    let before = refreshes();
    assert_eq!(credentials.token().await.unwrap().token, "USER-TOKEN");
    assert_eq!(refreshes(), before, "kept");
    assert!(credentials.invalidate());
    assert_eq!(credentials.token().await.unwrap().token, "USER-TOKEN");
    assert_eq!(refreshes(), before + 1, "fetched again");
}

#[tokio::test]
async fn vertex_requests_carry_the_adc_token() {
    let fake = fake().await;
    let url = fake.server.url();
    let credentials = Arc::new(GoogleCredentials::from_json(authorized_user(&url)));
    let mut config = GeminiConfig::vertex_with_auth("proj", "us-central1", Auth::Token(credentials));
    config.models_url = config.models_url.replace("https://us-central1-aiplatform.googleapis.com", &url);
    let provider = GeminiProvider::new(config).with_retry(quick_retry());
    let (_, terminal) = transport::run(&provider, CancellationToken::new()).await;
    assert_eq!(terminal.expect("the call succeeds").tool_calls().count(), 1);
    let requests = fake.server.requests();
    let call = requests.iter().find(|r| r.path.contains(":streamGenerateContent")).expect("Vertex was called");
    assert_eq!(call.header("authorization"), Some("Bearer USER-TOKEN"));
    assert!(
        call.path.starts_with("/v1/projects/proj/locations/us-central1/publishers/google/models/"),
        "{}",
        call.path
    );
}
