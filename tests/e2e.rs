//! End to end through the facade: a coding-assistant-shaped run with approval, a checkpoint saved
//! to disk, and a resume in a fresh agent.

use futures::StreamExt;
use serde_json::{Value, json};
use sinew::testing::{MockProvider, MockResponse, assert_history_valid};
use sinew::{AgentEvent, AgentMessage, AgentSnapshot, Decisions, EndReason, StreamDelta};
use sinew_e2e::guarded_agent;

fn script() -> [MockResponse; 2] {
    [
        MockResponse::new().text_words("Let me check first. ").tool_call("c1", "echo", json!({"text": "ls"})),
        MockResponse::new().tool_call("c2", "write_file", json!({"path": "notes.md"})),
    ]
}

#[tokio::test]
async fn a_guarded_session_survives_a_checkpoint_and_finishes_elsewhere() {
    let mut agent = guarded_agent(MockProvider::new(script()));

    let mut run = agent.prompt("Write my notes");
    let mut text = String::new();
    let mut approval_requests = Vec::new();
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } => text.push_str(&delta),
            AgentEvent::ToolApprovalRequest { tool_call_id, .. } => approval_requests.push(tool_call_id),
            _ => {}
        }
    }
    assert_eq!(run.outcome().map(|o| o.reason), Some(EndReason::Suspended));
    drop(run);
    assert_eq!(text, "Let me check first. ");
    assert_eq!(approval_requests, ["c2"]);
    assert_history_valid(agent.messages());

    let path = std::env::temp_dir().join(format!("sinew-e2e-{}.json", std::process::id()));
    agent.snapshot().save(&path).unwrap();

    let mut resumed = guarded_agent(MockProvider::new([MockResponse::text("Notes written.")]));
    resumed.restore(AgentSnapshot::load(&path).unwrap());
    std::fs::remove_file(&path).unwrap();
    let outcome = resumed.resume(Decisions::new().approve("c2")).unwrap().finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("Notes written."));
    // prompt, call c1, its result, call c2, its result, answer
    assert_eq!(resumed.messages().len(), 6);
    assert_history_valid(resumed.messages());
    assert_eq!(resumed.agent_id(), agent.agent_id());
}

#[tokio::test]
async fn a_suspended_run_is_resumed_by_another_process() {
    let mut agent = guarded_agent(MockProvider::new(script()));
    let outcome = agent.prompt("Write my notes").finish().await;
    assert_eq!(outcome.reason, EndReason::Suspended);
    let path = std::env::temp_dir().join(format!("sinew-e2e-process-{}.json", std::process::id()));
    agent.snapshot().save(&path).unwrap();

    for (decision, tool_text) in
        [("approve", "wrote notes.md"), ("reject", "The user rejected this tool call: not now")]
    {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_sinew-e2e-resume"))
            .args([path.to_str().unwrap(), decision, "c2"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["reason"], "completed");
        assert_eq!(report["finalText"], "Notes written.");
        assert_eq!(report["agentId"], agent.agent_id());
        let history: Vec<AgentMessage> = serde_json::from_value(report["history"].clone()).unwrap();
        assert_history_valid(&history);
        let last_result = history.iter().rev().find_map(AgentMessage::as_tool_result).unwrap();
        assert_eq!(sinew::content::join_text(&last_result.content, ""), tool_text);
    }
    std::fs::remove_file(&path).unwrap();
}

/// A provider over real HTTP under the agent loop: a service that always answers 503 gets the
/// loop's retry policy, once: one request and its retries, not the provider's retries times the
/// loop's (which made 12 requests of a 3-retry policy).
#[tokio::test]
async fn a_failing_service_is_retried_by_one_policy() {
    use sinew::anthropic::{AnthropicConfig, AnthropicProvider};
    use sinew::testing::{MockServer, ServedResponse};

    let server = MockServer::start(|_| ServedResponse::json(503, &json!({"error": {"message": "overloaded"}}))).await;
    let mut config = AnthropicConfig::new("sk-ant-test");
    config.base_url = server.url();
    let policy = sinew::RetryConfig::new(3, 1, 1.0, 1);
    let mut agent = sinew::Agent::new(AnthropicProvider::new(config), "claude-test").with_retry_config(policy);
    let (events, outcome) = agent.prompt("hi").collect().await;
    assert_eq!(outcome.reason, EndReason::Failed);
    assert_eq!(server.requests().len(), 4, "one request and three retries");
    let retries = events.iter().filter(|e| matches!(e, AgentEvent::ProviderRetry { .. })).count();
    assert_eq!(retries, 3, "the provider's retries are announced");
}

/// A failure after the response began, before anything streamed (Anthropic's `overloaded_error`
/// as the first event of a 200), is the loop's to retry: the provider's retries end when the
/// response begins.
#[tokio::test]
async fn an_error_event_before_the_first_delta_is_retried_by_the_loop() {
    use sinew::anthropic::{AnthropicConfig, AnthropicProvider};
    use sinew::testing::wire::{WireTurn, anthropic_events, sse_response};
    use sinew::testing::{MockServer, ServedResponse};

    let overloaded = ServedResponse::sse(concat!(
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    ));
    let answer = sse_response(anthropic_events(&WireTurn::new().text("after the retry").usage(5, 3)), None);
    let server = MockServer::scripted([overloaded, answer]).await;
    let mut config = AnthropicConfig::new("sk-ant-test");
    config.base_url = server.url();
    let policy = sinew::RetryConfig::new(2, 1, 1.0, 1);
    let mut agent = sinew::Agent::new(AnthropicProvider::new(config), "claude-test").with_retry_config(policy);
    let (events, outcome) = agent.prompt("hi").collect().await;
    assert_eq!(outcome.reason, EndReason::Completed, "{:?}", outcome.error);
    assert_eq!(outcome.final_text().as_deref(), Some("after the retry"));
    assert_eq!(server.requests().len(), 2);
    let retries = events.iter().filter(|e| matches!(e, AgentEvent::ProviderRetry { attempt: 1, .. })).count();
    assert_eq!(retries, 1);
}
