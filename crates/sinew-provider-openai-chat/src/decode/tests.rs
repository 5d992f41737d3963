use proptest::prelude::*;
use serde_json::json;

use sinew_http::StreamDecoder;

use super::*;

fn decode(stream: &str) -> Vec<StreamEvent> {
    decoder("openai", "requested").decode_all([stream.as_bytes()])
}

fn chunk(delta: serde_json::Value) -> String {
    format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": delta}]}))
}

fn finish(reason: &str) -> String {
    format!("data: {}\n\n", json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}))
}

fn done(events: &[StreamEvent]) -> &AssistantMessage {
    match events.last() {
        Some(StreamEvent::Done(message)) => message,
        other => panic!("expected Done, got {other:?}"),
    }
}

fn failed(events: &[StreamEvent]) -> (&ProviderError, &AssistantMessage) {
    match events.last() {
        Some(StreamEvent::Error { error, partial }) => (error, partial),
        other => panic!("expected Error, got {other:?}"),
    }
}

#[test]
fn tool_calls_are_assembled_by_index_with_late_ids_and_names() {
    let stream = [
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\""}}]})),
        chunk(json!({"tool_calls": [{"index": 1, "id": "call_B", "function": {"name": "second", "arguments": ""}}]})),
        chunk(json!({"tool_calls": [{"index": 0, "id": "call_A", "function": {"name": "first", "arguments": ":1}"}}]})),
        chunk(json!({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]})),
        finish("tool_calls"),
        "data: [DONE]\n\n".into(),
    ]
    .concat();
    let events = decode(&stream);
    let message = done(&events);
    let calls: Vec<_> =
        message.tool_calls().map(|c| (c.id.to_owned(), c.name.to_owned(), c.arguments.clone())).collect();
    assert_eq!(
        calls,
        [("call_A".into(), "first".into(), json!({"a": 1})), ("call_B".into(), "second".into(), json!({}))]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let fragments: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta(StreamDelta::ToolCall { index: 0, delta, .. }) => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fragments, "{\"a\":1}", "argument fragments stream as they come");
}

#[test]
fn calls_without_ids_or_index_get_ids_and_empty_arguments_are_an_object() {
    let stream = [
        chunk(json!({"tool_calls": [{"function": {"name": "a", "arguments": ""}}]})),
        chunk(json!({"tool_calls": [{"id": "x", "function": {"name": "b"}}]})),
        chunk(json!({"tool_calls": [{"function": {"arguments": "not json"}}]})),
        finish("stop"),
    ]
    .concat();
    let events = decode(&stream);
    let message = done(&events);
    let calls: Vec<_> =
        message.tool_calls().map(|c| (c.id.to_owned(), c.name.to_owned(), c.arguments.clone())).collect();
    assert_eq!(calls[0], ("call_0".into(), "a".into(), json!({})));
    assert_eq!(calls[1], ("x".into(), "b".into(), json!("not json")), "invalid JSON is kept for the tool to reject");
    assert_eq!(message.stop_reason, StopReason::ToolUse, "`stop` after tool calls still asks for them");
}

#[test]
fn reasoning_fields_refusals_and_text_become_blocks_in_order() {
    let stream = [
        chunk(json!({"reasoning_content": "Think", "content": null})),
        chunk(json!({"reasoning": "ing."})),
        chunk(json!({"content": "Answer"})),
        chunk(json!({"refusal": " refused"})),
        finish("stop"),
        "data: [DONE]\n\n".into(),
    ]
    .concat();
    let message = done(&decode(&stream)).clone();
    assert_eq!(message.content.len(), 2);
    assert!(matches!(&message.content[0], Content::Thinking { thinking, .. } if thinking == "Thinking."));
    assert_eq!(message.text(), "Answer refused");
}

#[test]
fn usage_after_the_finish_reason_and_cached_tokens() {
    let stream = [
        chunk(json!({"content": "x"})),
        finish("length"),
        format!(
            "data: {}\n\n",
            json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107,
                "prompt_tokens_details": {"cached_tokens": 60}}})
        ),
        "data: [DONE]\n\n".into(),
    ]
    .concat();
    let message = done(&decode(&stream)).clone();
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.usage, Usage::new(40, 7).with_cache(60, 0).with_total(107));
}

