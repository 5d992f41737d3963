use serde_json::Value;
use sinew_core::{AssistantMessage, Content, ProviderError, StopReason, StreamDelta, StreamEvent};
use sinew_http::StreamDecoder;
use sinew_provider_gemini::decoder;
use sinew_testing::{assert_text, recorded_streams, stream_outcome, thinking_text};

fn fixtures() -> Vec<(String, Vec<u8>, Value)> {
    recorded_streams("gemini", 11)
}

fn decode(chunks: &[&[u8]]) -> Vec<StreamEvent> {
    decoder("google", "requested-model").decode_all(chunks)
}

/// How the stream ended, generated id suffixes dropped (they are random).
fn terminal(events: &[StreamEvent]) -> (AssistantMessage, Option<ProviderError>) {
    let (mut message, error) = stream_outcome(events);
    for content in &mut message.content {
        if let Content::ToolCall { id, .. } = content
            && id.starts_with("google-fc-")
        {
            id.truncate("google-fc-".len());
        }
    }
    (message, error)
}

#[test]
fn every_recorded_stream_decodes_to_the_expected_message() {
    for (name, bytes, expected) in fixtures() {
        let events = decode(&[&bytes]);
        let (message, error) = terminal(&events);
        assert_eq!(error, None, "{name}");
        assert!(expected["errors"].as_array().unwrap().is_empty(), "{name}: fixture with errors needs a check");

        assert_text(&name, &events, &message.text(), expected["text"].as_str().unwrap());
        let thinking = thinking_text(&message);
        if let Some(want) = expected["thought_text"].as_str() {
            assert_eq!(thinking, want, "{name}: thought text");
        }

        let calls: Vec<Value> =
            message.tool_calls().map(|c| serde_json::json!({"name": c.name, "args": c.arguments})).collect();
        let want: Vec<Value> = expected["function_calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| serde_json::json!({"name": c["name"], "args": c["args"]}))
            .collect();
        assert_eq!(calls, want, "{name}: function calls");
        for (call, want) in message.tool_calls().zip(expected["function_calls"].as_array().unwrap()) {
            match want["id"].as_str() {
                Some(id) => assert_eq!(call.id, id, "{name}: the service's id is kept"),
                None => assert_eq!(call.id, "google-fc-", "{name}: a generated id"),
            }
        }
        // Streamed arguments add up to the parsed ones.
        for (index, content) in message.content.iter().enumerate() {
            if let Content::ToolCall { arguments, .. } = content {
                let streamed: String = events
                    .iter()
                    .filter_map(|e| match e {
                        StreamEvent::Delta(StreamDelta::ToolCall { index: i, delta, .. }) if *i == index => {
                            Some(delta.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                assert_eq!(&serde_json::from_str::<Value>(&streamed).unwrap(), arguments, "{name}: call {index}");
            }
        }

        let signatures = message
            .content
            .iter()
            .filter(|c| {
                matches!(
                    c,
                    Content::Text { signature: Some(_), .. }
                        | Content::Thinking { signature: Some(_), .. }
                        | Content::ToolCall { signature: Some(_), .. }
                )
            })
            .count();
        assert_eq!(signatures > 0, expected["thought_signatures"].as_u64().unwrap() > 0, "{name}: signatures kept");

        let want_stop = match expected["finish_reason"].as_str().unwrap() {
            "MAX_TOKENS" => StopReason::Length,
            _ if !want.is_empty() => StopReason::ToolUse,
            _ => StopReason::Stop,
        };
        assert_eq!(message.stop_reason, want_stop, "{name}: stop reason");
        assert_eq!(message.model, expected["model_version"].as_str().unwrap(), "{name}: model");

        let usage = &expected["usage"];
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        let u = message.usage;
        assert_eq!(
            (u.input + u.cache_read, u.output, u.total_tokens),
            (
                n("promptTokenCount") + n("toolUsePromptTokenCount"),
                n("candidatesTokenCount") + n("thoughtsTokenCount"),
                n("totalTokenCount")
            ),
            "{name}: usage"
        );
    }
}

sinew_testing::chunking_checks! {
    fixtures: fixtures,
    outcome: |chunks| terminal(&decode(chunks)),
}

sinew_testing::hostile_sse_checks! { fixtures: fixtures, decode: decode }

/// A structured answer recorded from the API (`responseJsonSchema`, Gemini 3, events ended by
/// CRLF): the JSON in one part, then an empty part that carries only a thought signature.
#[test]
fn a_recorded_structured_answer_is_its_json_text() {
    let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/structured-output.sse")).unwrap();
    let expected = serde_json::json!({"city": "Mexico City", "country": "Mexico"});
    let message = sinew_testing::assert_structured_answer("structured-output", &bytes, decode, &expected);
    assert_eq!((message.stop_reason, message.usage.input), (StopReason::Stop, 9));
}
