use std::time::{Duration, UNIX_EPOCH};

use serde_json::json;
use sinew_testing::{round_trip_history, with_round_trip_request};

use super::*;

fn example_credentials(session_token: Option<&str>) -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: session_token.map(str::to_owned),
    }
}

/// 2015-08-30T12:36:00Z, the time of AWS's published SigV4 test suite.
fn suite_time() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_440_938_160)
}

#[test]
fn sigv4_matches_the_aws_test_suite_get_vanilla_vector() {
    // aws-sig-v4-test-suite/get-vanilla: GET / to example.amazonaws.com, service `service`.
    let mut request = HttpRequest {
        method: http::Method::GET,
        url: "https://example.amazonaws.com/".into(),
        headers: Vec::new(),
        body: Default::default(),
    };
    sign_request(&mut request, &example_credentials(None), "us-east-1", "service", suite_time()).unwrap();
    assert_eq!(request.header_value("x-amz-date"), Some("20150830T123600Z"));
    assert_eq!(
        request.header_value("authorization"),
        Some(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        )
    );
}

/// The request as the provider sends it at the suite's time.
fn signed(config: &BedrockConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let mut http = build_request(config, request);
    let credentials = match &config.auth {
        BedrockAuth::SigV4(_) => example_credentials(Some("SESSION-SECRET")),
        BedrockAuth::ApiKey(_) => return http,
    };
    sign_request(&mut http, &credentials, &config.region, "bedrock", suite_time()).unwrap();
    http
}

#[test]
fn converse_stream_requests_are_signed_with_the_session_token_and_hide_secrets() {
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let request = StreamRequest::new("anthropic.claude-3-7-sonnet-20250219-v1:0", "", &refs);
    let config = BedrockConfig::new("eu-west-1", example_credentials(Some("SESSION-SECRET")));
    assert_eq!(build_request(&config, &request).header_value("authorization"), None, "signed when sent");
    let http = signed(&config, &request);
    assert_eq!(
        http.url,
        "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"
    );
    assert_eq!(http.header_value("x-amz-security-token"), Some("SESSION-SECRET"));
    let authorization = http.header_value("authorization").unwrap();
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/eu-west-1/bedrock/aws4_request")
    );
    assert!(authorization.contains("x-amz-security-token"), "the token is signed: {authorization}");
    // Deterministic: same inputs, same signature.
    assert_eq!(signed(&config, &request), http);
    let shown = format!("{http:?} {config:?}");
    assert!(!shown.contains("SECRET") && !shown.contains("EXAMPLEKEY"), "{shown}");

    let http = build_request(&BedrockConfig::with_api_key("us-east-1", "ABSK-SECRET"), &request);
    assert_eq!(http.header_value("authorization"), Some("Bearer ABSK-SECRET"));
    assert_eq!(http.header_value("x-amz-date"), None);
    assert!(!format!("{http:?}").contains("ABSK-SECRET"));
}

#[tokio::test]
async fn the_authorizer_signs_with_the_providers_credentials_or_reports_their_absence() {
    #[derive(Debug)]
    struct Nothing;
    #[async_trait]
    impl CredentialsProvider for Nothing {
        async fn credentials(&self) -> Result<AwsCredentials, ProviderError> {
            Err(ProviderError::Auth("no credentials configured".into()))
        }
    }
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let request = StreamRequest::new("m", "", &refs);
    let config = BedrockConfig::new("us-east-1", Nothing);
    let mut http = build_request(&config, &request);
    let error = config.authorizer().unwrap().authorize(&mut http).await.unwrap_err();
    assert_eq!(error, ProviderError::Auth("no credentials configured".into()));

    let config = BedrockConfig::new("eu-west-1", example_credentials(None));
    config.authorizer().unwrap().authorize(&mut http).await.unwrap();
    let authorization = http.header_value("authorization").unwrap();
    assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"), "{authorization}");
    assert!(authorization.contains("/eu-west-1/bedrock/aws4_request"), "{authorization}");
    assert!(BedrockConfig::with_api_key("us-east-1", "k").authorizer().is_none(), "the key is in the request");
}

/// A server tool's result, as Bedrock streams it into an answer: sent back with it.
fn server_tool_result() -> Value {
    json!({"toolResult": {"toolUseId": "tooluse_srv", "status": "success", "type": "nova_code_interpreter_result", "content": [{"json": {"stdOut": "4"}}]}})
}

