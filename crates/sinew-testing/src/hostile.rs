//! Structure-aware hostile input for decoder property tests: the recorded streams of
//! `fixtures/`, with values inside their JSON events replaced by what a broken or hostile server
//! could send (numbers past every integer type, negative counts and indexes, huge or non-ASCII
//! strings, wrong types). Random bytes rarely reach the code that reads a number or sizes an
//! allocation; these do.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// A value a hostile server could put where any JSON value is expected.
pub fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::from(u64::MAX)),
        Just(Value::from(i64::MIN)),
        Just(Value::from(-1)),
        Just(Value::from(0)),
        Just(Value::from(1e308)),
        Just(Value::from(-1e308)),
        Just(Value::from(4_294_967_296_u64)),
        Just(Value::from(18_446_744_073_709_551_615_u64)),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        Just(Value::Null),
        Just(Value::Bool(true)),
        Just(Value::String(String::new())),
        (1usize..200_000).prop_map(|n| Value::String("x".repeat(n))),
        Just(Value::String("\u{0}\u{fffd}\u{1F600}\r\n\\\"".to_owned())),
        Just(Value::Array(vec![Value::from(1); 1000])),
        Just(Value::Object(Map::new())),
    ]
}

/// Which leaves to replace, and with what: `(selector, value)` pairs, a selector picking one
/// leaf of one event (modulo their counts).
pub fn hostile_edits() -> impl Strategy<Value = Vec<(usize, Value)>> {
    proptest::collection::vec((any::<usize>(), hostile_value()), 1..6)
}

/// `body`, a recorded SSE stream, with `edits` applied to the JSON of its `data:` lines: each
/// edit replaces one leaf (a number, string, bool or null), chosen by its selector among all
/// leaves of all events. Lines that are not JSON are kept as they are.
pub fn edit_sse(body: &[u8], edits: &[(usize, Value)]) -> Vec<u8> {
    let text = String::from_utf8_lossy(body);
    let mut lines: Vec<(String, Option<Value>)> = text
        .split('\n')
        .map(|line| {
            let json = line.strip_prefix("data:").and_then(|d| serde_json::from_str::<Value>(d.trim()).ok());
            (line.to_owned(), json)
        })
        .collect();
    let mut events: Vec<&mut Value> = lines.iter_mut().filter_map(|(_, json)| json.as_mut()).collect();
    edit_values(&mut events, edits);
    let out: Vec<String> = lines
        .into_iter()
        .map(|(line, json)| match json {
            Some(json) => format!("data: {json}{}", if line.ends_with('\r') { "\r" } else { "" }),
            None => line,
        })
        .collect();
    out.join("\n").into_bytes()
}

/// Applies `edits` to `events`: each replaces one leaf (a number, string, bool or null), chosen
/// by its selector among all leaves of all events.
pub fn edit_values(events: &mut [&mut Value], edits: &[(usize, Value)]) {
    let total: usize = events.iter().map(|v| count_leaves(v)).sum();
    if total == 0 {
        return;
    }
    for (selector, value) in edits {
        let mut target = selector % total;
        for json in events.iter_mut() {
            let leaves = count_leaves(json);
            if target < leaves {
                replace_leaf(json, target, value.clone());
                break;
            }
            target -= leaves;
        }
    }
}

fn count_leaves(value: &Value) -> usize {
    match value {
        Value::Array(items) => items.iter().map(count_leaves).sum(),
        Value::Object(map) => map.values().map(count_leaves).sum(),
        _ => 1,
    }
}

/// Replaces leaf number `index` (depth first) with `new`; true when it was found.
fn replace_leaf(value: &mut Value, mut index: usize, new: Value) -> bool {
    fn walk(value: &mut Value, index: &mut usize, new: &mut Option<Value>) -> bool {
        match value {
            Value::Array(items) => items.iter_mut().any(|item| walk(item, index, new)),
            Value::Object(map) => map.values_mut().any(|item| walk(item, index, new)),
            leaf => {
                if *index == 0 {
                    if let Some(new) = new.take() {
                        *leaf = new;
                    }
                    return true;
                }
                *index -= 1;
                false
            }
        }
    }
    walk(value, &mut index, &mut Some(new))
}

/// The hostile-values property test of an SSE decoder's suite, as a `proptest` in the calling
/// test crate: `fixtures` gives the protocol's recorded streams (name, bytes, expected) and
/// `decode` decodes chunks into events. Every stream, whatever hostile values its events
/// carry, must end with exactly one terminal event.
#[macro_export]
macro_rules! hostile_sse_checks {
    (fixtures: $fixtures:path, decode: $decode:path $(,)?) => {
        proptest::proptest! {
            #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

            /// Recorded streams with hostile values where the service put numbers, strings and
            /// flags: never a panic, always exactly one terminal event.
            #[test]
            fn hostile_values_in_recorded_streams_end_cleanly(
                which in proptest::prelude::any::<proptest::sample::Index>(),
                edits in $crate::hostile::hostile_edits(),
            ) {
                let fixtures = $fixtures();
                let (name, bytes, _) = &fixtures[which.index(fixtures.len())];
                let edited = $crate::hostile::edit_sse(bytes, &edits);
                let events = $decode(&[&edited]);
                proptest::prop_assert_eq!($crate::terminal_count(&events), 1, "{}", name);
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_replace_the_chosen_leaf_and_keep_the_framing() {
        let body = b"event: a\ndata: {\"x\":1,\"y\":[2,\"s\"]}\r\n\r\ndata: [DONE]\n\n";
        let edited = edit_sse(body, &[(2, Value::from(u64::MAX))]);
        assert_eq!(
            String::from_utf8(edited).unwrap(),
            "event: a\ndata: {\"x\":1,\"y\":[2,18446744073709551615]}\r\n\r\ndata: [DONE]\n\n"
        );
        // Selectors wrap around the leaves of all events.
        let edited = edit_sse(body, &[(3, Value::Null)]);
        assert!(String::from_utf8(edited).unwrap().contains("{\"x\":null,"));
    }
}
