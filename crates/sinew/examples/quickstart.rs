//! A scripted agent run, offline: `cargo run -p sinew --example quickstart --features testing`.
//!
//! The model is a `MockProvider` playing a script (clearly not a real model); everything else is
//! the real loop: streaming, a tool call, the tool's result going back to the model.

#![allow(clippy::print_stdout)]

use futures::StreamExt;
use serde_json::json;
use sinew::testing::{EchoTool, MockProvider, MockResponse};
use sinew::{Agent, AgentEvent, StreamDelta};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let model = MockProvider::new([
        MockResponse::new().text_words("Let me ask the echo tool. ").tool_call(
            "call_1",
            "echo",
            json!({"text": "hello"}),
        ),
        MockResponse::new().text_words("The echo tool answered: hello."),
    ]);
    let mut agent = Agent::new(model, "scripted-model").with_system_prompt("You are terse.").with_tool(EchoTool);

    println!("(scripted model: MockProvider, no API key needed)\n> Say hello through the tool");
    let mut run = agent.prompt("Say hello through the tool");
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } => print!("{delta}"),
            AgentEvent::ToolExecutionStart { tool_name, args, .. } => println!("\n  [tool] {tool_name} {args}"),
            AgentEvent::ToolExecutionEnd { result, is_error, .. } => {
                let text = sinew::content::join_text(&result.content, " ");
                println!("  [{}] {text}", if is_error { "error" } else { "result" });
            }
            AgentEvent::AgentEnd { reason, messages, .. } => {
                println!("\n\n(run ended: {reason:?}, {} new messages)", messages.len());
            }
            _ => {}
        }
    }
}
