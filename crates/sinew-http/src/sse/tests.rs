use proptest::prelude::*;

use super::*;

fn decode(chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<SseEvent>) {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.feed(chunk, &mut events);
    }
    let last = decoder.finish();
    (events, last)
}

fn ev(event: &str, data: &str) -> SseEvent {
    SseEvent { event: event.into(), data: data.into(), id: String::new() }
}

fn check(input: &str, expected: &[SseEvent]) {
    let (events, last) = decode(&[input.as_bytes()]);
    assert_eq!(events, expected, "input {input:?}");
    assert_eq!(last, None, "input {input:?}");
}

#[test]
fn line_terminators_of_every_kind() {
    check("data: a\n\n", &[ev("message", "a")]);
    check("data: a\r\n\r\n", &[ev("message", "a")]);
    check("data: a\r\r", &[ev("message", "a")]);
    check("data: a\r\n\ndata: b\r\rdata: c\n\r\n", &[ev("message", "a"), ev("message", "b"), ev("message", "c")]);
}

#[test]
fn fields_in_any_order_comments_and_multi_line_data() {
    check("event: delta\ndata: x\n\n", &[ev("delta", "x")]);
    check("data: x\nevent: delta\n\n", &[ev("delta", "x")]);
    check(": keep-alive\ndata: a\n: another\ndata: b\n\n", &[ev("message", "a\nb")]);
    check("data:no-space\n\n", &[ev("message", "no-space")]);
    check("data:  two spaces\n\n", &[ev("message", " two spaces")]);
    check("data\n\n", &[ev("message", "")]);
    check("data: a\ndata:\ndata: b\n\n", &[ev("message", "a\n\nb")]);
    check("unknown: field\ndata: a\n\n", &[ev("message", "a")]);
    check("data: {\"k\": \"v: w\"}\n\n", &[ev("message", "{\"k\": \"v: w\"}")]);
}

#[test]
fn blank_lines_without_data_dispatch_nothing_and_reset_the_name() {
    check("\n\n\n", &[]);
    check("event: lonely\n\ndata: a\n\n", &[ev("message", "a")]);
    check(": only a comment\n\n", &[]);
}

#[test]
fn ids_and_retry() {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    decoder.feed(b"id: 7\nretry: 2500\ndata: a\n\nretry: soon\nid: bad\0id\ndata: b\n\n", &mut events);
    assert_eq!(events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["7", "7"]);
    assert_eq!(decoder.last_event_id(), "7");
    assert_eq!(decoder.retry(), Some(Duration::from_millis(2500)), "a non-numeric retry is ignored");
}

#[test]
fn comment_lines_are_counted() {
    let mut decoder = SseDecoder::new();
    decoder.feed(b": OPENROUTER PROCESSING\n\n: again\ndata: x\n\n", &mut Vec::new());
    assert_eq!(decoder.comment_lines(), 2);
}

#[test]
fn a_leading_byte_order_mark_is_skipped_even_when_split() {
    let (events, _) = decode(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\n"]);
    assert_eq!(events, [ev("message", "a")]);
    let (events, _) = decode(&[b"\xEF\xBB\xBFevent: e\ndata: b\n\n"]);
    assert_eq!(events, [ev("e", "b")]);
    // Only at the start.
    let (events, _) = decode(&[b"data: \xEF\xBB\xBFa\n\n"]);
    assert_eq!(events, [ev("message", "\u{feff}a")]);
}

#[test]
fn invalid_utf8_is_replaced_not_fatal() {
    let (events, _) = decode(&[b"data: a\xFFb\n\n"]);
    assert_eq!(events, [ev("message", "a\u{fffd}b")]);
}

#[test]
fn unterminated_events_are_handed_over_by_finish() {
    let (events, last) = decode(&[b"data: a\n\ndata: b"]);
    assert_eq!(events, [ev("message", "a")]);
    assert_eq!(last, Some(ev("message", "b")));
    let (_, last) = decode(&[b"event: end\ndata: c\n"]);
    assert_eq!(last, Some(ev("end", "c")));
    let (_, last) = decode(&[b"data: a\n\n"]);
    assert_eq!(last, None);
}

#[test]
fn a_cr_at_the_end_of_a_chunk_pairs_with_the_next_lf() {
    let (events, _) = decode(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]);
    assert_eq!(events, [ev("message", "a"), ev("message", "b")]);
    // A lone CR followed by another line is a terminator of its own.
    let (events, _) = decode(&[b"data: a\r", b"\r"]);
    assert_eq!(events, [ev("message", "a")]);
}

#[test]
fn multi_byte_characters_split_across_chunks() {
    let text = "data: 30°C, 東京 🌤\n\n".as_bytes();
    for split in 0..text.len() {
        let (events, _) = decode(&[&text[..split], &text[split..]]);
        assert_eq!(events, [ev("message", "30°C, 東京 🌤")], "split at {split}");
    }
}

/// An SSE stream built from random events with random terminators and comments.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let line_end = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
    let field = prop_oneof![
        "[a-z€°🌤 {}\":,]{0,12}".prop_map(|v| format!("data: {v}")),
        "[a-z_]{1,8}".prop_map(|v| format!("event: {v}")),
        "[a-z0-9]{1,4}".prop_map(|v| format!("id: {v}")),
        "[a-z ]{0,8}".prop_map(|v| format!(": {v}")),
    ];
    proptest::collection::vec((proptest::collection::vec((field, line_end.clone()), 0..5), line_end), 0..8).prop_map(
        |events| {
            let mut out = String::new();
            for (lines, end) in events {
                for (line, line_end) in lines {
                    out.push_str(&line);
                    out.push_str(line_end);
                }
                out.push_str(end);
            }
            out.into_bytes()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn any_chunking_gives_the_same_events(input in stream(), cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8)) {
        let whole = decode(&[&input]);
        let points: Vec<usize> = cuts.iter().map(|i| i.index(input.len() + 1)).collect();
        prop_assert_eq!(decode(&sinew_testing::split_at_points(&input, &points)), whole.clone());
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        prop_assert_eq!(decode(&bytes), whole);
    }

    #[test]
    fn random_bytes_never_panic(input in proptest::collection::vec(any::<u8>(), 0..512), split in any::<prop::sample::Index>()) {
        let at = split.index(input.len() + 1);
        let _ = decode(&[&input[..at], &input[at..]]);
    }
}

#[test]
fn an_empty_chunk_between_cr_and_lf_changes_nothing() {
    let (events, _) = decode(&[b"data: a\r", b"", b"\ndata: b\n\n"]);
    assert_eq!(events, [ev("message", "a\nb")]);
}
