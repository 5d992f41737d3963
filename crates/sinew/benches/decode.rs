//! `cargo xtask bench decode [events] [--only NAME] [--corpus]`: every stream decoder (or the one
//! named, to profile it alone) over a large synthetic stream of its
//! protocol, fed in 16 KiB chunks as a socket would deliver them. Prints MB/s and ns per event.
//!
//! Each stream is a realistic answer: thinking, then text in one event per token, then a tool
//! call with fragmented arguments, then usage. The decoded message is checked, so a decoder that
//! drops events cannot look fast.
//!
//! `--corpus` decodes the recorded streams of `sinew-testing/fixtures` instead (each with a new
//! decoder, as a response is; the whole set many times over, to about 16 MB per protocol): the
//! shapes real services send, escapes, usage on every chunk and errors included. Each stream must
//! end with the one terminal event it ended with when it was checked. The last line is
//! `RESULT {json}`.

#![allow(clippy::print_stdout)]

use std::time::Instant;

use serde_json::json;
use sinew::bedrock::eventstream::event_frame;
use sinew::http::StreamDecoder;
use sinew::{Content, StreamEvent};

const CHUNK: usize = 16 * 1024;

fn sse(event: Option<&str>, data: &serde_json::Value) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

fn token(i: usize) -> String {
    format!(" t{i}")
}

fn anthropic(n: usize) -> Vec<u8> {
    let mut s = sse(
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": "m", "model": "claude", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    s += &sse(
        Some("content_block_start"),
        &json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    for i in 0..n {
        s += &sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": token(i)}}),
        );
    }
    s += &sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0}));
    s += &sse(
        Some("content_block_start"),
        &json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "echo", "input": {}}}),
    );
    for piece in ["{\"text\":", " \"call-0\"}"] {
        s += &sse(
            Some("content_block_delta"),
            &json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    s += &sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 1}));
    s += &sse(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": n}}),
    );
    s += &sse(Some("message_stop"), &json!({"type": "message_stop"}));
    s.into_bytes()
}

fn openai_chat(n: usize) -> Vec<u8> {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        sse(
            None,
            &json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt", "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]}),
        )
    };
    let mut s = chunk(json!({"role": "assistant", "content": ""}), None);
    for i in 0..n {
        s += &chunk(json!({"content": token(i)}), None);
    }
    s += &chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_0", "type": "function", "function": {"name": "echo", "arguments": ""}}]}),
        None,
    );
    s += &chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"text\": \"call-0\"}"}}]}), None);
    s += &chunk(json!({}), Some("tool_calls"));
    s += &sse(
        None,
        &json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": n + 10}}),
    );
    s += "data: [DONE]\n\n";
    s.into_bytes()
}

fn openai_responses(n: usize) -> Vec<u8> {
    let ev = |v: serde_json::Value| sse(Some(v["type"].as_str().unwrap_or_default()), &v);
    let mut s = ev(json!({"type": "response.created", "response": {"model": "gpt-5", "status": "in_progress"}}));
    s += &ev(
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1"}}),
    );
    for i in 0..n {
        s += &ev(
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": token(i)}),
        );
    }
    s += &ev(
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_0", "name": "echo", "arguments": ""}}),
    );
    s += &ev(
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"text\":\"call-0\"}"}),
    );
    s += &ev(
        json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{\"text\":\"call-0\"}"}),
    );
    s += &ev(
        json!({"type": "response.completed", "response": {"status": "completed", "model": "gpt-5", "usage": {"input_tokens": 10, "output_tokens": n, "total_tokens": n + 10}}}),
    );
    s.into_bytes()
}

fn gemini(n: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..n {
        s += &sse(
            None,
            &json!({"candidates": [{"content": {"role": "model", "parts": [{"text": token(i)}]}}], "modelVersion": "gemini"}),
        );
    }
    s += &sse(
        None,
        &json!({"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "echo", "args": {"text": "call-0"}}}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": n, "totalTokenCount": n + 10}}),
    );
    s.into_bytes()
}

fn bedrock(n: usize) -> Vec<u8> {
    let mut b = event_frame("messageStart", &json!({"role": "assistant"}));
    for i in 0..n {
        b.extend(event_frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": token(i)}, "p": "abcdefgh"}),
        ));
    }
    b.extend(event_frame("contentBlockStop", &json!({"contentBlockIndex": 0})));
    b.extend(event_frame(
        "contentBlockStart",
        &json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t", "name": "echo"}}}),
    ));
    b.extend(event_frame(
        "contentBlockDelta",
        &json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"text\":\"call-0\"}"}}}),
    ));
    b.extend(event_frame("contentBlockStop", &json!({"contentBlockIndex": 1})));
    b.extend(event_frame("messageStop", &json!({"stopReason": "tool_use"})));
    b.extend(event_frame("metadata", &json!({"usage": {"inputTokens": 10, "outputTokens": n, "totalTokens": n + 10}})));
    b
}

