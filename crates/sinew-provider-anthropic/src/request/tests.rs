use serde_json::json;
use sinew_core::{CacheConfig, Usage};
use sinew_testing::{round_trip_history, with_round_trip_request};

use sinew_core::CacheStrategy;

use super::*;

fn assistant(provider: &str, stop_reason: StopReason, content: Vec<Content>) -> Message {
    Message::Assistant(AssistantMessage {
        content,
        stop_reason,
        model: "claude-x".into(),
        provider: provider.into(),
        usage: Usage::default(),
        timestamp: 0,
        error_message: None,
    })
}

/// The shared round-trip history, with what only Anthropic must handle: a server tool's block as
/// our opaque data, a tool call id Anthropic's pattern refuses (`call:2/x`), and another
/// provider's opaque block in our own answer.
fn history() -> Vec<Message> {
    let server_tool = json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}});
    let mut history = round_trip_history("anthropic", server_tool);
    let rename = |id: &mut String| {
        if id == "call_2" {
            *id = "call:2/x".into();
        }
    };
    for message in &mut history {
        match message {
            Message::Assistant(answer) => {
                for content in &mut answer.content {
                    if let Content::ToolCall { id, .. } = content {
                        rename(id);
                    }
                }
                if answer.provider == "anthropic" && answer.stop_reason == StopReason::ToolUse {
                    answer
                        .content
                        .push(Content::Opaque { provider: "openai".into(), data: json!({"type": "reasoning"}) });
                }
            }
            Message::ToolResult(result) => rename(&mut result.tool_call_id),
            _ => {}
        }
    }
    history
}

