//! The recorded provider streams of `fixtures/` (beside this crate's manifest) and helpers to
//! replay them.

use std::path::PathBuf;

use serde_json::Value;

/// Where the recorded streams are: `SINEW_FIXTURES_DIR`, or `fixtures/` of this crate, which the
/// repository carries (see its `PROVENANCE.md`). Panics with instructions when they are missing:
/// tests built on them must fail loudly, never pass silently.
pub fn fixtures_dir() -> PathBuf {
    let dir = std::env::var_os("SINEW_FIXTURES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures"));
    assert!(
        dir.join("EXPECTED.json").exists(),
        "the recorded provider streams are missing at {}: they live in crates/sinew-testing/fixtures (or set SINEW_FIXTURES_DIR)",
        dir.display()
    );
    dir
}

/// `EXPECTED.json`: every fixture's path mapped to its provenance and expected result.
pub fn expected_results() -> serde_json::Map<String, Value> {
    let path = fixtures_dir().join("EXPECTED.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Object(map)) => map,
        other => panic!("{} is not a JSON object: {other:?}", path.display()),
    }
}

/// The bytes of one fixture, by its path relative to the fixtures directory.
pub fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Every recorded stream whose `protocol_parser` is `parser`: its name, bytes and `expected`
/// result. Panics if there are fewer than `at_least` (a moved or truncated fixtures directory).
pub fn recorded_streams(parser: &str, at_least: usize) -> Vec<(String, Vec<u8>, Value)> {
    let list: Vec<_> = expected_results()
        .into_iter()
        .filter(|(_, e)| e["protocol_parser"] == parser)
        .map(|(name, e)| {
            let bytes = fixture_bytes(&name);
            (name, bytes, e["expected"].clone())
        })
        .collect();
    assert!(list.len() >= at_least, "only {} `{parser}` streams, expected at least {at_least}", list.len());
    list
}

/// `bytes` cut at `points` (any order, any values: they are sorted and clamped), for feeding a
/// decoder in arbitrary chunks.
pub fn split_at_points<'a>(bytes: &'a [u8], points: &[usize]) -> Vec<&'a [u8]> {
    let mut points: Vec<usize> = points.iter().map(|p| (*p).min(bytes.len())).collect();
    points.sort_unstable();
    let mut chunks = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for point in points {
        chunks.push(&bytes[start..point]);
        start = point;
    }
    chunks.push(&bytes[start..]);
    chunks
}

#[cfg(test)]
mod tests {
    use super::split_at_points;

    #[test]
    fn split_points_are_sorted_clamped_and_lose_nothing() {
        let chunks = split_at_points(b"abcdef", &[4, 1, 99, 4]);
        assert_eq!(chunks, [&b"a"[..], b"bcd", b"", b"ef", b""]);
        assert_eq!(chunks.concat(), b"abcdef");
        assert_eq!(split_at_points(b"", &[]), [&b""[..]]);
    }
}