#[test]
fn a_rich_history_becomes_the_documented_body() {
    let history = round_trip_history("bedrock", server_tool_result());
    let adjust = |request: &mut StreamRequest<'_>| {
        request.thinking_level = ThinkingLevel::Medium;
        request.max_tokens = Some(4000);
    };
    let body = with_round_trip_request(&history, "us.anthropic.claude-sonnet-4-5-v1:0", adjust, body);
    let roles: Vec<&str> = body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"], "roles alternate");
    insta::assert_json_snapshot!(body);
}

#[test]
fn request_options_become_converse_fields() {
    sinew_testing::assert_option_support(check_options, SUPPORTED_OPTIONS);
    let history = round_trip_history("bedrock", server_tool_result());
    let options = sinew_testing::leak_options(
        sinew_core::RequestOptions::default()
            .with_tool_choice(ToolChoice::tool("read"))
            .with_stop_sequences(["END"])
            .with_top_p(0.9),
    );
    let sent = with_round_trip_request(&history, "us.anthropic.claude-sonnet-4-5-v1:0", |r| r.options = options, body);
    assert_eq!(sent["toolConfig"]["toolChoice"], json!({"tool": {"name": "read"}}));
    assert_eq!(sent["inferenceConfig"]["stopSequences"], json!(["END"]));
    assert_eq!(sent["inferenceConfig"]["topP"], json!(0.9));
    let required =
        sinew_testing::leak_options(sinew_core::RequestOptions::default().with_tool_choice(ToolChoice::Required));
    let sent = with_round_trip_request(&history, "m", |r| r.options = required, body);
    assert_eq!(sent["toolConfig"]["toolChoice"], json!({"any": {}}));
    // Converse has no "none".
    let refs: Vec<&Message> = history.iter().collect();
    let tools = sinew_testing::round_trip_tools();
    let none = sinew_core::RequestOptions::default().with_tool_choice(ToolChoice::None);
    let mut request = StreamRequest::new("m", "", &refs);
    request.tools = &tools;
    request.options = &none;
    let error = check_options(&request).unwrap_err();
    assert!(error.to_string().contains("`tool_choice: none`"), "{error}");
}

#[test]
fn a_schema_becomes_output_config_and_json_mode_is_refused() {
    let history = round_trip_history("bedrock", server_tool_result());
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let options = sinew_testing::leak_options(
        sinew_core::RequestOptions::default()
            .with_response_format(ResponseFormat::json_schema("count", schema.clone())),
    );
    let sent = with_round_trip_request(&history, "m", |r| r.options = options, body);
    assert_eq!(
        sent["outputConfig"],
        json!({"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"name": "count", "schema": schema.to_string()}}}})
    );
    // Claude's constrained decoding wants every object closed, as on Anthropic's API.
    let claude =
        with_round_trip_request(&history, "us.anthropic.claude-sonnet-4-5-v1:0", |r| r.options = options, body);
    let closed = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false});
    assert_eq!(claude["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"], closed.to_string());
    let refs: Vec<&Message> = history.iter().collect();
    let object = sinew_core::RequestOptions::default().with_response_format(ResponseFormat::JsonObject);
    let mut request = StreamRequest::new("m", "", &refs);
    request.options = &object;
    let error = check_options(&request).unwrap_err();
    assert!(error.to_string().contains("JSON object (give a schema)"), "{error}");
}

#[test]
fn documents_go_as_bytes_with_a_name_and_urls_and_audio_are_refused() {
    let attachments = sinew_testing::attachments();
    let asked = vec![Content::text("Compare:"), attachments[1].clone()];
    let history = sinew_testing::tool_round("bedrock", asked, vec![attachments[2].clone()]);
    let body = sinew_testing::with_messages(&history, |r| {
        check_inputs(r).unwrap();
        body(r)
    });
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"document": {"format": "pdf", "name": "spec pdf", "source": {"bytes": "JVBERi0x"}}})
    );
    assert_eq!(
        body["messages"][2]["content"][0]["toolResult"]["content"],
        json!([{"document": {"format": "txt", "name": "document 2", "source": {"bytes": "aGVsbG8="}}}])
    );
    assert_eq!(document_name(Some("Q3 report (final)  [v2].xlsx"), 1), "Q3 report (final) [v2] xlsx");
    assert_eq!(document_name(Some("..."), 4), "document 4");

    for (block, why) in [
        (attachments[0].clone(), "it takes the bytes, not a URL"),
        (attachments[3].clone(), "it takes the bytes, not a URL"),
        (attachments[4].clone(), "it takes no audio"),
        (
            Content::document("e30=", "application/json"),
            "documents are PDF, CSV, DOC, DOCX, XLS, XLSX, HTML, plain text or Markdown, not application/json",
        ),
    ] {
        let kind = block.kind();
        assert_eq!(
            sinew_testing::input_refusal(check_inputs, block),
            format!("Bedrock ConverseStream cannot take the {kind} in message 0: {why}")
        );
    }
}