#[test]
fn errors_mid_stream_keep_the_partial_message() {
    let stream = chunk(json!({"content": "par"}))
        + "event: error\ndata: {\"error\":{\"message\":\"Tool call validation failed\",\"code\":\"tool_use_failed\",\"status_code\":400}}\n\n";
    let events = decode(&stream);
    let (error, partial) = failed(&events);
    assert!(matches!(error, ProviderError::Api { status: Some(400), message } if message.contains("tool_use_failed")));
    assert_eq!(partial.text(), "par");
    assert_eq!(partial.stop_reason, StopReason::Error);

    let events = decode("data: {\"error\":{\"message\":\"This model's maximum context length is 8192 tokens\"}}\n\n");
    assert!(matches!(failed(&events).0, ProviderError::ContextOverflow { .. }));

    let events = decode("data: {\"error\":{\"message\":\"upstream busy\",\"code\":503}}\n\n");
    assert!(matches!(failed(&events).0, ProviderError::Unavailable { status: 503, .. }));
}

#[test]
fn a_body_without_done_is_complete_after_a_finish_reason_and_an_error_before() {
    let events = decode(&(chunk(json!({"content": "ok"})) + &finish("stop")));
    assert_eq!(done(&events).text(), "ok");

    let events = decode(&chunk(json!({"content": "cut"})));
    let (error, partial) = failed(&events);
    assert!(matches!(error, ProviderError::Protocol(m) if m.contains("finish reason")));
    assert_eq!(partial.text(), "cut");
}

#[test]
fn content_filter_is_an_error_and_invalid_json_too() {
    let events = decode(&(chunk(json!({"content": "Sure"})) + &finish("content_filter")));
    let (error, partial) = failed(&events);
    assert!(error.to_string().contains("content filter"));
    assert_eq!(partial.text(), "Sure");

    let events = decode("data: {\"choices\": [\n\n");
    assert!(matches!(failed(&events).0, ProviderError::Protocol(m) if m.contains("invalid json")));
}

#[test]
fn nothing_is_decoded_after_the_end_and_fail_is_idempotent() {
    let mut decoder = decoder("openai", "m");
    let mut out = Vec::new();
    decoder.feed((finish("stop") + "data: [DONE]\n\n").as_bytes(), &mut out);
    decoder.feed(chunk(json!({"content": "late"})).as_bytes(), &mut out);
    decoder.fail(ProviderError::Cancelled, &mut out);
    decoder.finish(&mut out);
    assert_eq!(sinew_testing::terminal_count(&out), 1);
    assert_eq!(done(&out).text(), "");
}

#[test]
fn cancellation_marks_the_partial_aborted() {
    let mut decoder = decoder("openai", "m");
    let mut out = Vec::new();
    decoder.feed(chunk(json!({"content": "so far"})).as_bytes(), &mut out);
    decoder.fail(ProviderError::Cancelled, &mut out);
    let (_, partial) = failed(&out);
    assert_eq!((partial.stop_reason, partial.text().as_str()), (StopReason::Aborted, "so far"));
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let out = decoder("openai", "m").decode_all([&b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"[..], &bytes[..]]);
        let terminals = sinew_testing::terminal_count(&out);
        prop_assert_eq!(terminals, 1);
    }
}

/// Issue 16's lesser losses: usage on an error chunk is kept; choices beyond the first and a
/// stream cut before its usage are reported, not silent.
#[test]
fn usage_on_errors_extra_choices_and_missing_usage_are_not_lost_silently() {
    let stream = chunk(json!({"content": "par"}))
        + "data: {\"error\":{\"message\":\"upstream failed\",\"code\":500},\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3,\"total_tokens\":10}}\n\n";
    let events = decode(&stream);
    let (_, partial) = failed(&events);
    assert_eq!((partial.usage.input, partial.usage.output), (7, 3));

    let two_choices = format!(
        "data: {}\n\ndata: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"content": "first"}}, {"index": 1, "delta": {"content": "second"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 2}}),
    ) + "data: [DONE]\n\n";
    let mut text = String::new();
    let logged = sinew_testing::warnings_during(|| text = done(&decode(&two_choices)).text());
    assert_eq!(text, "first");
    assert!(logged.contains("more than one choice"), "{logged}");

    // Without [DONE] and without usage: whole, but said.
    let logged = sinew_testing::warnings_during(|| {
        assert_eq!(done(&decode(&(chunk(json!({"content": "ok"})) + &finish("stop")))).text(), "ok")
    });
    assert!(logged.contains("without [DONE] or usage"), "{logged}");
    // With usage and no [DONE] (servers that never send it): nothing to say.
    let with_usage = chunk(json!({"content": "ok"}))
        + &format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
        );
    assert_eq!(sinew_testing::warnings_during(|| drop(decode(&with_usage))), "");
}

