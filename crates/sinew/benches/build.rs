//! `cargo xtask bench build [turns] [--only NAME]`: every request builder (or the one named, to
//! profile it alone) writing the body of one request whole, for a conversation of `turns` tool
//! rounds (default 100: a user message, an answer with text and a tool call, the tool's result)
//! and ten tools. Prints MB/s and µs per request; the last line is `RESULT {json}`.
//!
//! A body is written whole for the first request of an agent and for every request whose history
//! the caller rewrote; later turns resume from the bytes kept of earlier ones (`sinew_core::wire`).
//! Each body is read back once and its messages counted, so a builder that drops them cannot look
//! fast.

#![allow(clippy::print_stdout)]

use std::time::Instant;

use serde_json::{Value, json};
use sinew::http::HttpRequest;
use sinew::{AssistantMessage, Content, Message, StopReason, StreamRequest, ToolDefinition, ToolResultMessage};

fn history(provider: &str, turns: usize) -> Vec<Message> {
    let mut messages = Vec::with_capacity(turns * 3);
    for i in 0..turns {
        messages
            .push(Message::user(format!("Step {i}: read the file and tell me what the function on line {i} does.")));
        let mut answer = AssistantMessage::new(provider, "model");
        answer.content = vec![
            Content::text(format!("I will read src/module_{i}.rs to see what the function does before I answer.")),
            Content::tool_call(format!("call_{i}"), "read", json!({"path": format!("src/module_{i}.rs"), "offset": i})),
        ];
        answer.stop_reason = StopReason::ToolUse;
        messages.push(Message::Assistant(answer));
        let output = format!("fn step_{i}(input: &str) -> usize {{\n    input.lines().count() + {i}\n}}\n").repeat(6);
        messages.push(Message::ToolResult(ToolResultMessage {
            is_error: false,
            ..ToolResultMessage::error(format!("call_{i}"), "read", output)
        }));
    }
    messages
}

fn tools() -> Vec<ToolDefinition> {
    (0..10)
        .map(|i| ToolDefinition {
            name: format!("tool_{i}"),
            description: format!("Tool number {i}: does one thing to a file of the workspace, and says what it did."),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "A path inside the workspace."},
                    "offset": {"type": "integer", "minimum": 0},
                    "mode": {"type": "string", "enum": ["fast", "careful"]},
                },
                "required": ["path"],
            }),
        })
        .collect()
}

/// One protocol: its name, the provider id its own answers carry, a model, the builder, and
/// where the body keeps its messages.
struct Builder {
    name: &'static str,
    provider: &'static str,
    model: &'static str,
    build: fn(&StreamRequest<'_>) -> HttpRequest,
    messages: &'static str,
}

fn builders() -> Vec<Builder> {
    vec![
        Builder {
            name: "anthropic",
            provider: "anthropic",
            model: "claude-sonnet-4-5",
            build: |r| sinew::anthropic::build_request(&sinew::anthropic::AnthropicConfig::new("k"), r),
            messages: "messages",
        },
        Builder {
            name: "openai-chat",
            provider: "openai",
            model: "gpt-4.1",
            build: |r| sinew::openai::build_request(&sinew::openai::OpenAiChatConfig::openai("k"), r),
            messages: "messages",
        },
        Builder {
            name: "openai-responses",
            provider: "openai_responses",
            model: "gpt-5",
            build: |r| {
                sinew::openai_responses::build_request(&sinew::openai_responses::ResponsesConfig::openai("k"), r)
            },
            messages: "input",
        },
        Builder {
            name: "gemini",
            provider: "google",
            model: "gemini-2.5-flash",
            build: |r| sinew::gemini::build_request(&sinew::gemini::GeminiConfig::gemini("k"), r),
            messages: "contents",
        },
        Builder {
            name: "bedrock",
            provider: "bedrock",
            model: "amazon.nova-pro-v1:0",
            build: |r| sinew::bedrock::build_request(&sinew::bedrock::BedrockConfig::with_api_key("us-east-1", "k"), r),
            messages: "messages",
        },
    ]
}

fn main() {
    let turns: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100);
    let only = std::env::args().skip_while(|a| a != "--only").nth(1);
    let tools = tools();
    println!("writing one request whole per protocol: {turns} tool rounds, {} tools (best of 5)", tools.len());
    let mut results = serde_json::Map::new();
    for builder in builders() {
        if only.as_deref().is_some_and(|only| only != builder.name) {
            continue;
        }
        let messages = history(builder.provider, turns);
        let refs: Vec<&Message> = messages.iter().collect();
        let mut request = StreamRequest::new(builder.model, "You are a careful coding assistant.", &refs);
        request.tools = &tools;
        let body = (builder.build)(&request).body;
        let read: Value = serde_json::from_slice(&body).expect("the body is JSON");
        let written = read[builder.messages].as_array().map_or(0, Vec::len);
        assert!(written >= turns * 2, "{}: {written} messages written of {}", builder.name, messages.len());
        let rounds = 5;
        let per_round = (20_000 / turns).max(5);
        let mut best = f64::MAX;
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..per_round {
                std::hint::black_box((builder.build)(std::hint::black_box(&request)));
            }
            best = best.min(start.elapsed().as_secs_f64() / per_round as f64);
        }
        let mb_per_s = body.len() as f64 / best / 1e6;
        println!(
            "{:<18} {:>8.1} KB {:>7.0} MB/s {:>8.1} µs/request",
            builder.name,
            body.len() as f64 / 1e3,
            mb_per_s,
            best * 1e6
        );
        results.insert(
            builder.name.into(),
            json!({"body_bytes": body.len(), "mb_per_s": mb_per_s.round(), "us_per_request": (best * 1e7).round() / 10.0}),
        );
    }
    println!("RESULT {}", json!({"bench": "build", "turns": turns, "builders": results}));
}