#[test]
fn cache_points_follow_the_strategy_on_the_models_that_take_them() {
    let history = round_trip_history("bedrock", server_tool_result());
    // Where in the body the cache points are: system, tools, or message N.
    let points = |model: &str, cache: sinew_core::CacheConfig| {
        let body = with_round_trip_request(&history, model, |r| r.cache_config = cache, body);
        let is_point = |block: &Value| block.get("cachePoint").is_some();
        let mut found = Vec::new();
        if body["system"].as_array().unwrap().iter().any(is_point) {
            found.push("system".to_owned());
        }
        if body["toolConfig"]["tools"].as_array().unwrap().iter().any(is_point) {
            found.push("tools".to_owned());
        }
        for (i, message) in body["messages"].as_array().unwrap().iter().enumerate() {
            if message["content"].as_array().unwrap().iter().any(is_point) {
                found.push(format!("message {i}"));
            }
        }
        found
    };
    let claude = "us.anthropic.claude-sonnet-4-5-v1:0";
    let auto = sinew_core::CacheConfig::default();
    assert_eq!(points(claude, auto), ["system", "tools", "message 3"]);
    // Nova caches the system prompt and messages, not tools.
    assert_eq!(points("amazon.nova-pro-v1:0", auto), ["system", "message 3"]);
    assert!(points("anthropic.claude-3-haiku-20240307-v1:0", auto).is_empty(), "Claude 3 has no caching");
    let tools_only =
        sinew_core::CacheStrategy::Manual { cache_system: false, cache_tools: true, cache_messages: false };
    assert_eq!(points(claude, sinew_core::CacheConfig::new(true, tools_only)), ["tools"]);
    assert!(points(claude, sinew_core::CacheConfig::new(false, sinew_core::CacheStrategy::Auto)).is_empty());
    assert!(points("meta.llama3-70b-instruct-v1:0", auto).is_empty(), "Llama refuses cache points");
}

#[test]
fn a_model_without_cache_points_says_so_at_debug_level() {
    let history = round_trip_history("bedrock", server_tool_result());
    let logs = sinew_testing::logs_during(tracing::Level::DEBUG, || {
        with_round_trip_request(&history, "meta.llama3-70b-instruct-v1:0", |_| {}, body);
    });
    assert_eq!(
        logs,
        r#"message=no prompt caching: the model takes no cachePoint model="meta.llama3-70b-instruct-v1:0""#
    );
}

