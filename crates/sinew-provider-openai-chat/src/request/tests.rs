use serde_json::json;
use sinew_core::{RequestOptions, ThinkingLevel, WireCache};
use sinew_testing::{round_trip_history, with_round_trip_request};

use super::*;

fn build(config: &OpenAiChatConfig, adjust: impl FnOnce(&mut StreamRequest<'_>)) -> Value {
    let history = round_trip_history("openai", json!({"type": "never sent"}));
    with_round_trip_request(&history, "gpt-x", adjust, |request| body(config, request))
}

#[test]
fn a_rich_history_becomes_the_documented_body() {
    let body = build(&OpenAiChatConfig::openai("sk-secret"), |r| {
        r.thinking_level = ThinkingLevel::Medium;
        r.max_tokens = Some(1000);
        r.temperature = Some(0.2);
    });
    insta::assert_json_snapshot!(body);
}

#[test]
fn tool_results_are_tool_messages_in_order_with_images_after_the_batch() {
    let body = build(&OpenAiChatConfig::openai("k"), |_| {});
    let roles: Vec<&str> = body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool", "user", "assistant", "user"]);
    let messages = &body["messages"];
    assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], "{\"path\":\"a.txt\"}");
    assert_eq!(messages[3]["tool_call_id"], "call_1");
    assert_eq!(messages[5]["content"][1]["image_url"]["url"], "data:image/gif;base64,R0lGOD");
    assert!(!body.to_string().contains("never sent"), "opaque data of other protocols is not sent");
    assert!(!body.to_string().contains("Let me look"), "reasoning is not sent back by default");
}

/// Every thinking level as Chat Completions servers take it (REQ-130): `Minimal` asks for
/// `"low"`, which every effort-taking server accepts.
#[test]
fn thinking_levels_map_to_reasoning_effort() {
    let levels = [
        (ThinkingLevel::Off, None),
        (ThinkingLevel::Minimal, Some("low")),
        (ThinkingLevel::Low, Some("low")),
        (ThinkingLevel::Medium, Some("medium")),
        (ThinkingLevel::High, Some("high")),
    ];
    for (level, expected) in levels {
        let body = build(&OpenAiChatConfig::openai("k"), |r| r.thinking_level = level);
        assert_eq!(body.get("reasoning_effort").and_then(Value::as_str), expected, "{level:?}");
        let body = build(&OpenAiChatConfig::openrouter("k"), |r| r.thinking_level = level);
        assert_eq!(body.pointer("/reasoning/effort").and_then(Value::as_str), expected, "{level:?} on OpenRouter");
    }
}

#[test]
fn compat_knobs_change_the_body() {
    let mut config = OpenAiChatConfig::deepseek("k");
    config.reasoning_in_history = Some("reasoning_content".into());
    config.provider_id = "openai".into();
    config.system_role = SystemRole::Developer;
    let body = build(&config, |r| {
        r.max_tokens = Some(10);
        r.thinking_level = ThinkingLevel::High;
    });
    assert_eq!(body["max_tokens"], 10);
    assert!(body.get("max_completion_tokens").is_none());
    assert!(body.get("reasoning_effort").is_none(), "DeepSeek has no effort knob");
    assert_eq!(body["messages"][0]["role"], "developer");
    assert_eq!(body["messages"][2]["reasoning_content"], "Let me look.");
    assert!(body["messages"][6].get("reasoning_content").is_none(), "foreign reasoning stays out");

    let body = build(&OpenAiChatConfig::openrouter("k"), |r| r.thinking_level = ThinkingLevel::Low);
    assert_eq!(body["reasoning"], json!({"effort": "low"}));
    let body = build(&OpenAiChatConfig::mistral("k"), |_| {});
    assert!(body.get("stream_options").is_none());
    let body = build(&OpenAiChatConfig::openai("k"), |r| r.max_tokens = Some(5));
    assert_eq!(
        (body["max_completion_tokens"].clone(), body["stream_options"].clone()),
        (json!(5), json!({"include_usage": true}))
    );
}