fn build(history: &[Message], adjust: impl FnOnce(&mut StreamRequest<'_>)) -> Value {
    with_round_trip_request(history, "claude-sonnet-4-5", adjust, |request| {
        body(&AnthropicConfig::new("sk-ant-secret"), request)
    })
}

#[test]
fn a_rich_history_becomes_the_documented_body() {
    let body = build(&history(), |r| {
        r.thinking_level = ThinkingLevel::Medium;
        r.max_tokens = Some(1000);
        r.temperature = Some(0.2);
    });
    insta::assert_json_snapshot!(body);
}

#[test]
fn cache_breakpoints_follow_the_strategy() {
    let count = |body: &Value| body.to_string().matches("cache_control").count();
    let history = history();
    let auto = build(&history, |_| {});
    assert_eq!(count(&auto), 3);
    assert_eq!(auto["system"][0]["cache_control"], json!({"type": "ephemeral"}));
    assert_eq!(auto["tools"][1]["cache_control"], json!({"type": "ephemeral"}));
    assert!(auto["tools"][0].get("cache_control").is_none());
    for (strategy, expected) in [
        (CacheStrategy::Disabled, 0),
        (CacheStrategy::Manual { cache_system: true, cache_tools: false, cache_messages: false }, 1),
        (CacheStrategy::Manual { cache_system: false, cache_tools: true, cache_messages: true }, 2),
    ] {
        let body = build(&history, |r| r.cache_config = CacheConfig::new(true, strategy));
        assert_eq!(count(&body), expected, "{strategy:?}");
    }
    let off = build(&history, |r| r.cache_config = CacheConfig::new(false, CacheStrategy::Auto));
    assert_eq!(count(&off), 0);
}

#[test]
fn thinking_levels_set_budgets_the_api_accepts() {
    let history = [Message::user("hi")];
    for (level, budget) in [
        (ThinkingLevel::Minimal, 1024),
        (ThinkingLevel::Low, 1024),
        (ThinkingLevel::Medium, 2048),
        (ThinkingLevel::High, 8192),
    ] {
        let body = build(&history, |r| {
            r.thinking_level = level;
            r.temperature = Some(1.0);
        });
        assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": budget}), "{level:?}");
        assert!(body["max_tokens"].as_u64().unwrap() > budget, "{level:?}");
        assert!(body.get("temperature").is_none(), "{level:?}: no temperature with thinking");
    }
    let body = build(&history, |r| r.temperature = Some(0.5));
    assert!(body.get("thinking").is_none());
    assert_eq!(body["temperature"], json!(0.5));
    assert_eq!(body["max_tokens"], json!(8192));
}

#[test]
fn headers_for_api_keys_and_oauth_and_no_secret_in_debug() {
    let refs: Vec<&Message> = Vec::new();
    let request = StreamRequest::new("m", "", &refs);
    let mut config = AnthropicConfig::new("sk-ant-secret");
    config.base_url = "http://localhost:9/".into();
    let http = build_request(&config, &request);
    assert_eq!(http.url, "http://localhost:9/v1/messages");
    let header = |h: &HttpRequest, k: &str| h.headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(header(&http, "x-api-key").as_deref(), Some("sk-ant-secret"));
    assert_eq!(header(&http, "anthropic-version").as_deref(), Some("2023-06-01"));
    assert_eq!(header(&http, "authorization"), None);
    assert!(!format!("{http:?}").contains("sk-ant-secret"));
    assert!(!format!("{config:?}").contains("sk-ant-secret"));
    let mut proxied = config.clone();
    proxied.extra_headers.push(("x-proxy-token".into(), "PROXY-SECRET".into()));
    let shown = format!("{proxied:?}");
    assert!(!shown.contains("PROXY-SECRET") && shown.contains("x-proxy-token"), "{shown}");

    config.auth = AnthropicAuth::OAuth("oauth-token".into());
    let http = build_request(&config, &request);
    assert_eq!(header(&http, "authorization").as_deref(), Some("Bearer oauth-token"));
    assert_eq!(header(&http, "x-api-key"), None);
    assert_eq!(
        header(&http, "anthropic-beta").as_deref(),
        Some("oauth-2025-04-20,fine-grained-tool-streaming-2025-05-14")
    );
    // sinew's own identity: no other product's user agent, app or beta headers.
    assert_eq!(header(&http, "user-agent").as_deref(), Some(concat!("sinew/", env!("CARGO_PKG_VERSION"))));
    for foreign in ["x-app", "anthropic-dangerous-direct-browser-access"] {
        assert_eq!(header(&http, foreign), None, "{foreign}");
    }
    assert!(!header(&http, "anthropic-beta").unwrap().contains("claude-code"));
    assert!(!format!("{http:?}").contains("oauth-token"));
    let body: Value = serde_json::from_slice(&http.body).unwrap();
    assert_eq!(body["stream"], json!(true));
    assert!(body.get("system").is_none(), "no system block for an empty prompt");
}

#[test]
fn an_aborted_answer_keeps_its_text_but_drops_unsigned_thinking_and_server_tool_blocks() {
    let history = [
        Message::user("q"),
        assistant(
            "anthropic",
            StopReason::Aborted,
            vec![
                Content::Thinking { thinking: "half a tho".into(), signature: None, redacted: false, id: None },
                Content::Opaque {
                    provider: "anthropic".into(),
                    data: json!({"type": "server_tool_use", "id": "srv_9", "name": "web_search", "input": {}}),
                },
                Content::text("partial"),
            ],
        ),
        Message::user("go on"),
    ];
    let body = build(&history, |r| r.cache_config = CacheConfig::new(false, CacheStrategy::Auto));
    assert_eq!(body["messages"][1], json!({"role": "assistant", "content": [{"type": "text", "text": "partial"}]}));
}

#[test]
fn request_options_become_the_messages_apis_fields() {
    sinew_testing::assert_option_support(check_options, SUPPORTED_OPTIONS);
    let options = sinew_testing::leak_options(
        RequestOptions::default()
            .with_tool_choice(ToolChoice::tool("read"))
            .with_parallel_tool_calls(false)
            .with_stop_sequences(["END", "STOP"])
            .with_top_p(0.9)
            .with_top_k(40)
            .with_user("user-1"),
    );
    let body = build(&history(), |r| r.options = options);
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "read", "disable_parallel_tool_use": true}));
    assert_eq!(body["stop_sequences"], json!(["END", "STOP"]));
    assert_eq!((body["top_p"].clone(), body["top_k"].clone()), (json!(0.9), json!(40)));
    assert_eq!(body["metadata"], json!({"user_id": "user-1"}));
    // Each choice; none at all when nothing is set, and none without tools.
    for (choice, expected) in [
        (ToolChoice::Required, json!({"type": "any"})),
        (ToolChoice::None, json!({"type": "none"})),
        (ToolChoice::Auto, Value::Null),
    ] {
        let options = sinew_testing::leak_options(RequestOptions::default().with_tool_choice(choice));
        assert_eq!(build(&history(), |r| r.options = options)["tool_choice"], expected);
    }
    let serial = sinew_testing::leak_options(RequestOptions::default().with_parallel_tool_calls(false));
    assert_eq!(
        build(&history(), |r| r.options = serial)["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
    let body = build(&history(), |r| {
        r.options = options;
        r.tools = &[];
    });
    assert!(body.get("tool_choice").is_none());
    for field in ["stop_sequences", "top_p", "top_k", "metadata"] {
        assert!(build(&history(), |_| {}).get(field).is_none(), "{field} only when set");
    }
}

#[test]
fn a_forced_tool_call_is_refused_with_thinking() {
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let tools = sinew_testing::round_trip_tools();
    let options = RequestOptions::default().with_tool_choice(ToolChoice::Required);
    let mut request = StreamRequest::new("claude-sonnet-4-5", "", &refs);
    request.tools = &tools;
    request.options = &options;
    assert!(check_options(&request).is_ok());
    request.thinking_level = ThinkingLevel::Low;
    let error = check_options(&request).unwrap_err();
    assert!(error.to_string().contains("cannot force a tool call while thinking"), "{error}");
}

/// A paused answer goes back last and whole, its server tool's blocks included, so the model
/// continues it (Anthropic's `pause_turn`).
#[test]
fn a_paused_answer_goes_back_last_and_whole() {
    let server_tool = json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "q"}});
    let history = [
        Message::user("find it"),
        assistant(
            "anthropic",
            StopReason::PauseTurn,
            vec![
                Content::text("Searching."),
                Content::Opaque { provider: "anthropic".into(), data: server_tool.clone() },
            ],
        ),
    ];
    let body = build(&history, |r| r.cache_config = CacheConfig::new(false, CacheStrategy::Auto));
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [{"type": "text", "text": "Searching."}, server_tool]})
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
}

