//! Event compaction beyond the flows adk-python recorded (`flows.rs`): settings refused, a
//! summarizer that fails, a summary another writer overtook, a summary that would not pay.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt as _;
use serde_json::Map;
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{
    App, Content, Event, EventsCompactionConfig, EventsSummarizer, InMemorySessionService, LlmAgent,
    LlmEventSummarizer, RunConfig, Runner, SequentialAgent, SessionService,
};

fn chat(model: Arc<ScriptedLlm>) -> Arc<LlmAgent> {
    Arc::new(LlmAgent::builder("chat").model(model).instruction("Chat.").build().unwrap())
}

async fn turns(runner: &Runner, messages: &[&str]) {
    for message in messages {
        let events: Vec<_> =
            runner.run("u", "s", Some(Content::user_text(*message)), None, RunConfig::default()).collect().await;
        let last = events.last().expect("the turn answered");
        assert!(last.is_ok(), "the turn failed: {last:?}");
    }
}

async fn stored(sessions: &dyn SessionService) -> Vec<Event> {
    sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap().events
}

fn summaries(events: &[Event]) -> Vec<String> {
    events.iter().filter_map(|e| e.actions.compaction.as_ref()).map(|c| c.compacted_content.text()).collect()
}

#[test]
fn settings_that_cannot_work_are_refused_up_front() {
    assert!(EventsCompactionConfig::sliding_window(0, 1).is_err());
    assert!(EventsCompactionConfig::token_threshold(0, 1).is_err());
    let config = EventsCompactionConfig::sliding_window(2, 0).unwrap();
    // Without a summarizer of its own, the root's model summarizes: a workflow root has none.
    let model = Arc::new(ScriptedLlm::texts(["x"]));
    let pipeline = Arc::new(SequentialAgent::new("pipeline", vec![chat(model.clone())]));
    let error = App::new("app", pipeline.clone()).unwrap().with_events_compaction(config.clone()).unwrap_err();
    assert_eq!(error.to_string(), "No LlmAgent model available for event compaction summarizer.");
    let summarizer = Arc::new(LlmEventSummarizer::new(model));
    let app = App::new("app", pipeline).unwrap().with_events_compaction(config.with_summarizer(summarizer));
    assert!(app.is_ok());
    let template = LlmEventSummarizer::new(Arc::new(ScriptedLlm::texts(["x"]))).with_prompt_template("no placeholder");
    assert!(template.is_err());
}

/// A summarizer that fails, or that lets another writer append first.
struct Summarizer {
    fail: bool,
    other_writer: Option<Arc<dyn SessionService>>,
    given: Mutex<Vec<usize>>,
}

#[async_trait]
impl EventsSummarizer for Summarizer {
    async fn summarize(&self, events: &[Event]) -> sinew_adk::Result<Option<Event>> {
        self.given.lock().unwrap().push(events.len());
        if self.fail {
            return Err(sinew_adk::Error::InvalidRequest("the summarizer's model is down".into()));
        }
        if let Some(other) = &self.other_writer {
            let mut session = other.get_session("app", "u", "s", Default::default()).await?.unwrap();
            other.append_event(&mut session, Event::user("e-other", Content::user_text("meanwhile"))).await?;
        }
        LlmEventSummarizer::new(Arc::new(ScriptedLlm::texts(["SUMMARY"]))).summarize(events).await
    }
}

#[tokio::test]
async fn a_failing_summarizer_leaves_the_history_whole_and_the_turn_answered() {
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("app", "u", Some("s"), Map::new()).await.unwrap();
    let summarizer = Arc::new(Summarizer { fail: true, other_writer: None, given: Mutex::default() });
    let config = EventsCompactionConfig::sliding_window(1, 0).unwrap().with_summarizer(summarizer.clone());
    let model = Arc::new(ScriptedLlm::texts(["one", "two"]));
    let app = App::new("app", chat(model.clone())).unwrap().with_events_compaction(config).unwrap();
    let runner = Runner::from_app(&app, sessions.clone()).unwrap();
    turns(&runner, &["first", "second"]).await;
    assert_eq!(*summarizer.given.lock().unwrap(), [2, 4], "asked after each turn");
    assert!(summaries(&stored(sessions.as_ref()).await).is_empty());
    // The second request still carries the whole first turn.
    assert_eq!(model.requests()[1].0.contents.len(), 3);
}

