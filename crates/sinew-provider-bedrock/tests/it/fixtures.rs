use serde_json::Value;
use sinew_core::{Content, ProviderError, StopReason, StreamEvent};
use sinew_http::StreamDecoder;
use sinew_provider_bedrock::decoder;
use sinew_provider_bedrock::eventstream::{FrameDecoder, HeaderValue};
use sinew_testing::{assert_text, recorded_streams, stream_outcome, tool_calls_json};

#[test]
fn the_aws_codec_vectors_pass_or_fail_as_their_names_say() {
    let vectors = recorded_streams("aws-eventstream-codec", 8);
    for (name, bytes, expected) in vectors {
        let mut frames = Vec::new();
        let result = FrameDecoder::new().feed(&bytes, &mut frames);
        match expected["expectation"].as_str().unwrap() {
            "success" => {
                result.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(frames.len(), 1, "{name}");
                let decoded = &expected["decoded"];
                assert_eq!(frames[0].payload, decoded["payload"].as_str().unwrap().as_bytes(), "{name}: payload");
                let headers: serde_json::Map<String, Value> = frames[0]
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        let v = match v {
                            HeaderValue::String(s) => Value::from(s.as_str()),
                            HeaderValue::Int(n) => Value::from(*n),
                            other => panic!("{name}: unexpected header {other:?}"),
                        };
                        (k.clone(), v)
                    })
                    .collect();
                assert_eq!(Value::Object(headers), decoded["headers"], "{name}: headers");
            }
            _ => {
                let error = result.expect_err(&name);
                assert!(matches!(error, ProviderError::Protocol(ref m) if m.contains("CRC")), "{name}: {error}");
                assert!(frames.is_empty(), "{name}: nothing half-read");
            }
        }
    }
}

fn fixtures() -> Vec<(String, Vec<u8>, Value)> {
    recorded_streams("bedrock", 9)
}

fn decode(chunks: &[&[u8]]) -> Vec<StreamEvent> {
    decoder("requested-model").decode_all(chunks)
}

#[test]
fn every_recorded_stream_decodes_to_the_expected_message() {
    for (name, bytes, expected) in fixtures() {
        let events = decode(&[&bytes]);
        let (message, error) = stream_outcome(&events);
        assert_eq!(error, None, "{name}");
        assert!(expected["exceptions"].as_array().unwrap().is_empty(), "{name}: fixture with exceptions needs a check");

        let text: String = message.content.iter().filter_map(Content::as_text).collect();
        assert_text(&name, &events, &text, expected["text"].as_str().unwrap());
        let calls = tool_calls_json(&message, "toolUseId", "input");
        assert_eq!(Value::Array(calls), expected["tool_calls"], "{name}: tool calls");

        let blocks = expected["blocks"].as_array().unwrap();
        assert_eq!(message.content.len(), blocks.len(), "{name}: blocks");
        for (content, block) in message.content.iter().zip(blocks) {
            match (block["type"].as_str().unwrap(), content) {
                // Cited text is text; the citations themselves are not modelled.
                ("text" | "citation", Content::Text { text, .. }) => {
                    assert_eq!(text, block["text"].as_str().unwrap(), "{name}");
                }
                ("toolUse", Content::ToolCall { .. }) => {}
                ("reasoning", Content::Thinking { thinking, signature, redacted, .. }) => {
                    if let Some(len) = block["redacted_content_b64_len"].as_u64() {
                        assert!(*redacted, "{name}: redacted");
                        assert_eq!(signature.as_ref().map(|s| s.len() as u64), Some(len), "{name}: redacted data");
                    } else {
                        assert_eq!(thinking, block["reasoning_text"].as_str().unwrap(), "{name}: reasoning");
                        assert_eq!(
                            signature.as_ref().map(|s| s.len() as u64),
                            block["signature_len"].as_u64(),
                            "{name}: signature"
                        );
                    }
                }
                (kind, content) => panic!("{name}: block {kind} became {content:?}"),
            }
        }

        let want_stop = match expected["stop_reason"].as_str().unwrap() {
            "max_tokens" => StopReason::Length,
            "tool_use" => StopReason::ToolUse,
            _ => StopReason::Stop,
        };
        assert_eq!(message.stop_reason, want_stop, "{name}: stop reason");
        let usage = &expected["usage"];
        let n = |k: &str| usage[k].as_u64().unwrap_or(0);
        let u = message.usage;
        assert_eq!(
            (u.input, u.output, u.total_tokens, u.cache_read, u.cache_write),
            (
                n("inputTokens"),
                n("outputTokens"),
                n("totalTokens"),
                n("cacheReadInputTokens"),
                n("cacheWriteInputTokens")
            ),
            "{name}: usage"
        );
    }
}

sinew_testing::chunking_checks! {
    fixtures: fixtures,
    outcome: |chunks| stream_outcome(&decode(chunks)),
}