/// Decodes `bytes` `rounds` times; returns the best seconds per round.
fn measure<D: StreamDecoder>(name: &str, stream: fn(usize) -> Vec<u8>, n: usize, make: impl Fn() -> D) {
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    if only.is_some_and(|only| only != name) {
        return;
    }
    let bytes = &stream(n);
    let rounds = 5;
    let mut best = f64::MAX;
    let mut events = Vec::with_capacity(n + 16);
    for _ in 0..rounds {
        events.clear();
        let mut decoder = make();
        let start = Instant::now();
        for chunk in bytes.chunks(CHUNK) {
            decoder.feed(chunk, &mut events);
        }
        decoder.finish(&mut events);
        best = best.min(start.elapsed().as_secs_f64());
        let Some(StreamEvent::Done(message)) = events.last() else { panic!("{name}: {:?}", events.last()) };
        let text: usize = message.content.iter().filter_map(Content::as_text).map(str::len).sum();
        let want: usize = (0..n).map(|i| token(i).len()).sum();
        assert_eq!(text, want, "{name}: every text delta decoded");
        assert_eq!(message.tool_calls().count(), 1, "{name}: the tool call decoded");
    }
    println!(
        "{name:<18} {:>8.1} MB {:>9.0} MB/s {:>8.0} ns/event ({} events)",
        bytes.len() as f64 / 1e6,
        bytes.len() as f64 / best / 1e6,
        best * 1e9 / n as f64,
        n
    );
}

fn main() {
    if std::env::args().any(|a| a == "--corpus") {
        return corpus();
    }
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    println!("decoding {n} text events per protocol, in {} KiB chunks (best of 5)", CHUNK / 1024);
    measure("anthropic", anthropic, n, || sinew::anthropic::decoder("claude"));
    measure("openai-chat", openai_chat, n, || sinew::openai::decoder("openai", "gpt"));
    measure("openai-responses", openai_responses, n, || sinew::openai_responses::decoder("openai_responses", "gpt-5"));
    measure("gemini", gemini, n, || sinew::gemini::decoder("google", "gemini"));
    measure("bedrock", bedrock, n, || sinew::bedrock::decoder("amazon.nova"));
}

/// The recorded streams whose `protocol_parser` is `parser`, from the fixtures' `EXPECTED.json`.
fn recorded(parser: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../sinew-testing/fixtures");
    let expected: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(dir.join("EXPECTED.json")).expect("EXPECTED.json")).expect("JSON");
    let streams: Vec<Vec<u8>> = expected
        .iter()
        .filter(|(_, e)| e["protocol_parser"] == parser)
        .map(|(name, _)| std::fs::read(dir.join(name)).expect("a recorded stream"))
        .collect();
    assert!(streams.len() >= 5, "{parser}: {} recorded streams", streams.len());
    streams
}

fn corpus() {
    println!("decoding the recorded streams of each protocol, each with a new decoder (best of 5)");
    let mut results = serde_json::Map::new();
    let mut run = |name: &str, parser: &str, decode: &dyn Fn(&[u8]) -> Option<bool>| {
        let only = std::env::args().skip_while(|a| a != "--only").nth(1);
        if only.is_some_and(|only| only != name) {
            return;
        }
        let streams = recorded(parser);
        let bytes: usize = streams.iter().map(Vec::len).sum();
        // Each stream ends with one terminal event, `Done` or `Error`; which one is checked once.
        let outcomes: Vec<Option<bool>> = streams.iter().map(|s| decode(s)).collect();
        assert!(outcomes.iter().all(Option::is_some), "{name}: a stream without its terminal event");
        let repeats = (16_000_000 / bytes).max(1);
        let mut best = f64::MAX;
        for _ in 0..5 {
            let start = Instant::now();
            for _ in 0..repeats {
                for (stream, outcome) in streams.iter().zip(&outcomes) {
                    assert_eq!(decode(stream), *outcome, "{name}: the same stream decoded otherwise");
                }
            }
            best = best.min(start.elapsed().as_secs_f64());
        }
        let mb_per_s = (bytes * repeats) as f64 / best / 1e6;
        println!("{name:<18} {:>3} streams {:>8.1} KB {:>9.0} MB/s", streams.len(), bytes as f64 / 1e3, mb_per_s);
        results.insert(
            name.into(),
            serde_json::json!({"streams": streams.len(), "bytes": bytes, "mb_per_s": mb_per_s.round()}),
        );
    };
    run("anthropic", "anthropic", &|s| terminal(sinew::anthropic::decoder("claude"), s));
    run("openai-chat", "chat", &|s| terminal(sinew::openai::decoder("openai", "gpt"), s));
    run("openai-responses", "responses", &|s| {
        terminal(sinew::openai_responses::decoder("openai_responses", "gpt-5"), s)
    });
    run("gemini", "gemini", &|s| terminal(sinew::gemini::decoder("google", "gemini"), s));
    run("bedrock", "bedrock", &|s| terminal(sinew::bedrock::decoder("amazon.nova"), s));
    println!("RESULT {}", serde_json::json!({"bench": "decode", "input": "corpus", "decoders": results}));
}

/// Decodes `stream` in 16 KiB chunks: `Some(true)` when it ended with `Done`, `Some(false)` with
/// an error, `None` with no terminal event.
fn terminal<D: StreamDecoder>(mut decoder: D, stream: &[u8]) -> Option<bool> {
    let mut events = Vec::new();
    for chunk in stream.chunks(CHUNK) {
        decoder.feed(chunk, &mut events);
    }
    decoder.finish(&mut events);
    match events.last()? {
        StreamEvent::Done(_) => Some(true),
        StreamEvent::Error { .. } => Some(false),
        _ => None,
    }
}