#[test]
fn document_names_are_made_unique_and_a_sixth_document_is_refused() {
    let pdf = |name: &str| Content::Document {
        data: "JVBERi0x".into(),
        mime_type: "application/pdf".into(),
        name: Some(name.into()),
    };
    let asked = vec![pdf("Report.pdf"), pdf("report.pdf"), pdf("report pdf"), pdf(&"x".repeat(300))];
    let history = [Message::User(sinew_core::UserMessage { content: asked, timestamp: 0 })];
    let body = sinew_testing::with_messages(&history, body);
    let names: Vec<String> = body["messages"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["document"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names[..3], ["Report pdf", "report pdf (2)", "report pdf (3)"]);
    assert_eq!(names[3].len(), 190);

    let six = vec![pdf("a"), pdf("b"), pdf("c"), pdf("d"), pdf("e"), pdf("f")];
    let history = [Message::User(sinew_core::UserMessage { content: six, timestamp: 0 })];
    let error = sinew_testing::with_messages(&history, |r| check_inputs(r).unwrap_err().to_string());
    assert_eq!(
        error,
        "Bedrock ConverseStream cannot take the document in message 0: a request holds 5 documents at most"
    );
}

#[test]
fn no_cache_point_follows_a_reasoning_block() {
    let mut answer = sinew_core::AssistantMessage::new("bedrock", "us.anthropic.claude-sonnet-4-5-v1:0");
    answer.content = vec![Content::Thinking {
        thinking: String::new(),
        signature: Some("REDACTED==".into()),
        redacted: true,
        id: None,
    }];
    let history = [Message::user("one"), Message::Assistant(answer), Message::user("two")];
    let refs: Vec<&Message> = history.iter().collect();
    let request = StreamRequest::new("us.anthropic.claude-sonnet-4-5-v1:0", "", &refs);
    let sent = body(&request);
    assert_eq!(sent["messages"][1]["content"], json!([{"reasoningContent": {"redactedContent": "REDACTED=="}}]));
    // The breakpoint is on that message; with a reasoning block last, Bedrock refuses one there.
    assert_eq!(request.cache_breakpoints().message, Some(1));
}

/// The body of `messages` for `model`, its messages resumed from `cache` when given.
/// `None`: the request was refused.
fn body_with(model: &str, messages: &[Message], cache: Option<(&sinew_core::WireCache, usize)>) -> Option<Vec<u8>> {
    let config = BedrockConfig::with_api_key("us-east-1", "k");
    let refs: Vec<&Message> = messages.iter().collect();
    let mut request = StreamRequest::new(model, "Be brief.", &refs);
    request.history = cache.map(|(cache, unchanged)| sinew_core::HistoryCache { cache, unchanged });
    checked_request(&config, &request).ok().map(|http| http.body.to_vec())
}

proptest::proptest! {
    /// A body whose messages resume from what the history's cache kept is the body written whole,
    /// byte for byte (`sinew_testing::resume`): consecutive messages of one role sharing a turn,
    /// empty ones between them, documents named across the request (a request with more than five
    /// is refused both ways), the cache point moving on, and a switch to a model that takes none.
    #[test]
    fn a_resumed_body_is_the_body_written_whole(steps in sinew_testing::resume::history_steps()) {
        let mut pool = round_trip_history(PROVIDER_ID, json!({"toolResult": {"toolUseId": "s", "content": []}}));
        pool.extend([
            Message::ToolResult(sinew_core::ToolResultMessage::error("call_3", "read", "gone")),
            Message::user(""),
            Message::User(sinew_core::UserMessage {
                content: vec![Content::text("see"), Content::document("aGk=", "text/plain")],
                timestamp: 0,
            }),
            Message::Assistant(AssistantMessage {
                content: vec![Content::Thinking {
                    thinking: "hm".into(),
                    signature: Some("sig".into()),
                    redacted: false,
                    id: None,
                }],
                ..AssistantMessage::new(PROVIDER_ID, "m")
            }),
        ]);
        sinew_testing::resume::check_resumed_bodies(&pool, &steps, |history, cache, llama| {
            body_with(if llama { "meta.llama3-70b" } else { "anthropic.claude-sonnet-4-v1" }, history, cache)
        })?;
    }
}

/// A growing history's turns are written once, up to the message before the cache point.
#[test]
fn a_growing_history_is_written_once_up_to_the_cache_point() {
    let cache = sinew_core::WireCache::default();
    let model = "anthropic.claude-sonnet-4-v1";
    let assistant = |text: &str| {
        Message::Assistant(AssistantMessage {
            content: vec![Content::text(text)],
            ..AssistantMessage::new(PROVIDER_ID, "m")
        })
    };
    let mut history = vec![Message::user("one"), assistant("two"), Message::user("three"), assistant("four")];
    body_with(model, &history, Some((&cache, 0))).unwrap();
    history.push(Message::user("five"));
    let refs: Vec<&Message> = history.iter().collect();
    let mut request = StreamRequest::new(model, "", &refs);
    request.history = Some(sinew_core::HistoryCache { cache: &cache, unchanged: 4 });
    let kept = cache.take(message_format(&request), resumable_within(&request));
    // Turns end where the next message has another role; the last before the cache point (on
    // message 2, then 3) and the unchanged message after it bound what is reused.
    assert_eq!(kept.messages(), 2);
    assert!(String::from_utf8_lossy(kept.bytes()).ends_with(r#"{"role":"assistant","content":[{"text":"two"}]},"#));
}
