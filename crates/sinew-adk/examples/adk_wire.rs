//! Writes JSON that sinew-adk produces, for adk-python's own models to judge
//! (`cargo xtask ci` runs `tests/data/scripts/validate_adk_json.py` over it).
//!
//! `cargo run -p sinew-adk --example adk_wire -- OUT_DIR` writes `events.json` (a `/run` body),
//! `session.json` and `run-session.json` (`GET session` bodies), `sse.txt` and `run-sse.txt`
//! (`/run_sse` bodies) and `storage-N.json` (one stored `event_data` per event). The `run-` files and
//! part of the others come from our runner (a tool round, a confirmation, a transfer, SSE).

#![allow(clippy::print_stdout)]

use std::path::PathBuf;

use serde_json::{Map, Value, json};
use sinew_adk::genai::FunctionResponse;
use sinew_adk::{
    Content, Event, EventActions, EventCompaction, FunctionCall, LlmResponse, NodeInfo, Part, Session,
    ToolConfirmation, UsageMetadata, to_snake_value,
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
    model.usage_metadata = Some(Box::new(usage));
    model.node_info = NodeInfo::at("root@1");
    model.long_running_tool_ids = Some(["adk-1".to_owned()].into());
    model.custom_metadata = Some(object(json!({"trace": {"camelKey": 1}})));
    model.grounding_metadata = Some(Box::new(json!({"webSearchQueries": ["weather paris"]})));

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

/// Events our runner writes: a tool round with state, a confirmation asked and approved, a
/// transfer, and an SSE answer (its fragments included).
async fn run_events() -> Result<(Vec<Event>, Session), Box<dyn std::error::Error>> {
    use std::sync::Arc;

    use futures::StreamExt as _;
    use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
    use sinew_adk::{FunctionTool, InMemorySessionService, LlmAgent, RunConfig, Runner, SessionService};

    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("get_weather", json!({"city": "Paris"})),
        ScriptedAnswer::text("Sunny in Paris."),
        ScriptedAnswer::call("delete_file", json!({"path": "/tmp/x"})),
        ScriptedAnswer::text("Deleted."),
        ScriptedAnswer::call("transfer_to_agent", json!({"agent_name": "helper"})),
        ScriptedAnswer::streamed(&["Hel", "lo ", "there."]),
    ]));
    let weather = FunctionTool::new(
        "get_weather",
        "Returns the weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |args, ctx| {
            ctx.set_state("last_city", args["city"].clone());
            ctx.set_state("app:calls", json!(1));
            ctx.set_state("temp:scratch", json!("dropped"));
            async move { Ok(json!({"city": args["city"], "forecast": "sunny"})) }
        },
    );
    let delete = FunctionTool::new(
        "delete_file",
        "Deletes a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        |args, _| async move { Ok(json!({"deleted": args["path"]})) },
    )
    .require_confirmation();
    let helper = LlmAgent::builder("helper").description("Helps.").model(llm.clone()).build()?;
    let root = LlmAgent::builder("demo_agent")
        .description("demo")
        .model(llm)
        .instruction("Be brief.")
        .tool(Arc::new(weather))
        .tool(Arc::new(delete))
        .sub_agent(Arc::new(helper))
        .output_key("last_answer")
        .build()?;
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("demo_agent", "u1", Some("s1"), Default::default()).await?;
    let runner = Runner::new("demo_agent", Arc::new(root), sessions.clone())?;
    let mut events = Vec::new();
    let turn = |message: Content, config: RunConfig| {
        let run = runner.run("u1", "s1", Some(message), None, config);
        async move { run.collect::<Vec<_>>().await.into_iter().collect::<Result<Vec<_>, _>>() }
    };
    events.extend(turn(Content::user_text("weather in Paris?"), RunConfig::default()).await?);
    let asked = turn(Content::user_text("delete /tmp/x"), RunConfig::default()).await?;
    let request = asked
        .iter()
        .flat_map(Event::function_calls)
        .find(|c| c.name() == sinew_adk::REQUEST_CONFIRMATION)
        .ok_or("no confirmation request")?
        .clone();
    events.extend(asked);
    let approval = Content::new(
        "user",
        vec![Part::function_response(FunctionResponse::new(
            request.id,
            request.name.unwrap_or_default(),
            object(json!({"confirmed": true})),
        ))],
    );
    events.extend(turn(approval, RunConfig::default()).await?);
    events.extend(turn(Content::user_text("hand me over"), RunConfig::default().sse()).await?);
    let session = sessions.get_session("demo_agent", "u1", "s1", Default::default()).await?.ok_or("no session")?;
    Ok((events, session))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(std::env::args().nth(1).ok_or("usage: adk_wire OUT_DIR")?);
    std::fs::create_dir_all(&out)?;
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/samples");
    let (run, run_session) = tokio::runtime::Builder::new_current_thread().build()?.block_on(run_events())?;
    std::fs::write(out.join("run-session.json"), serde_json::to_string_pretty(&run_session)?)?;
    let mut run_sse = String::new();
    for event in &run {
        run_sse.push_str(&format!("data: {}\n\n", serde_json::to_string(event)?));
    }
    std::fs::write(out.join("run-sse.txt"), run_sse)?;

    // Everything adk-python wrote, read and written again by us, plus what we build ourselves and
    // what our runner wrote.
    let mut events = built_events();
    events.extend(run.iter().filter(|e| !e.is_partial()).cloned());
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
