//! The session recorder (REQ-214, REQ-215, REQ-218, REQ-221).

use std::time::Duration;

use sinew_agent::Agent;
use sinew_core::{AgentEvent, ContinuationKind, EndReason, ToolResult};
use sinew_session::{EventRecording, Formation, LoopStatus, ParallelGroupRecord, SessionRecorder};
use sinew_testing::{MockProvider, MockResponse};

fn agent(responses: usize) -> Agent {
    let mock = MockProvider::new((0..responses).map(|i| MockResponse::text(format!("answer {i}")).usage(10, 5)));
    Agent::new(mock, "mock-model")
}

async fn record(recorder: &mut SessionRecorder, run: sinew_agent::AgentRun<'_>) {
    let (events, _) = run.collect().await;
    for event in &events {
        recorder.on_event(event);
    }
}

#[tokio::test]
async fn test_session_recorder_single_loop() {
    let mut agent = agent(1);
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    record(&mut recorder, agent.prompt("hello")).await;
    let sessions = recorder.flush();
    assert_eq!(sessions.len(), 1);
    let session = &sessions[0];
    assert_eq!((session.session_id.as_str(), session.agent_id.as_str()), (agent.session_id(), agent.agent_id()));
    let record = &session.loops[0];
    assert_eq!(record.loop_id, agent.last_loop_id().unwrap());
    assert_eq!(record.status, LoopStatus::Completed);
    assert_eq!(record.messages.len(), 2, "prompt and answer");
    assert_eq!(record.usage.input + record.usage.output, 15);
    let config = record.config.as_ref().unwrap();
    assert_eq!((config.model.as_str(), config.provider.as_str()), ("mock-model", "mock"));
    assert!(record.ended_at.unwrap() >= record.started_at);
    // Lifecycle events are kept, deltas are not.
    let kinds: Vec<&str> = record.events.iter().map(|e| e.event.kind()).collect();
    assert_eq!(kinds.first(), Some(&"agent_start"));
    assert_eq!(kinds.last(), Some(&"agent_end"));
    assert!(!kinds.contains(&"message_update"));
    assert!(recorder.flush().is_empty(), "flushed once");
}

#[tokio::test]
async fn test_session_recorder_continuation() {
    let mut agent = agent(3);
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    record(&mut recorder, agent.prompt("one")).await;
    record(&mut recorder, agent.prompt("two")).await;
    let session = recorder.session(agent.session_id()).unwrap();
    assert_eq!(session.loops.len(), 2);
    assert_eq!(session.total_usage().input, 20);
    // Flushed, then continued: the new record holds only the new loop (stores merge them).
    let first = recorder.flush();
    record(&mut recorder, agent.prompt("three")).await;
    let second = recorder.flush();
    assert_eq!((first[0].loops.len(), second[0].loops.len()), (2, 1));
    assert_eq!(first[0].session_id, second[0].session_id);
}

#[tokio::test]
async fn test_session_recorder_continuation_kind() {
    let mut agent = agent(2);
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    record(&mut recorder, agent.prompt("one")).await;
    // A continuation after the user edits the history: the model answers again.
    let mut history = agent.messages().to_vec();
    history.pop();
    agent.set_messages(history);
    let kind = ContinuationKind::Rerun { tag: "2026-11-21T12:00:00Z".into() };
    record(&mut recorder, agent.continue_run(kind.clone()).unwrap()).await;
    let session = recorder.session(agent.session_id()).unwrap();
    assert_eq!(session.loops[0].continuation_kind, None);
    assert_eq!(session.loops[1].continuation_kind, Some(kind));
}

fn start(session: &str, loop_id: &str, parent: Option<&str>) -> AgentEvent {
    AgentEvent::AgentStart {
        agent_id: format!("agent-of-{session}").into(),
        session_id: session.into(),
        loop_id: loop_id.into(),
        parent_loop_id: parent.map(str::to_owned),
        continuation_kind: None,
        model: "m".into(),
        provider: "p".into(),
        config_id: "p.m".into(),
    }
}

fn end(loop_id: &str) -> AgentEvent {
    AgentEvent::AgentEnd { loop_id: loop_id.into(), messages: Vec::new(), reason: EndReason::Completed }
}

