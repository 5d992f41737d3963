use proptest::prelude::*;
use serde_json::json;

use sinew_http::StreamDecoder;

use super::*;

/// An SSE frame of `payload`, named by its `type`.
fn frame(payload: Value) -> String {
    format!("event: {}\ndata: {payload}\n\n", payload["type"].as_str().unwrap())
}

/// The start of tool-use block 0, call `t` of tool `name`.
fn tool_use_start(name: &str) -> String {
    frame(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": name, "input": {}}}),
    )
}

/// A fragment of block 0's input.
fn input_fragment(partial: &str) -> String {
    frame(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": partial}}),
    )
}

fn start() -> String {
    frame(
        json!({"type": "message_start", "message": {"id": "m", "model": "claude-t", "usage": {"input_tokens": 3, "output_tokens": 1}}}),
    )
}

fn decode(stream: &str) -> Vec<StreamEvent> {
    crate::decoder("requested").decode_all([stream.as_bytes()])
}

fn terminal(events: &[StreamEvent]) -> (&AssistantMessage, Option<&ProviderError>) {
    match events.last() {
        Some(StreamEvent::Done(m)) => (m, None),
        Some(StreamEvent::Error { partial, error }) => (partial, Some(error)),
        other => panic!("no terminal event: {other:?}"),
    }
}

#[test]
fn a_mid_stream_error_keeps_the_partial_text() {
    let stream = start()
        + &frame(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
        + &frame(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half"}}))
        + &frame(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}));
    let events = decode(&stream);
    let (partial, error) = terminal(&events);
    assert_eq!(error, Some(&ProviderError::Unavailable { status: 529, message: "Overloaded".into() }));
    assert_eq!((partial.text().as_str(), partial.stop_reason), ("Half", StopReason::Error));
    assert_eq!(events.iter().filter(|e| matches!(e, StreamEvent::Error { .. })).count(), 1);
}

#[test]
fn error_types_map_to_provider_errors() {
    for (kind, message, expected) in [
        ("rate_limit_error", "slow", ProviderError::RateLimited { retry_after_ms: None, message: "slow".into() }),
        ("authentication_error", "key", ProviderError::Auth("key".into())),
        ("api_error", "boom", ProviderError::Unavailable { status: 500, message: "boom".into() }),
        (
            "invalid_request_error",
            "prompt is too long: 1 > 0",
            ProviderError::ContextOverflow { message: "prompt is too long: 1 > 0".into() },
        ),
        ("invalid_request_error", "bad", ProviderError::Api { status: Some(400), message: "bad".into() }),
    ] {
        let events = decode(&frame(json!({"type": "error", "error": {"type": kind, "message": message}})));
        assert_eq!(terminal(&events).1, Some(&expected), "{kind}");
    }
}

#[test]
fn a_stream_cut_before_message_stop_is_an_error_with_what_arrived() {
    let stream = start()
        + &frame(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
        + &frame(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "cut"}}));
    let events = decode(&stream);
    let (partial, error) = terminal(&events);
    assert_eq!(partial.text(), "cut");
    assert_eq!(error, Some(&ProviderError::Protocol("the stream ended before message_stop".into())));
}

#[test]
fn malformed_payloads_are_clear_protocol_errors() {
    let events = decode(&(start() + "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"ind\n\n"));
    let Some(ProviderError::Protocol(message)) = terminal(&events).1 else { panic!("{events:?}") };
    assert!(message.starts_with("invalid json in `content_block_delta` event"), "{message}");

    let events = decode(
        &(start()
            + &frame(json!({"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": "x"}}))),
    );
    assert_eq!(
        terminal(&events).1,
        Some(&ProviderError::Protocol("delta for content block 4, which never started".into()))
    );

    let stream = start()
        + &tool_use_start("f")
        + &input_fragment("{\"a\": ")
        + &frame(json!({"type": "content_block_stop", "index": 0}))
        + &frame(
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}}),
        )
        + &frame(json!({"type": "message_stop"}));
    // Arguments the output limit cut off are kept as their raw text (the loop answers the call
    // instead of running it), and the rest of the answer is not lost.
    let events = decode(&stream);
    let (message, error) = terminal(&events);
    assert_eq!(error, None, "{events:?}");
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.tool_calls().next().unwrap().arguments, &json!("{\"a\": "));
}