#[test]
fn a_stream_cut_inside_a_frame_keeps_the_partial_message() {
    let (name, bytes, _) = fixtures().into_iter().find(|(n, _, _)| n.ends_with("text-nova-short.bin")).unwrap();
    let events = decode(&[&bytes[..bytes.len() / 2]]);
    match events.last() {
        Some(StreamEvent::Error { error: ProviderError::Protocol(m), partial }) => {
            assert!(m.contains("frame") || m.contains("messageStop"), "{name}: {m}");
            assert!(!partial.text().is_empty(), "{name}: what arrived is kept");
        }
        other => panic!("{name}: {other:?}"),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

    /// Recorded streams whose event payloads carry hostile values (counts past every integer
    /// type, negative indexes, 200 KB strings, wrong types), re-framed with valid CRCs: never a
    /// panic, always exactly one terminal event.
    #[test]
    fn hostile_values_in_recorded_streams_end_cleanly(
        which in proptest::prelude::any::<proptest::sample::Index>(),
        edits in sinew_testing::hostile::hostile_edits(),
    ) {
        let fixtures = fixtures();
        let (name, bytes, _) = &fixtures[which.index(fixtures.len())];
        let mut frames = Vec::new();
        FrameDecoder::new().feed(bytes, &mut frames).expect("a recorded stream decodes");
        let mut events: Vec<(String, Value)> = frames
            .iter()
            .filter_map(|f| Some((f.header_str(":event-type")?.to_owned(), serde_json::from_slice(&f.payload).ok()?)))
            .collect();
        let mut payloads: Vec<&mut Value> = events.iter_mut().map(|(_, payload)| payload).collect();
        sinew_testing::hostile::edit_values(&mut payloads, &edits);
        let edited: Vec<u8> = events
            .iter()
            .flat_map(|(kind, payload)| sinew_provider_bedrock::eventstream::event_frame(kind, payload))
            .collect();
        let events = decode(&[&edited]);
        proptest::prop_assert_eq!(sinew_testing::terminal_count(&events), 1, "{}", name);
    }
}

/// A server tool (Nova's code interpreter) runs in the service: its call and the result the
/// service streams are kept as they came, to go back, and only the model's own tool call is one
/// the agent may run (issue 16, item 4).
#[test]
fn a_server_tool_call_and_its_result_stay_opaque_and_go_back_whole() {
    let bytes =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/server-tool-code-interpreter.bin")).unwrap();
    let events = decoder("us.amazon.nova-2-lite-v1:0").decode_all([&bytes]);
    let (message, error) = stream_outcome(&events);
    assert_eq!(error, None);
    let call = serde_json::json!({"toolUse": {
        "toolUseId": "tooluse_MDxh6LALUXgZvnf9Dqd0fQ",
        "name": "nova_code_interpreter",
        "type": "server_tool_use",
        "input": {"snippet": "1234 * 5678"},
    }});
    let result = serde_json::json!({"toolResult": {
        "toolUseId": "tooluse_MDxh6LALUXgZvnf9Dqd0fQ",
        "status": "success",
        "type": "nova_code_interpreter_result",
        "content": [{"json": {"stdOut": "7006652", "stdErr": "", "exitCode": 0, "isError": false}}],
    }});
    assert_eq!(
        message.content,
        [
            Content::Opaque { provider: "bedrock".into(), data: call.clone() },
            Content::Opaque { provider: "bedrock".into(), data: result.clone() },
            Content::tool_call(
                "tooluse_GAkD3pNGSYeUBAwXiRVwIQ",
                "final_result",
                serde_json::json!({"result": 7006652.0})
            ),
        ]
    );
    assert_eq!((message.stop_reason, message.usage.input, message.usage.output), (StopReason::ToolUse, 1002, 59));
    // Only the model's own call is announced as one.
    let announced: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta(sinew_core::StreamDelta::ToolCall { name: Some(name), .. }) => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(announced, ["final_result"]);
    sinew_testing::assert_byte_by_byte_changes_nothing("server-tool", &bytes, |chunks| {
        stream_outcome(&decoder("m").decode_all(chunks)).0.content
    });

    // The next request sends both blocks back as they came.
    let history = [sinew_core::Message::user("What is 1234 * 5678?"), sinew_core::Message::Assistant(message)];
    let refs: Vec<&sinew_core::Message> = history.iter().collect();
    let mut request = sinew_core::StreamRequest::new("us.amazon.nova-2-lite-v1:0", "", &refs);
    request.cache_config = sinew_core::CacheConfig::new(false, sinew_core::CacheStrategy::Auto);
    let body = sinew_provider_bedrock::body(&request);
    assert_eq!(body["messages"][1]["content"][0], call);
    assert_eq!(body["messages"][1]["content"][1], result);
}
