//! `cargo xtask bench decode [events] [--only NAME]`: every stream decoder (or the one named, to
//! profile it alone) over a large synthetic stream of its
//! protocol, fed in 16 KiB chunks as a socket would deliver them. Prints MB/s and ns per event.
//!
//! Each stream is a realistic answer: thinking, then text in one event per token, then a tool
//! call with fragmented arguments, then usage. The decoded message is checked, so a decoder that
//! drops events cannot look fast.

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
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(200_000);
    println!("decoding {n} text events per protocol, in {} KiB chunks (best of 5)", CHUNK / 1024);
    measure("anthropic", anthropic, n, || sinew::anthropic::decoder("claude"));
    measure("openai-chat", openai_chat, n, || sinew::openai::decoder("openai", "gpt"));
    measure("openai-responses", openai_responses, n, || sinew::openai_responses::decoder("openai_responses", "gpt-5"));
    measure("gemini", gemini, n, || sinew::gemini::decoder("google", "gemini"));
    measure("bedrock", bedrock, n, || sinew::bedrock::decoder("amazon.nova"));
}
