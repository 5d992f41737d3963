use serde_json::Value;
use sinew_core::{StopReason, StreamEvent};
use sinew_http::StreamDecoder;
use sinew_provider_openai_chat::decoder;
use sinew_testing::{assert_text, recorded_streams, stream_outcome, thinking_text, tool_calls_json};

/// Every recorded Chat Completions stream with its expected result.
fn fixtures() -> Vec<(String, Vec<u8>, Value)> {
    recorded_streams("chat", 17)
}

fn decode(chunks: &[&[u8]]) -> Vec<StreamEvent> {
    decoder("openai", "requested-model").decode_all(chunks)
}

#[test]
fn every_recorded_stream_decodes_to_the_expected_message() {
    for (name, bytes, expected) in fixtures() {
        let events = decode(&[&bytes]);
        let (message, error) = stream_outcome(&events);
        let choice = &expected["choices"][0];

        let want_text = format!(
            "{}{}",
            choice["content"].as_str().unwrap_or_default(),
            choice["refusal"].as_str().unwrap_or_default()
        );
        // Refusals are text.
        assert_text(&name, &events, &message.text(), &want_text);
        let thinking = thinking_text(&message);
        assert_eq!(thinking, choice["reasoning"].as_str().unwrap_or_default(), "{name}: reasoning");

        let calls = tool_calls_json(&message, "id", "arguments");
        let want_calls: Vec<Value> = choice["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| serde_json::json!({"id": c["id"], "name": c["name"], "arguments": c["arguments_json"]}))
            .collect();
        assert_eq!(calls, want_calls, "{name}: tool calls");

        if let Some(model) = expected["models"].as_array().and_then(|m| m.last()) {
            assert_eq!(message.model, model.as_str().unwrap(), "{name}: model");
        }

        let errors = expected["errors"].as_array().unwrap();
        if errors.is_empty() {
            assert_eq!(error, None, "{name}: no error");
            let want_stop = match expected["finish_reason"].as_str() {
                Some("length") => StopReason::Length,
                Some("tool_calls") => StopReason::ToolUse,
                _ => StopReason::Stop,
            };
            assert_eq!(message.stop_reason, want_stop, "{name}: stop reason");
        } else {
            let want = errors[0]["error"]["message"].as_str().unwrap();
            let error = error.unwrap_or_else(|| panic!("{name}: the recorded error was not reported"));
            assert!(error.to_string().contains(want), "{name}: {error}");
            assert_eq!(message.stop_reason, StopReason::Error, "{name}");
        }

        match expected["usage"].as_object() {
            Some(usage) => {
                let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
                let u = message.usage;
                assert_eq!(
                    (u.input + u.cache_read, u.output, u.total_tokens),
                    (n("prompt_tokens"), n("completion_tokens"), n("total_tokens")),
                    "{name}: usage"
                );
                let cached = usage
                    .get("prompt_tokens_details")
                    .and_then(|d| d.get("cached_tokens"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                assert_eq!(u.cache_read, cached, "{name}: cached tokens");
            }
            None => assert_eq!(message.usage.total_tokens, 0, "{name}: no usage recorded"),
        }
    }
}

sinew_testing::chunking_checks! {
    fixtures: fixtures,
    outcome: |chunks| stream_outcome(&decode(chunks)),
}

sinew_testing::hostile_sse_checks! { fixtures: fixtures, decode: decode }

/// Mistral's reasoning models send `delta.content` as a list of typed parts (issue 16): thinking
/// parts become thinking, text parts text, beside plain-string chunks; cut anywhere, the same.
#[test]
fn content_as_a_list_of_typed_parts() {
    let bytes =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/mistral-magistral-content-parts.sse")).unwrap();
    let events = decode(&[&bytes]);
    let (message, error) = stream_outcome(&events);
    assert_eq!(error, None);
    assert_eq!(thinking_text(&message), "好的，用户问 2+2。");
    assert_eq!(message.text(), "2 + 2 = 4。");
    assert_eq!((message.stop_reason, message.model.as_str()), (StopReason::Stop, "magistral-medium-2509"));
    assert_eq!((message.usage.input, message.usage.output), (12, 28));
    // Thinking first, then the answer: two blocks.
    assert_eq!(message.content.len(), 2);
    sinew_testing::assert_byte_by_byte_changes_nothing("magistral", &bytes, |chunks| {
        let (message, error) = stream_outcome(&decode(chunks));
        (thinking_text(&message), message.text(), error)
    });
}

/// A structured answer recorded from the API (`response_format` with a strict schema of city,
/// temperature and units): the JSON arrives in small text deltas, usage after the finish.
#[test]
fn a_recorded_structured_answer_is_its_json_text() {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/structured-output.sse")).unwrap();
    let expected = serde_json::json!({"city": "San Francisco", "temperature": 68, "units": "f"});
    let message = sinew_testing::assert_structured_answer("structured-output", &bytes, decode, &expected);
    assert_eq!((message.stop_reason, message.usage.input, message.usage.output), (StopReason::Stop, 17, 14));
}
