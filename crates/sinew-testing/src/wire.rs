//! What a real provider streams for a scripted turn, event by event, for tests that drive a
//! whole program (the `sinew` binary, say) over HTTP through [`MockServer`](crate::MockServer):
//! Anthropic Messages and OpenAI Chat Completions.
//!
//! ```
//! use serde_json::json;
//! use sinew_testing::wire::{WireTurn, anthropic_events, sse_response};
//!
//! let turn = WireTurn::new().text("Let me look.").tool_call("toolu_1", "read_file", json!({"path": "a.txt"}));
//! let events = anthropic_events(&turn);
//! assert!(events[0].starts_with("event: message_start"));
//! let response = sse_response(events, None);
//! assert_eq!(response.status(), 200);
//! ```

use std::time::Duration;

use serde_json::{Value, json};

use crate::server::ServedResponse;

/// One model turn: text chunks, then tool calls, and the usage reported at the end.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WireTurn {
    /// Text deltas of one text block, streamed in order before the tool calls; empty: no text block.
    pub text: Vec<String>,
    /// `(id, name, arguments)`.
    pub tool_calls: Vec<(String, String, Value)>,
    /// Input (prompt) tokens reported at the end; 100 from [`WireTurn::new`].
    pub input_tokens: u64,
    /// Output tokens reported at the end; 10 from [`WireTurn::new`].
    pub output_tokens: u64,
}

impl WireTurn {
    /// An empty turn reporting 100 input and 10 output tokens.
    pub fn new() -> Self {
        WireTurn { input_tokens: 100, output_tokens: 10, ..WireTurn::default() }
    }

    /// One more text chunk.
    #[must_use]
    pub fn text(mut self, chunk: impl Into<String>) -> Self {
        self.text.push(chunk.into());
        self
    }

    /// One more tool call, streamed after the text; any tool call makes the stop reason tool use.
    #[must_use]
    pub fn tool_call(mut self, id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push((id.into(), name.into(), arguments));
        self
    }

    /// Sets the input and output tokens reported at the end.
    #[must_use]
    pub fn usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.input_tokens = input_tokens;
        self.output_tokens = output_tokens;
        self
    }
}

/// The turn as Anthropic's Messages API streams it: `message_start`, one block per text chunk
/// run and tool call, `message_delta` with the stop reason and usage, `message_stop`.
pub fn anthropic_events(turn: &WireTurn) -> Vec<String> {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut events = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_scripted", "type": "message", "role": "assistant",
            "model": "scripted", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": turn.input_tokens, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !turn.text.is_empty() {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ));
        for chunk in &turn.text {
            events.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": chunk}}),
            ));
        }
        events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for (id, name, arguments) in &turn.tool_calls {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ));
        events.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": arguments.to_string()}}),
        ));
        events.push(event("content_block_stop", json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    let stop = if turn.tool_calls.is_empty() { "end_turn" } else { "tool_use" };
    events.push(event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
            "usage": {"output_tokens": turn.output_tokens}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events
}

/// The turn as OpenAI's Chat Completions API streams it with `include_usage`: a role chunk,
/// one chunk per text chunk, each tool call's header and arguments, the finish reason, a usage
/// chunk with empty choices, and `[DONE]`.
pub fn openai_chat_events(turn: &WireTurn) -> Vec<String> {
    let chunk = |delta: Value, finish: Option<&str>| {
        let body = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
        format!("data: {body}\n\n")
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    for text in &turn.text {
        events.push(chunk(json!({"content": text}), None));
    }
    for (i, (id, name, arguments)) in turn.tool_calls.iter().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
            None,
        ));
        events
            .push(chunk(json!({"tool_calls": [{"index": i, "function": {"arguments": arguments.to_string()}}]}), None));
    }
    let finish = if turn.tool_calls.is_empty() { "stop" } else { "tool_calls" };
    events.push(chunk(json!({}), Some(finish)));
    let usage = json!({"prompt_tokens": turn.input_tokens, "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens});
    events.push(format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1, "model": "scripted", "choices": [], "usage": usage})
    ));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// `200 text/event-stream` sending `events` one write each, with `pause` between them.
pub fn sse_response(events: Vec<String>, pause: Option<Duration>) -> ServedResponse {
    let mut response = ServedResponse::new(200).header("content-type", "text/event-stream");
    for (i, event) in events.into_iter().enumerate() {
        if let (Some(pause), true) = (pause, i > 0) {
            response = response.pause(pause);
        }
        response = response.chunk(event);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn() -> WireTurn {
        WireTurn::new().text("Hel").text("lo").tool_call("call_1", "bash", json!({"command": "ls"})).usage(42, 7)
    }

    /// The decoders' side is checked where they live: the CLI's end-to-end tests run these
    /// bodies through the real providers.
    #[test]
    fn each_protocol_gets_its_stop_reason_arguments_and_usage() {
        let anthropic = anthropic_events(&turn());
        assert_eq!(anthropic.len(), 1 + 4 + 3 + 2, "start, text block, tool block, delta and stop");
        let anthropic = anthropic.concat();
        assert!(anthropic.contains(r#""partial_json":"{\"command\":\"ls\"}""#), "{anthropic}");
        assert!(anthropic.contains(r#""stop_reason":"tool_use""#) && anthropic.contains(r#""output_tokens":7"#));
        let openai = openai_chat_events(&turn()).concat();
        assert!(openai.contains(r#""finish_reason":"tool_calls""#) && openai.ends_with("data: [DONE]\n\n"));
        assert!(openai.contains(r#""prompt_tokens":42"#) && openai.contains(r#""content":"Hel""#));
        let text_only = anthropic_events(&WireTurn::new().text("hi")).concat();
        assert!(text_only.contains(r#""stop_reason":"end_turn""#));
    }
}
