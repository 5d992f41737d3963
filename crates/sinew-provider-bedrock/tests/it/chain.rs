//! AWS's default credential chain (`credential-chain`) against local fakes of the services it
//! asks: EC2 instance metadata (IMDSv2), the ECS container endpoint, STS and the SSO portal on
//! one loopback server, with the environment and the files handed to aws-config's loader.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use aws_config::BehaviorVersion;
use aws_types::os_shim_internal::{Env, Fs};
use serde_json::json;
use sinew_core::{CancellationToken, ProviderError};
use sinew_provider_bedrock::{AwsCredentialChain, BedrockConfig, BedrockProvider, CredentialsProvider};
use sinew_testing::transport::{self, quick_retry};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse, fixture_bytes};

/// `https://d-123.awsapps.com/start`'s SHA-1: the name of its token in the SSO cache.
const SSO_CACHE: &str = "/home/.aws/sso/cache/2b829a45f04c9828cb45b7d092d8e4aa30818393.json";

fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The JSON IMDS and ECS answer with, for `key`, expiring in `secs`.
fn metadata_credentials(key: &str, secs: u64) -> ServedResponse {
    let expiration = rfc3339(SystemTime::now() + Duration::from_secs(secs));
    ServedResponse::json(
        200,
        &json!({"Code": "Success", "AccessKeyId": key, "SecretAccessKey": "SECRET-VALUE", "Token": format!("{key}-SESSION"), "Expiration": expiration}),
    )
}

/// One loopback server playing IMDS, ECS, STS, the SSO portal and Bedrock. ECS's credentials
/// expire 10 s after the first answer (too soon to be handed out again), an hour after the next.
struct Fake {
    server: MockServer,
    ecs_calls: Arc<AtomicUsize>,
}

async fn fake() -> Fake {
    let ecs_calls = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&ecs_calls);
    let server = MockServer::start(move |request: &ReceivedRequest| answer(request, &calls)).await;
    Fake { server, ecs_calls }
}

fn answer(request: &ReceivedRequest, ecs_calls: &AtomicUsize) -> ServedResponse {
    let imds_token = request.header("x-aws-ec2-metadata-token") == Some("IMDS-SESSION");
    match (request.method.as_str(), request.path.as_str()) {
        ("PUT", "/latest/api/token") => {
            ServedResponse::new(200).header("x-aws-ec2-metadata-token-ttl-seconds", "21600").chunk("IMDS-SESSION")
        }
        ("GET", "/latest/meta-data/iam/security-credentials/") if imds_token => {
            ServedResponse::new(200).chunk("bedrock-role")
        }
        ("GET", "/latest/meta-data/iam/security-credentials/bedrock-role") if imds_token => {
            metadata_credentials("IMDS-KEY", 3600)
        }
        ("GET", "/ecs-credentials") if request.header("authorization") == Some("ECS-AUTH") => {
            match ecs_calls.fetch_add(1, Ordering::SeqCst) {
                0 => metadata_credentials("ECS-KEY-1", 10),
                n => metadata_credentials(&format!("ECS-KEY-{}", n + 1), 3600),
            }
        }
        ("POST", "/") if String::from_utf8_lossy(&request.body).contains("WebIdentityToken=OIDC-TOKEN") => {
            let expiration = rfc3339(SystemTime::now() + Duration::from_secs(3600));
            ServedResponse::new(200).header("content-type", "text/xml").chunk(format!(
                "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleWithWebIdentityResult>\
                 <Credentials><AccessKeyId>STS-KEY</AccessKeyId><SecretAccessKey>SECRET-VALUE</SecretAccessKey>\
                 <SessionToken>STS-KEY-SESSION</SessionToken><Expiration>{expiration}</Expiration></Credentials>\
                 <AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>\
                 </AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>"
            ))
        }
        ("GET", path)
            if path.starts_with("/federation/credentials?")
                && request.header("x-amz-sso_bearer_token") == Some("SSO-ACCESS-TOKEN") =>
        {
            let expiration = SystemTime::now() + Duration::from_secs(3600);
            let millis = expiration.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_millis() as u64;
            ServedResponse::json(
                200,
                &json!({"roleCredentials": {"accessKeyId": "SSO-KEY", "secretAccessKey": "SECRET-VALUE", "sessionToken": "SSO-KEY-SESSION", "expiration": millis}}),
            )
        }
        ("GET", "/ecs-down") => ServedResponse::json(503, &json!({"message": "try again"})),
        ("POST", "/model/test-model/converse-stream") => ServedResponse::new(200)
            .header("content-type", "application/vnd.amazon.eventstream")
            .chunk(fixture_bytes("bedrock-converse-stream/text-then-tool-use.bin")),
        _ => ServedResponse::json(404, &json!({"message": "not served"})),
    }
}

