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
