//! Checks every provider decoder's tests share.

use std::fmt::Debug;

use sinew_core::{AssistantMessage, ProviderError, StreamDelta, StreamEvent};

use crate::fixtures::split_at_points;

/// How a decoded stream ended: its final message, or its partial message and the error. The
/// timestamp is zeroed (it records when decoding happened, which differs between runs).
pub fn stream_outcome(events: &[StreamEvent]) -> (AssistantMessage, Option<ProviderError>) {
    let (mut message, error) = match events.last() {
        Some(StreamEvent::Done(message)) => (message.clone(), None),
        Some(StreamEvent::Error { error, partial }) => (partial.clone(), Some(error.clone())),
        other => panic!("a stream must end with Done or Error; it ended with {other:?}"),
    };
    message.timestamp = 0;
    (message, error)
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
