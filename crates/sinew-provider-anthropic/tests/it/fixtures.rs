use serde_json::Value;
use sinew_core::{Content, StopReason, StreamEvent};
use sinew_http::StreamDecoder;
use sinew_testing::{assert_text, recorded_streams, stream_outcome, tool_calls_json};

/// Every recorded Anthropic stream with its expected result.
fn fixtures() -> Vec<(String, Vec<u8>, Value)> {
    recorded_streams("anthropic", 11)
}

fn decode(chunks: &[&[u8]]) -> Vec<StreamEvent> {
    sinew_provider_anthropic::decoder("requested-model").decode_all(chunks)
}

#[test]
fn every_recorded_stream_decodes_to_the_expected_message() {
    for (name, bytes, expected) in fixtures() {
        let events = decode(&[&bytes]);
        let (message, error) = stream_outcome(&events);
        assert_eq!(error, None, "{name}");
        let text: String = message.content.iter().filter_map(Content::as_text).collect();
        assert_text(&name, &events, &text, expected["text"].as_str().unwrap());
        let calls = tool_calls_json(&message, "id", "input");
        assert_eq!(Value::Array(calls), expected["tool_calls"], "{name}: tool calls");

        let want_stop = match expected["stop_reason"].as_str().unwrap() {
            "max_tokens" => StopReason::Length,
            "tool_use" => StopReason::ToolUse,
            _ => StopReason::Stop,
        };
        assert_eq!(message.stop_reason, want_stop, "{name}: stop reason");
        assert_eq!(message.model, expected["model"].as_str().unwrap(), "{name}: model");

        let usage = &expected["usage"];
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        assert_eq!(
            (message.usage.input, message.usage.output, message.usage.cache_read, message.usage.cache_write),
            (n("input_tokens"), n("output_tokens"), n("cache_read_input_tokens"), n("cache_creation_input_tokens")),
            "{name}: usage"
        );

        if let Some(thinking) = expected["thinking"].as_str() {
            let (got, signature) = message
                .content
                .iter()
                .find_map(|c| match c {
                    Content::Thinking { thinking, signature, redacted: false, .. } => {
                        Some((thinking.as_str(), signature))
                    }
                    _ => None,
                })
                .unwrap_or_else(|| panic!("{name}: no thinking"));
            assert_eq!(got, thinking, "{name}: thinking");
            assert_eq!(signature.is_some(), expected["thinking_signature_present"] == true, "{name}: signature");
        }
        // Every block of the recording is in the message, at its index, redacted data intact.
        let blocks = expected["blocks"].as_array().unwrap();
        assert_eq!(message.content.len(), blocks.len(), "{name}: blocks");
        for (content, block) in message.content.iter().zip(blocks) {
            match (block["type"].as_str().unwrap(), content) {
                ("text", Content::Text { .. }) | ("thinking", Content::Thinking { redacted: false, .. }) => {}
                ("tool_use", Content::ToolCall { .. }) => {}
                ("redacted_thinking", Content::Thinking { redacted: true, signature: Some(data), .. }) => {
                    assert_eq!(data.len() as u64, block["data_len"].as_u64().unwrap(), "{name}: redacted data");
                }
                (other, Content::Opaque { data, .. }) => {
                    assert_eq!(data["type"], other, "{name}");
                    if block["input_complete"] == true {
                        assert_eq!(data["input"], block["input"], "{name}: server tool input");
                    }
                }
                (kind, content) => panic!("{name}: block {kind} became {content:?}"),
            }
        }
        assert!(expected["errors"].as_array().unwrap().is_empty(), "{name}: fixture with errors needs a check");
    }
}

sinew_testing::chunking_checks! {
    fixtures: fixtures,
    outcome: |chunks| stream_outcome(&decode(chunks)),
}

sinew_testing::hostile_sse_checks! { fixtures: fixtures, decode: decode }

/// A block sinew does not model accumulates its deltas (issue 16): a compaction's summary arrives
/// as `compaction_delta`s and must go back to the service whole on the next turn.
#[test]
fn an_opaque_block_accumulates_its_deltas_and_goes_back_whole() {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/compaction-delta.sse")).unwrap();
    let events = decode(&[&bytes]);
    let (message, error) = stream_outcome(&events);
    assert_eq!(error, None);
    let summary = serde_json::json!({"type": "compaction", "content": "Summary of the conversation so far."});
    assert_eq!(message.content, [Content::Opaque { provider: "anthropic".into(), data: summary.clone() }]);
    sinew_testing::assert_byte_by_byte_changes_nothing("compaction", &bytes, |chunks| {
        stream_outcome(&decode(chunks)).0.content
    });
    // Sent back on the next turn exactly as it came.
    let history = [
        sinew_core::Message::user("go on"),
        sinew_core::Message::Assistant(message),
        sinew_core::Message::user("and then?"),
    ];
    let refs: Vec<&sinew_core::Message> = history.iter().collect();
    let mut request = sinew_core::StreamRequest::new("claude-sonnet-4-5", "", &refs);
    // Without a cache breakpoint on it, the block is exactly what came.
    request.cache_config = sinew_core::CacheConfig::new(false, sinew_core::CacheStrategy::Auto);
    let body = sinew_provider_anthropic::body(&sinew_provider_anthropic::AnthropicConfig::new("k"), &request);
    assert_eq!(body["messages"][1]["content"][0], summary);

    // Several deltas: text appended, a ciphertext replaced by the last one.
    let frame = |payload: Value| format!("event: {}\ndata: {payload}\n\n", payload["type"].as_str().unwrap());
    let stream = [
        frame(serde_json::json!({"type": "message_start", "message": {"model": "m", "usage": {}}})),
        frame(serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "compaction", "content": null, "encrypted_content": null}})),
        frame(serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta", "content": "Part one, ", "encrypted_content": "c1"}})),
        frame(serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "compaction_delta", "content": "part two.", "encrypted_content": "c2"}})),
        frame(serde_json::json!({"type": "content_block_stop", "index": 0})),
        frame(serde_json::json!({"type": "message_stop"})),
    ]
    .concat();
    let (message, _) = stream_outcome(&decode(&[stream.as_bytes()]));
    let Content::Opaque { data, .. } = &message.content[0] else { panic!("{message:?}") };
    assert_eq!(
        data,
        &serde_json::json!({"type": "compaction", "content": "Part one, part two.", "encrypted_content": "c2"})
    );
}

/// A structured answer recorded from the API (`output_config.format`, a schema of an array of
/// integers): the JSON arrives as text deltas whose `data:` lines the API pads with spaces.
#[test]
fn a_recorded_structured_answer_is_its_json_text() {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/structured-output.sse")).unwrap();
    let message = sinew_testing::assert_structured_answer(
        "structured-output",
        &bytes,
        decode,
        &serde_json::json!([12345, 67890]),
    );
    assert_eq!((message.stop_reason, message.usage.input, message.usage.output), (StopReason::Stop, 135, 10));
}
