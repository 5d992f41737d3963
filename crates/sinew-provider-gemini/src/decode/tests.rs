use proptest::prelude::*;
use serde_json::json;

use sinew_http::StreamDecoder;

use super::*;

fn decode(chunks: &[Value]) -> Vec<StreamEvent> {
    let stream: String = chunks.iter().map(|c| format!("data: {c}\r\n\r\n")).collect();
    decoder("google", "m").decode_all([stream.as_bytes()])
}

fn parts(parts: Value) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}}]})
}

fn finish(reason: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": reason}],
        "usageMetadata": {"promptTokenCount": 10, "cachedContentTokenCount": 4, "candidatesTokenCount": 2, "thoughtsTokenCount": 3, "totalTokenCount": 15}})
}

fn done(events: &[StreamEvent]) -> AssistantMessage {
    match events.last() {
        Some(StreamEvent::Done(m)) => AssistantMessage::clone(m),
        other => panic!("expected Done, got {other:?}"),
    }
}

#[test]
fn thoughts_text_and_signatures_land_on_their_blocks() {
    let message = done(&decode(&[
        parts(json!([{"text": "Hmm", "thought": true, "thoughtSignature": "T"}])),
        parts(json!([{"text": "Answer"}])),
        parts(json!([{"text": "", "thoughtSignature": "S"}])),
        finish("STOP"),
    ]));
    assert_eq!(
        message.content,
        [
            Content::Thinking { thinking: "Hmm".into(), signature: Some("T".into()), redacted: false, id: None },
            Content::Text { text: "Answer".into(), signature: Some("S".into()) },
        ]
    );
    assert_eq!(message.usage, Usage::new(6, 5).with_cache(4, 0).with_total(15));
}

#[test]
fn calls_without_ids_get_unique_ones_and_keep_their_signature() {
    let stream = [
        parts(
            json!([{"functionCall": {"name": "a", "args": {"x": 1}}, "thoughtSignature": "SIG"}, {"functionCall": {"name": "a"}}]),
        ),
        finish("STOP"),
    ];
    let first = done(&decode(&stream));
    let second = done(&decode(&stream));
    let ids: Vec<&str> = first.tool_calls().chain(second.tool_calls()).map(|c| c.id).collect();
    assert!(ids.iter().all(|id| id.starts_with("google-fc-")), "{ids:?}");
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), 4, "ids never repeat, even across turns: {ids:?}");
    assert!(
        matches!(&first.content[0], Content::ToolCall { signature: Some(s), arguments, .. } if s == "SIG" && arguments == &json!({"x": 1}))
    );
    assert_eq!(first.tool_calls().nth(1).unwrap().arguments, &json!({}));
    assert_eq!(first.stop_reason, StopReason::ToolUse);
}

