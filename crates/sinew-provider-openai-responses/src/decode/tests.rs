use proptest::prelude::*;
use serde_json::json;

use sinew_http::StreamDecoder;

use super::*;

fn event(payload: Value) -> String {
    format!("event: {}\ndata: {payload}\n\n", payload["type"].as_str().unwrap())
}

fn decode(events: &[Value]) -> Vec<StreamEvent> {
    let stream: String = events.iter().cloned().map(event).collect();
    decoder("openai_responses", "m").decode_all([stream.as_bytes()])
}

fn completed(status: &str, reason: Option<&str>) -> Value {
    json!({"type": "response.completed", "response": {"status": status, "incomplete_details": reason.map(|r| json!({"reason": r})),
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3, "total_tokens": 13}}})
}

fn call_added() -> Value {
    json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}})
}

/// Events whose fields are of other shapes than expected read as a JSON tree reads them: an odd
/// `output_index` on an event that needs none changes nothing, a payload that is not an object
/// takes its type from the event's name.
#[test]
fn events_of_other_shapes_read_as_a_json_tree_reads_them() {
    let message_added = json!({"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "message", "id": "msg_1", "content": []}});
    let stream = [
        "event: response.created\ndata: {\"type\": \"response.created\", \"output_index\": -1, \"response\": {\"model\": \"gpt-x\"}}\n\n".to_owned(),
        event(message_added),
        event(json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"})),
        event(json!({"type": "response.output_text.delta", "output_index": 0, "delta": {"text": "odd"}})),
        "event: response.in_progress\ndata: 42\n\n".to_owned(),
        event(completed("completed", None)),
    ]
    .concat();
    let events = decoder("openai_responses", "m").decode_all([stream.as_bytes()]);
    let Some(StreamEvent::Done(message)) = events.last() else { panic!("{events:?}") };
    assert_eq!((message.model.as_str(), message.text()), ("gpt-x", "Hi".to_owned()));
    // A delta whose output index is of another type names no item: an error, as before.
    let odd = [event(json!({"type": "response.output_text.delta", "output_index": "0", "delta": "x"}))].concat();
    let events = decoder("openai_responses", "m").decode_all([odd.as_bytes()]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error, .. }) if error.to_string().contains("never added")),
        "{events:?}"
    );
}

#[test]
fn argument_deltas_are_checked_against_done_which_wins() {
    let events = decode(&[
        call_added(),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"a\":"}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "1"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 0, "arguments": "{\"a\":1}"}),
        completed("completed", None),
    ]);
    let Some(StreamEvent::Done(message)) = events.last() else { panic!("{events:?}") };
    assert_eq!(message.tool_calls().next().unwrap().arguments, &json!({"a": 1}), "`.done` completes a cut delta");
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert!(
        matches!(&events[1], StreamEvent::Delta(StreamDelta::ToolCall { id: Some(id), name: Some(n), .. }) if id == "call_1" && n == "f")
    );
    assert_eq!(message.usage, Usage::new(6, 3).with_cache(4, 0).with_total(13));
}

#[test]
fn summary_parts_are_separated_and_encrypted_reasoning_is_kept() {
    let events = decode(&[
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "One."}),
        json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 1}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Two."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC"}}),
        completed("completed", None),
    ]);
    let Some(StreamEvent::Done(message)) = events.last() else { panic!("{events:?}") };
    assert_eq!(
        message.content,
        [Content::Thinking {
            thinking: "One.\n\nTwo.".into(),
            signature: Some("ENC".into()),
            redacted: false,
            id: Some("rs_1".into())
        }]
    );
}

#[test]
fn incomplete_is_length_and_failures_are_errors() {
    let events = decode(&[completed("incomplete", Some("max_output_tokens"))]);
    assert!(matches!(events.last(), Some(StreamEvent::Done(m)) if m.stop_reason == StopReason::Length));

    let events = decode(&[completed("incomplete", Some("content_filter"))]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error, .. }) if error.to_string().contains("content filter"))
    );

    let events = decode(&[
        json!({"type": "response.failed", "response": {"error": {"code": "context_length_exceeded", "message": "too long"}}}),
    ]);
    assert!(matches!(events.last(), Some(StreamEvent::Error { error: ProviderError::ContextOverflow { .. }, .. })));

    let events = decode(&[json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"})]);
    assert!(matches!(events.last(), Some(StreamEvent::Error { error: ProviderError::RateLimited { .. }, .. })));

    let events = decode(&[json!({"type": "response.output_text.delta", "output_index": 7, "delta": "x"})]);
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error: ProviderError::Protocol(m), .. }) if m.contains("never added"))
    );
}

#[test]
fn a_stream_cut_before_completion_keeps_the_partial_call() {
    let events = decode(&[
        call_added(),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"a\":2}"}),
    ]);
    let Some(StreamEvent::Error { error, partial }) = events.last() else { panic!("{events:?}") };
    assert!(matches!(error, ProviderError::Protocol(m) if m.contains("response.completed")));
    assert_eq!(partial.tool_calls().next().unwrap().arguments, &json!({"a": 2}));
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let out = decoder("openai_responses", "m").decode_all([event(call_added()).as_bytes(), &bytes[..]]);
        let terminals = sinew_testing::terminal_count(&out);
        prop_assert_eq!(terminals, 1);
    }
}