/// The chain aws-config's loader builds from `env` and the files `fs` (instance metadata off
/// unless `env` points it at the fake).
fn chain(env: &[(&str, &str)], fs: &[(&str, &str)]) -> AwsCredentialChain {
    let mut vars: Vec<(String, String)> = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    vars.push(("HOME".into(), "/home".into()));
    if !vars.iter().any(|(k, _)| k == "AWS_EC2_METADATA_SERVICE_ENDPOINT") {
        vars.push(("AWS_EC2_METADATA_DISABLED".into(), "true".into()));
    }
    let files: Vec<(String, String)> = fs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    AwsCredentialChain::from_loader(move || {
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let files: Vec<(&str, &str)> = files.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        aws_config::defaults(BehaviorVersion::latest()).env(Env::from_slice(&vars)).fs(Fs::from_slice(&files))
    })
}

/// A case: its name, the environment, the key id and session token expected.
type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str, Option<&'a str>);

#[tokio::test]
async fn each_source_of_the_chain_gives_its_credentials() {
    let fake = fake().await;
    let url = fake.server.url();
    let ecs = format!("{url}/ecs-credentials");
    let profile = "[profile dev]\nregion = us-east-1\n\n[profile proc]\ncredential_process = echo '{\"Version\": 1, \"AccessKeyId\": \"PROCESS-KEY\", \"SecretAccessKey\": \"SECRET-VALUE\", \"SessionToken\": \"PROCESS-KEY-SESSION\", \"Expiration\": \"2099-01-01T00:00:00Z\"}'\n\n[profile sso]\nsso_start_url = https://d-123.awsapps.com/start\nsso_region = us-east-1\nsso_account_id = 123456789012\nsso_role_name = Bedrock\nregion = us-east-1\n";
    let sso_token = "{\"accessToken\": \"SSO-ACCESS-TOKEN\", \"expiresAt\": \"2099-01-01T00:00:00Z\"}";
    let files = [
        ("/home/.aws/credentials", "[dev]\naws_access_key_id = PROFILE-KEY\naws_secret_access_key = SECRET-VALUE\n"),
        ("/home/.aws/config", profile),
        ("/var/run/token", "OIDC-TOKEN"),
        (SSO_CACHE, sso_token),
    ];
    let cases: [Case<'_>; 8] = [
        (
            "environment",
            vec![("AWS_ACCESS_KEY_ID", "ENV-KEY"), ("AWS_SECRET_ACCESS_KEY", "SECRET-VALUE")],
            "ENV-KEY",
            None,
        ),
        (
            "environment with a session token",
            vec![
                ("AWS_ACCESS_KEY_ID", "ENV-KEY"),
                ("AWS_SECRET_ACCESS_KEY", "SECRET-VALUE"),
                ("AWS_SESSION_TOKEN", "ENV-KEY-SESSION"),
            ],
            "ENV-KEY",
            Some("ENV-KEY-SESSION"),
        ),
        ("a profile's credentials file", vec![("AWS_PROFILE", "dev")], "PROFILE-KEY", None),
        ("credential_process", vec![("AWS_PROFILE", "proc")], "PROCESS-KEY", Some("PROCESS-KEY-SESSION")),
        ("SSO", vec![("AWS_PROFILE", "sso"), ("AWS_ENDPOINT_URL_SSO", &url)], "SSO-KEY", Some("SSO-KEY-SESSION")),
        (
            "web identity",
            vec![
                ("AWS_REGION", "us-east-1"),
                ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token"),
                ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/bedrock"),
                ("AWS_ENDPOINT_URL_STS", &url),
            ],
            "STS-KEY",
            Some("STS-KEY-SESSION"),
        ),
        (
            "ECS container credentials",
            vec![("AWS_CONTAINER_CREDENTIALS_FULL_URI", &ecs), ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ECS-AUTH")],
            "ECS-KEY-1",
            Some("ECS-KEY-1-SESSION"),
        ),
        (
            // The environment holds half a key pair: that source has nothing, the next ones are
            // asked until instance metadata answers.
            "EC2 instance metadata, after sources that have nothing",
            vec![("AWS_ACCESS_KEY_ID", "HALF"), ("AWS_EC2_METADATA_SERVICE_ENDPOINT", &url)],
            "IMDS-KEY",
            Some("IMDS-KEY-SESSION"),
        ),
    ];
    for (name, env, key, session) in cases {
        let credentials = chain(&env, &files).credentials().await.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(credentials.access_key_id, key, "{name}");
        assert_eq!(credentials.session_token.as_deref(), session, "{name}");
        assert_eq!(credentials.secret_access_key, "SECRET-VALUE", "{name}");
        let shown = format!("{credentials:?}");
        assert!(!shown.contains("SECRET-VALUE") && !shown.contains("SESSION"), "{name}: {shown}");
    }
}

#[tokio::test]
async fn credentials_are_cached_and_fetched_again_before_they_expire() {
    let fake = fake().await;
    let ecs = format!("{}/ecs-credentials", fake.server.url());
    let chain =
        chain(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &ecs), ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ECS-AUTH")], &[]);
    let keys =
        [chain.credentials().await, chain.credentials().await, chain.credentials().await, chain.credentials().await];
    let keys: Vec<String> = keys.into_iter().map(|c| c.unwrap().access_key_id).collect();
    // The first expire in 10 s: handed out once, then replaced; the next last an hour.
    assert_eq!(keys, ["ECS-KEY-1", "ECS-KEY-2", "ECS-KEY-2", "ECS-KEY-2"]);
    assert_eq!(fake.ecs_calls.load(Ordering::SeqCst), 2);
    // Keys the service refused are forgotten: the next call fetches new ones.
    assert!(chain.invalidate());
    assert_eq!(chain.credentials().await.unwrap().access_key_id, "ECS-KEY-3");
}

/// A source whose service fails for now (a 5xx) fails the attempt with an error a retry may
/// get past, not as credentials that are missing.
#[tokio::test]
async fn a_source_that_fails_for_now_can_be_retried() {
    let fake = fake().await;
    let uri = format!("{}/ecs-down", fake.server.url());
    let error = chain(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &uri)], &[]).credentials().await.unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    assert!(error.to_string().contains("no AWS credentials"), "{error}");
}

