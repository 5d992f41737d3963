//! `Extractor` end to end: real providers over HTTP against scripted Anthropic Messages servers,
//! in native structured-output mode and in forced-tool mode.

use serde_json::{Value, json};
use sinew::anthropic::{AnthropicConfig, AnthropicProvider};
use sinew::extract::{ExtractMode, Extractor};
use sinew::testing::schema::{Order, sample_order};
use sinew::testing::wire::{WireTurn, anthropic_events, sse_response};
use sinew::testing::{MockServer, ReceivedRequest};
use sinew::{Agent, join_text};

fn provider(server: &MockServer) -> AnthropicProvider {
    let mut config = AnthropicConfig::new("k");
    config.base_url = server.url();
    AnthropicProvider::new(config)
}

fn user_turns(request: &ReceivedRequest) -> usize {
    request.json()["messages"].as_array().map_or(0, |m| m.iter().filter(|m| m["role"] == "user").count())
}

#[tokio::test]
async fn native_structured_output_over_anthropic_with_a_correction() {
    let server = MockServer::start(|request: &ReceivedRequest| {
        let mut wrong = sample_order();
        wrong["status"] = json!("lost");
        let answer = if user_turns(request) == 1 { wrong } else { sample_order() };
        let text = answer.to_string();
        let (head, tail) = text.split_at(text.len() / 2);
        sse_response(anthropic_events(&WireTurn::new().text(head).text(tail)), None)
    })
    .await;
    let mut extractor = Extractor::<Order>::new(Agent::new(provider(&server), "claude-sonnet-4-5"));
    let order = extractor.extract("Read the order in this mail: ...").await.unwrap();
    assert_eq!((order.value.id, order.attempts), (7, 2));
    let requests = server.requests();
    let format = &requests[0].json()["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["schema"]["additionalProperties"], false, "objects are sent closed");
    let last = requests[1].json()["messages"].as_array().unwrap().last().unwrap().clone();
    let correction = join_text(&serde_json::from_value::<Vec<sinew::Content>>(last["content"].clone()).unwrap(), "");
    assert!(correction.contains("at /status: "), "{correction}");
}

#[tokio::test]
async fn forced_tool_mode_over_anthropic() {
    let server = MockServer::start(|_: &ReceivedRequest| {
        let turn = WireTurn::new().tool_call("toolu_1", "Order", sample_order());
        sse_response(anthropic_events(&turn), None)
    })
    .await;
    let agent = Agent::new(provider(&server), "claude-3-5-haiku-latest");
    let mut extractor = Extractor::<Order>::new(agent).with_mode(ExtractMode::Tool);
    let order = extractor.extract("Read the order in this mail: ...").await.unwrap();
    assert_eq!((order.value.lines.len(), order.attempts), (1, 1));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the run ends with the valid call");
    let body: Value = requests[0].json();
    assert_eq!(body["tool_choice"], json!({"type": "tool", "name": "Order"}));
    assert_eq!(body["tools"][0]["name"], "Order");
    assert!(body.get("output_config").is_none());
    sinew::testing::assert_history_valid(extractor.agent().messages());
}
