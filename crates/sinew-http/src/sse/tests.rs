use proptest::prelude::*;

use super::*;

fn decode(chunks: &[&[u8]]) -> (Vec<SseEvent>, Option<SseEvent>) {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.feed(chunk, &mut events).expect("within the bound");
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
    decoder.feed(b"id: 7\nretry: 2500\ndata: a\n\nretry: soon\nid: bad\0id\ndata: b\n\n", &mut events).unwrap();
    assert_eq!(events.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["7", "7"]);
    assert_eq!(decoder.last_event_id(), "7");
    assert_eq!(decoder.retry(), Some(Duration::from_millis(2500)), "a non-numeric retry is ignored");
}

#[test]
fn comment_lines_are_counted() {
    let mut decoder = SseDecoder::new();
    decoder.feed(b": OPENROUTER PROCESSING\n\n: again\ndata: x\n\n", &mut Vec::new()).unwrap();
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

/// Feeds `chunks` to a decoder bounded at `max`: the events before the failure, and the failure.
fn decode_bounded(max: usize, chunks: &[&[u8]]) -> (Vec<SseEvent>, Result<(), EventTooLarge>) {
    let mut decoder = SseDecoder::with_max_event_bytes(max);
    let mut events = Vec::new();
    for chunk in chunks {
        if let Err(error) = decoder.feed(chunk, &mut events) {
            assert_eq!(decoder.feed(b"data: more\n\n", &mut events), Err(error), "a failed decoder stays failed");
            assert_eq!(decoder.finish(), None);
            return (events, Err(error));
        }
    }
    (events, Ok(()))
}

#[test]
fn events_and_lines_past_the_bound_fail_whatever_the_chunking() {
    let too_large = Err(EventTooLarge { limit: 32 });
    let forty = "0123456789".repeat(4);
    // Within the bound: a 26-byte line, 20 bytes of data.
    assert_eq!(
        decode_bounded(32, &[b"data: 0123456789abcdefghij\n\n"]),
        (vec![ev("message", "0123456789abcdefghij")], Ok(()))
    );
    // One data line too long, whole or split; short data lines adding up; a line that never
    // ends; an `event:` or unknown field too long.
    let cases: [Vec<Vec<u8>>; 6] = [
        vec![format!("data: ok\n\ndata: {forty}\n\n").into()],
        vec![b"data: ok\n\ndata: 01234".to_vec(), forty.clone().into(), b"\n\n".to_vec()],
        vec![b"data: ok\n\n".to_vec(), "data: 0123456789\n".repeat(5).into()],
        vec![b"data: ok\n\n".to_vec(), b"data: 0123456789".to_vec(), forty.clone().into()],
        vec![format!("data: ok\n\nevent: {forty}\n").into()],
        vec![format!("data: ok\n\nx-padding: {forty}\n").into()],
    ];
    for chunks in cases {
        let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        assert_eq!(decode_bounded(32, &chunks), (vec![ev("message", "ok")], too_large), "{chunks:?}");
    }
    // Comments and keep-alives are not held: any number of them passes.
    let pings = ": keep-alive\n\n".repeat(1000);
    assert_eq!(decode_bounded(32, &[pings.as_bytes(), b"data: ok\n\n"]), (vec![ev("message", "ok")], Ok(())));
}

#[test]
fn a_hundred_megabyte_event_fails_at_the_default_bound_holding_no_more() {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    decoder.feed(b"data: ", &mut events).unwrap();
    let block = vec![b'x'; 1024 * 1024];
    let mut fed = 0;
    let error = loop {
        match decoder.feed(&block, &mut events) {
            Ok(()) => fed += block.len(),
            Err(error) => break error,
        }
        assert!(fed < 100 * 1024 * 1024, "100 MB accepted");
    };
    assert_eq!(error, EventTooLarge { limit: DEFAULT_MAX_EVENT_BYTES });
    assert!(fed <= DEFAULT_MAX_EVENT_BYTES);
    assert!(events.is_empty());
}

proptest! {
    /// Events near the bound are accepted or refused the same, wherever the chunks split.
    #[test]
    fn the_bound_does_not_depend_on_chunking(
        lines in proptest::collection::vec((0usize..40, prop_oneof![Just("data"), Just("event"), Just(":"), Just("x")]), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut input = String::new();
        for (len, field) in &lines {
            input.push_str(&format!("{field}: {}\n", "a".repeat(*len)));
        }
        input.push('\n');
        let bytes = input.as_bytes();
        let at = cut.index(bytes.len() + 1);
        let outcome = |chunks: &[&[u8]]| {
            let mut decoder = SseDecoder::with_max_event_bytes(32);
            let mut events = Vec::new();
            let fed = chunks.iter().try_for_each(|c| decoder.feed(c, &mut events));
            (fed.is_ok(), events)
        };
        prop_assert_eq!(outcome(&[bytes]), outcome(&[&bytes[..at], &bytes[at..]]));
        let single: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(outcome(&[bytes]), outcome(&single));
    }
}

#[test]
fn events_handed_out_borrowed_reuse_one_buffer_but_not_a_large_one() {
    let mut decoder = SseDecoder::new();
    let mut seen = Vec::new();
    let mut buffers = Vec::new();
    decoder.feed_with(b"event: a\nid: 1\ndata: one\n\ndata: two\n\n", |e| seen.push(e.clone())).unwrap();
    buffers.push(decoder.pending.data.as_ptr());
    decoder.feed_with(b"data: three\n\n", |e| buffers.push(e.data.as_ptr())).unwrap();
    assert_eq!(buffers[0], buffers[1], "one buffer serves the events that fit it");
    let big = format!("data: {}\n\n", "x".repeat(100_000));
    decoder.feed_with(big.as_bytes(), |e| seen.push(SseEvent { data: e.data.len().to_string(), ..e.clone() })).unwrap();
    assert!(decoder.pending.data.capacity() <= KEPT_DATA_BYTES, "a large event's buffer is let go");
    decoder.feed_with(b"data: small\n\n", |e| seen.push(e.clone())).unwrap();
    let seen: Vec<(&str, &str, &str)> =
        seen.iter().map(|e| (e.event.as_str(), e.data.as_str(), e.id.as_str())).collect();
    assert_eq!(
        seen,
        [("a", "one", "1"), ("message", "two", "1"), ("message", "100000", "1"), ("message", "small", "1")]
    );
}
