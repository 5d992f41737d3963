//! Identity: agent, session and loop ids; continuation kinds; turn triggers (REQ-186…193, 210).

use sinew_core::*;
use sinew_testing::{MockProvider, MockResponse};

use crate::agent;

fn agent_start(events: &[AgentEvent]) -> (String, String, String, Option<String>, Option<ContinuationKind>) {
    match &events[0] {
        AgentEvent::AgentStart { agent_id, session_id, loop_id, parent_loop_id, continuation_kind, .. } => (
            agent_id.to_string(),
            session_id.to_string(),
            loop_id.to_string(),
            parent_loop_id.clone(),
            continuation_kind.clone(),
        ),
        other => panic!("first event is {other:?}"),
    }
}

fn triggers(events: &[AgentEvent]) -> Vec<TurnTrigger> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnStart { triggered_by, .. } => Some(*triggered_by),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn ids_are_stable_and_loop_ids_count_per_config() {
    let (mut agent, _) = agent([MockResponse::text("1"), MockResponse::text("2")]);
    let (e1, _) = agent.prompt("a").collect().await;
    let (e2, _) = agent.prompt("b").collect().await;
    let (a1, s1, l1, p1, k1) = agent_start(&e1);
    let (a2, s2, l2, _, _) = agent_start(&e2);
    assert_eq!((a1.as_str(), s1.as_str()), (a2.as_str(), s2.as_str()));
    assert_eq!((a1.as_str(), s1.as_str()), (agent.agent_id(), agent.session_id()));
    assert!(uuid_like(&a1) && uuid_like(&s1), "{a1} {s1}");
    assert_eq!(l1, format!("{s1}.mock.mock-model.1"));
    assert_eq!(l2, format!("{s1}.mock.mock-model.2"));
    assert_eq!((p1, k1), (None, None), "origin calls have no parent and no continuation kind");
    let AgentEvent::AgentStart { model, provider, config_id, .. } = &e1[0] else { unreachable!() };
    assert_eq!((model.as_str(), provider.as_str(), config_id.as_str()), ("mock-model", "mock", "mock.mock-model"));
    assert_eq!(agent.last_loop_id(), Some(l2.as_str()));
    // Every event of a run carries its loop id.
    assert!(e2.iter().all(|e| e.loop_id() == l2));
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[tokio::test]
async fn config_segments_are_derived_or_given() {
    let (agent, _) = agent([]);
    let mut agent = agent.with_model("claude-3.5/sonnet").with_thinking(ThinkingLevel::Low);
    let id = agent.next_loop_id();
    assert!(id.ends_with(".mock.claude-3-5-sonnet.thinking.1"), "{id}");
    let mut agent = agent.with_config_id("my-config");
    let id = agent.next_loop_id();
    assert_eq!(id, format!("{}.my-config.1", agent.session_id()), "a new config counts from 1");
    assert!(agent.next_loop_id().ends_with(".my-config.2"));
}

#[tokio::test]
async fn turn_triggers_follow_the_continuation_kind() {
    let script =
        || [MockResponse::new().tool_call("c", "echo", serde_json::json!({"text": "x"})), MockResponse::text("done")];
    let (agent, _) = agent(script());
    let mut agent = agent.with_tool(sinew_testing::EchoTool);
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(triggers(&events), [TurnTrigger::User, TurnTrigger::Continuation]);

    for (kind, first) in [
        (ContinuationKind::Branch { tag: "2026-11-21T10:00:00Z".into() }, TurnTrigger::Branch),
        (ContinuationKind::Rerun { tag: "2026-11-21T10:00:00Z".into() }, TurnTrigger::Continuation),
        (ContinuationKind::Default, TurnTrigger::Continuation),
    ] {
        let (agent, _) = crate::agent(script());
        let mut agent = agent.with_tool(sinew_testing::EchoTool);
        agent.set_messages(vec![AgentMessage::user("q")]);
        let (events, _) = agent.continue_run(kind.clone()).unwrap().collect().await;
        assert_eq!(triggers(&events), [first, TurnTrigger::Continuation], "{kind:?}");
        let (_, _, _, parent, got_kind) = agent_start(&events);
        assert_eq!(got_kind, Some(kind));
        assert_eq!(parent, None, "no earlier run of this agent");
    }

    let mut agent = sinew_agent::Agent::new(MockProvider::new([MockResponse::text("x")]), "m")
        .with_first_turn_trigger(TurnTrigger::SubAgent);
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(triggers(&events), [TurnTrigger::SubAgent]);
}

#[tokio::test]
async fn continuations_name_the_previous_loop_as_parent() {
    let (mut agent, _) = agent([MockResponse::text("1"), MockResponse::text("2")]);
    agent.prompt("a").finish().await;
    let first = agent.last_loop_id().unwrap().to_owned();
    let mut history = agent.messages().to_vec();
    history.push(AgentMessage::user("more"));
    agent.set_messages(history);
    let (events, _) = agent.continue_run(ContinuationKind::Default).unwrap().collect().await;
    let (_, _, loop_id, parent, _) = agent_start(&events);
    assert_eq!(parent.as_deref(), Some(first.as_str()));
    assert!(loop_id.ends_with(".2"));
}

#[tokio::test]
async fn snapshots_carry_identity_and_counters() {
    let (mut agent, _) = agent([MockResponse::text("1")]);
    agent.prompt("a").finish().await;
    let snapshot = agent.snapshot();
    let json = snapshot.to_json().unwrap();
    let back = sinew_agent::AgentSnapshot::from_json(&json).unwrap();
    assert_eq!(back, snapshot);
    let (mut other, _) = crate::agent([MockResponse::text("2")]);
    other.restore(back);
    assert_eq!((other.agent_id(), other.session_id()), (agent.agent_id(), agent.session_id()));
    assert_eq!(other.next_loop_id(), format!("{}.mock.mock-model.2", agent.session_id()));
}

#[tokio::test]
async fn a_named_agent_switches_models_between_runs_and_keeps_its_history() {
    let model = std::sync::Arc::new(MockProvider::new([MockResponse::text("1"), MockResponse::text("2")]));
    let mut agent = sinew_agent::Agent::with_provider_arc(model.clone(), "first").with_agent_id("sinew");
    let (events, _) = agent.prompt("a").collect().await;
    assert_eq!(agent_start(&events).0, "sinew");
    assert_eq!(agent.model(), "first");
    agent.set_model("second");
    let (events, _) = agent.prompt("b").collect().await;
    assert!(matches!(&events[0], AgentEvent::AgentStart { model, .. } if model == "second"));
    let models: Vec<String> = model.requests().into_iter().map(|r| r.model).collect();
    assert_eq!(models, ["first", "second"]);
    assert_eq!(model.requests()[1].messages.len(), 3, "the history went along");
}