/// A tool block the stream never stopped keeps its fragment as raw text, not the `{}` it began
/// with: an empty object would run the tool as if the call were whole.
#[test]
fn an_unstopped_tool_block_keeps_its_fragment() {
    let stream = start()
        + &tool_use_start("f")
        + &input_fragment("{\"path\": \"src/ma")
        + &frame(
            json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 9}}),
        )
        + &frame(json!({"type": "message_stop"}));
    let events = decode(&stream);
    let (message, error) = terminal(&events);
    assert_eq!(error, None, "{events:?}");
    assert_eq!(message.tool_calls().next().unwrap().arguments, &json!("{\"path\": \"src/ma"));
}

#[test]
fn tool_calls_without_input_fragments_take_an_empty_object() {
    let stream = start()
        + &tool_use_start("now")
        + &frame(json!({"type": "content_block_stop", "index": 0}))
        + &frame(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}))
        + &frame(json!({"type": "message_stop"}));
    let events = decode(&stream);
    let (message, error) = terminal(&events);
    assert_eq!(error, None);
    assert_eq!(message.content, [Content::tool_call("t", "now", json!({}))]);
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.usage, Usage::new(3, 9).with_cache(0, 0).with_total(12));
}

#[test]
fn unknown_blocks_are_kept_whole_with_their_streamed_input() {
    let stream = start()
        + &frame(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}}),
        )
        + &frame(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"x\"}"}}),
        )
        + &frame(json!({"type": "content_block_stop", "index": 0}))
        + &frame(
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "future_block", "payload": [1, 2]}}),
        )
        + &frame(json!({"type": "content_block_stop", "index": 1}))
        + &frame(json!({"type": "message_stop"}));
    let events = decode(&stream);
    let (message, _) = terminal(&events);
    assert_eq!(
        message.content,
        [
            Content::Opaque {
                provider: "anthropic".into(),
                data: json!({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {"query": "x"}})
            },
            Content::Opaque { provider: "anthropic".into(), data: json!({"type": "future_block", "payload": [1, 2]}) },
        ]
    );
    assert_eq!(message.tool_calls().count(), 0, "server tools are not ours to run");
}

#[test]
fn stop_reasons_map_to_ours() {
    for (theirs, ours) in [
        ("end_turn", StopReason::Stop),
        ("stop_sequence", StopReason::Stop),
        ("pause_turn", StopReason::PauseTurn),
        ("refusal", StopReason::Refusal),
        ("max_tokens", StopReason::Length),
        ("model_context_window_exceeded", StopReason::Length),
        ("tool_use", StopReason::ToolUse),
    ] {
        assert_eq!(stop_reason(theirs), ours, "{theirs}");
    }
}

proptest::proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        let out = crate::decoder("m").decode_all([&bytes]);
        let ends_well = matches!(out.last(), Some(StreamEvent::Done(_) | StreamEvent::Error { .. }));
        proptest::prop_assert!(ends_well, "every stream ends with one terminal event");
    }
}

#[test]
fn pause_turn_is_its_own_stop_reason() {
    let stream = start()
        + &frame(
            json!({"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {"output_tokens": 2}}),
        )
        + &frame(json!({"type": "message_stop"}));
    let events = decode(&stream);
    assert_eq!(terminal(&events).0.stop_reason, StopReason::PauseTurn);
}

/// Deltas read on the typed path and those read whole give what a JSON tree gives: a delta that is
/// an array is nothing (not a text read by position), a text delta on a block sinew does not model
/// is kept in it, and a signature follows thinking read on the typed path.
#[test]
fn deltas_of_every_shape_read_as_a_json_tree_reads_them() {
    let stream = [
        start(),
        frame(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})),
        frame(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}})),
        frame(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}})),
        frame(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})),
        frame(json!({"type": "content_block_delta", "index": 1, "delta": ["text_delta", "by position"]})),
        frame(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": 5}})),
        frame(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "ok"}})),
        frame(json!({"type": "content_block_start", "index": 2, "content_block": {"type": "mystery", "text": "a"}})),
        frame(json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "b"}})),
        frame(json!({"type": "message_stop"})),
    ]
    .concat();
    let events = decode(&stream);
    let (message, error) = terminal(&events);
    assert_eq!(error, None);
    assert_eq!(
        message.content,
        [
            Content::Thinking { thinking: "hm".into(), signature: Some("sig".into()), redacted: false, id: None },
            Content::text("ok"),
            Content::Opaque { provider: PROVIDER_ID.into(), data: json!({"type": "mystery", "text": "ab"}) },
        ]
    );
    // A top-level array named as a delta is an event without an index, as before.
    let array = format!("{}event: content_block_delta\ndata: [0, {{\"text\": \"hi\"}}]\n\n", start());
    let events = decode(&array);
    let (_, error) = terminal(&events);
    assert!(error.is_some_and(|e| e.to_string().contains("without index")), "{events:?}");
}