#[tokio::test]
async fn no_source_with_credentials_is_a_clear_error() {
    let error = chain(&[("AWS_ACCESS_KEY_ID", "HALF")], &[]).credentials().await.unwrap_err();
    let ProviderError::Auth(message) = &error else { panic!("{error:?}") };
    assert!(message.starts_with("no AWS credentials: "), "{message}");
    assert!(message.contains("AWS_SECRET_ACCESS_KEY") || message.contains("environment"), "{message}");
    let chain = chain(&[("AWS_ACCESS_KEY_ID", "ENV-KEY"), ("AWS_SECRET_ACCESS_KEY", "SECRET-VALUE")], &[]);
    chain.credentials().await.unwrap();
    let shown = format!("{chain:?}");
    assert!(shown.contains("expires_at") && !shown.contains("SECRET") && !shown.contains("ENV-KEY"), "{shown}");
}

#[tokio::test]
async fn bedrock_requests_are_signed_with_the_chains_credentials() {
    let fake = fake().await;
    let ecs = format!("{}/ecs-credentials", fake.server.url());
    let mut config = BedrockConfig::new(
        "us-east-1",
        chain(&[("AWS_CONTAINER_CREDENTIALS_FULL_URI", &ecs), ("AWS_CONTAINER_AUTHORIZATION_TOKEN", "ECS-AUTH")], &[]),
    );
    config.endpoint = fake.server.url();
    let provider = BedrockProvider::new(config).with_retry(quick_retry());
    let (_, terminal) = transport::run(&provider, CancellationToken::new()).await;
    assert_eq!(terminal.expect("the call succeeds").tool_calls().count(), 1);
    let requests = fake.server.requests();
    let sent = requests.iter().find(|r| r.path == "/model/test-model/converse-stream").expect("Bedrock was called");
    let authorization = sent.header("authorization").unwrap();
    assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=ECS-KEY-1/"), "{authorization}");
    assert_eq!(sent.header("x-amz-security-token"), Some("ECS-KEY-1-SESSION"));
}