/// A runner over SQLite whose summarizer lets another process (a service of its own on the same
/// database) append to the session first.
#[cfg(feature = "sqlite")]
async fn overtaken(
    config: EventsCompactionConfig,
) -> (Runner, Arc<sinew_adk::SqliteSessionService>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let sessions = Arc::new(sinew_adk::SqliteSessionService::open(&path).unwrap());
    sessions.create_session("app", "u", Some("s"), Map::new()).await.unwrap();
    let other: Arc<dyn SessionService> = Arc::new(sinew_adk::SqliteSessionService::open(&path).unwrap());
    let summarizer = Arc::new(Summarizer { fail: false, other_writer: Some(other), given: Mutex::default() });
    let app = App::new("app", chat(Arc::new(ScriptedLlm::texts(["one", "two"])))).unwrap();
    let app = app.with_events_compaction(config.with_summarizer(summarizer)).unwrap();
    (Runner::from_app(&app, sessions.clone()).unwrap(), sessions, dir)
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_summary_overtaken_by_another_writer_is_dropped() {
    let (runner, sessions, _dir) = overtaken(EventsCompactionConfig::sliding_window(1, 0).unwrap()).await;
    turns(&runner, &["first"]).await;
    let events = stored(sessions.as_ref()).await;
    assert!(summaries(&events).is_empty(), "the stale summary was not stored");
    assert_eq!(
        events.iter().map(|e| e.content.as_ref().unwrap().text()).collect::<Vec<_>>(),
        ["first", "one", "meanwhile"]
    );
}

#[tokio::test]
async fn a_summary_is_written_once_and_a_range_that_would_not_shrink_the_request_is_not_summarized() {
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("app", "u", Some("s"), Map::new()).await.unwrap();
    // The first summary is long: a later range smaller than it is not worth a summary.
    let long = "L".repeat(500);
    let model = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::text("one"),
        ScriptedAnswer::text(long.clone()),
        ScriptedAnswer::text("two"),
        ScriptedAnswer::text("three"),
    ]));
    let config = EventsCompactionConfig::sliding_window(1, 0).unwrap();
    let app = App::new("app", chat(model.clone())).unwrap().with_events_compaction(config).unwrap();
    let runner = Runner::from_app(&app, sessions.clone()).unwrap();
    turns(&runner, &["first", "second", "third"]).await;
    assert_eq!(summaries(&stored(sessions.as_ref()).await), std::slice::from_ref(&long));
    // Four model calls: three turns and one summary.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[2].0.contents[0].text(), long, "the second turn reads the summary first");
}

#[tokio::test]
async fn without_a_summarizer_a_workflow_root_summarizes_with_the_calling_agent_s_model() {
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("app", "u", Some("s"), Map::new()).await.unwrap();
    let mut big = sinew_adk::LlmResponse::new(Content::model_text("two"));
    big.usage_metadata = Some(Box::new(serde_json::from_value(serde_json::json!({"promptTokenCount": 900})).unwrap()));
    let model = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::text("one"),
        ScriptedAnswer::Responses(vec![big]),
        ScriptedAnswer::text("SUMMARY"),
        ScriptedAnswer::text("three"),
    ]));
    let pipeline = Arc::new(SequentialAgent::new("pipeline", vec![chat(model.clone())]));
    let config = EventsCompactionConfig::token_threshold(100, 1).unwrap();
    let app = App::new("app", pipeline).unwrap().with_events_compaction(config).unwrap();
    let runner = Runner::from_app(&app, sessions.clone()).unwrap();
    // After the second turn nothing summarizes: only the root could, and it has no model; the
    // run says so, as adk-python does.
    turns(&runner, &["first"]).await;
    let events: Vec<_> =
        runner.run("u", "s", Some(Content::user_text("second")), None, RunConfig::default()).collect().await;
    let error = events.last().unwrap().as_ref().unwrap_err();
    assert_eq!(error.to_string(), "No LlmAgent model available for event compaction summarizer.");
    // Before the third turn's model call, `chat` needs a summary: its own model writes it.
    turns(&runner, &["third"]).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests[2].0.contents[0].text().contains("user: first\nchat: one"), "the summarizer's request");
    assert_eq!(requests[3].0.contents.iter().map(Content::text).collect::<Vec<_>>(), ["SUMMARY", "third"]);
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_summary_overtaken_before_a_model_call_fails_the_call_as_in_adk() {
    // A threshold of one token: the estimate of any history passes it.
    let (runner, _sessions, _dir) = overtaken(EventsCompactionConfig::token_threshold(1, 0).unwrap()).await;
    let events: Vec<_> =
        runner.run("u", "s", Some(Content::user_text("first")), None, RunConfig::default()).collect().await;
    assert!(
        matches!(events.last().unwrap(), Err(sinew_adk::Error::StaleSession { .. })),
        "the model call fails: {events:?}"
    );
}
