//! `cargo xtask bench sse`: our SSE decoder against `eventsource-stream` (the design card's
//! candidate) on the recorded provider streams, in socket-sized (16 KiB) and small (61-byte)
//! chunks, and on the WHATWG edge cases our decoder is tested on. Both must decode the corpus to
//! the same events; the edge cases where they differ are listed. `RESULT {json}` comes last.

#![allow(clippy::print_stdout)]

use std::convert::Infallible;
use std::hint::black_box;
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures::StreamExt;
use sinew_http::sse::SseDecoder;

/// Every recorded `.sse` stream, each ending with a blank line, repeated to about 32 MiB.
fn corpus() -> Vec<u8> {
    let mut one = Vec::new();
    let mut stack = vec![sinew_testing::fixtures_dir()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir).expect("the fixtures").flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "sse") {
                one.extend(std::fs::read(&path).expect("a fixture"));
                one.extend_from_slice(b"\n\n");
            }
        }
    }
    let mut all = Vec::with_capacity(33 << 20);
    while all.len() < 32 << 20 {
        all.extend_from_slice(&one);
    }
    all
}

/// (event name, data) of every event.
type Events = Vec<(String, String)>;

fn ours(chunks: &[&[u8]]) -> Events {
    let mut decoder = SseDecoder::with_max_event_bytes(usize::MAX);
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.feed(chunk, &mut events).expect("no bound");
    }
    events.extend(decoder.finish());
    events.into_iter().map(|e| (e.event, e.data)).collect()
}

fn theirs(chunks: &[&[u8]]) -> Events {
    let stream = futures::stream::iter(chunks.iter().map(|c| Ok::<_, Infallible>(c.to_vec()))).eventsource();
    futures::executor::block_on(stream.filter_map(|e| async move { e.ok() }).map(|e| (e.event, e.data)).collect())
}

fn time(f: impl Fn() -> Events) -> (Duration, Events) {
    let mut best = Duration::MAX;
    let mut events = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        events = black_box(f());
        best = best.min(start.elapsed());
    }
    (best, events)
}

/// The WHATWG cases of `sse/tests.rs`, with the events the standard gives.
fn edge_cases() -> Vec<(&'static str, &'static [u8], Events)> {
    let ev = |e: &str, d: &str| (e.to_owned(), d.to_owned());
    vec![
        ("CR line endings", b"data: a\rdata: b\r\r", vec![ev("message", "a\nb")]),
        ("CRLF line endings", b"data: a\r\n\r\n", vec![ev("message", "a")]),
        ("byte-order mark", b"\xEF\xBB\xBFdata: a\n\n", vec![ev("message", "a")]),
        ("comments", b": hi\ndata: a\n: there\n\n", vec![ev("message", "a")]),
        ("field without colon", b"data\n\n", vec![ev("message", "")]),
        ("no space after colon", b"data:a\n\n", vec![ev("message", "a")]),
        ("two spaces after colon", b"data:  a\n\n", vec![ev("message", " a")]),
        ("blank line without data", b"event: x\n\ndata: a\n\n", vec![ev("message", "a")]),
        ("multi-line data", b"data: a\ndata:\ndata: b\n\n", vec![ev("message", "a\n\nb")]),
        ("named event", b"event: ping\ndata: {}\n\n", vec![ev("ping", "{}")]),
        ("unknown field", b"foo: bar\ndata: a\n\n", vec![ev("message", "a")]),
        ("invalid UTF-8", b"data: \xff\n\n", vec![ev("message", "\u{fffd}")]),
    ]
}

fn main() {
    // eventsource-stream's panics are reported by the edge-case table, not printed.
    std::panic::set_hook(Box::new(|_| {}));
    let corpus = corpus();
    let mb = corpus.len() as f64 / (1 << 20) as f64;
    let mut rows = Vec::new();
    for (label, size) in [("16KiB", 16 * 1024), ("61B", 61)] {
        let chunks: Vec<&[u8]> = corpus.chunks(size).collect();
        let (ours_time, ours_events) = time(|| ours(&chunks));
        let (theirs_time, theirs_events) = time(|| theirs(&chunks));
        assert_eq!(ours_events.len(), theirs_events.len(), "{label}: event counts differ");
        assert!(ours_events == theirs_events, "{label}: the two decoders disagree on the corpus");
        let (a, b) = (mb / ours_time.as_secs_f64(), mb / theirs_time.as_secs_f64());
        println!(
            "{label:>6} chunks: sinew {a:8.0} MB/s   eventsource-stream {b:8.0} MB/s   ({} events)",
            ours_events.len()
        );
        rows.push(format!(
            r#"{{"chunks":"{label}","events":{},"sinew_mb_s":{a:.0},"eventsource_stream_mb_s":{b:.0}}}"#,
            ours_events.len()
        ));
    }
    let mut differing = Vec::new();
    for (name, input, expected) in edge_cases() {
        let whole = [input];
        assert_eq!(ours(&whole), expected, "our decoder on {name}");
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        // It may panic on input a server can send: caught, and reported as such.
        let outcome = std::panic::catch_unwind(|| (theirs(&whole), theirs(&bytes)));
        match outcome {
            Ok((whole, split)) if whole == expected && split == expected => {}
            Ok((whole, split)) => {
                println!("edge case `{name}`: eventsource-stream gives {whole:?} whole, {split:?} byte by byte");
                differing.push(format!("\"{name}\""));
            }
            Err(_) => {
                println!("edge case `{name}`: eventsource-stream panics");
                differing.push(format!("\"{name} (panic)\""));
            }
        }
    }
    println!(
        "RESULT {{\"bench\":\"sse\",\"corpus_mb\":{mb:.1},\"runs\":[{}],\"edge_cases_eventsource_stream_fails\":[{}]}}",
        rows.join(","),
        differing.join(",")
    );
}
