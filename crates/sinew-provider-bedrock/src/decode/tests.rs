use proptest::prelude::*;
use serde_json::json;

use sinew_http::StreamDecoder;

use super::*;
use crate::eventstream::{HeaderValue, encode, event_frame, exception_frame};

fn decode(bytes: &[u8]) -> Vec<StreamEvent> {
    decoder("m").decode_all([bytes])
}

#[test]
fn message_stop_without_metadata_completes_at_the_end_of_the_body() {
    let bytes = [
        event_frame(
            "contentBlockStart",
            &json!({"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}),
        ),
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"a\":"}}})),
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "1}"}}})),
        event_frame("contentBlockStop", &json!({"contentBlockIndex": 0})),
        event_frame("messageStop", &json!({"stopReason": "tool_use"})),
    ]
    .concat();
    let events = decode(&bytes);
    let Some(StreamEvent::Done(message)) = events.last() else { panic!("{events:?}") };
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    assert_eq!(message.tool_calls().next().unwrap().arguments, &json!({"a": 1}));
}

/// Text deltas read on the typed path and those read whole give what a JSON tree gives: padding
/// is skipped, an index of another type is block 0, a payload that is an array is nothing.
#[test]
fn deltas_of_every_shape_read_as_a_json_tree_reads_them() {
    let bytes = [
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "a"}, "p": "abcdefgh"})),
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": "0", "delta": {"text": "b"}})),
        event_frame("contentBlockDelta", &json!([0, {"text": "by position"}])),
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": [{"text": "by position"}]})),
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": 5}})),
        event_frame("messageStop", &json!({"stopReason": "end_turn"})),
    ]
    .concat();
    let events = decode(&bytes);
    let Some(StreamEvent::Done(message)) = events.last() else { panic!("{events:?}") };
    assert_eq!(message.content, [Content::text("ab")]);
    // Padding that is not UTF-8 is invalid JSON, read on either path.
    let headers = [
        (":event-type", HeaderValue::String("contentBlockDelta".into())),
        (":message-type", HeaderValue::String("event".into())),
    ];
    let events =
        decode(&encode(&headers, b"{\"contentBlockIndex\": 0, \"delta\": {\"text\": \"a\"}, \"p\": \"\xff\"}"));
    assert!(
        matches!(events.last(), Some(StreamEvent::Error { error, .. }) if error.to_string().contains("invalid json")),
        "{events:?}"
    );
}

#[test]
fn exceptions_map_by_type() {
    let cases = [
        ("throttlingException", "slow"),
        ("validationException", "Input is too long for requested model."),
        ("modelStreamErrorException", "boom"),
        ("accessDeniedException", "no"),
    ];
    for (kind, message) in cases {
        let events = decode(&exception_frame(kind, message));
        let Some(StreamEvent::Error { error, .. }) = events.last() else { panic!("{events:?}") };
        let ok = match kind {
            "throttlingException" => matches!(error, ProviderError::RateLimited { .. }),
            "validationException" => matches!(error, ProviderError::ContextOverflow { .. }),
            "modelStreamErrorException" => error.is_retryable(),
            _ => matches!(error, ProviderError::Auth(_)),
        };
        assert!(ok, "{kind}: {error:?}");
    }
    let events = decode(&event_frame("messageStop", &json!({"stopReason": "guardrail_intervened"})));
    assert!(matches!(events.last(), Some(StreamEvent::Error { error, .. }) if error.to_string().contains("guardrail")));
}

#[test]
fn error_frames_end_the_stream_with_their_code_and_message() {
    let frame = encode(
        &[
            (":message-type", HeaderValue::String("error".into())),
            (":error-code", HeaderValue::String("InternalFailure".into())),
            (":error-message", HeaderValue::String("something broke".into())),
        ],
        b"",
    );
    let bytes =
        [event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "so far"}})), frame]
            .concat();
    let events = decode(&bytes);
    let Some(StreamEvent::Error { error, partial }) = events.last() else { panic!("{events:?}") };
    assert_eq!(error, &ProviderError::Api { status: None, message: "something broke [InternalFailure]".into() });
    assert_eq!(partial.text(), "so far");
}

proptest! {
    /// Frames with valid CRCs around arbitrary headers and payloads: errors, never panics.
    #[test]
    fn valid_frames_of_garbage_never_panic(payload in proptest::collection::vec(any::<u8>(), 0..128), kind in "[a-zA-Z:]{0,12}") {
        let frame = encode(&[(":event-type", HeaderValue::String(kind)), (":message-type", HeaderValue::String("event".into()))], &payload);
        let events = decode(&frame);
        let terminals = sinew_testing::terminal_count(&events);
        prop_assert_eq!(terminals, 1);
    }
}

#[test]
fn a_server_tool_results_text_parts_join_and_other_parts_stay_apart() {
    let mut content = Vec::new();
    for part in
        [json!({"text": "700"}), json!({"text": "6652"}), json!({"json": {"exitCode": 0}}), json!({"text": "!"})]
    {
        append_result_part(&mut content, &part);
    }
    assert_eq!(content, [json!({"text": "7006652"}), json!({"json": {"exitCode": 0}}), json!({"text": "!"})]);
}
