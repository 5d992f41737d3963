//! The testing kit: a conversation through the harness, and event-stream questions.

use std::sync::Arc;

use serde_json::json;
use sinew_fluent::middleware::TokenBudget;
use sinew_fluent::testing::{EventsExt as _, Harness};
use sinew_fluent::{AdkBackend, Agent, MockBackend, S, gate};

use super::FakeLlm;

#[tokio::test]
async fn the_harness_keeps_one_conversation() {
    let pipeline = S::set([("amount", json!(5000))])
        >> gate("approval", |s| s.get("amount").and_then(serde_json::Value::as_i64) > Some(1000), "Approve?")
        >> Agent::named("refund").outputs("status");
    let mut harness = Harness::new(pipeline, MockBackend::new([("refund", json!("Refunded."))])).unwrap();
    let asked = harness.send("refund me").await.unwrap();
    assert_eq!((asked.final_text.as_str(), asked.events.authors()), ("Approve?", vec!["set_amount", "approval"]));
    let done = harness.send("yes").await.unwrap();
    assert_eq!(done.final_text, "Refunded.");
    assert_eq!(done.events.state_written("status"), Some(&json!("Refunded.")));
    assert_eq!(done.events.by("refund").len(), 1);
    assert!(done.errors.is_empty());

    // Another session starts the conversation over.
    let mut other = Harness::new(
        S::set([("amount", json!(5000))])
            >> gate("approval", |s| s.get("amount").and_then(serde_json::Value::as_i64) > Some(1000), "Approve?"),
        MockBackend::new(Vec::<(String, serde_json::Value)>::new()),
    )
    .unwrap()
    .in_session("u2", "s2");
    assert_eq!(other.send("refund me").await.unwrap().final_text, "Approve?");
}

#[tokio::test]
async fn error_events_and_tool_calls_are_reported() {
    let model = FakeLlm::new("m", (100, 100), [Ok("one")]);
    let backend = AdkBackend::new().with_middleware(Arc::new(TokenBudget::total(10)));
    let mut harness = Harness::new(Agent::new("a", model as Arc<dyn sinew_adk::Llm>), backend).unwrap();
    assert!(harness.send("1").await.unwrap().errors.is_empty());
    let refused = harness.send("2").await.unwrap();
    assert_eq!(refused.errors, ["TOKEN_BUDGET_EXCEEDED: the token budget of 10 is spent (200 used)"]);
    assert!(refused.events.tools_called().is_empty());
}