#[test]
fn headers_and_urls_for_each_auth() {
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let request = StreamRequest::new("m", "", &refs);
    let http = build_request(&OpenAiChatConfig::openai("sk-SECRET"), &request);
    assert_eq!(http.url, "https://api.openai.com/v1/chat/completions");
    assert_eq!(http.header_value("authorization"), Some("Bearer sk-SECRET"));
    assert!(!format!("{http:?}").contains("SECRET"));

    let http = build_request(&OpenAiChatConfig::ollama(), &request);
    assert_eq!(http.url, "http://localhost:11434/v1/chat/completions");
    assert_eq!(http.header_value("authorization"), None);

    let mut azure = OpenAiChatConfig::compatible(
        "azure_openai",
        "https://r.openai.azure.com/openai/deployments/d",
        Auth::Header { name: "api-key".into(), value: "AZ-SECRET".into() },
    );
    azure.query.push(("api-version".into(), "2024-10-21".into()));
    let http = build_request(&azure, &request);
    assert_eq!(http.url, "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21");
    assert_eq!(http.header_value("api-key"), Some("AZ-SECRET"));
    assert!(!format!("{azure:?}").contains("AZ-SECRET"));
}

#[test]
fn request_options_become_chat_completions_fields() {
    sinew_testing::assert_option_support(check_options, SUPPORTED_OPTIONS);
    let options = sinew_testing::leak_options(
        RequestOptions::default()
            .with_tool_choice(ToolChoice::tool("read"))
            .with_parallel_tool_calls(false)
            .with_stop_sequences(["END"])
            .with_top_p(0.9)
            .with_seed(7)
            .with_presence_penalty(0.5)
            .with_frequency_penalty(0.25)
            .with_user("user-1"),
    );
    let body = build(&OpenAiChatConfig::openai("sk"), |r| r.options = options);
    assert_eq!(body["tool_choice"], json!({"type": "function", "function": {"name": "read"}}));
    assert_eq!(body["parallel_tool_calls"], json!(false));
    assert_eq!(body["stop"], json!(["END"]));
    assert_eq!((body["top_p"].clone(), body["seed"].clone()), (json!(0.9), json!(7)));
    assert_eq!((body["presence_penalty"].clone(), body["frequency_penalty"].clone()), (json!(0.5), json!(0.25)));
    assert_eq!(body["user"], "user-1");
    for (choice, expected) in
        [(ToolChoice::Required, json!("required")), (ToolChoice::None, json!("none")), (ToolChoice::Auto, Value::Null)]
    {
        let options = sinew_testing::leak_options(RequestOptions::default().with_tool_choice(choice));
        assert_eq!(build(&OpenAiChatConfig::openai("sk"), |r| r.options = options)["tool_choice"], expected);
    }
    // Without tools, the API refuses both tool fields: they are left out.
    let body = build(&OpenAiChatConfig::openai("sk"), |r| {
        r.options = options;
        r.tools = &[];
    });
    assert!(body.get("tool_choice").is_none() && body.get("parallel_tool_calls").is_none());
    assert_eq!(body["seed"], 7);
    // Mistral names the seed `random_seed` (and refuses unknown fields).
    let body = build(&OpenAiChatConfig::mistral("k"), |r| r.options = options);
    assert_eq!((body.get("seed"), &body["random_seed"]), (None, &json!(7)));
}

#[test]
fn response_formats_become_response_format() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false});
    let strict = sinew_testing::leak_options(
        RequestOptions::default().with_response_format(ResponseFormat::json_schema("count", schema.clone())),
    );
    let body = build(&OpenAiChatConfig::openai("sk"), |r| r.options = strict);
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "count", "schema": schema, "strict": true}})
    );
    let object =
        sinew_testing::leak_options(RequestOptions::default().with_response_format(ResponseFormat::JsonObject));
    assert_eq!(
        build(&OpenAiChatConfig::openai("sk"), |r| r.options = object)["response_format"],
        json!({"type": "json_object"})
    );
    assert!(build(&OpenAiChatConfig::openai("sk"), |_| {}).get("response_format").is_none());
}