/// The typed head of an event, where it reads, and the head of the event read whole.
fn heads(data: &str) -> Option<(Head<'_>, Value)> {
    let typed = serde_json::from_str::<Head<'_>>(data).ok()?;
    Some((typed, serde_json::from_str(data).ok()?))
}

/// Every event of every recorded Responses stream whose head reads typed reads as the event
/// read whole: the deltas, and the lifecycle events' model, status and usage.
#[test]
fn recorded_heads_read_as_the_whole_events() {
    let mut lifecycle = 0;
    for (name, bytes, _) in sinew_testing::recorded_streams("responses", 10) {
        for event in &sinew_http::sse::SseDecoder::events_of(&bytes).unwrap() {
            let data = event.data.trim();
            if let Some((typed, whole)) = heads(data) {
                lifecycle += usize::from(typed.response.0.is_some());
                assert_eq!(typed, Head::of(&whole), "{name}: {data}");
            }
        }
    }
    assert!(lifecycle >= 30, "only {lifecycle} lifecycle events");
}

/// A lifecycle event in many shapes: counts of every JSON type, fields missing, nested or
/// given twice, `response` and its parts of other types.
fn lifecycle_events() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        4 => Just(json!(12)),
        1 => Just(json!(0)),
        1 => Just(json!(-3)),
        1 => Just(json!(2.0)),
        1 => Just(json!("7")),
        1 => Just(json!(null)),
        1 => Just(json!([1])),
        1 => Just(json!({"cached_tokens": 3})),
        1 => Just(json!(u64::MAX)),
        1 => Just(json!("incomplete")),
    ];
    let usage_key = prop_oneof![
        Just("input_tokens"),
        Just("output_tokens"),
        Just("total_tokens"),
        Just("input_tokens_details"),
        Just("other"),
    ];
    let response_key =
        prop_oneof![Just("model"), Just("status"), Just("usage"), Just("incomplete_details"), Just("output"),];
    (
        proptest::collection::vec((usage_key, value.clone()), 0..5),
        proptest::collection::vec((response_key, value.clone()), 0..5),
        value,
        0..3_u8,
    )
        .prop_map(|(usage, response, other, shape)| {
            let member = |key: &str, value: &Value| format!("{}:{value}", json!(key));
            let usage: Vec<String> = usage.iter().map(|(k, v)| member(k, v)).collect();
            let response: Vec<String> = response
                .iter()
                .map(|(key, value)| match *key {
                    "usage" => format!("\"usage\":{{{}}}", usage.join(",")),
                    "incomplete_details" => format!("\"incomplete_details\":{{\"reason\":{value}}}"),
                    _ => member(key, value),
                })
                .collect();
            let response = match shape {
                0 => format!("{{{}}}", response.join(",")),
                1 => other.to_string(),
                _ => format!("{{{}}},\"response\":{{}}", response.join(",")),
            };
            format!("{{\"type\":\"response.completed\",\"response\":{response}}}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// Whatever lifecycle event reads typed reads as the event read whole.
    #[test]
    fn typed_lifecycle_heads_are_the_whole_reading(data in lifecycle_events()) {
        if let Some((typed, whole)) = heads(&data) {
            prop_assert_eq!(typed, Head::of(&whole), "{}", data);
        }
    }
}

/// Every event of the recorded streams whose head reads in place reads as serde reads it; the
/// deltas (most events) do.
#[test]
fn recorded_heads_are_scanned_as_serde_reads_them() {
    let (mut events, mut scanned) = (0, 0);
    for (name, bytes, _) in sinew_testing::recorded_streams("responses", 10) {
        for event in &sinew_http::sse::SseDecoder::events_of(&bytes).unwrap() {
            let data = event.data.trim();
            events += 1;
            if let Some(head) = scanned_head(data) {
                scanned += 1;
                assert_eq!(Some(head), serde_json::from_str::<Head<'_>>(data).ok(), "{name}: {data}");
            }
        }
    }
    assert!(scanned * 3 > events, "only {scanned} of {events} events took the fast path");
}

/// A delta in many shapes: keys in any order, twice, of other types, nested, escaped.
fn delta_events() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        4 => Just(json!("hi")),
        2 => Just(json!(3)),
        1 => Just(json!(null)),
        1 => Just(json!(-1)),
        1 => Just(json!(1.5)),
        1 => Just(json!("a\nb \"q\" \\ \u{1} é")),
        1 => Just(json!([])),
        1 => Just(json!({"a": [{"b": true}]})),
    ];
    let key = prop_oneof![
        3 => Just("type"),
        2 => Just("output_index"),
        3 => Just("delta"),
        1 => Just("arguments"),
        1 => Just("response"),
        1 => Just("sequence_number"),
        1 => Just("logprobs"),
    ];
    proptest::collection::vec((key, value), 0..6).prop_map(|members| {
        let members: Vec<String> = members.iter().map(|(k, v)| format!("{}:{v}", json!(k))).collect();
        format!("{{{}}}", members.join(","))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// Whatever delta the fast path reads, serde reads alike.
    #[test]
    fn scanned_heads_are_what_serde_reads(data in delta_events()) {
        if let Some(head) = scanned_head(&data) {
            prop_assert_eq!(Some(head), serde_json::from_str::<Head<'_>>(&data).ok(), "{}", data);
        }
    }
}
