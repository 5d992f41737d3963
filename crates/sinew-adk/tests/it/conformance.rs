//! ADK's own conformance goldens, replayed in process: the two cases `adk conformance record`
//! wrote against adk-python 2.13.0 (`tests/data/conformance`), in both streaming modes.
//!
//! Our twin of the demo agent runs each case's user messages; the model replays the recorded
//! responses and requires each request to equal the recorded `llm_request` (as adk-python's replay
//! plugin does); the final session must equal the golden one, compared as ADK's harness compares
//! it (ids, timestamps, invocation ids, node info, call ids and the requested confirmations
//! aside). The HTTP side of the harness comes with the server.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::Value;
use sinew_adk::genai::FunctionResponse;
use sinew_adk::testing::conformance_demo_agent;
use sinew_adk::{
    Content, Event, InMemorySessionService, Llm, LlmRequest, LlmResponse, Part, RunConfig, Runner, Session,
    SessionService, to_snake_value,
};

use crate::data;

fn yaml(path: &str) -> Value {
    serde_yaml_ng::from_str(&data(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Replays the recorded model answers in order, checking each request first.
struct ReplayLlm {
    recordings: Mutex<VecDeque<Value>>,
    mismatches: Mutex<Vec<String>>,
}

impl Llm for ReplayLlm {
    fn name(&self) -> &str {
        "fake-llm"
    }

    fn generate_content(
        &self,
        request: LlmRequest,
        _stream: bool,
    ) -> BoxStream<'static, sinew_adk::Result<LlmResponse>> {
        let Some(recording) = self.recordings.lock().unwrap().pop_front() else {
            self.mismatches.lock().unwrap().push("a model call beyond the recordings".into());
            return futures::stream::empty().boxed();
        };
        let expected = &recording["llm_recording"]["llm_request"];
        let ours = request.to_json();
        if &ours != expected {
            self.mismatches.lock().unwrap().push(format!("request differs\nours:   {ours:#}\ntheirs: {expected:#}"));
        }
        let responses: Vec<sinew_adk::Result<LlmResponse>> = recording["llm_recording"]["llm_responses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| Ok(serde_json::from_value(r.clone()).unwrap()))
            .collect();
        futures::stream::iter(responses).boxed()
    }
}

/// An event as ADK's harness compares it.
fn comparable(event: &Event) -> Value {
    let mut value = to_snake_value(event).unwrap();
    let map = value.as_object_mut().unwrap();
    for key in ["id", "timestamp", "invocation_id", "long_running_tool_ids", "node_info"] {
        map.remove(key);
    }
    if let Some(actions) = map.get_mut("actions").and_then(Value::as_object_mut) {
        actions.remove("requested_auth_configs");
        actions.remove("requested_tool_confirmations");
    }
    if let Some(parts) = map.get_mut("content").and_then(|c| c.get_mut("parts")).and_then(Value::as_array_mut) {
        for part in parts {
            let part = part.as_object_mut().unwrap();
            part.remove("thought_signature");
            for kind in ["function_call", "function_response"] {
                if let Some(call) = part.get_mut(kind).and_then(Value::as_object_mut) {
                    call.remove("id");
                }
            }
        }
    }
    value
}

/// A spec's user message; a function response gets the id of the last call of its name.
fn message(spec: &Value, events: &[Event]) -> Content {
    if let Some(text) = spec["text"].as_str() {
        return Content::user_text(text);
    }
    let response = &spec["content"]["parts"][0]["function_response"];
    let name = response["name"].as_str().unwrap();
    let id =
        events.iter().flat_map(Event::function_calls).filter(|c| c.name() == name).last().and_then(|c| c.id.clone());
    Content::new(
        "user",
        vec![Part::function_response(FunctionResponse::new(
            id,
            name,
            response["response"].as_object().cloned().unwrap(),
        ))],
    )
}

async fn replay(case: &str, streaming: bool) {
    let suffix = if streaming { "-sse" } else { "" };
    let dir = format!("conformance/tests/{case}");
    let spec = yaml(&format!("{dir}/spec.yaml"));
    let recordings = yaml(&format!("{dir}/generated-recordings{suffix}.yaml"));
    let golden: Session = serde_json::from_value(yaml(&format!("{dir}/generated-session{suffix}.yaml"))).unwrap();
    let llm = Arc::new(ReplayLlm {
        recordings: Mutex::new(
            recordings["recordings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r.get("llm_recording").is_some())
                .cloned()
                .collect(),
        ),
        mismatches: Mutex::new(Vec::new()),
    });
    let sessions = Arc::new(InMemorySessionService::new());
    let initial = spec["initial_state"].as_object().cloned().unwrap_or_default();
    let user = "adk_conformance_test_user";
    let session = sessions.create_session("demo_agent", user, None, initial).await.unwrap();
    let runner =
        Runner::new("demo_agent", Arc::new(conformance_demo_agent(llm.clone()).unwrap()), sessions.clone()).unwrap();
    let config = if streaming { RunConfig::default().sse() } else { RunConfig::default() };
    let mut seen = Vec::new();
    for spec_message in spec["user_messages"].as_array().unwrap() {
        let message = message(spec_message, &seen);
        let mut run = runner.run(user, &session.id, Some(message), None, config.clone());
        while let Some(event) = run.next().await {
            seen.push(event.unwrap_or_else(|e| panic!("{case}: {e}")));
        }
    }
    assert_eq!(*llm.mismatches.lock().unwrap(), Vec::<String>::new(), "{case} {suffix}");
    assert!(llm.recordings.lock().unwrap().is_empty(), "{case}{suffix}: recorded model calls left over");

    let ours = sessions.get_session("demo_agent", user, &session.id, Default::default()).await.unwrap().unwrap();
    let ours_events: Vec<Value> = ours.events.iter().map(comparable).collect();
    let golden_events: Vec<Value> = golden.events.iter().map(comparable).collect();
    assert_eq!(ours_events.len(), golden_events.len(), "{case}{suffix}: {ours_events:#?}");
    for (i, (a, b)) in ours_events.iter().zip(&golden_events).enumerate() {
        assert_eq!(a, b, "{case}{suffix}: event {i}\nours:   {a:#}\ngolden: {b:#}");
    }
    assert_eq!(ours.state, golden.state, "{case}{suffix}");
    assert_eq!((ours.app_name.as_str(), ours.user_id.as_str()), (golden.app_name.as_str(), golden.user_id.as_str()));
}

#[tokio::test]
async fn the_echo_case_replays_as_adk_python_recorded_it() {
    replay("core/demo_echo_001", false).await;
    replay("core/demo_echo_001", true).await;
}

#[tokio::test]
async fn the_confirmation_case_replays_as_adk_python_recorded_it() {
    replay("tool/demo_confirm_001", false).await;
    replay("tool/demo_confirm_001", true).await;
}
