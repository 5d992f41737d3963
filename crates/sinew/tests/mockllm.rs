//! The benchmark's mock model, driven by real agents over real HTTP for both protocols: what
//! `cargo xtask bench e2e` measures is checked here to be right.

use sinew::anthropic::{AnthropicConfig, AnthropicProvider};
use sinew::openai::{Auth, OpenAiChatConfig, OpenAiChatProvider};
use sinew::testing::mockllm::{expected_text, respond};
use sinew::testing::{EchoTool, MockServer};
use sinew::{Agent, AgentMessage, EndReason, StreamProvider};

async fn three_turns(provider: impl StreamProvider + 'static) {
    let mut agent = Agent::new(provider, "mock-1").with_tool(EchoTool);
    for turn in 0..3 {
        let outcome = agent.prompt(format!("tools=4 tokens=7 turn={turn}")).finish().await;
        assert_eq!(outcome.reason, EndReason::Completed, "{:?}", outcome.error);
        assert_eq!(outcome.final_text().as_deref(), Some(expected_text(7).as_str()));
    }
    let results: Vec<String> = agent
        .messages()
        .iter()
        .filter_map(AgentMessage::as_tool_result)
        .map(|r| sinew::join_text(&r.content, ""))
        .collect();
    assert_eq!(results.len(), 12, "four calls per turn");
    assert_eq!(&results[..4], ["call-0", "call-1", "call-2", "call-3"], "results in call order");
}

#[tokio::test]
async fn openai_chat_turns_against_the_mock_model() {
    let server = MockServer::start(respond).await;
    let config = OpenAiChatConfig::compatible("openai", format!("{}/v1", server.url()), Auth::None);
    three_turns(OpenAiChatProvider::new(config)).await;
    assert_eq!(server.requests().len(), 6, "two model calls per turn");
}

#[tokio::test]
async fn anthropic_turns_against_the_mock_model() {
    let server = MockServer::start(respond).await;
    let mut config = AnthropicConfig::new("k");
    config.base_url = server.url();
    three_turns(AnthropicProvider::new(config)).await;
    assert_eq!(server.requests().len(), 6);
}