#[test]
fn a_strict_schema_is_sent_closed_with_every_property_required() {
    let options = sinew_testing::leak_options(
        RequestOptions::default()
            .with_response_format(ResponseFormat::json_schema("order", sinew_testing::schema::order_schema())),
    );
    let format = build(&OpenAiChatConfig::openai("sk"), |r| r.options = options)["response_format"].clone();
    let sent = &format["json_schema"]["schema"];
    assert_eq!(sent["required"], json!(["customer", "id", "lines", "note", "status"]));
    insta::assert_json_snapshot!("order_schema_strict", sent);

    // Without strict mode the schema goes as given.
    let loose =
        sinew_testing::leak_options(RequestOptions::default().with_response_format(ResponseFormat::JsonSchema {
            name: "order".into(),
            schema: sinew_testing::schema::order_schema(),
            strict: false,
        }));
    let format = build(&OpenAiChatConfig::openai("sk"), |r| r.options = loose)["response_format"].clone();
    assert_eq!(format["json_schema"]["schema"], sinew_testing::schema::order_schema());
}

#[test]
fn attachments_become_content_parts_and_document_urls_are_refused() {
    let mut content = sinew_testing::attachments();
    let document_url = content.remove(3);
    let text_document = content.remove(2);
    let pdf = content[1].clone();
    let history = sinew_testing::tool_round("openai", content, vec![Content::text("the spec:"), pdf]);
    let body = sinew_testing::with_messages(&history, |r| {
        check_inputs(r).unwrap();
        body(&OpenAiChatConfig::openai("sk"), r)
    });
    let pdf =
        json!({"type": "file", "file": {"filename": "spec.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"}});
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            pdf,
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
        ])
    );
    assert_eq!(body["messages"][2]["content"], "the spec:");
    assert_eq!(
        body["messages"][3],
        json!({"role": "user", "content": [{"type": "text", "text": "Files returned by the tools above:"}, pdf]})
    );

    let refused = |block| sinew_testing::input_refusal(check_inputs, block);
    assert_eq!(
        refused(document_url),
        "Chat Completions cannot take the document URL in message 0: documents go as data, not URLs"
    );
    assert_eq!(
        refused(text_document),
        "Chat Completions cannot take the document in message 0: documents are PDF, not text/plain (send text as text)"
    );
    assert_eq!(
        refused(Content::audio("T2dn", "audio/ogg")),
        "Chat Completions cannot take the audio in message 0: audio is WAV or MP3, not audio/ogg"
    );
}

#[test]
fn the_cache_key_goes_as_prompt_cache_key_to_openai_only_and_while_caching() {
    let key = |config: &OpenAiChatConfig, cache| {
        build(config, sinew_testing::cached_as("session-1", cache))["prompt_cache_key"].clone()
    };
    let on = sinew_core::CacheConfig::default();
    assert_eq!(key(&OpenAiChatConfig::openai("sk"), on), json!("session-1"));
    assert_eq!(key(&OpenAiChatConfig::groq("k"), on), Value::Null, "other servers may refuse the field");
    let off = sinew_core::CacheConfig::new(false, sinew_core::CacheStrategy::Auto);
    assert_eq!(key(&OpenAiChatConfig::openai("sk"), off), Value::Null);
    // A key over OpenAI's 64 bytes goes as a stable hash of itself.
    let long: &'static str = Box::leak("s".repeat(65).into_boxed_str());
    let hashed = build(&OpenAiChatConfig::openai("sk"), |r| r.cache_key = Some(long))["prompt_cache_key"].clone();
    assert_eq!(hashed.as_str().map(str::len), Some(16));
    assert_eq!(hashed, build(&OpenAiChatConfig::openai("sk"), |r| r.cache_key = Some(long))["prompt_cache_key"]);
}