#[test]
fn streamed_arguments_follow_their_json_paths() {
    let message = done(&decode(&[
        parts(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
        parts(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.city", "stringValue": "San ", "willContinue": true}], "willContinue": true}}]),
        ),
        parts(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.city", "stringValue": "Francisco"}], "willContinue": true}}]),
        ),
        parts(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.opts.days", "numberValue": 3}, {"jsonPath": "$.tags[1]", "stringValue": "b"}, {"jsonPath": "$['metric']", "boolValue": true}], "willContinue": true}}]),
        ),
        parts(json!([{"functionCall": {}}])),
        finish("STOP"),
    ]));
    assert_eq!(
        message.tool_calls().next().unwrap().arguments,
        &json!({"city": "San Francisco", "opts": {"days": 3}, "tags": [null, "b"], "metric": true})
    );
}

/// `willContinue: true` keeps a streamed call open whatever else the chunk carries (issue 16):
/// a chunk with no arguments, arguments in the call's first chunk, a stream that ends without
/// the empty terminator: one call, whole, never nameless ones.
#[test]
fn a_call_that_continues_stays_one_call() {
    let events = decode(&[
        parts(
            json!([{"functionCall": {"name": "f", "willContinue": true, "partialArgs": [{"jsonPath": "$.path", "stringValue": "src/", "willContinue": true}]}}]),
        ),
        parts(json!([{"functionCall": {"willContinue": true}}])),
        parts(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.path", "stringValue": "main.rs"}], "willContinue": true}}]),
        ),
        parts(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.lines", "numberValue": 10}]}}])),
        finish("STOP"),
    ]);
    let message = done(&events);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!((calls[0].name, calls[0].arguments), ("f", &json!({"path": "src/main.rs", "lines": 10})));
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    // Arguments that arrive after an early `{}` still belong to the last call, and its argument
    // deltas add up to its arguments, once.
    let early = decode(&[
        parts(json!([{"functionCall": {"name": "g", "willContinue": true}}])),
        parts(json!([{"functionCall": {}}])),
        // Parts that add nothing leave it open.
        parts(json!([{"text": "", "thoughtSignature": "c2ln"}, {}])),
        parts(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.x", "numberValue": 1}]}}])),
        parts(json!([{"text": "Done."}])),
        finish("STOP"),
    ]);
    let message = done(&early);
    let calls: Vec<_> = message.tool_calls().collect();
    assert_eq!((calls.len(), calls[0].arguments), (1, &json!({"x": 1})));
    let deltas: String = early
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta(StreamDelta::ToolCall { delta, .. }) => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, r#"{"x":1}"#);
    assert_eq!(message.text(), "Done.");
    // Arguments after a call that came whole join it: its deltas add up to its arguments, once.
    let whole = decode(&[
        parts(json!([{"functionCall": {"name": "h", "args": {"a": 1}}}])),
        parts(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.b", "stringValue": "x"}]}}])),
        parts(json!([{"functionCall": {"name": "k", "args": {"c": true}}}])),
        finish("STOP"),
    ]);
    let message = done(&whole);
    let calls: Vec<_> = message.tool_calls().map(|c| (c.name, c.arguments.clone())).collect();
    assert_eq!(calls, [("h", json!({"a": 1, "b": "x"})), ("k", json!({"c": true}))]);
    let mut deltas = [String::new(), String::new()];
    for event in &whole {
        if let StreamEvent::Delta(StreamDelta::ToolCall { index, delta, .. }) = event {
            deltas[*index].push_str(delta);
        }
    }
    assert_eq!(deltas, [r#"{"a":1,"b":"x"}"#, r#"{"c":true}"#]);
    // Arguments after other content ended the call belong to no call.
    let late = decode(&[
        parts(json!([{"functionCall": {"name": "h", "args": {"a": 1}}}, {"text": "Then"}])),
        parts(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.b", "stringValue": "x"}]}}])),
        finish("STOP"),
    ]);
    assert!(matches!(late.last(), Some(StreamEvent::Error { error: ProviderError::Protocol(_), .. })), "{late:?}");
    // Arguments for no call at all are a protocol error, not a nameless call.
    let events = decode(&[
        parts(json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.x", "numberValue": 1}]}}])),
        finish("STOP"),
    ]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error: ProviderError::Protocol(m), .. }) if m.contains("for no open function call")),
        "{events:?}"
    );
}

#[test]
fn finish_reasons_and_errors() {
    assert_eq!(done(&decode(&[parts(json!([{"text": "x"}])), finish("MAX_TOKENS")])).stop_reason, StopReason::Length);
    let events = decode(&[parts(json!([{"text": "x"}])), finish("SAFETY")]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error, partial }) if error.to_string().contains("SAFETY") && partial.text() == "x")
    );
    let events = decode(&[parts(json!([{"text": "cut"}]))]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error: ProviderError::Protocol(_), partial }) if partial.text() == "cut")
    );
    let events = decode(&[json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}})]);
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Error { error: ProviderError::Unavailable { status: 503, .. }, .. })
    ));
    let events = decode(&[json!({"error": {"code": 7, "message": "odd failure"}})]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error: ProviderError::Api { status: None, message }, .. }) if message.contains("odd failure"))
    );
    let events = decode(&[json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}})]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error, .. }) if error.to_string().contains("PROHIBITED_CONTENT"))
    );
}

#[test]
fn unknown_parts_are_kept_opaque() {
    let code = json!({"executableCode": {"language": "PYTHON", "code": "print(1)"}});
    let message = done(&decode(&[parts(json!([code.clone(), {"text": "done"}])), finish("STOP")]));
    assert_eq!(message.content[0], Content::Opaque { provider: "google".into(), data: code });
    assert_eq!(message.text(), "done");
}

