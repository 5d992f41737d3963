//! Writes JSON that sinew-adk produces, for adk-python's own models to judge
//! (`cargo xtask ci` runs `tests/data/scripts/validate_adk_json.py` over it).
//!
//! `cargo run -p sinew-adk --example adk_wire -- OUT_DIR` writes `events.json` (a `/run` body),
//! `session.json` (a `GET session` body), `sse.txt` (a `/run_sse` body) and `storage-N.json` (one
//! stored `event_data` per event).

#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use sinew_adk::{
    Content, Event, EventActions, EventCompaction, FunctionCall, FunctionResponse, LlmResponse, NodeInfo, Part,
    Session, ToolConfirmation, UsageMetadata, to_snake_value,
};

fn object(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap_or_default()
}

/// Events built through the API, covering every part kind and every action.
fn built_events() -> Vec<Event> {
    let mut model = Event::from_response(
        "e-1",
        "root",
        LlmResponse::new(Content::new(
            "model",
            vec![
                Part::thought("pondering", Some(b"\xfb\xff\xfe sig".to_vec())),
                Part::text("Let me check."),
                Part::inline_data("image/png", vec![0x89, b'P', b'N', b'G']),
                Part::function_call(FunctionCall::new(
                    Some("adk-1".into()),
                    "get_weather",
                    object(json!({"city": "Paris"})),
                )),
            ],
        )),
    );
    model.partial = Some(false);
    model.finish_reason = Some("STOP".into());
    let mut usage = UsageMetadata::default();
    usage.prompt_token_count = Some(10);
    usage.candidates_token_count = Some(5);
    usage.total_token_count = Some(15);
    model.usage_metadata = Some(usage);
    model.node_info = NodeInfo::at("root@1");
    model.long_running_tool_ids = Some(["adk-1".to_owned()].into());
    model.custom_metadata = Some(object(json!({"trace": {"camelKey": 1}})));
    model.grounding_metadata = Some(json!({"webSearchQueries": ["weather paris"]}));

    let mut tool = Event::from_response(
        "e-1",
        "root",
        LlmResponse::new(Content::new(
            "user",
            vec![Part::function_response(FunctionResponse::new(
                Some("adk-1".into()),
                "get_weather",
                object(json!({"forecast": "sunny"})),
            ))],
        )),
    );
    let mut actions = EventActions::default();
    actions.skip_summarization = Some(true);
    actions.state_delta = object(json!({"last_city": "Paris", "app:calls": 1, "user:unit": "C"}));
    actions.artifact_delta.insert("report.txt".into(), 0);
    actions.transfer_to_agent = Some("child".into());
    actions.transfer_reason = Some("better fit".into());
    actions.escalate = Some(true);
    actions.requested_tool_confirmations.insert("adk-1".into(), ToolConfirmation::request("ok?"));
    actions.compaction = Some(EventCompaction::new(1.0, 2.0, Content::model_text("summary")));
    actions.end_of_agent = Some(true);
    actions.agent_state = Some(object(json!({"step": 2})));
    actions.rewind_before_invocation_id = Some("e-0".into());
    tool.actions = actions;
    tool.branch = Some("root.child".into());

    vec![Event::user("e-1", Content::user_text("what is the weather")), model, tool]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).ok_or("usage: adk_wire OUT_DIR")?);
    std::fs::create_dir_all(&out)?;
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/samples");

    // Everything adk-python wrote, read and written again by us, plus what we build ourselves.
    let mut events = built_events();
    for file in ["02_run_weather.json", "03_run_confirmation_request.json", "04_run_confirmation_response.json"] {
        events.extend(serde_json::from_str::<Vec<Event>>(&std::fs::read_to_string(data.join(file))?)?);
    }
    let mut session: Session = serde_json::from_str(&std::fs::read_to_string(data.join("07_get_session.json"))?)?;
    session.events.extend(built_events());

    std::fs::write(out.join("events.json"), serde_json::to_string_pretty(&events)?)?;
    std::fs::write(out.join("session.json"), serde_json::to_string_pretty(&session)?)?;
    let mut sse = String::new();
    let streamed: Vec<Event> = std::fs::read_to_string(data.join("05_run_sse_streaming.txt"))?
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    for event in &streamed {
        sse.push_str(&format!("data: {}\n\n", serde_json::to_string(event)?));
    }
    std::fs::write(out.join("sse.txt"), sse)?;
    for (i, event) in events.iter().enumerate() {
        std::fs::write(out.join(format!("storage-{i}.json")), serde_json::to_string(&to_snake_value(event)?)?)?;
    }
    println!("wrote {} events, 1 session, {} SSE frames to {}", events.len(), streamed.len(), out.display());
    Ok(())
}