/// What the typed reading makes of an event.
fn read_by_serde(data: &str) -> Option<DeltaEvent<'_>> {
    serde_json::from_str(data).ok()
}

/// What reading in place found agrees with the typed reading: the same delta, or, for another
/// event, no delta the typed reading would take.
fn agrees(data: &str) -> Result<bool, String> {
    match scanned_event(data) {
        Scanned::Delta(head) if Some(&head) == read_by_serde(data).as_ref() => Ok(true),
        Scanned::Other if read_by_serde(data).is_none_or(|head| head.kind.as_str() != Some("content_block_delta")) => {
            Ok(true)
        }
        Scanned::Unread => Ok(false),
        scanned => Err(format!("{scanned:?} but serde reads {:?}", read_by_serde(data))),
    }
}

/// Every event of the recorded Anthropic streams read in place reads as the typed reading does,
/// and most of them are.
#[test]
fn recorded_events_are_scanned_as_serde_reads_them() {
    let (mut events, mut scanned) = (0, 0);
    for (name, bytes, _) in sinew_testing::recorded_streams("anthropic", 10) {
        for event in &sinew_http::sse::SseDecoder::events_of(&bytes).unwrap() {
            events += 1;
            scanned += usize::from(agrees(&event.data).unwrap_or_else(|e| panic!("{name}: {}: {e}", event.data)));
        }
    }
    assert!(scanned * 2 > events, "only {scanned} of {events} events were read in place");
}

/// An event in many shapes: keys in any order, twice, of other types, nested, escaped.
fn events() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        4 => Just(json!("hi")),
        2 => Just(json!(2)),
        1 => Just(json!(null)),
        1 => Just(json!(-1)),
        1 => Just(json!("a\nb \"q\" \\ \u{1} é")),
        1 => Just(json!([1, {"a": null}])),
    ];
    let kind = prop_oneof![
        4 => Just(json!("content_block_delta")),
        1 => Just(json!("message_delta")),
        1 => Just(json!(7)),
    ];
    let delta_key = prop_oneof![
        3 => Just("type"),
        3 => Just("text"),
        1 => Just("thinking"),
        1 => Just("partial_json"),
        1 => Just("signature"),
    ];
    let delta = proptest::collection::vec((delta_key, value.clone()), 0..4);
    let key = prop_oneof![3 => Just("type"), 2 => Just("index"), 3 => Just("delta"), 1 => Just("usage")];
    (proptest::collection::vec(key, 0..5), kind, delta, value).prop_map(|(keys, kind, delta, value)| {
        let delta: Vec<String> = delta.iter().map(|(k, v)| format!("{}:{v}", json!(k))).collect();
        let members: Vec<String> = keys
            .iter()
            .map(|key| match *key {
                "type" => format!("\"type\":{kind}"),
                "delta" => format!("\"delta\":{{{}}}", delta.join(",")),
                "index" => format!("\"index\":{value}"),
                _ => format!("{}:{value}", json!(key)),
            })
            .collect();
        format!("{{{}}}", members.join(","))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Whatever event is read in place reads as the typed reading does.
    #[test]
    fn scanned_events_are_what_serde_reads(data in events()) {
        prop_assert!(agrees(&data).is_ok(), "{}: {:?}", data, agrees(&data));
    }
}