fn tool_end(loop_id: &str, child: &str) -> AgentEvent {
    AgentEvent::ToolExecutionEnd {
        loop_id: loop_id.into(),
        tool_call_id: "call-7".into(),
        tool_name: "delegate".into(),
        result: ToolResult::text("child said hi"),
        is_error: false,
        child_loop_id: Some(child.into()),
    }
}

/// Parent P.1 in session P spawns the sub-agent C.1 in session C through tool call `call-7`.
fn spawn_tree(recorder: &mut SessionRecorder) {
    recorder.on_event(&start("P", "P.1", None));
    recorder.on_event(&start("C", "C.1", Some("P.1")));
    recorder.on_event(&end("C.1"));
    recorder.on_event(&tool_end("P.1", "C.1"));
    recorder.on_event(&end("P.1"));
}

#[test]
fn test_session_recorder_bidirectional_tree() {
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    // Then a continuation P.2 of P.1.
    spawn_tree(&mut recorder);
    recorder.on_event(&start("P", "P.2", Some("P.1")));
    recorder.on_event(&end("P.2"));

    let parent = recorder.session("P").unwrap();
    let root: Vec<&str> = parent.root_loops().iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!(root, ["P.1"]);
    let children: Vec<&str> = parent.children_of("P.1").iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!(children, ["P.2"], "children in this session");
    let p1 = parent.get_loop("P.1").unwrap();
    assert_eq!(p1.children_loop_ids, ["C.1", "P.2"]);
    let link = &p1.child_loop_refs[0];
    assert_eq!(
        (link.child_session_id.as_str(), link.child_loop_id.as_str(), link.tool_call_id.as_str()),
        ("C", "C.1", "call-7")
    );
    let child = recorder.session("C").unwrap();
    let spawn = child.parent_spawn_ref.as_ref().unwrap();
    assert_eq!(
        (
            spawn.parent_session_id.as_str(),
            spawn.parent_loop_id.as_str(),
            spawn.tool_call_id.as_str(),
            spawn.tool_name.as_str()
        ),
        ("P", "P.1", "call-7", "delegate")
    );
    assert_eq!(child.get_loop("C.1").unwrap().parent_loop_id.as_deref(), Some("P.1"));
    assert!(child.root_loops().len() == 1, "a loop whose parent is elsewhere is a root here");
}

#[test]
fn a_flush_between_the_childs_end_and_the_parents_tool_result_keeps_the_spawn_ref_whole() {
    // REQ-221: periodic flushing must not leave the child's SpawnRef without its tool call.
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    recorder.on_event(&start("P", "P.1", None));
    recorder.on_event(&start("C", "C.1", Some("P.1")));
    recorder.on_event(&end("C.1"));
    assert!(recorder.flush().is_empty(), "the child waits for its parent's tool result");
    recorder.on_event(&tool_end("P.1", "C.1"));
    let flushed = recorder.flush();
    assert_eq!(flushed.len(), 1);
    let spawn = flushed[0].parent_spawn_ref.as_ref().unwrap();
    assert_eq!((spawn.tool_call_id.as_str(), spawn.tool_name.as_str()), ("call-7", "delegate"));
    recorder.on_event(&end("P.1"));
    assert_eq!(recorder.flush()[0].session_id, "P");
    // A parent that ends without the tool result (cancelled) releases the child anyway.
    recorder.on_event(&start("P", "P.3", None));
    recorder.on_event(&start("C", "C.2", Some("P.3")));
    recorder.on_event(&end("P.3"));
    recorder.on_event(&end("C.2"));
    let ids: Vec<String> = recorder.flush().into_iter().map(|s| s.session_id).collect();
    assert_eq!(ids, ["P", "C"]);
}

#[test]
fn test_session_recorder_parallel_group() {
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    let branches = ["S.1", "S.2", "S.3"];
    for id in branches {
        let group = ParallelGroupRecord {
            group_id: "g1".into(),
            branch_loop_ids: branches.iter().map(|b| (*b).to_owned()).collect(),
            strategy: "first".into(),
            selected_loop_id: Some("S.2".into()),
            is_selected: id == "S.2",
        };
        recorder.register_pending("agent-of-S", "S", id).parallel_group = Some(group);
    }
    assert_eq!(recorder.session("S").unwrap().loops[0].status, LoopStatus::Pending);
    for id in branches {
        recorder.on_event(&start("S", id, None));
        recorder.on_event(&end(id));
    }
    let session = recorder.session("S").unwrap();
    assert!(session.loops.iter().all(|l| l.status == LoopStatus::Completed && l.parallel_group.is_some()));
    assert_eq!(session.loops.iter().filter(|l| l.parallel_group.as_ref().unwrap().is_selected).count(), 1);
    let siblings: Vec<&str> = session.parallel_siblings("S.1").iter().map(|l| l.loop_id.as_str()).collect();
    assert_eq!(siblings, ["S.2", "S.3"]);
    assert!(session.parallel_siblings("nope").is_empty());
}

