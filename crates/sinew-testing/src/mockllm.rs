//! The reference benchmark's mock model (`bench/mockllm_server.py` of this crate), for OpenAI Chat
//! Completions and Anthropic Messages.
//!
//! The newest user text carries `tools=K tokens=T`. A user message is answered with K parallel
//! calls of `echo` with `{"text":"call-<i>"}` (or, with K = 0, the text answer); tool results are
//! answered with T streamed tokens `t0 t1 ...`, one SSE event each. Usage comes in the final
//! chunk (OpenAI: a trailing chunk with empty choices when `stream_options.include_usage` is
//! set). Each response is rendered whole and sent in one write, as the Python server's default
//! `burst` mode does.

use serde_json::{Value, json};

use crate::server::{ReceivedRequest, ServedResponse};

const DEFAULT_TOOLS: usize = 10;
const DEFAULT_TOKENS: usize = 200;

/// The answer to one request: `/…/chat/completions` or `/…/messages`; anything else is a 404.
pub fn respond(request: &ReceivedRequest) -> ServedResponse {
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return ServedResponse::new(400).chunk("invalid json");
    };
    let path = request.path.split('?').next().unwrap_or_default();
    if path.ends_with("/chat/completions") {
        ServedResponse::sse(openai(&body))
    } else if path.ends_with("/messages") {
        ServedResponse::sse(anthropic(&body))
    } else {
        ServedResponse::new(404).chunk("unknown endpoint")
    }
}

/// The text the model answers tool results with: `t0 t1 ... t<T-1>`.
pub fn expected_text(tokens: usize) -> String {
    (0..tokens).map(|i| format!("t{i}")).collect::<Vec<_>>().join(" ")
}

fn token(i: usize) -> String {
    if i == 0 { "t0".to_owned() } else { format!(" t{i}") }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|p| matches!(p["type"].as_str(), Some("text" | "input_text")))
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// `tools=K tokens=T` from the newest user text that has them.
fn params(messages: &[Value]) -> (usize, usize) {
    let (mut tools, mut tokens) = (DEFAULT_TOOLS, DEFAULT_TOKENS);
    for message in messages.iter().rev().filter(|m| m["role"] == "user") {
        let text = text_of(&message["content"]);
        let mut found = false;
        for word in text.split_whitespace() {
            if let Some(k) = word.strip_prefix("tools=").and_then(|v| v.parse().ok()) {
                tools = k;
                found = true;
            } else if let Some(t) = word.strip_prefix("tokens=").and_then(|v| v.parse().ok()) {
                tokens = t;
                found = true;
            }
        }
        if found {
            break;
        }
    }
    (tools, tokens)
}

fn openai(body: &Value) -> String {
    let messages = body["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let (tools, tokens) = params(messages);
    let n = messages.len();
    let answer_tools = messages.last().is_some_and(|m| m["role"] == "user") && tools > 0;
    let chunk = |delta: Value, finish: Option<&str>| {
        let chunk = json!({"id": format!("chatcmpl-mock-{n}"), "object": "chat.completion.chunk", "created": 1, "model": "mock-1",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut out = String::new();
    let (finish, completion) = if answer_tools {
        out += &chunk(json!({"role": "assistant", "content": null}), None);
        for i in 0..tools {
            out += &chunk(
                json!({"tool_calls": [{"index": i, "id": format!("call_{n}_{i}"), "type": "function", "function": {"name": "echo", "arguments": ""}}]}),
                None,
            );
            out += &chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": format!("{{\"text\": \"call-{i}\"}}")}}]}),
                None,
            );
        }
        ("tool_calls", 12 * tools)
    } else {
        out += &chunk(json!({"role": "assistant", "content": ""}), None);
        for i in 0..tokens {
            out += &chunk(json!({"content": token(i)}), None);
        }
        ("stop", tokens)
    };
    let usage = json!({"prompt_tokens": 100, "completion_tokens": completion, "total_tokens": 100 + completion});
    if body["stream_options"]["include_usage"] == true {
        out += &chunk(json!({}), Some(finish));
        out += &format!(
            "data: {}\n\n",
            json!({"id": format!("chatcmpl-mock-{n}"), "object": "chat.completion.chunk", "created": 1, "model": "mock-1", "choices": [], "usage": usage})
        );
    } else {
        let mut last = json!({"id": format!("chatcmpl-mock-{n}"), "object": "chat.completion.chunk", "created": 1, "model": "mock-1",
            "choices": [{"index": 0, "delta": {}, "logprobs": null, "finish_reason": finish}]});
        last["usage"] = usage;
        out += &format!("data: {last}\n\n");
    }
    out += "data: [DONE]\n\n";
    out
}

fn anthropic(body: &Value) -> String {
    let messages = body["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
    let (tools, tokens) = params(messages);
    let n = messages.len();
    let last_is_result = messages.last().is_some_and(|m| {
        m["role"] == "user" && m["content"].as_array().is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    });
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_mock_{n}"), "type": "message", "role": "assistant", "model": "mock-1",
            "content": [], "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    let (stop, output) = if !last_is_result && tools > 0 {
        for i in 0..tools {
            out += &event(
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": "echo", "input": {}}}),
            );
            out += &event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": format!("{{\"text\": \"call-{i}\"}}")}}),
            );
            out += &event("content_block_stop", json!({"type": "content_block_stop", "index": i}));
        }
        ("tool_use", 12 * tools)
    } else {
        out += &event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        );
        for i in 0..tokens {
            out += &event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": token(i)}}),
            );
        }
        out += &event("content_block_stop", json!({"type": "content_block_stop", "index": 0}));
        ("end_turn", tokens)
    };
    out += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}}),
    );
    out += &event("message_stop", json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str, body: Value) -> ReceivedRequest {
        ReceivedRequest {
            method: "POST".into(),
            path: path.into(),
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
        }
    }

    #[test]
    fn the_script_reads_its_parameters_from_the_newest_user_text() {
        let messages = [
            json!({"role": "user", "content": "tools=3 tokens=5 turn=1"}),
            json!({"role": "assistant", "content": "x"}),
            json!({"role": "tool", "content": "r"}),
        ];
        assert_eq!(params(&messages), (3, 5));
        assert_eq!(
            params(&[json!({"role": "user", "content": [{"type": "text", "text": "tokens=7"}]})]),
            (DEFAULT_TOOLS, 7)
        );
        assert_eq!(expected_text(3), "t0 t1 t2");
        assert_eq!(respond(&request("/v1/other", json!({}))).status(), 404);
        assert_eq!(respond(&request("/v1/messages", json!("not an object"))).status(), 200);
        let mut bad = request("/v1/messages", json!({}));
        bad.body = b"{".to_vec();
        assert_eq!(respond(&bad).status(), 400);
    }
}
