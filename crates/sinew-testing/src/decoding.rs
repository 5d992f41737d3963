//! Checks every provider decoder's tests share.

use std::fmt::Debug;

use serde_json::{Value, json};
use sinew_core::{AssistantMessage, Content, ProviderError, StreamDelta, StreamEvent};

use crate::fixtures::split_at_points;

/// How a decoded stream ended: its final message, or its partial message and the error. The
/// timestamp is zeroed (it records when decoding happened, which differs between runs).
pub fn stream_outcome(events: &[StreamEvent]) -> (AssistantMessage, Option<ProviderError>) {
    let (mut message, error) = match events.last() {
        Some(StreamEvent::Done(message)) => (AssistantMessage::clone(message), None),
        Some(StreamEvent::Error { error, partial }) => (AssistantMessage::clone(partial), Some(error.clone())),
        other => panic!("a stream must end with Done or Error; it ended with {other:?}"),
    };
    message.timestamp = 0;
    (message, error)
}

/// How many terminal events (`Done` or `Error`) a decoded stream holds; a decoder emits exactly one.
pub fn terminal_count(events: &[StreamEvent]) -> usize {
    events.iter().filter(|e| matches!(e, StreamEvent::Done(_) | StreamEvent::Error { .. })).count()
}

/// The text deltas of a decoded stream, concatenated.
pub fn text_deltas(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta(StreamDelta::Text { delta, .. }) => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// Panics unless the decoded text `got` is `want` and the streamed text deltas add up to it.
pub fn assert_text(name: &str, events: &[StreamEvent], got: &str, want: &str) {
    assert_eq!(got, want, "{name}: text");
    assert_eq!(text_deltas(events), want, "{name}: the deltas add up to the text");
}

/// The thinking text of a message, its blocks concatenated.
pub fn thinking_text(message: &AssistantMessage) -> String {
    message
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Thinking { thinking, .. } => Some(thinking.as_str()),
            _ => None,
        })
        .collect()
}

/// A message's tool calls as a wire protocol's recordings name them: `{id_key, "name",
/// arguments_key}` objects, in order.
pub fn tool_calls_json(message: &AssistantMessage, id_key: &str, arguments_key: &str) -> Vec<Value> {
    message
        .tool_calls()
        .map(|c| {
            let mut call = json!({"name": c.name});
            call[id_key] = json!(c.id);
            call[arguments_key] = c.arguments.clone();
            call
        })
        .collect()
}

/// Panics unless `decode` gives the same result for `bytes` fed whole and fed in chunks cut at
/// `points` (any values; see [`split_at_points`]).
pub fn assert_chunking_changes_nothing<T: PartialEq + Debug>(
    name: &str,
    bytes: &[u8],
    points: &[usize],
    decode: impl Fn(&[&[u8]]) -> T,
) {
    let whole = decode(&[bytes]);
    let chunked = decode(&split_at_points(bytes, points));
    assert_eq!(chunked, whole, "{name}: cut at {points:?}");
}

/// [`assert_chunking_changes_nothing`] with every byte its own chunk.
pub fn assert_byte_by_byte_changes_nothing<T: PartialEq + Debug>(
    name: &str,
    bytes: &[u8],
    decode: impl Fn(&[&[u8]]) -> T,
) {
    let whole = decode(&[bytes]);
    let single: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(decode(&single), whole, "{name}: byte by byte");
}

/// Decodes a recorded structured answer (the stream of a request that asked for JSON fitting a
/// schema) whole and byte by byte, and returns its message after checking that it ended well and
/// that its text is `expected`, the JSON value the service answered.
pub fn assert_structured_answer(
    name: &str,
    bytes: &[u8],
    decode: impl Fn(&[&[u8]]) -> Vec<StreamEvent>,
    expected: &serde_json::Value,
) -> AssistantMessage {
    let (message, error) = stream_outcome(&decode(&[bytes]));
    assert_eq!(error, None, "{name}");
    let answer: serde_json::Value = serde_json::from_str(&message.text())
        .unwrap_or_else(|error| panic!("{name}: the answer is not JSON ({error}): {}", message.text()));
    assert_eq!(&answer, expected, "{name}");
    assert_byte_by_byte_changes_nothing(name, bytes, |chunks| {
        let (message, _) = stream_outcome(&decode(chunks));
        (message.content, message.stop_reason, message.usage)
    });
    message
}

/// Two tests in the calling crate (which needs `proptest` as a dev-dependency): every stream of
/// `fixtures` (a function returning `(name, bytes, _)`s) decodes to the same `outcome` (a
/// function of the chunks) whole and cut at 64 sets of random points, and whole and byte by
/// byte.
#[macro_export]
macro_rules! chunking_checks {
    (fixtures: $fixtures:path, outcome: $outcome:expr $(,)?) => {
        proptest::proptest! {
            #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

            #[test]
            fn any_chunking_gives_the_same_message(
                cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 1..12)
            ) {
                for (name, bytes, _) in $fixtures() {
                    let points: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
                    $crate::assert_chunking_changes_nothing(&name, &bytes, &points, $outcome);
                }
            }
        }

        #[test]
        fn byte_by_byte_gives_the_same_message() {
            for (name, bytes, _) in $fixtures() {
                $crate::assert_byte_by_byte_changes_nothing(&name, &bytes, $outcome);
            }
        }
    };
}