#[test]
fn a_schema_becomes_structured_output_and_json_mode_is_refused() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false});
    let options = sinew_testing::leak_options(
        RequestOptions::default().with_response_format(ResponseFormat::json_schema("count", schema.clone())),
    );
    let body = build(&history(), |r| r.options = options);
    assert_eq!(body["output_config"], json!({"format": {"type": "json_schema", "schema": schema}}));
    assert!(build(&history(), |_| {}).get("output_config").is_none());
    // The Messages API takes a schema, not "any JSON".
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let object = RequestOptions::default().with_response_format(ResponseFormat::JsonObject);
    let mut request = StreamRequest::new("claude-sonnet-4-5", "", &refs);
    request.options = &object;
    let error = check_options(&request).unwrap_err();
    assert!(error.to_string().contains("JSON object (give a schema)"), "{error}");
}

#[test]
fn an_answer_schema_is_sent_closed_with_refused_constraints_in_descriptions() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Order",
        "type": "object",
        "properties": {
            "id": {"type": "integer", "format": "uint64", "minimum": 0, "description": "The number."},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 2},
            "one": {"type": "array", "items": {"type": "object"}, "minItems": 1},
            "at": {"type": "string", "format": "date-time"},
            "kind": {"oneOf": [{"const": "a"}, {"const": "b"}]},
        },
        "required": ["id"],
    });
    assert_eq!(
        sinew_core::schema::closed(&schema),
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "description": "The number. (minimum: 0, format: uint64)"},
                "tags": {"type": "array", "items": {"type": "string", "description": "(maxLength: 8)"}, "description": "(minItems: 2)"},
                "one": {"type": "array", "items": {"type": "object", "additionalProperties": false}, "minItems": 1},
                "at": {"type": "string", "format": "date-time"},
                "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]},
            },
            "required": ["id"],
            "additionalProperties": false,
        })
    );
    let options = sinew_testing::leak_options(
        RequestOptions::default()
            .with_response_format(ResponseFormat::json_schema("order", sinew_testing::schema::order_schema())),
    );
    let body = build(&history(), |r| r.options = options);
    insta::assert_json_snapshot!("order_schema_for_structured_outputs", body["output_config"]["format"]["schema"]);
}

