use serde_json::json;
use sinew_core::RequestOptions;
use sinew_testing::{round_trip_history, with_round_trip_request};

use super::*;

fn build(config: &GeminiConfig, model: &str, adjust: impl FnOnce(&mut StreamRequest<'_>)) -> Value {
    let opaque = json!({"executableCode": {"language": "PYTHON", "code": "print(1)"}});
    let history = round_trip_history("google", opaque);
    with_round_trip_request(&history, model, adjust, |request| body(config, request))
}

#[test]
fn a_rich_history_becomes_the_documented_body() {
    let body = build(&GeminiConfig::gemini("key"), "gemini-3-pro-preview", |r| {
        r.thinking_level = ThinkingLevel::High;
        r.max_tokens = Some(1000);
        r.temperature = Some(0.2);
    });
    insta::assert_json_snapshot!(body);
}

#[test]
fn signatures_go_back_only_to_their_service_and_gemini_3_gets_the_skip_value() {
    let own = build(&GeminiConfig::gemini("k"), "gemini-2.5-flash", |_| {}).to_string();
    assert!(own.contains("\"thoughtSignature\":\"sig-1\"") && own.contains("\"thoughtSignature\":\"call-sig\""));
    assert!(!own.contains(SKIP_SIGNATURE), "only Gemini 3 needs the skip value");
    let vertex = build(&GeminiConfig::vertex("p", "global", "t"), "gemini-3-flash", |_| {});
    let text = vertex.to_string();
    assert!(!text.contains("sig-1") && !text.contains("call-sig") && !text.contains("Let me look"));
    let model_turn = &vertex["contents"][1];
    assert!(
        model_turn["parts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p.get("functionCall").is_some())
            .all(|p| p["thoughtSignature"] == SKIP_SIGNATURE),
        "{model_turn}"
    );
}

#[test]
fn results_of_one_batch_share_a_user_turn_and_thinking_follows_the_model_generation() {
    let body = build(&GeminiConfig::gemini("k"), "gemini-2.5-pro", |r| r.thinking_level = ThinkingLevel::Low);
    let roles: Vec<&str> = body["contents"].as_array().unwrap().iter().map(|c| c["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "model", "user", "model", "user"]);
    let results = body["contents"][2]["parts"].as_array().unwrap();
    assert_eq!(
        results[0]["functionResponse"],
        json!({"name": "read", "id": "call_1", "response": {"error": "no such file"}})
    );
    assert_eq!(results[1]["functionResponse"]["response"], json!({"output": "an image:"}));
    assert_eq!(results[2]["inlineData"]["mimeType"], "image/gif");
    assert_eq!(body["generationConfig"]["thinkingConfig"], json!({"thinkingBudget": 1024, "includeThoughts": true}));
}

#[test]
fn urls_and_headers_for_gemini_and_vertex() {
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let request = StreamRequest::new("gemini-2.5-flash", "", &refs);
    let http = build_request(&GeminiConfig::gemini("AIza-SECRET"), &request);
    assert_eq!(
        http.url,
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(http.header_value("x-goog-api-key"), Some("AIza-SECRET"));
    assert!(!format!("{http:?}").contains("SECRET"));
    let http = build_request(&GeminiConfig::vertex("proj", "europe-west4", "ya29-SECRET"), &request);
    assert_eq!(
        http.url,
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(http.header_value("authorization"), Some("Bearer ya29-SECRET"));
    let http = build_request(&GeminiConfig::vertex("proj", "global", "t"), &request);
    assert!(http.url.starts_with("https://aiplatform.googleapis.com/v1/projects/proj/locations/global/"));
}

#[test]
fn request_options_become_generation_and_tool_config() {
    sinew_testing::assert_option_support(check_options, SUPPORTED_OPTIONS);
    let options = sinew_testing::leak_options(
        RequestOptions::default()
            .with_tool_choice(ToolChoice::tool("read"))
            .with_stop_sequences(["END"])
            .with_top_p(0.9)
            .with_top_k(40)
            .with_seed(7)
            .with_presence_penalty(0.5)
            .with_frequency_penalty(0.25),
    );
    let config = GeminiConfig::gemini("key");
    let body = build(&config, "gemini-2.5-flash", |r| r.options = options);
    assert_eq!(body["toolConfig"], json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["read"]}}));
    let generation = &body["generationConfig"];
    assert_eq!(generation["stopSequences"], json!(["END"]));
    assert_eq!((generation["topP"].clone(), generation["topK"].clone()), (json!(0.9), json!(40)));
    assert_eq!(generation["seed"], 7);
    assert_eq!(
        (generation["presencePenalty"].clone(), generation["frequencyPenalty"].clone()),
        (json!(0.5), json!(0.25))
    );
    for (choice, expected) in [
        (ToolChoice::Required, json!({"functionCallingConfig": {"mode": "ANY"}})),
        (ToolChoice::None, json!({"functionCallingConfig": {"mode": "NONE"}})),
        (ToolChoice::Auto, Value::Null),
    ] {
        let options = sinew_testing::leak_options(RequestOptions::default().with_tool_choice(choice));
        assert_eq!(build(&config, "gemini-2.5-flash", |r| r.options = options)["toolConfig"], expected);
    }
}

#[test]
fn response_formats_become_a_json_mime_type_and_schema() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let config = GeminiConfig::gemini("key");
    let options = sinew_testing::leak_options(
        RequestOptions::default()
            .with_response_format(sinew_core::ResponseFormat::json_schema("count", schema.clone())),
    );
    let generation = build(&config, "gemini-2.5-flash", |r| r.options = options)["generationConfig"].clone();
    assert_eq!(
        (generation["responseMimeType"].clone(), generation["responseJsonSchema"].clone()),
        (json!("application/json"), schema)
    );
    let object = sinew_testing::leak_options(
        RequestOptions::default().with_response_format(sinew_core::ResponseFormat::JsonObject),
    );
    let generation = build(&config, "gemini-2.5-flash", |r| r.options = object)["generationConfig"].clone();
    assert_eq!(generation["responseMimeType"], "application/json");
    assert!(generation.get("responseJsonSchema").is_none());
}

#[test]
fn schemas_are_sent_in_geminis_subset_of_json_schema() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"Kind": {"type": "string", "const": "a", "$comment": "dropped"}},
        "definitions": {"Base": {"type": "object"}},
        "type": "object",
        "properties": {
            "kind": {"$ref": "#/$defs/Kind", "description": "What it is."},
            "maybe": {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}], "default": null},
            "n": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9, "format": "uint32"},
            "tag": {"enum": ["x", 1, null, true]},
            "sized": {"enum": ["s", 2]},
            "base": {"allOf": [{"$ref": "#/definitions/Base"}], "description": "Draft 7."},
            "tuple": {"type": "array", "prefixItems": [{"type": "string", "pattern": "^a"}], "uniqueItems": true},
        },
        "required": ["kind"],
        "additionalProperties": false,
    });
    assert_eq!(
        json_schema(&schema),
        json!({
            "$defs": {"Kind": {"type": "string", "enum": ["a"]}, "Base": {"type": "object"}},
            "type": "object",
            "properties": {
                "kind": {"description": "What it is.", "anyOf": [{"$ref": "#/$defs/Kind"}]},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}]},
                "n": {"type": "integer", "maximum": 9, "format": "uint32"},
                "tag": {},
                "sized": {"enum": ["s", 2]},
                "base": {"description": "Draft 7.", "anyOf": [{"$ref": "#/$defs/Base"}]},
                "tuple": {"type": "array", "prefixItems": [{"type": "string"}]},
            },
            "required": ["kind"],
            "additionalProperties": false,
        })
    );

    // Tools' parameters and the answer's schema both go out in the subset.
    let tools: &'static [sinew_core::ToolDefinition] = Box::leak(Box::new([sinew_core::ToolDefinition {
        name: "order".into(),
        description: "Places an order.".into(),
        parameters: sinew_testing::schema::order_schema(),
    }]));
    let options =
        sinew_testing::leak_options(RequestOptions::default().with_response_format(
            sinew_core::ResponseFormat::json_schema("order", sinew_testing::schema::order_schema()),
        ));
    let body = build(&GeminiConfig::gemini("key"), "gemini-2.5-flash", |r| {
        r.tools = tools;
        r.options = options;
    });
    let sent = &body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"];
    assert_eq!(sent, &body["generationConfig"]["responseJsonSchema"]);
    insta::assert_json_snapshot!("order_schema_for_gemini", sent);
}

