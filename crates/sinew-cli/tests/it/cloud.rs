//! Cloud providers reached with credentials from the chains, no key given: Azure OpenAI with an
//! Entra ID service principal, Vertex AI with Application Default Credentials, Bedrock with an
//! AWS profile. Each cloud is a loopback fake of its token service and its model.

use serde_json::json;
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse, fixture_bytes};

use crate::support::Sandbox;

fn cloud(request: &ReceivedRequest) -> ServedResponse {
    let body = String::from_utf8_lossy(&request.body).into_owned();
    match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/TENANT/oauth2/v2.0/token") if body.contains("client_secret=ENTRA-SECRET") => ServedResponse::json(
            200,
            &json!({"token_type": "Bearer", "expires_in": 3599, "access_token": "ENTRA-TOKEN"}),
        ),
        ("POST", "/openai/v1/responses") => ServedResponse::sse(fixture_bytes("azure-openai/responses-text.sse")),
        ("POST", "/token") if body.contains("REFRESH-SECRET") => {
            ServedResponse::json(200, &json!({"access_token": "ADC-TOKEN", "expires_in": 3599, "token_type": "Bearer"}))
        }
        ("POST", path) if path.contains(":streamGenerateContent") => {
            ServedResponse::sse(fixture_bytes("vertex/text-flex-service-tier.sse"))
        }
        ("POST", "/model/claude/converse-stream") => ServedResponse::new(200)
            .header("content-type", "application/vnd.amazon.eventstream")
            .chunk(fixture_bytes("bedrock-converse-stream/text-nova-short.bin")),
        _ => ServedResponse::json(404, &json!({"error": "not served"})),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn cloud_providers_sign_in_through_the_credential_chains() {
    let server = MockServer::start(cloud).await;
    let url = server.url();
    let files = tempfile::tempdir().unwrap();
    let adc = files.path().join("adc.json");
    let user = json!({"type": "authorized_user", "client_id": "cid", "client_secret": "CLIENT-SECRET", "refresh_token": "REFRESH-SECRET", "token_uri": format!("{url}/token")});
    std::fs::write(&adc, user.to_string()).unwrap();
    let aws_credentials = files.path().join("aws-credentials");
    std::fs::write(
        &aws_credentials,
        "[work]\naws_access_key_id = PROFILE-KEY\naws_secret_access_key = PROFILE-SECRET\n",
    )
    .unwrap();
    let (adc, aws_credentials) = (adc.display().to_string(), aws_credentials.display().to_string());
    let vertex_base = format!("{url}/v1/projects/proj/locations/global/publishers/google");

    let azure = Sandbox::new(&[
        ("AZURE_OPENAI_ENDPOINT", &url),
        ("AZURE_TENANT_ID", "TENANT"),
        ("AZURE_CLIENT_ID", "app"),
        ("AZURE_CLIENT_SECRET", "ENTRA-SECRET"),
        ("AZURE_AUTHORITY_HOST", &url),
    ]);
    azure.run(&["-p", "azure", "--model", "gpt-5-deployment", "hi"], "").await.assert_code(0);
    let vertex = Sandbox::new(&[("GOOGLE_CLOUD_PROJECT", "proj"), ("GOOGLE_APPLICATION_CREDENTIALS", &adc)]);
    vertex.run(&["-p", "vertex", "--base-url", &vertex_base, "hi"], "").await.assert_code(0);
    let bedrock = Sandbox::new(&[
        ("AWS_REGION", "us-east-1"),
        ("AWS_PROFILE", "work"),
        ("AWS_SHARED_CREDENTIALS_FILE", &aws_credentials),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]);
    bedrock.run(&["-p", "bedrock", "--base-url", &url, "--model", "claude", "hi"], "").await.assert_code(0);

    let requests = server.requests();
    let model_call = |fragment: &str| {
        requests.iter().find(|r| r.path.contains(fragment)).unwrap_or_else(|| panic!("no call to {fragment}"))
    };
    let azure_call = model_call("/openai/v1/responses");
    assert_eq!(azure_call.header("authorization"), Some("Bearer ENTRA-TOKEN"));
    assert_eq!(azure_call.header("api-key"), None);
    assert_eq!(model_call(":streamGenerateContent").header("authorization"), Some("Bearer ADC-TOKEN"));
    let signed = model_call("/converse-stream").header("authorization").unwrap();
    assert!(signed.starts_with("AWS4-HMAC-SHA256 Credential=PROFILE-KEY/"), "{signed}");
}
