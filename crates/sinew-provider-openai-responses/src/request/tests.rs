use serde_json::json;
use sinew_core::{RequestOptions, ThinkingLevel};
use sinew_testing::{round_trip_history, with_round_trip_request};

use super::*;

fn build(config: &ResponsesConfig, adjust: impl FnOnce(&mut StreamRequest<'_>)) -> Value {
    let opaque = json!({"type": "web_search_call", "id": "ws_1", "status": "completed"});
    let mut history = round_trip_history("openai_responses", opaque);
    // Item ids as the service issues them.
    if let Message::Assistant(answer) = &mut history[1] {
        for content in &mut answer.content {
            match content {
                Content::Text { signature, .. } => *signature = Some("msg_1".into()),
                Content::ToolCall { signature, id, .. } if id == "call_1" => *signature = Some("fc_1".into()),
                _ => {}
            }
        }
    }
    with_round_trip_request(&history, "gpt-x", adjust, |request| body(config, request))
}

#[test]
fn a_rich_history_becomes_the_documented_body() {
    let body = build(&ResponsesConfig::openai("sk-secret"), |r| {
        r.thinking_level = ThinkingLevel::High;
        r.max_tokens = Some(1000);
    });
    insta::assert_json_snapshot!(body);
}

#[test]
fn reasoning_and_item_ids_go_back_only_to_their_own_service() {
    let own = build(&ResponsesConfig::openai("k"), |_| {});
    let text = own.to_string();
    assert!(text.contains("\"encrypted_content\":\"sig-1\"") && text.contains("\"id\":\"rs_1\""));
    assert!(text.contains("\"id\":\"msg_1\"") && text.contains("\"id\":\"fc_1\"") && text.contains("ws_1"));
    assert!(!text.contains("foreign thoughts") && !text.contains("\"type\":\"foreign\""));

    let other = build(&ResponsesConfig::azure("res", "k"), |_| {});
    let text = other.to_string();
    assert!(!text.contains("rs_1") && !text.contains("msg_1") && !text.contains("fc_1") && !text.contains("ws_1"));
    assert!(text.contains("\"call_id\":\"call_1\""), "calls and results still pair up");
}

#[test]
fn urls_and_headers_for_openai_and_azure() {
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let request = StreamRequest::new("m", "", &refs);
    let http = build_request(&ResponsesConfig::openai("sk-SECRET"), &request);
    assert_eq!(http.url, "https://api.openai.com/v1/responses");
    assert_eq!(http.header_value("authorization"), Some("Bearer sk-SECRET"));
    let http = build_request(&ResponsesConfig::azure("contoso", "AZ-SECRET"), &request);
    assert_eq!(http.url, "https://contoso.openai.azure.com/openai/v1/responses");
    assert_eq!(http.header_value("api-key"), Some("AZ-SECRET"));
    assert!(!format!("{http:?}").contains("SECRET"));
    let http =
        build_request(&ResponsesConfig::azure_versioned("https://h.test/openai/", "2025-04-01-preview", "k"), &request);
    assert_eq!(http.url, "https://h.test/openai/responses?api-version=2025-04-01-preview");
    let body: Value = serde_json::from_slice(&http.body).unwrap();
    assert!(body.get("reasoning").is_none() && body.get("include").is_none(), "no reasoning asked when off");
}

#[test]
fn request_options_become_responses_fields() {
    sinew_testing::assert_option_support(check_options, SUPPORTED_OPTIONS);
    let options = sinew_testing::leak_options(
        RequestOptions::default()
            .with_tool_choice(ToolChoice::tool("read"))
            .with_parallel_tool_calls(false)
            .with_top_p(0.9)
            .with_user("user-1"),
    );
    let body = build(&ResponsesConfig::openai("sk"), |r| r.options = options);
    assert_eq!(body["tool_choice"], json!({"type": "function", "name": "read"}));
    assert_eq!((body["parallel_tool_calls"].clone(), body["top_p"].clone()), (json!(false), json!(0.9)));
    assert_eq!(body["user"], "user-1");
    for (choice, expected) in
        [(ToolChoice::Required, json!("required")), (ToolChoice::None, json!("none")), (ToolChoice::Auto, Value::Null)]
    {
        let options = sinew_testing::leak_options(RequestOptions::default().with_tool_choice(choice));
        assert_eq!(build(&ResponsesConfig::openai("sk"), |r| r.options = options)["tool_choice"], expected);
    }
    let body = build(&ResponsesConfig::openai("sk"), |r| {
        r.options = options;
        r.tools = &[];
    });
    assert!(body.get("tool_choice").is_none() && body.get("parallel_tool_calls").is_none());
}

#[test]
fn response_formats_become_text_format() {
    let schema = json!({"type": "object"});
    let options =
        sinew_testing::leak_options(RequestOptions::default().with_response_format(ResponseFormat::JsonSchema {
            name: "anything".into(),
            schema: schema.clone(),
            strict: false,
        }));
    let body = build(&ResponsesConfig::openai("sk"), |r| r.options = options);
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "anything", "schema": schema, "strict": false}})
    );
    let object =
        sinew_testing::leak_options(RequestOptions::default().with_response_format(ResponseFormat::JsonObject));
    assert_eq!(
        build(&ResponsesConfig::openai("sk"), |r| r.options = object)["text"],
        json!({"format": {"type": "json_object"}})
    );
    assert!(build(&ResponsesConfig::openai("sk"), |_| {}).get("text").is_none());
}