/// Shapes a typed reading could trip on are read as the JSON tree read them: no candidates,
/// a text that is not a string (an unknown part, kept whole with its signature), a wrapped chunk.
#[test]
fn odd_but_valid_shapes_are_read_as_before() {
    let odd = json!({"text": 5, "thought": true, "thoughtSignature": "c2ln"});
    let message = done(&decode(&[
        json!({"candidates": null, "modelVersion": "gemini-x"}),
        json!([parts(json!([odd.clone()]))]),
        parts(json!([{"text": "hi", "extra": {"a": [1]}}])),
        finish("STOP"),
    ]));
    assert_eq!(message.model, "gemini-x");
    assert_eq!(message.content, [Content::Opaque { provider: "google".into(), data: odd }, Content::text("hi")]);
}

/// Chunks of valid JSON whose fields are not of the shapes Gemini sends change nothing, as
/// lookups into the JSON tree found nothing in them: no error, no content, no usage, no block.
#[test]
fn chunks_of_other_shapes_change_nothing() {
    let odd = [
        "42",
        "null",
        r#""x""#,
        "[1, 2]",
        "[[1]]",
        r#"{"candidates": {}}"#,
        r#"{"candidates": "x"}"#,
        r#"{"candidates": [null]}"#,
        r#"{"candidates": [["text"]]}"#,
        r#"{"candidates": [{"content": {"parts": null}}]}"#,
        r#"{"candidates": [{"content": {"parts": [42, "x", null]}}]}"#,
        r#"{"candidates": [{"content": ["parts"], "finishReason": 3}]}"#,
        r#"{"usageMetadata": null}"#,
        r#"{"usageMetadata": ["promptTokenCount", 10]}"#,
        r#"{"promptFeedback": ["SAFETY"]}"#,
        r#"{"promptFeedback": {"blockReason": 1}, "modelVersion": 7}"#,
    ];
    for chunk in odd {
        let stream =
            format!("data: {chunk}\n\ndata: {}\n\ndata: {}\n\n", parts(json!([{"text": "hi"}])), finish("STOP"));
        let events = decoder("google", "m").decode_all([stream.as_bytes()]);
        let message = done(&events);
        assert_eq!(message.content, [Content::text("hi")], "{chunk}");
        assert_eq!((message.model.as_str(), message.usage.input), ("m", 6), "{chunk}");
    }
}