/// The body of `messages`, its messages resumed from `cache` when given.
fn body_with(config: &OpenAiChatConfig, messages: &[Message], cache: Option<(&WireCache, usize)>) -> Vec<u8> {
    let refs: Vec<&Message> = messages.iter().collect();
    let mut request = StreamRequest::new("gpt-x", "Be brief.", &refs);
    request.history = cache.map(|(cache, unchanged)| sinew_core::HistoryCache { cache, unchanged });
    let http = checked_request(config, &request).unwrap();
    http.body.to_vec()
}

proptest::proptest! {
    /// A body whose messages resume from what the history's cache kept is the body written whole,
    /// byte for byte (`sinew_testing::resume`): tool results with images waiting for the user turn
    /// after the batch included, and when the configuration (and so the format) changes.
    #[test]
    fn a_resumed_body_is_the_body_written_whole(steps in sinew_testing::resume::history_steps()) {
        let (deepseek, openai) = (OpenAiChatConfig::deepseek("k"), OpenAiChatConfig::openai("k"));
        let mut pool = sinew_testing::round_trip_history(&deepseek.provider_id, json!({"type": "never sent"}));
        pool.push(Message::ToolResult(sinew_core::ToolResultMessage {
            content: vec![Content::image("AAAA", "image/png")],
            ..sinew_core::ToolResultMessage::error("call_9", "read", "")
        }));
        sinew_testing::resume::check_resumed_bodies(&pool, &steps, |history, cache, other| {
            Some(body_with(if other { &openai } else { &deepseek }, history, cache))
        })?;
    }
}

/// What the cache keeps is reused: a history that only grows is written once, message by message,
/// and bytes of another configuration are not reused.
#[test]
fn a_growing_history_is_written_once() {
    let config = OpenAiChatConfig::openai("k");
    let cache = WireCache::default();
    let mut history = vec![Message::user("one")];
    body_with(&config, &history, Some((&cache, 0)));
    let kept = cache.kept_bytes();
    assert!(kept > 0);
    // The kept bytes are those the next body starts from: mark them, and see they are not written
    // again (the cache's bytes are the body's, unchanged).
    let mut marked = cache.take(message_format(&config), 1);
    let bytes = marked.bytes_mut();
    let at = bytes.windows(5).position(|w| w == b"\"one\"").unwrap();
    bytes[at..at + 5].copy_from_slice(b"\"ONE\"");
    cache.keep(marked);
    history.push(Message::user("two"));
    let body = String::from_utf8(body_with(&config, &history, Some((&cache, 1)))).unwrap();
    assert!(body.contains(r#""content":"ONE"},{"role":"user","content":"two"}"#), "{body}");
    // Another configuration writes everything itself.
    let other = OpenAiChatConfig::deepseek("k");
    let body = String::from_utf8(body_with(&other, &history, Some((&cache, 2)))).unwrap();
    assert!(body.contains(r#""content":"one"}"#), "{body}");
}

/// Inputs are checked for the messages written again; a refused one leaves the kept bytes kept.
#[test]
fn inputs_are_checked_for_what_is_written() {
    let config = OpenAiChatConfig::openai("k");
    let cache = WireCache::default();
    let mut history = vec![Message::user("one")];
    body_with(&config, &history, Some((&cache, 0)));
    history.push(Message::User(sinew_core::UserMessage {
        content: vec![Content::Document { data: "aGk=".into(), mime_type: "text/plain".into(), name: None }],
        timestamp: 0,
    }));
    let refs: Vec<&Message> = history.iter().collect();
    let mut request = StreamRequest::new("gpt-x", "", &refs);
    request.history = Some(sinew_core::HistoryCache { cache: &cache, unchanged: 1 });
    let error = checked_request(&config, &request).unwrap_err();
    assert!(error.to_string().contains("document in message 1"), "{error}");
    assert!(cache.kept_bytes() > 0, "what was kept stays");
    request.history = None;
    assert!(checked_request(&config, &request).is_err(), "without a cache every message is checked");
}