#[tokio::test]
async fn formations_group_runs_differently() {
    let mut agent = agent(2);
    let mut per_agent = SessionRecorder::new(Formation::PerAgent);
    let mut single = SessionRecorder::new(Formation::Single("everything".into()));
    let mut per_session = SessionRecorder::new(Formation::PerSessionId).with_event_recording(EventRecording::None);
    for _ in 0..2 {
        let (events, _) = agent.prompt("hi").collect().await;
        for event in &events {
            per_agent.on_event(event);
            single.on_event(event);
            per_session.on_event(event);
        }
        agent.new_session();
    }
    assert_eq!(per_session.flush().len(), 2, "one per session id");
    let agents = per_agent.flush();
    assert_eq!((agents.len(), agents[0].loops.len()), (1, 2), "one per agent, across rotations");
    let all = single.flush();
    assert_eq!((all[0].session_id.as_str(), all[0].loops.len()), ("everything", 2));
    assert!(all[0].loops[0].events.len() > 2);
}

#[tokio::test]
async fn test_basic_agent_new_session() {
    let mut agent = agent(2);
    agent.prompt("one").finish().await;
    let (old_session, old_loop) = (agent.session_id().to_owned(), agent.last_loop_id().unwrap().to_owned());
    assert!(old_loop.ends_with(".1"));
    let new = agent.new_session().to_owned();
    assert_ne!(new, old_session);
    assert_eq!(agent.last_loop_id(), None);
    agent.prompt("two").finish().await;
    let loop_id = agent.last_loop_id().unwrap();
    assert!(loop_id.starts_with(&new) && loop_id.ends_with(".1"), "{loop_id}");
    assert_eq!(agent.messages().len(), 4, "the history is kept");
}

#[tokio::test]
async fn test_basic_agent_check_and_rotate() {
    let mut agent = agent(1);
    assert!(!agent.check_and_rotate(Duration::ZERO), "never prompted: nothing to rotate");
    agent.prompt("one").finish().await;
    let session = agent.session_id().to_owned();
    assert!(!agent.check_and_rotate(Duration::from_secs(3600)));
    assert_eq!(agent.session_id(), session);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(agent.check_and_rotate(Duration::from_millis(1)));
    assert_ne!(agent.session_id(), session);
}

#[test]
fn sessions_round_trip_through_json() {
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    spawn_tree(&mut recorder);
    for session in recorder.flush() {
        let json = serde_json::to_string(&session).unwrap();
        assert_eq!(serde_json::from_str::<sinew_session::Session>(&json).unwrap(), session);
    }
}

