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
