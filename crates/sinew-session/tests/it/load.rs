//! REQ-170: 100 agents at once, each with 10 concurrent tool calls, recorded into a store: every
//! result stored, in call order, nothing lost or mixed up, no deadlock.

use std::sync::Arc;
use std::time::Duration;

use sinew_core::{AgentMessage, Message, content::join_text};
use sinew_session::{LoopStatus, SessionStore, SqliteStore};

use crate::workload::{prompt_text, result_text, run_agents};

const AGENTS: usize = 100;
const CALLS: usize = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_agents_with_ten_concurrent_tool_calls_each_are_recorded_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(dir.path().join("load.db")).unwrap());
    tokio::time::timeout(Duration::from_secs(120), run_agents(Arc::clone(&store), AGENTS, CALLS))
        .await
        .expect("the workload finished: no deadlock");
    assert_eq!(Arc::strong_count(&store), 1, "every task let go of the store: nothing is left running");

    let ids = store.list_ids().await.unwrap();
    assert_eq!(ids.len(), AGENTS, "one session per agent");
    let mut results = 0;
    let mut agents_seen = [false; AGENTS];
    for id in ids {
        let session = store.load(&id).await.unwrap();
        let [record] = session.loops.as_slice() else { panic!("{id}: {} loops", session.loops.len()) };
        assert_eq!(record.status, LoopStatus::Completed);
        let messages = &record.messages;
        assert_eq!(messages.len(), 2 + CALLS + 1, "{id}: prompt, calls, results, answer");
        let prompt = user_text(&messages[0]);
        let agent = (0..AGENTS).find(|a| prompt == prompt_text(*a)).expect("a known prompt");
        assert!(!std::mem::replace(&mut agents_seen[agent], true), "agent {agent} recorded twice");
        for (call, message) in messages[2..2 + CALLS].iter().enumerate() {
            let AgentMessage::Llm(Message::ToolResult(result)) = message else { panic!("{message:?}") };
            assert_eq!(result.tool_call_id, format!("c{call}"), "results in call order");
            assert_eq!(join_text(&result.content, ""), result_text(agent, call), "its own result");
            results += 1;
        }
        assert_eq!(messages[2 + CALLS].as_assistant().unwrap().text(), "done");
    }
    assert_eq!(results, AGENTS * CALLS);
    assert!(agents_seen.iter().all(|seen| *seen));
}

fn user_text(message: &AgentMessage) -> String {
    match message {
        AgentMessage::Llm(Message::User(user)) => join_text(&user.content, ""),
        other => panic!("not a user message: {other:?}"),
    }
}