/// A real sub-agent run, recorded from both sides and stored: parent → child through the tool
/// call's `ChildLoopRef`, child → parent through `parent_loop_id` and the child session's
/// `SpawnRef` (REQ-194, REQ-195, REQ-214). The child's events reach the recorder first (its
/// observer fires as they happen, the parent's events are fed after the run): the harder order.
#[tokio::test]
async fn a_sub_agent_run_is_linked_both_ways_and_survives_a_store() {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use sinew_agent::SubAgentTool;
    use sinew_session::{JsonFileStore, SessionStore};

    let recorder = Arc::new(Mutex::new(SessionRecorder::new(Formation::PerSessionId)));
    let feed = Arc::clone(&recorder);
    let helper = SubAgentTool::new("helper", MockProvider::new([MockResponse::text("child answer")]), "small")
        .with_event_observer(move |event| feed.lock().unwrap().on_event(event));
    let parent = MockProvider::new([
        MockResponse::new().tool_call("call_7", "helper", json!({"task": "help"})),
        MockResponse::text("parent answer"),
    ]);
    let mut agent = Agent::new(parent, "large").with_tool(helper);
    let (events, outcome) = agent.prompt("delegate").collect().await;
    for event in &events {
        recorder.lock().unwrap().on_event(event);
    }
    let sessions = recorder.lock().unwrap().flush();
    assert_eq!(sessions.len(), 2, "the parent's session and the child's");

    let dir = tempfile::tempdir().unwrap();
    let store = JsonFileStore::new(dir.path());
    for session in &sessions {
        store.merge(session).await.unwrap();
    }
    let parent = store.load(agent.session_id()).await.unwrap();
    let parent_loop = parent.get_loop(&outcome.loop_id).unwrap();
    let [child_ref] = parent_loop.child_loop_refs.as_slice() else { panic!("{:?}", parent_loop.child_loop_refs) };
    assert_eq!((child_ref.tool_call_id.as_str(), child_ref.tool_name.as_str()), ("call_7", "helper"));

    let child = store.load(&child_ref.child_session_id).await.unwrap();
    assert_eq!(child.agent_id, "helper");
    let child_loop = child.get_loop(&child_ref.child_loop_id).unwrap();
    assert_eq!(child_loop.parent_loop_id.as_deref(), Some(outcome.loop_id.as_str()));
    assert_eq!(child_loop.status, LoopStatus::Completed);
    assert_eq!(child_loop.messages.last().unwrap().as_assistant().unwrap().text(), "child answer");
    let spawn = child.parent_spawn_ref.as_ref().unwrap();
    assert_eq!(
        (spawn.parent_session_id.as_str(), spawn.parent_loop_id.as_str(), spawn.tool_call_id.as_str()),
        (agent.session_id(), outcome.loop_id.as_str(), "call_7")
    );
}

/// A real parallel group, recorded: the branches are registered ahead, the session is not handed
/// over before the decision, and exactly one branch is marked selected (REQ-213).
#[tokio::test]
async fn a_parallel_group_is_recorded_with_its_decision() {
    use std::sync::Arc;

    use sinew_agent::{AgentContext, AgentLoopConfig, TokenEfficientEvaluation, agent_loop_parallel, event_channel};
    use sinew_core::{AgentMessage, CancellationToken, StreamProvider};

    let configs: Vec<AgentLoopConfig> = [("lean", 5), ("verbose", 50)]
        .iter()
        .map(|(text, tokens)| {
            let mock: Arc<dyn StreamProvider> =
                Arc::new(MockProvider::new([MockResponse::text(*text).usage(*tokens, 0)]));
            AgentLoopConfig::new(mock, format!("model-{tokens}"))
        })
        .collect();
    let mut context = AgentContext::default();
    let (tx, mut rx) = event_channel();
    let cancel = CancellationToken::new();
    let result = agent_loop_parallel(
        vec![AgentMessage::user("q")],
        &mut context,
        &configs,
        &TokenEfficientEvaluation,
        &tx,
        &cancel,
    )
    .await
    .unwrap();
    drop(tx);
    let mut recorder = SessionRecorder::new(Formation::PerSessionId);
    let mut flushed = Vec::new();
    while let Some(event) = rx.recv().await {
        let is_end = event.kind() == "parallel_loop_end";
        recorder.on_event(&event);
        if event.kind() == "parallel_loop_start" {
            let session = recorder.session(context.session_id.as_deref().unwrap()).unwrap();
            assert!(session.loops.iter().all(|l| l.status == LoopStatus::Pending), "registered ahead");
        }
        let out = recorder.flush();
        assert!(out.is_empty() || is_end, "handed over before the decision: {event:?}");
        flushed.extend(out);
    }
    let [session] = flushed.as_slice() else { panic!("{} sessions", flushed.len()) };
    assert_eq!(session.loops.len(), 2);
    let selected: Vec<&str> = session
        .loops
        .iter()
        .filter(|l| l.parallel_group.as_ref().unwrap().is_selected)
        .map(|l| l.loop_id.as_str())
        .collect();
    assert_eq!(selected, [result.branches[0].outcome.loop_id.as_str()]);
    let group = session.loops[1].parallel_group.as_ref().unwrap();
    assert_eq!((group.group_id.as_str(), group.strategy.as_str()), (result.group_id.as_str(), "token_efficient"));
    assert_eq!(group.selected_loop_id.as_deref(), selected.first().copied());
    assert!(session.loops.iter().all(|l| l.status == LoopStatus::Completed));
    assert_eq!(session.parallel_siblings(selected[0]).len(), 1);
}