/// serde's reading of a chunk, as the decoder's general way reads it.
fn read_by_serde(data: &str) -> Option<Chunk<'_>> {
    serde_json::from_str(data).ok()
}

/// Every chunk of every recorded Chat Completions stream the fast path reads, it reads as serde
/// does; and it reads most of them (the text deltas).
#[test]
fn recorded_chunks_are_scanned_as_serde_reads_them() {
    let (mut chunks, mut scanned) = (0, 0);
    for (name, bytes, _) in sinew_testing::recorded_streams("chat", 10) {
        for event in &sinew_http::sse::SseDecoder::events_of(&bytes).unwrap() {
            let data = event.data.trim();
            if data.is_empty() || data == "[DONE]" {
                continue;
            }
            chunks += 1;
            if let Some(chunk) = scanned_chunk(data) {
                scanned += 1;
                assert_eq!(Some(chunk), read_by_serde(data), "{name}: {data}");
            }
        }
    }
    assert!(scanned * 2 > chunks, "only {scanned} of {chunks} chunks took the fast path");
}

/// `tool_calls` of many shapes: the pieces of calls, with escaped arguments; `null`s; fields of
/// other types, nested or unknown.
const TOOL_CALLS: &[&str] = &[
    r#"[{"index": 0, "id": "call_1", "type": "function", "function": {"name": "echo", "arguments": ""}}]"#,
    r#"[{"index": 0, "function": {"arguments": "{\"text\": \"call-0\"}"}}]"#,
    r#"[{"index": 1, "function": {"arguments": "\"}\n\u2028\ud83d\ude00"}}, {"index": 0, "function": {"arguments": ""}}]"#,
    r#"[{"index": null, "id": null, "function": null}, {}]"#,
    r#"[{"index": 0, "function": {"name": null, "arguments": null, "other": 2}}]"#,
    r#"[{"index": 0, "function": {"name": "f", "x": {"nested": 1}}}]"#,
    r#"[{"index": -1}]"#,
    r#"[{"index": 1.5}]"#,
    r#"[{"id": "a\"b"}]"#,
    r#"[{"function": {"name": 1}}]"#,
    r#"[{"function": {"arguments": "bad \x escape"}}]"#,
    r#"[{"index": 0, "id": 5}]"#,
    r#"[{"function": ["x"]}]"#,
    r#"[{"index": 0, "index": 1}]"#,
    r#"[]"#,
    r#"null"#,
];

