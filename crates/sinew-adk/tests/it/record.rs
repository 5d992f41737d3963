//! ADK runs recorded as sinew loop records, and kept by a sinew-session store.

use serde_json::Value;
use sinew_adk::{Content, Event, Session, to_sinew_session};
use sinew_core::{AgentMessage, Message};
use sinew_session::{LoopStatus, SessionStore, SqliteStore};

/// The recorded weather run (samples/02) after the user's question, then an invocation that
/// failed and one that waits for a long-running call.
fn adk_session() -> Session {
    let mut session = Session::new("demo_agent", "u1", "s1");
    let run: Vec<Event> = serde_json::from_str(&crate::data("samples/02_run_weather.json")).unwrap();
    let weather = run[0].invocation_id.clone();
    let mut question = Event::user(weather, Content::user_text("what is the weather"));
    question.timestamp = run[0].timestamp - 1.0;
    session.events.push(question);
    session.events.extend(run);
    let mut failed = Event::user("e-failed", Content::user_text("again"));
    failed.timestamp = 1_795_254_300.0;
    let mut error =
        Event::from_response("e-failed", "demo_agent", sinew_adk::LlmResponse::error("UNAVAILABLE", "model down"));
    error.timestamp = 1_795_254_301.0;
    let confirmation: Vec<Event> =
        serde_json::from_str(&crate::data("samples/03_run_confirmation_request.json")).unwrap();
    session.events.extend([failed, error]);
    session.events.extend(confirmation);
    session.last_update_time = session.events.last().unwrap().timestamp;
    session
}

fn roles(messages: &[AgentMessage]) -> Vec<&'static str> {
    messages
        .iter()
        .map(|m| match m {
            AgentMessage::Llm(Message::User(_)) => "user",
            AgentMessage::Llm(Message::Assistant(_)) => "assistant",
            AgentMessage::Llm(Message::ToolResult(_)) => "tool",
            AgentMessage::Extension(_) => "extension",
        })
        .collect()
}

#[tokio::test]
async fn adk_runs_become_loop_records_a_session_store_keeps() {
    let adk = adk_session();
    let record = to_sinew_session(&adk);
    assert_eq!((record.session_id.as_str(), record.agent_id.as_str()), ("s1", "demo_agent"));
    assert_eq!(record.loops.len(), 3, "one loop per invocation");

    let weather = &record.loops[0];
    assert_eq!(weather.loop_id, adk.events[0].invocation_id.as_str());
    assert_eq!(weather.agent_id, "demo_agent");
    assert_eq!(weather.status, LoopStatus::Completed);
    assert_eq!(roles(&weather.messages), ["user", "assistant", "tool", "assistant"]);
    let AgentMessage::Llm(Message::Assistant(call)) = &weather.messages[1] else { unreachable!() };
    let ids: Vec<&str> = call.tool_calls().map(|c| c.id).collect();
    assert_eq!(ids, ["adk-aed98d4b-d062-4d82-ab4c-15e74a2fb22a"]);
    let AgentMessage::Llm(Message::ToolResult(result)) = &weather.messages[2] else { unreachable!() };
    assert_eq!(result.tool_name, "get_weather");
    assert_eq!((weather.usage.input, weather.usage.output, weather.usage.total_tokens), (20, 10, 30));
    assert_eq!(weather.started_at, (adk.events[0].timestamp * 1000.0) as u64);
    assert_eq!(weather.ended_at, Some((adk.events[3].timestamp * 1000.0) as u64));

    assert_eq!(record.loops[1].status, LoopStatus::Failed);
    assert_eq!(record.loops[2].status, LoopStatus::Suspended, "the confirmation is not answered");

    // A sinew store keeps it, and gives it back whole.
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    store.save(&record).await.unwrap();
    let loaded = store.load("s1").await.unwrap();
    assert_eq!(loaded, record);
    let text: Value = serde_json::to_value(&loaded.loops[0].messages[3]).unwrap();
    assert!(text.to_string().contains("sunny"), "{text}");
}
