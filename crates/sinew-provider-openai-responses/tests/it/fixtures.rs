use serde_json::Value;
use sinew_core::{Content, StopReason, StreamEvent};
use sinew_http::StreamDecoder;
use sinew_provider_openai_responses::decoder;
use sinew_testing::{assert_text, recorded_streams, stream_outcome, tool_calls_json};

fn fixtures() -> Vec<(String, Vec<u8>, Value)> {
    recorded_streams("responses", 12)
}

fn decode(chunks: &[&[u8]]) -> Vec<StreamEvent> {
    decoder("openai_responses", "requested-model").decode_all(chunks)
}

#[test]
fn every_recorded_stream_decodes_to_the_expected_message() {
    for (name, bytes, expected) in fixtures() {
        let events = decode(&[&bytes]);
        let (message, error) = stream_outcome(&events);

        assert_text(&name, &events, &message.text(), expected["text"].as_str().unwrap());
        let calls = tool_calls_json(&message, "call_id", "arguments");
        let want_calls: Vec<Value> = expected["function_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| serde_json::json!({"call_id": c["call_id"], "name": c["name"], "arguments": c["arguments_json"]}))
            .collect();
        assert_eq!(calls, want_calls, "{name}: function calls");

        // Every output item is in the message, in order, as the content it stands for.
        let items = expected["output_items"].as_array().unwrap();
        assert_eq!(message.content.len(), items.len(), "{name}: items");
        for (content, item) in message.content.iter().zip(items) {
            match (item["type"].as_str().unwrap(), content) {
                ("reasoning", Content::Thinking { thinking, signature, id, .. }) => {
                    assert_eq!(id.as_deref(), item["id"].as_str(), "{name}: reasoning id");
                    let want = item["summary"]
                        .as_array()
                        .map(|s| s.iter().map(|t| t.as_str().unwrap()).collect::<Vec<_>>().join("\n\n"))
                        .or_else(|| item["reasoning_text"].as_str().map(str::to_owned))
                        .unwrap_or_default();
                    assert_eq!(thinking, &want, "{name}: reasoning text");
                    let encrypted =
                        signature.as_ref().map(String::len).filter(|_| item.get("encrypted_content_len").is_some());
                    assert_eq!(
                        encrypted.map(|n| n as u64),
                        item["encrypted_content_len"].as_u64(),
                        "{name}: encrypted reasoning"
                    );
                }
                ("message", Content::Text { text, signature }) => {
                    assert_eq!(text, item["text"].as_str().unwrap(), "{name}: message text");
                    assert_eq!(signature.as_deref(), item["id"].as_str(), "{name}: message id kept");
                }
                ("function_call", Content::ToolCall { signature, .. }) => {
                    assert_eq!(signature.as_deref(), item["id"].as_str(), "{name}: item id kept");
                }
                (kind, Content::Opaque { data, .. }) => {
                    assert_eq!(data["type"], kind, "{name}");
                    assert_eq!(data["id"], item["id"], "{name}");
                }
                (kind, content) => panic!("{name}: item {kind} became {content:?}"),
            }
        }

        let errors = expected["errors"].as_array().unwrap();
        match expected["status"].as_str().unwrap() {
            "failed" => {
                let want = expected["response_error"]["message"].as_str().unwrap();
                let error = error.unwrap_or_else(|| panic!("{name}: the failure was not reported"));
                assert!(error.to_string().contains(want), "{name}: {error}");
                assert_eq!(message.stop_reason, StopReason::Error);
            }
            status => {
                assert!(errors.is_empty(), "{name}: fixture with errors needs a check");
                assert_eq!(error, None, "{name}");
                let want_stop = match status {
                    "incomplete" => StopReason::Length,
                    _ if !want_calls.is_empty() => StopReason::ToolUse,
                    _ => StopReason::Stop,
                };
                assert_eq!(message.stop_reason, want_stop, "{name}: stop reason");
                let usage = &expected["usage"];
                let u = message.usage;
                assert_eq!(
                    (u.input + u.cache_read, u.cache_read, u.output, u.total_tokens),
                    (
                        usage["input_tokens"].as_u64().unwrap(),
                        usage["input_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0),
                        usage["output_tokens"].as_u64().unwrap(),
                        usage["total_tokens"].as_u64().unwrap()
                    ),
                    "{name}: usage"
                );
                assert_eq!(message.model, expected["model"].as_str().unwrap(), "{name}: model");
            }
        }
    }
}

sinew_testing::chunking_checks! {
    fixtures: fixtures,
    outcome: |chunks| stream_outcome(&decode(chunks)),
}

sinew_testing::hostile_sse_checks! { fixtures: fixtures, decode: decode }

/// A structured answer (`text.format` with a strict schema) after an encrypted reasoning item:
/// the JSON arrives as text deltas padded with `obfuscation`.
#[test]
fn a_recorded_structured_answer_is_its_json_text() {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/structured-output.sse")).unwrap();
    let expected = serde_json::json!({"temperatureCelsius": 22, "condition": "Partly Cloudy"});
    let message = sinew_testing::assert_structured_answer("structured-output", &bytes, decode, &expected);
    assert_eq!((message.stop_reason, message.usage.input, message.usage.output), (StopReason::Stop, 72, 25));
    let reasoning = message.content.iter().find_map(|c| match c {
        Content::Thinking { id, signature, .. } => Some((id.clone(), signature.is_some())),
        _ => None,
    });
    assert_eq!(reasoning, Some((Some("rs_061272552eb6b10b0168eba2b65c048197bf2f05c29f6f361d".into()), true)));
}