/// A chunk of one token or tool-call piece in one of many shapes: keys in any order, `null`s, a
/// key twice, extra scalars and objects, whitespace, escapes, numbers out of range.
fn token_chunks() -> impl Strategy<Value = String> {
    let text = prop_oneof![
        6 => Just(json!("hi")),
        3 => Just(json!(null)),
        1 => Just(json!("a\nb \"q\" \\ \u{1} é")),
        1 => Just(json!(7)),
        1 => Just(json!(["x"])),
    ];
    // What `tool_calls` holds: mostly calls, some other text.
    let calls = prop_oneof![
        3 => proptest::sample::select(TOOL_CALLS)
            .prop_map(|calls| serde_json::from_str(calls).unwrap_or(serde_json::Value::Null)),
        1 => text.clone(),
    ];
    let delta_key = prop_oneof![
        4 => Just("content"),
        1 => Just("reasoning_content"),
        1 => Just("reasoning"),
        1 => Just("refusal"),
        1 => Just("role"),
        4 => Just("tool_calls"),
        1 => Just("other"),
    ];
    let delta = proptest::collection::vec((delta_key, text.clone(), calls), 0..4);
    let index = prop_oneof![
        4 => Just(json!(0)),
        1 => Just(json!(1)),
        1 => Just(json!(-1)),
        1 => Just(json!(1.0)),
        1 => Just(json!(5_000_000_000_u64)),
    ];
    let choice_key = prop_oneof![
        3 => Just("index"),
        3 => Just("delta"),
        1 => Just("finish_reason"),
        1 => Just("logprobs"),
        1 => Just("x"),
    ];
    let choice = (proptest::collection::vec(choice_key, 0..5), index, delta, text.clone());
    let top_key = prop_oneof![
        4 => Just("choices"),
        1 => Just("model"),
        1 => Just("usage"),
        1 => Just("id"),
        1 => Just("created"),
        1 => Just("error"),
    ];
    (proptest::collection::vec(top_key, 0..6), proptest::collection::vec(choice, 0..3), text, proptest::bool::ANY)
        .prop_map(|(top, choices, value, spaced)| {
            let member = |key: &str, value: &serde_json::Value| format!("{}:{value}", json!(key));
            let choices: Vec<String> = choices
                .iter()
                .map(|(keys, index, delta, value)| {
                    let delta: Vec<String> = delta
                        .iter()
                        .map(|(k, text, calls)| member(k, if *k == "tool_calls" { calls } else { text }))
                        .collect();
                    let members: Vec<String> = keys
                        .iter()
                        .map(|key| match *key {
                            "index" => member(key, index),
                            "delta" => format!("\"delta\":{{{}}}", delta.join(",")),
                            _ => member(key, value),
                        })
                        .collect();
                    format!("{{{}}}", members.join(","))
                })
                .collect();
            let members: Vec<String> = top
                .iter()
                .map(|key| match *key {
                    "choices" => format!("\"choices\":[{}]", choices.join(",")),
                    "created" => member(key, &json!(1_700_000_000)),
                    _ => member(key, &value),
                })
                .collect();
            let separator = if spaced { " ,\n " } else { "," };
            format!("{{{}}}", members.join(separator))
        })
}

/// A chunk of one choice whose delta holds one or two (a key twice) of [`TOOL_CALLS`].
fn delta_chunks() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(TOOL_CALLS), 1..3).prop_map(|calls| {
        let members: Vec<String> = calls.iter().map(|calls| format!("\"tool_calls\":{calls}")).collect();
        format!("{{\"id\":\"c\",\"choices\":[{{\"index\":0,\"delta\":{{{}}}}}]}}", members.join(","))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Whatever chunk the fast path reads, serde reads alike: the fast path never reads a chunk
    /// serde refuses, nor reads one otherwise.
    #[test]
    fn scanned_chunks_are_what_serde_reads(data in token_chunks()) {
        if let Some(chunk) = scanned_chunk(&data) {
            prop_assert_eq!(Some(chunk), read_by_serde(&data), "{}", data);
        }
    }

    /// The same of tool calls, in every shape of [`TOOL_CALLS`].
    #[test]
    fn scanned_tool_calls_are_what_serde_reads(data in delta_chunks()) {
        if let Some(chunk) = scanned_chunk(&data) {
            prop_assert_eq!(Some(chunk), read_by_serde(&data), "{}", data);
        }
    }
}

/// Text with escapes and the pieces of tool calls (whose arguments are escaped JSON) are read in
/// place, as serde reads them.
#[test]
fn escaped_text_and_tool_calls_take_the_fast_path() {
    for delta in [
        json!({"content": "line\n\"quoted\"\ttab é"}),
        json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "echo", "arguments": ""}}]}),
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"text\": \"call-0\"}"}}]}),
    ] {
        let data =
            json!({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": null, "logprobs": null}]})
                .to_string();
        let chunk = scanned_chunk(&data);
        assert!(chunk.is_some(), "{data}");
        assert_eq!(chunk, read_by_serde(&data), "{data}");
    }
}