#[test]
fn a_strict_schema_is_sent_closed_with_every_property_required() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "default": 1}}});
    let options = sinew_testing::leak_options(
        RequestOptions::default().with_response_format(ResponseFormat::json_schema("n", schema)),
    );
    assert_eq!(
        build(&ResponsesConfig::openai("sk"), |r| r.options = options)["text"]["format"]["schema"],
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false})
    );
}

#[test]
fn attachments_become_input_parts_and_audio_is_refused() {
    let mut content = sinew_testing::attachments();
    let audio = content.pop().unwrap();
    let url = content[3].clone();
    let history = sinew_testing::tool_round("openai", content, vec![url]);
    let body = sinew_testing::with_messages(&history, |r| {
        check_inputs(r).unwrap();
        body(&ResponsesConfig::openai("sk"), r)
    });
    let paper = json!({"type": "input_file", "file_url": "https://example.com/paper.pdf"});
    assert_eq!(
        body["input"][0]["content"],
        json!([
            {"type": "input_image", "image_url": "https://example.com/cat.png"},
            {"type": "input_file", "filename": "spec.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"},
            {"type": "input_file", "filename": "document", "file_data": "data:text/plain;base64,aGVsbG8="},
            paper,
        ])
    );
    let items = body["input"].as_array().unwrap();
    assert_eq!(items[items.len() - 2]["output"], "(no output)");
    assert_eq!(
        items.last().unwrap(),
        &json!({"role": "user", "content": [{"type": "input_text", "text": "Files returned by the tools above:"}, paper]})
    );
    assert_eq!(
        sinew_testing::input_refusal(check_inputs, audio),
        "The Responses API cannot take the audio in message 0: it takes no audio input"
    );
}

#[test]
fn the_cache_key_goes_as_prompt_cache_key_to_openai_while_caching() {
    let key = |config: &ResponsesConfig, cache| {
        build(config, sinew_testing::cached_as("session-1", cache))["prompt_cache_key"].clone()
    };
    let on = sinew_core::CacheConfig::default();
    assert_eq!(key(&ResponsesConfig::openai("sk"), on), json!("session-1"));
    assert_eq!(key(&ResponsesConfig::azure("res", "k"), on), Value::Null);
    let disabled = sinew_core::CacheConfig::new(true, sinew_core::CacheStrategy::Disabled);
    assert_eq!(key(&ResponsesConfig::openai("sk"), disabled), Value::Null);
}

/// The body of `messages`, its input resumed from `cache` when given.
fn body_with(
    config: &ResponsesConfig,
    messages: &[Message],
    cache: Option<(&sinew_core::WireCache, usize)>,
    thinking: bool,
) -> Vec<u8> {
    let refs: Vec<&Message> = messages.iter().collect();
    let mut request = StreamRequest::new("gpt-x", "Be brief.", &refs);
    if thinking {
        // Reasoning adds fields around `input`.
        request.thinking_level = ThinkingLevel::Medium;
    }
    request.history = cache.map(|(cache, unchanged)| sinew_core::HistoryCache { cache, unchanged });
    checked_request(config, &request).unwrap().body.to_vec()
}

proptest::proptest! {
    /// A body whose input resumes from what the history's cache kept is the body written whole,
    /// byte for byte (`sinew_testing::resume`): tool results with images waiting for the user
    /// message after the batch included, with and without the fields written before `input`.
    #[test]
    fn a_resumed_body_is_the_body_written_whole(steps in sinew_testing::resume::history_steps()) {
        let config = ResponsesConfig::openai("k");
        let opaque = json!({"type": "web_search_call", "id": "ws_1", "status": "completed"});
        let mut pool = round_trip_history(&config.provider_id, opaque);
        pool.extend([
            Message::ToolResult(sinew_core::ToolResultMessage {
                content: vec![sinew_core::Content::image("AAAA", "image/png")],
                ..sinew_core::ToolResultMessage::error("call_9", "read", "")
            }),
            Message::user(""),
        ]);
        sinew_testing::resume::check_resumed_bodies(&pool, &steps, |history, cache, thinking| {
            Some(body_with(&config, history, cache, thinking))
        })?;
    }
}
