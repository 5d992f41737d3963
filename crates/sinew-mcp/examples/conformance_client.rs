//! The client under test of the MCP conformance suite (`@modelcontextprotocol/conformance client`).
//!
//! The suite starts a mock server per scenario and runs this program with the server's URL as
//! the last argument; `MCP_CONFORMANCE_SCENARIO` names the scenario, and
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` (0.2.x) the revision, which picks the lifecycle:
//! 2026-07-28 is stateless, older ones use the handshake. `MCP_CONFORMANCE_CONTEXT` carries
//! scenario data (the tool calls of `http-custom-headers`). Exit status 0 means every step
//! worked; the suite's own checks give the verdict.
//!
//! `cargo xtask ci` runs the suite against it; by hand:
//! `node conformance/dist/index.js client --command target/debug/examples/conformance_client --scenario tools_call`

#![allow(clippy::print_stderr)]

use std::time::Duration;

use serde_json::{Map, Value, json};
use sinew_mcp::{
    Assertion, ClientCredentials, FollowRedirect, Grant, IdentityAssertion, McpClient, McpError, OAuth, OAuthConfig,
    ProtocolEra, Root, RpcError, SigningKey, schema_defaults,
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Some(url) = std::env::args().next_back().filter(|a| a.starts_with("http")) else {
        eprintln!("usage: conformance_client <server URL>");
        std::process::exit(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    eprintln!("scenario={scenario} version={version:?} url={url}");
    if let Err(error) = run(&url, &scenario, version.as_deref()).await {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

async fn run(url: &str, scenario: &str, version: Option<&str>) -> Result<(), McpError> {
    let mut builder = McpClient::builder()
        .client_info("sinew-conformance-client", env!("CARGO_PKG_VERSION"))
        .request_timeout(Duration::from_secs(20))
        .roots(vec![Root { uri: "file:///tmp".into(), name: Some("tmp".into()) }])
        .sampling(|_params: Value| async {
            Ok(json!({"role": "assistant", "content": {"type": "text", "text": "sampled"}, "model": "none"}))
        })
        .elicitation(|params: Value| async move {
            // Accept, with every default the form declares (SEP-1034).
            let schema = params.get("requestedSchema").cloned().unwrap_or(Value::Null);
            Ok::<_, RpcError>(json!({"action": "accept", "content": schema_defaults(&schema)}))
        });
    builder = match version {
        Some(version) if sinew_mcp::is_stateless_version(version) => builder.era(ProtocolEra::Stateless),
        Some(version) => builder.era(ProtocolEra::Handshake).handshake_version(version),
        None => builder.era(ProtocolEra::Handshake),
    };
    if scenario.starts_with("auth/") {
        builder = builder.headers(oauth(url, scenario)?);
    }
    let client = builder.connect_http(url).await?;
    let server = client.server();
    eprintln!("connected: {} stateless={}", server.protocol_version, server.stateless);
    let tools = client.list_tools().await?;
    eprintln!("tools: {:?}", tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>());
    let call = |name: &str, arguments: Value| {
        let client = client.clone();
        let name = name.to_owned();
        async move {
            let result = client.call_tool(&name, arguments).await?;
            eprintln!("{name} -> {:?}", result.content);
            Ok::<_, McpError>(())
        }
    };
    match scenario {
        "tools_call" => call("add_numbers", json!({"a": 2, "b": 3})).await?,
        "elicitation-sep1034-client-defaults" => call("test_client_elicitation_defaults", json!({})).await?,
        "sse-retry" => call("test_reconnection", json!({})).await?,
        "sep-2322-client-request-state" => {
            for name in
                ["test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"]
            {
                call(name, json!({})).await?;
            }
        }
        "http-standard-headers" => {
            for tool in &tools {
                call(&tool.name, arguments_for(&tool.input_schema)).await?;
            }
            for resource in client.list_resources().await? {
                if let Some(uri) = resource.get("uri").and_then(Value::as_str) {
                    client.read_resource(uri).await?;
                }
            }
            for prompt in client.list_prompts().await? {
                if let Some(name) = prompt.get("name").and_then(Value::as_str) {
                    client.get_prompt(name, json!({})).await?;
                }
            }
        }
        "http-custom-headers" => {
            let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
                .ok()
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or(Value::Null);
            for tool_call in context["toolCalls"].as_array().into_iter().flatten() {
                let name = tool_call["name"].as_str().unwrap_or_default();
                call(name, tool_call["arguments"].clone()).await?;
            }
        }
        "http-invalid-tool-headers" => {
            // The client left the invalid tools out; every tool it kept may be called.
            for tool in &tools {
                call(&tool.name, arguments_for(&tool.input_schema)).await?;
            }
        }
        // Every authorization scenario's server has one tool; calling it makes the scope
        // step-up and authorization server migration scenarios ask for more.
        auth if auth.starts_with("auth/") => call("test-tool", json!({})).await?,
        "json-schema-2020-12-preservation" => {
            let focal = tools.iter().find(|t| t.name == "json_schema_2020_12_tool");
            let schema = focal.map(|t| t.input_schema.clone()).unwrap_or(Value::Null);
            call("json_schema_echo", json!({"schema": schema})).await?;
        }
        _ => {}
    }
    client.close().await;
    Ok(())
}

/// MCP authorization as a headless client does it: the authorization server's redirect is
/// followed, not shown to a person. The scenario's context carries what a deployment would
/// configure: a pre-registered client, a client's private key, an identity provider's ID token,
/// a workload's JWT. Where the server supports client ID metadata documents, the suite's URL is
/// the client id.
fn oauth(url: &str, scenario: &str) -> Result<OAuth, McpError> {
    let context: Value =
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default();
    let text = |key: &str| context[key].as_str().map(str::to_owned);
    let mut config = OAuthConfig::new("http://localhost:3000/callback")
        .client_name("sinew-conformance-client")
        .client_metadata_url("https://conformance-test.local/client-metadata.json");
    if let Some(client_id) = text("client_id") {
        config = config.client(ClientCredentials {
            client_id,
            client_secret: text("client_secret"),
            token_endpoint_auth_method: None,
        });
    }
    if let Some(pem) = text("private_key_pem") {
        config = config.client_assertion_key(SigningKey::from_pkcs8_pem(&pem)?);
    }
    if let (Some(endpoint), Some(id_token)) = (text("idp_token_endpoint"), text("idp_id_token")) {
        let mut idp = IdentityAssertion::new(endpoint, Assertion::Value(id_token));
        if let Some(client_id) = text("idp_client_id") {
            idp = idp.client(ClientCredentials { client_id, client_secret: None, token_endpoint_auth_method: None });
        }
        config = config.grant(Grant::IdentityAssertion(idp));
    } else if let Some(jwt) = text("valid_jwt") {
        config = config.grant(Grant::JwtBearer(Assertion::Value(jwt)));
    } else if scenario.starts_with("auth/client-credentials") {
        config = config.grant(Grant::ClientCredentials);
    }
    Ok(OAuth::new(url, config, FollowRedirect::default()))
}

/// Arguments for every required parameter, by type.
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = Map::new();
    let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer") => json!(1),
            Some("number") => json!(1.5),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("us-west1"),
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}