#[test]
fn attachments_become_inline_and_file_data_and_a_url_needs_its_type() {
    let content = sinew_testing::attachments();
    let audio = content[4].clone();
    let history = sinew_testing::tool_round("google", content, vec![Content::text("recorded"), audio]);
    let body = sinew_testing::with_messages(&history, |r| {
        check_inputs(r).unwrap();
        body(&GeminiConfig::gemini("key"), r)
    });
    let wav = json!({"inlineData": {"mimeType": "audio/wav", "data": "UklGRg=="}});
    assert_eq!(
        body["contents"][0]["parts"],
        json!([
            {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/cat.png"}},
            {"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0x"}},
            {"inlineData": {"mimeType": "text/plain", "data": "aGVsbG8="}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/paper.pdf"}},
            wav,
        ])
    );
    assert_eq!(body["contents"][2]["parts"][1], wav, "after the function response");
    assert_eq!(
        sinew_testing::input_refusal(check_inputs, Content::image_url("gs://b/cat")),
        "Gemini cannot take the image URL in message 0: a file URL needs its media type (set `mime_type`)"
    );
}

#[test]
fn breakpoints_placed_by_hand_are_ignored_with_a_debug_log() {
    let config = GeminiConfig::gemini("key");
    let manual = sinew_core::CacheStrategy::Manual { cache_system: true, cache_tools: false, cache_messages: false };
    let logs = |cache: sinew_core::CacheConfig| {
        sinew_testing::logs_during(tracing::Level::DEBUG, || {
            let history = round_trip_history("google", json!({}));
            with_round_trip_request(
                &history,
                "gemini-2.5-flash",
                |r| r.cache_config = cache,
                |r| build_request(&config, r),
            );
        })
    };
    assert_eq!(
        logs(sinew_core::CacheConfig::new(true, manual)),
        r#"message=the service caches by itself: the cache breakpoints are ignored service="Gemini""#
    );
    assert_eq!(logs(sinew_core::CacheConfig::default()), "", "automatic caching is what Gemini does");
}

/// The body of `messages` for `model`, its messages resumed from `cache` when given.
fn body_with(model: &str, messages: &[Message], cache: Option<(&sinew_core::WireCache, usize)>) -> Vec<u8> {
    let config = GeminiConfig::gemini("k");
    let refs: Vec<&Message> = messages.iter().collect();
    let mut request = StreamRequest::new(model, "Be brief.", &refs);
    request.history = cache.map(|(cache, unchanged)| sinew_core::HistoryCache { cache, unchanged });
    checked_request(&config, &request).unwrap().body.to_vec()
}

proptest::proptest! {
    /// A body whose contents resume from what the history's cache kept is the body written whole,
    /// byte for byte (`sinew_testing::resume`): function responses of one batch sharing a turn,
    /// empty messages between them, and a switch to a model that signs calls otherwise.
    #[test]
    fn a_resumed_body_is_the_body_written_whole(steps in sinew_testing::resume::history_steps()) {
        let mut pool = round_trip_history("google", json!({"executableCode": {"code": "1"}}));
        pool.extend([
            Message::ToolResult(sinew_core::ToolResultMessage::error("call_3", "read", "gone")),
            Message::user(""),
            Message::ToolResult(sinew_core::ToolResultMessage {
                content: vec![Content::image("AAAA", "image/png")],
                ..sinew_core::ToolResultMessage::error("google-fc-4", "read", "")
            }),
        ]);
        sinew_testing::resume::check_resumed_bodies(&pool, &steps, |history, cache, three| {
            Some(body_with(if three { "gemini-3-pro" } else { "gemini-2.5-flash" }, history, cache))
        })?;
    }
}

/// A caller that says more messages are unchanged than the request has gets no more than it has.
#[test]
fn a_claim_beyond_the_history_is_cut_to_it() {
    let cache = sinew_core::WireCache::default();
    let long = vec![Message::user("one"), Message::user("two"), Message::user("three")];
    body_with("gemini-2.5-flash", &long, Some((&cache, 0)));
    let body = String::from_utf8(body_with("gemini-2.5-flash", &long[..1], Some((&cache, 9)))).unwrap();
    assert!(body.starts_with(r#"{"contents":[{"role":"user","parts":[{"text":"one"}]}],"#), "{body}");
}
