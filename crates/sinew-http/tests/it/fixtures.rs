use serde_json::Value;
use sinew_http::sse::{SseDecoder, SseEvent};
use sinew_testing::{expected_results, fixture_bytes};

fn decode<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> (Vec<SseEvent>, usize) {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.feed(chunk, &mut events).expect("recorded events are within the bound");
    }
    events.extend(decoder.finish());
    (events, decoder.comment_lines())
}

#[test]
fn every_recorded_sse_stream_decodes_the_same_whole_and_byte_by_byte() {
    let mut checked = 0;
    for (name, entry) in &expected_results() {
        if !name.ends_with(".sse") {
            continue;
        }
        let bytes = fixture_bytes(name);
        let (events, comments) = decode([bytes.as_slice()]);
        assert!(!events.is_empty(), "{name}: no events");
        assert_eq!(decode(bytes.chunks(1)), (events.clone(), comments), "{name}: byte by byte differs");
        assert_eq!(decode(bytes.chunks(7)), (events.clone(), comments), "{name}: 7-byte chunks differ");

        let e = &entry["expected"];
        if let Some(want) = e["sse_comment_lines"].as_u64() {
            assert_eq!(comments as u64, want, "{name}: comment lines");
        }
        if let Some(want) = e["events_without_event_line"].as_u64() {
            // The `[DONE]` marker some servers append is counted apart (`done_marker`).
            let unnamed = events.iter().filter(|ev| ev.event == "message" && ev.data != "[DONE]").count();
            assert_eq!(unnamed as u64, want, "{name}: events without an event line");
        }
        if e["event_name_mismatches"].as_u64() == Some(0) {
            // Where the service names its events, the name is the payload's `type`.
            for ev in events.iter().filter(|ev| ev.event != "message" && ev.data != "[DONE]") {
                let payload: Value =
                    serde_json::from_str(&ev.data).unwrap_or_else(|err| panic!("{name}: {err}: {}", ev.data));
                assert_eq!(payload["type"].as_str(), Some(ev.event.as_str()), "{name}");
            }
        }
        // Every payload is complete JSON (or the [DONE] marker): no event was cut or merged.
        for ev in &events {
            if ev.data != "[DONE]" {
                serde_json::from_str::<Value>(&ev.data).unwrap_or_else(|err| panic!("{name}: {err}: {:?}", ev.data));
            }
        }
        if let Some(done) = e["done_marker"].as_bool() {
            assert_eq!(events.last().is_some_and(|ev| ev.data == "[DONE]"), done, "{name}: [DONE] marker");
        }
        checked += 1;
    }
    assert!(checked >= 50, "only {checked} recorded streams found");
}