/// Odd usage counts read as 0 (the chunk is read whole), and a key given twice keeps its last
/// value, as in a JSON tree.
#[test]
fn odd_counts_and_repeated_keys_read_as_a_json_tree_reads_them() {
    let usage = json!({"candidates": [{"content": {"parts": []}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": -1, "totalTokenCount": 1.5}});
    let twice = r#"{"candidates": [{"content": {"parts": [{"text": "a", "text": 5}, {"text": 5, "text": "b"}]}}]}"#;
    let stream = format!("data: {twice}\n\ndata: {usage}\n\n");
    let message = done(&decoder("google", "m").decode_all([stream.as_bytes()]));
    assert_eq!(
        message.content,
        [Content::Opaque { provider: "google".into(), data: json!({"text": 5}) }, Content::text("b")]
    );
    assert_eq!((message.usage.input, message.usage.output, message.usage.total_tokens), (10, 0, 10));
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let out = decoder("google", "m").decode_all([format!("data: {}\n\n", parts(json!([{"functionCall": {"name": "f", "willContinue": true}}]))).as_bytes(), &bytes[..]]);
        let terminals = sinew_testing::terminal_count(&out);
        prop_assert_eq!(terminals, 1);
    }

    #[test]
    fn any_json_path_is_safe(path in "[$.\\[\\]'a-z0-9]{0,16}") {
        let mut arguments = json!({});
        // Ok or a clean error; never a panic.
        let _outcome = apply_partial_arg(&mut arguments, &json!({"jsonPath": path, "stringValue": "v"}));
        prop_assert!(arguments.is_object() || arguments.is_array() || arguments.is_string());
    }

    /// Paths built from what a hostile server would send: huge and overflowing indexes, deep
    /// nesting, long keys. Each is applied or rejected with a protocol error, and the arguments
    /// stay small.
    #[test]
    fn hostile_json_paths_are_bounded(
        segments in proptest::collection::vec(
            prop_oneof![
                any::<u64>().prop_map(|i| format!("[{i}]")),
                (0u64..40).prop_map(|i| format!("[{i}]")),
                Just("[18446744073709551615]".to_owned()),
                Just("[99999999999999999999999]".to_owned()),
                "[a-z]{1,8}".prop_map(|k| format!(".{k}")),
                "[a-z]{1,8}".prop_map(|k| format!("['{k}']")),
            ],
            0..200,
        ),
    ) {
        let path = format!("${}", segments.concat());
        let mut events = decode(&[
            parts(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
            parts(json!([{"functionCall": {"partialArgs": [{"jsonPath": path, "stringValue": "v"}], "willContinue": true}}])),
            parts(json!([{"functionCall": {}}])),
            finish("STOP"),
        ]);
        let terminals = sinew_testing::terminal_count(&events);
        prop_assert_eq!(terminals, 1);
        match events.pop() {
            Some(StreamEvent::Done(message)) => {
                let size = message.tool_calls().next().map_or(0, |c| c.arguments.to_string().len());
                prop_assert!(size < 1_000_000, "arguments of {size} bytes");
            }
            Some(StreamEvent::Error { error: ProviderError::Protocol(message), .. }) => {
                prop_assert!(message.contains("partialArgs"), "{message}");
            }
            other => prop_assert!(false, "unexpected end: {other:?}"),
        }
    }
}

#[test]
fn hostile_indexes_and_depths_are_protocol_errors() {
    for path in ["$.a[18446744073709551615]", "$[999999999]", "$.a[17]", &".x".repeat(65)] {
        let events = decode(&[
            parts(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
            parts(
                json!([{"functionCall": {"partialArgs": [{"jsonPath": path, "stringValue": "v"}], "willContinue": true}}]),
            ),
        ]);
        assert!(
            matches!(events.last(), Some(StreamEvent::Error { error: ProviderError::Protocol(m), .. }) if m.contains("partialArgs")),
            "{path}: {:?}",
            events.last()
        );
    }
    let message = done(&decode(&[
        parts(json!([{"functionCall": {"name": "f", "willContinue": true}}])),
        parts(
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.a[16]", "numberValue": 1}, {"jsonPath": &".x".repeat(64)[..], "numberValue": 2}], "willContinue": true}}]),
        ),
        parts(json!([{"functionCall": {}}])),
        finish("STOP"),
    ]));
    let arguments = message.tool_calls().next().unwrap().arguments;
    assert_eq!(arguments["a"].as_array().map(Vec::len), Some(17), "a small gap is filled with nulls");
    assert_eq!(arguments.pointer(&"/x".repeat(64)), Some(&json!(2)));
}

/// serde's typed reading of a chunk, which the fast path stands in for.
fn read_by_serde(data: &str) -> Option<Chunk<'_>> {
    serde_json::from_str(data).ok()
}

/// Every chunk of every recorded Gemini and Vertex stream the fast path reads, it reads as
/// serde does; and it reads some of them (the text chunks).
#[test]
fn recorded_chunks_are_scanned_as_serde_reads_them() {
    let (mut chunks, mut scanned) = (0, 0);
    for (name, bytes, _) in sinew_testing::recorded_streams("gemini", 10) {
        for event in &sinew_http::sse::SseDecoder::events_of(&bytes).unwrap() {
            let data = event.data.trim();
            if data.is_empty() {
                continue;
            }
            chunks += 1;
            if let Some(chunk) = scanned_chunk(data) {
                scanned += 1;
                assert_eq!(Some(chunk), read_by_serde(data), "{name}: {data}");
            }
        }
    }
    assert!(scanned * 4 > chunks, "only {scanned} of {chunks} chunks took the fast path");
}

/// Some of `keys`, shuffled, now and then one of them twice.
fn some_keys(keys: &'static [&'static str]) -> impl Strategy<Value = Vec<&'static str>> {
    (proptest::sample::subsequence(keys, 0..=keys.len()).prop_shuffle(), proptest::bool::weighted(0.1)).prop_map(
        |(mut keys, twice)| {
            if twice && let Some(first) = keys.first().copied() {
                keys.push(first);
            }
            keys
        },
    )
}

/// A chunk in one of many shapes: keys in any order, `null`s, keys twice, nested values the
/// decoder does not read, escapes, numbers out of range.
fn text_chunks() -> impl Strategy<Value = String> {
    use serde_json::json;
    let scalar = prop_oneof![
        6 => Just(json!("hi")),
        2 => Just(json!(null)),
        2 => Just(json!(true)),
        1 => Just(json!("a\nb \"q\" \\ \u{1} é")),
        2 => Just(json!(7)),
        1 => Just(json!(-1)),
        1 => Just(json!(1.5)),
        1 => Just(json!([{"modality": "TEXT", "tokenCount": 3}])),
        1 => Just(json!({"a": [1, {"b": null}]})),
    ];
    let part_value = prop_oneof![
        5 => Just(json!("hi")),
        2 => Just(json!(true)),
        2 => Just(json!(7)),
        1 => Just(json!(null)),
        1 => Just(json!("a\nb")),
        1 => Just(json!(1.5)),
        1 => Just(json!({"name": "f"})),
    ];
    let count = prop_oneof![
        6 => Just(json!(12)),
        1 => Just(json!(null)),
        1 => Just(json!(-1)),
        1 => Just(json!(1.5)),
        1 => Just(json!(u64::MAX)),
        1 => Just(json!([{"modality": "TEXT", "tokenCount": 3}])),
    ];
    let part =
        (some_keys(&["text", "thought", "thoughtSignature", "functionCall"]), proptest::collection::vec(part_value, 4));
    let content = (some_keys(&["parts", "role"]), proptest::collection::vec(part, 0..3));
    let candidate = (some_keys(&["content", "finishReason", "index"]), content, scalar.clone());
    let usage = (
        some_keys(&["promptTokenCount", "totalTokenCount", "thoughtsTokenCount", "promptTokensDetails"]),
        proptest::collection::vec(count, 4),
    );
    let top = some_keys(&["candidates", "usageMetadata", "modelVersion", "responseId", "error"]);
    (top, proptest::collection::vec(candidate, 0..3), usage, scalar, proptest::bool::ANY).prop_map(
        |(top, candidates, (usage_keys, usage_values), value, spaced)| {
            let member = |key: &str, value: &serde_json::Value| format!("{}:{value}", json!(key));
            let object = |members: Vec<String>| format!("{{{}}}", members.join(if spaced { " , " } else { "," }));
            let with_values = |keys: &[&str], values: &[serde_json::Value]| {
                object(keys.iter().zip(values.iter().cycle()).map(|(k, v)| member(k, v)).collect())
            };
            let candidates: Vec<String> = candidates
                .iter()
                .map(|(keys, (content_keys, parts), value)| {
                    let parts: Vec<String> = parts.iter().map(|(keys, values)| with_values(keys, values)).collect();
                    let content = object(
                        content_keys
                            .iter()
                            .map(|key| match *key {
                                "parts" => format!("\"parts\":[{}]", parts.join(",")),
                                _ => member(key, &json!("model")),
                            })
                            .collect(),
                    );
                    object(
                        keys.iter()
                            .map(|key| match *key {
                                "content" => format!("\"content\":{content}"),
                                _ => member(key, value),
                            })
                            .collect(),
                    )
                })
                .collect();
            let usage = with_values(&usage_keys, &usage_values);
            object(
                top.iter()
                    .map(|key| match *key {
                        "candidates" => format!("\"candidates\":[{}]", candidates.join(",")),
                        "usageMetadata" => format!("\"usageMetadata\":{usage}"),
                        _ => member(key, &value),
                    })
                    .collect(),
            )
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Whatever chunk the fast path reads, serde reads alike: the fast path never reads a chunk
    /// serde refuses, nor reads one otherwise.
    #[test]
    fn scanned_chunks_are_what_serde_reads(data in text_chunks()) {
        if let Some(chunk) = scanned_chunk(&data) {
            prop_assert_eq!(Some(chunk), read_by_serde(&data), "{}", data);
        }
    }
}
