//! `sinew --demo`: a scripted model (`MockProvider`) driving the real tools in a scratch
//! directory, so the loop, the approvals and the display can be seen with no key and no network.

use std::time::Duration;

use serde_json::json;
use sinew::testing::{MockProvider, MockResponse};
use sinew::{Message, StreamRequest};

use crate::approval::DECLINED;

/// The prompt the demo sends, as if typed.
pub(crate) const PROMPT: &str = "Create hello.txt with a greeting, then show me what it says.";

pub(crate) const MODEL: &str = "scripted-demo-model";

/// What the demo says about itself before it starts.
pub(crate) fn banner(workspace: &std::path::Path) -> String {
    format!(
        "── sinew demo ── SCRIPTED: the model's answers below are canned (MockProvider); no API key, no network.\n\
         The tools are real; they work in a scratch directory, {}, removed afterwards.",
        workspace.display()
    )
}

/// The scripted model. Each answer depends on where the conversation is, so declining a tool
/// call gets a fitting reply.
pub(crate) fn provider() -> MockProvider {
    MockProvider::from_fn(respond).with_provider_id("demo")
}

fn respond(request: &StreamRequest<'_>) -> MockResponse {
    let last_result = request.messages.iter().rev().find_map(|m| match m {
        Message::ToolResult(result) => Some(result),
        _ => None,
    });
    if matches!(request.messages.last(), Some(Message::User(_))) {
        let thinking = "The user wants a file with a greeting. I will write hello.txt, \
                        then read it back with cat so they see exactly what it holds.";
        let mut response = MockResponse::new();
        for word in thinking.split_inclusive(' ') {
            response = response.thinking_delta(word).delay(Duration::from_millis(15));
        }
        return words(response, "I'll create the file first.\n")
            .tool_call("demo_1", "write_file", json!({"path": "hello.txt", "content": "Hello from sinew!\n"}))
            .usage(1_200, 96);
    }
    match last_result {
        Some(result) if result.is_error && sinew::join_text(&result.content, "").contains(DECLINED) => {
            let text = format!(
                "Understood: you declined `{}`, so I stopped there and changed nothing else.",
                result.tool_name
            );
            words(MockResponse::new(), &text).usage(1_450, 24)
        }
        Some(result) if result.tool_name == "write_file" => words(MockResponse::new(), "Now let me show it.\n")
            .tool_call("demo_2", "bash", json!({"command": "cat hello.txt"}))
            .usage(1_380, 40),
        _ => words(
            MockResponse::new(),
            "Done: hello.txt says \"Hello from sinew!\".\n\nThat was the whole tool loop: the model asked for \
             tools, you approved them, they ran, and their results went back to the model.",
        )
        .usage(1_520, 52),
    }
}

/// `text` streamed word by word.
fn words(mut response: MockResponse, text: &str) -> MockResponse {
    for word in text.split_inclusive(' ') {
        response = response.text_delta(word).delay(Duration::from_millis(30));
    }
    response
}