#[test]
fn attachments_become_image_and_document_blocks_and_audio_is_refused() {
    let mut content = sinew_testing::attachments();
    let audio = content.pop().unwrap();
    let pdf = content[1].clone();
    let history = sinew_testing::tool_round("anthropic", content, vec![pdf]);
    let body = sinew_testing::with_messages(&history, |r| {
        check_inputs(r).unwrap();
        body(&AnthropicConfig::new("k"), r)
    });
    let pdf = json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}, "title": "spec.pdf"});
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
            pdf,
            {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/paper.pdf"}},
        ])
    );
    assert_eq!(body["messages"][2]["content"][0]["content"], json!([pdf]));

    let refused = |block| sinew_testing::input_refusal(check_inputs, block);
    assert_eq!(
        refused(audio),
        "Anthropic Messages cannot take the audio in message 0: the Messages API takes no audio"
    );
    assert_eq!(
        refused(Content::document("UEsD", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")),
        "Anthropic Messages cannot take the document in message 0: documents are PDF or plain text, not application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    );
    assert!(
        refused(Content::document_url("https://x/a.txt", "text/plain"))
            .ends_with("a plain-text document goes as data, not a URL")
    );
    assert!(refused(Content::document("//8=", "text/plain")).ends_with("must be base64 of UTF-8 text"));
}

/// The body of `messages`, its messages resumed from `cache` when given.
fn body_with(messages: &[Message], cache: Option<(&sinew_core::WireCache, usize)>, breakpoints: bool) -> Vec<u8> {
    let config = AnthropicConfig::new("k");
    let refs: Vec<&Message> = messages.iter().collect();
    let mut request = StreamRequest::new("claude-x", "Be brief.", &refs);
    if !breakpoints {
        request.cache_config = CacheConfig::new(false, CacheStrategy::Auto);
    }
    request.history = cache.map(|(cache, unchanged)| sinew_core::HistoryCache { cache, unchanged });
    checked_request(&config, &request).unwrap().body.to_vec()
}

proptest::proptest! {
    /// A body whose messages resume from what the history's cache kept is the body written whole,
    /// byte for byte (`sinew_testing::resume`): runs of tool results sharing a turn, empty answers
    /// left out between them, the cache breakpoint moving on, and breakpoints turned on and off.
    #[test]
    fn a_resumed_body_is_the_body_written_whole(steps in sinew_testing::resume::history_steps()) {
        let mut pool = round_trip_history(PROVIDER_ID, json!({"type": "server_tool_use", "id": "s"}));
        pool.extend([
            Message::ToolResult(sinew_core::ToolResultMessage::error("call_3", "read", "gone")),
            assistant(PROVIDER_ID, StopReason::Error, vec![]),
            Message::user(""),
            Message::ToolResult(sinew_core::ToolResultMessage::error("call_4", "read", "")),
        ]);
        sinew_testing::resume::check_resumed_bodies(&pool, &steps, |history, cache, unbroken| {
            Some(body_with(history, cache, !unbroken))
        })?;
    }
}

/// What the cache keeps is reused up to the cache breakpoint, which moves on with every request.
#[test]
fn a_growing_history_is_written_once_up_to_the_breakpoint() {
    let cache = sinew_core::WireCache::default();
    let mut history = vec![Message::user("one"), Message::user("two"), Message::user("three")];
    body_with(&history, Some((&cache, 0)), true);
    // Kept: the first message (the breakpoint is on the second, written again every time).
    let mut kept = cache.take(message_format(&StreamRequest::new("claude-x", "", &[])), 3);
    assert_eq!(String::from_utf8_lossy(kept.bytes()), r#"{"role":"user","content":[{"type":"text","text":"one"}]},"#);
    let bytes = kept.bytes_mut();
    let at = bytes.windows(5).position(|w| w == b"\"one\"").unwrap();
    bytes[at..at + 5].copy_from_slice(b"\"ONE\"");
    cache.keep(kept);
    history.push(Message::user("four"));
    let body = String::from_utf8(body_with(&history, Some((&cache, 3)), true)).unwrap();
    assert!(body.contains(r#""text":"ONE"}]},{"role":"user","content":[{"type":"text","text":"two"}]}"#), "{body}");
    assert!(body.contains(r#""text":"three","cache_control":{"type":"ephemeral"}}"#), "{body}");
}

/// An opaque block that is not an object (a caller's own data) on the cache breakpoint goes as it
/// is, without a breakpoint, rather than panicking.
#[test]
fn an_opaque_block_that_is_no_object_takes_no_breakpoint() {
    let history = [
        assistant(
            PROVIDER_ID,
            StopReason::Stop,
            vec![Content::Opaque { provider: PROVIDER_ID.into(), data: json!("raw") }],
        ),
        Message::user("next"),
    ];
    let refs: Vec<&Message> = history.iter().collect();
    let request = StreamRequest::new("claude-x", "", &refs);
    let body = body(&AnthropicConfig::new("k"), &request);
    assert_eq!(body["messages"][0]["content"], json!(["raw"]));
}
