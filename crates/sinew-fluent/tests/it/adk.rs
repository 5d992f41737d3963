//! The ADK backend: the IR compiled to sinew-adk and run by its runner.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Map, Value, json};
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{Content, FunctionTool, InMemorySessionService, LlmResponse, RunConfig, SessionService as _, Tool};
use sinew_fluent::config::CodeConfig;
use sinew_fluent::{
    AdkBackend, Agent, Backend as _, Error, EventsCompactionConfig, Execute as _, ExecutionConfig, Registry,
    RunOptions, final_text,
};

#[tokio::test]
async fn a_three_line_hello_world_is_an_adk_app() {
    let model = Arc::new(ScriptedLlm::texts(["Hello!"]));
    let app = Agent::new("helper", model.clone()).instruct("Help the user.").to_app().unwrap();
    assert_eq!((app.name(), app.root_agent().name()), ("sinew_fluent_app", "helper"));
    assert!(app.root_agent().as_llm_agent().is_some(), "the root is ADK's LlmAgent");

    // The app runs on sinew-adk's own runner, as any ADK app does.
    let sessions = Arc::new(InMemorySessionService::new());
    let runner = sinew_adk::Runner::from_app(&app, sessions.clone()).unwrap();
    sessions.create_session(app.name(), "u", Some("s"), Map::new()).await.unwrap();
    let events: Vec<_> =
        runner.run("u", "s", Some(Content::user_text("hi")), None, RunConfig::default()).collect().await;
    assert_eq!(events.last().unwrap().as_ref().unwrap().content.as_ref().unwrap().text(), "Hello!");
    let (request, _) = &model.requests()[0];
    assert!(serde_json::to_string(request).unwrap().contains("Help the user."));

    // `to_runner` gives the runner directly.
    let model = Arc::new(ScriptedLlm::texts(["Hi again"]));
    let runner = Agent::new("helper", model).to_runner(Arc::new(InMemorySessionService::new())).unwrap();
    let events: Vec<_> =
        runner.run("u", "s", Some(Content::user_text("hi")), None, RunConfig::default()).collect().await;
    assert_eq!(events.last().unwrap().as_ref().unwrap().content.as_ref().unwrap().text(), "Hi again");
}

#[tokio::test]
async fn tools_pass_through_unchanged() {
    let tool: Arc<dyn Tool> =
        Arc::new(FunctionTool::new("lookup", "Looks up.", Value::Null, |_, _| async { Ok(json!({"found": true})) }));
    let model =
        Arc::new(ScriptedLlm::new([ScriptedAnswer::call("lookup", json!({})), ScriptedAnswer::text("Found it.")]));
    let app = Agent::new("helper", model).tool(tool.clone()).to_app().unwrap();
    let agent = app.root_agent().as_llm_agent().unwrap();
    assert!(Arc::ptr_eq(&agent.tools()[0], &tool), "the very same tool object");

    let backend = AdkBackend::new();
    let node = Agent::new(
        "helper",
        Arc::new(ScriptedLlm::new([ScriptedAnswer::call("lookup", json!({})), ScriptedAnswer::text("Found it.")])),
    )
    .tool(tool)
    .build()
    .unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();
    let events = backend.run(&compiled, "find it", RunOptions::default()).await.unwrap();
    assert_eq!(events[0].tool_calls[0].tool_name, "lookup");
    assert_eq!(events[1].tool_responses[0].result, json!({"found": true}));
    assert_eq!(final_text(&events), "Found it.");
}

#[tokio::test]
async fn state_flows_between_steps_through_output_keys_and_templates() {
    let classifier = Arc::new(ScriptedLlm::texts(["billing"]));
    let resolver = Arc::new(ScriptedLlm::texts(["Ticket #1234 created."]));
    let pipeline = Agent::new("classifier", classifier).instruct("Classify.").outputs("intent")
        >> Agent::new("resolver", resolver.clone()).instruct("Resolve the {intent} issue.");
    let backend = AdkBackend::new();
    let compiled = backend.compile(&pipeline.build().unwrap(), &ExecutionConfig::app("support")).unwrap();
    let events = backend.run(&compiled, "My bill is wrong", RunOptions::default()).await.unwrap();
    assert_eq!(events[0].state_delta["intent"], "billing");
    assert_eq!(final_text(&events), "Ticket #1234 created.");
    let (request, _) = &resolver.requests()[0];
    assert!(serde_json::to_string(request).unwrap().contains("Resolve the billing issue."));
    assert_eq!(super::state(&backend, &compiled).await["intent"], "billing");
}

#[tokio::test]
async fn model_names_are_resolved_by_the_registry() {
    let node = Agent::new("helper", "scripted/model").build().unwrap();
    let error = AdkBackend::new().compile(&node, &ExecutionConfig::default()).unwrap_err();
    assert!(error.to_string().contains("model `scripted/model` is named, not given"), "{error}");

    let registry = Registry::new().models(|name| {
        (name == "scripted/model")
            .then(|| Arc::new(ScriptedLlm::texts(["by name"]).named(name)) as Arc<dyn sinew_adk::Llm>)
    });
    let backend = AdkBackend::new().with_registry(registry);
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();
    assert_eq!(final_text(&backend.run(&compiled, "hi", RunOptions::default()).await.unwrap()), "by name");

    let unknown = Agent::new("helper", "other/model").build().unwrap();
    let error = backend.compile(&unknown, &ExecutionConfig::default()).unwrap_err();
    assert!(error.to_string().contains("no model is known as `other/model`"), "{error}");
}

#[tokio::test]
async fn a_field_the_backend_cannot_honour_is_refused_by_name() {
    let mut agent = Agent::named("helper").build().unwrap();
    let sinew_fluent::Node::Agent(node) = &mut agent else { panic!() };
    node.config.input_schema = Some(CodeConfig::new("Question"));
    let error = AdkBackend::new().compile(&agent, &ExecutionConfig::default()).unwrap_err();
    assert!(error.to_string().contains("cannot honour ADK field `input_schema`"), "{error}");

    // A pipeline has no model of its own to summarize with: compaction needs a summarizer then.
    let model = Arc::new(ScriptedLlm::texts(["x"]));
    let pipeline = Agent::new("a", model.clone()) >> Agent::new("b", model);
    let compaction = ExecutionConfig::default().with_compaction(EventsCompactionConfig::sliding_window(2, 1).unwrap());
    let error = AdkBackend::new().compile(&pipeline.build().unwrap(), &compaction).unwrap_err();
    assert!(error.to_string().contains("No LlmAgent model available for event compaction summarizer"), "{error}");
    let error = AdkBackend::new()
        .compile(&Agent::named("helper").build().unwrap(), &ExecutionConfig::app("not valid"))
        .unwrap_err();
    assert!(error.to_string().contains("Invalid app name 'not valid'"), "{error}");

    // Every other setting the backend cannot take is an error naming it.
    let compile = |node: sinew_fluent::Node, config: &ExecutionConfig| {
        AdkBackend::new().compile(&node, config).unwrap_err().to_string()
    };
    let default = ExecutionConfig::default();
    let error = compile(Agent::named("a").static_instruction(json!({"parts": []})).build().unwrap(), &default);
    assert!(error.contains("`a`: a static_instruction must be text"), "{error}");
    let error =
        compile(Agent::named("a").generate_content_config(json!({"temperature": "hot"})).build().unwrap(), &default);
    assert!(error.contains("`a`: generate_content_config:"), "{error}");
    let error =
        compile(sinew_fluent::Loop::new("l").step(Agent::named("a")).max_iterations(-1).build().unwrap(), &default);
    assert!(error.contains("`l`: max_iterations must not be negative"), "{error}");
    let mut schema = Agent::named("a").build().unwrap();
    let sinew_fluent::Node::Agent(node) = &mut schema else { panic!() };
    node.config.output_schema = Some(CodeConfig::new("Verdict"));
    assert!(compile(schema, &default).contains("`a`: no schema is known as `Verdict`"));
    assert!(!default.resumable, "off by default, as in ADK");
}

#[tokio::test]
async fn the_execution_config_limits_and_labels_runs() {
    let model = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("noop", json!({})), ScriptedAnswer::text("never")]));
    let noop = FunctionTool::new("noop", "Does nothing.", Value::Null, |_, _| async { Ok(json!({})) });
    let node = Agent::new("looper", model).tool(Arc::new(noop)).build().unwrap();
    let backend = AdkBackend::new();
    let compiled = backend.compile(&node, &ExecutionConfig::default().with_max_llm_calls(1)).unwrap();
    let error = backend.run(&compiled, "go", RunOptions::default()).await.unwrap_err();
    assert!(error.to_string().contains("Max number of llm calls limit of `1` exceeded"), "{error}");

    let metadata = Map::from_iter([("tenant".to_owned(), json!("acme"))]);
    let node = Agent::new("helper", Arc::new(ScriptedLlm::texts(["ok"]))).build().unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default().with_custom_metadata(metadata)).unwrap();
    let events = backend.run(&compiled, "hi", RunOptions::session("u2", "s2")).await.unwrap();
    assert_eq!(events.last().unwrap().metadata["tenant"], "acme");

    // A limit too long to count is no limit.
    let node = Agent::new("helper", Arc::new(ScriptedLlm::texts(["in time"]))).build().unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default().with_timeout(Duration::MAX)).unwrap();
    assert_eq!(final_text(&backend.run(&compiled, "hi", RunOptions::session("u4", "s4")).await.unwrap()), "in time");

    let (slow, finished) = super::Probe::node("slow", Duration::from_secs(30), false);
    let compiled = backend.compile(&slow, &ExecutionConfig::default().with_timeout(Duration::from_millis(50))).unwrap();
    let error = backend.run(&compiled, "hi", RunOptions::session("u3", "s3")).await.unwrap_err();
    assert!(matches!(error, Error::Timeout(d) if d == Duration::from_millis(50)), "{error}");
    assert!(!finished.load(std::sync::atomic::Ordering::SeqCst));
}

#[tokio::test]
async fn streaming_runs_yield_fragments_then_the_answer() {
    let model = Arc::new(ScriptedLlm::new([ScriptedAnswer::streamed(&["Hel", "lo"])]));
    let backend = AdkBackend::new();
    let node = Agent::new("helper", model).build().unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default().streaming()).unwrap();
    let events = backend.run(&compiled, "hi", RunOptions::default()).await.unwrap();
    let partial: Vec<_> = events.iter().filter(|e| e.is_partial).filter_map(|e| e.content.clone()).collect();
    assert_eq!(partial, ["Hel", "lo"]);
    assert_eq!(final_text(&events), "Hello");
}

#[tokio::test]
async fn produced_fields_are_written_to_state_under_their_names() {
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Intent {
        category: String,
        confidence: f64,
    }
    let model = Arc::new(ScriptedLlm::texts([r#"{"category": "billing", "confidence": 0.9}"#]));
    let node = Agent::new("classifier", model.clone()).produces::<Intent>().build().unwrap();
    let backend = AdkBackend::new();
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();
    backend.run(&compiled, "My bill is wrong", RunOptions::default()).await.unwrap();
    let state = super::state(&backend, &compiled).await;
    assert_eq!((&state["category"], &state["confidence"]), (&json!("billing"), &json!(0.9)));
    assert!(!state.keys().any(|k| k.starts_with("temp:")), "the hidden output key is not stored: {state:?}");
    let (request, _) = &model.requests()[0];
    let schema = &request.config.response_json_schema;
    assert!(schema.is_some(), "the schema is sent as the response schema: {request:?}");
}

#[tokio::test]
async fn callbacks_run_as_adks_do() {
    let model = Arc::new(ScriptedLlm::texts(["from the model"]));
    let node = Agent::new("helper", model.clone())
        .before_model(|_: &sinew_adk::CallbackContext, _: &mut sinew_adk::LlmRequest| {
            Some(LlmResponse::new(Content::model_text("from the callback")))
        })
        .build()
        .unwrap();
    let backend = AdkBackend::new();
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();
    let events = backend.run(&compiled, "hi", RunOptions::default()).await.unwrap();
    assert_eq!(final_text(&events), "from the callback");
    assert!(model.requests().is_empty(), "the callback answered for the model");
}

#[tokio::test]
async fn a_session_rewinds_to_before_an_invocation() {
    use sinew_fluent::{MockBackend, S};

    let count = S::compute("count", |state| {
        Map::from_iter([("count".to_owned(), json!(state.get("count").and_then(Value::as_i64).unwrap_or(0) + 1))])
    });
    let backend = MockBackend::new(Vec::<(String, Value)>::new());
    let compiled = backend.compile(&count, &ExecutionConfig::default()).unwrap();
    backend.run(&compiled, "one", RunOptions::default()).await.unwrap();
    let second = backend.run(&compiled, "two", RunOptions::default()).await.unwrap();
    assert_eq!(super::state(backend.adk(), &compiled).await["count"], 2);
    backend.adk().rewind(&compiled, "default_user", "default_session", &second[0].invocation_id).await.unwrap();
    assert_eq!(super::state(backend.adk(), &compiled).await["count"], 1);
    let error = backend.adk().rewind(&compiled, "default_user", "default_session", "e-unknown").await.unwrap_err();
    assert!(error.to_string().contains("Invocation ID not found: e-unknown"), "{error}");
}

#[tokio::test]
async fn compaction_summarizes_older_turns_with_the_root_agent_s_model() {
    let model = Arc::new(ScriptedLlm::texts(["one", "SUMMARY", "two"]));
    let backend = AdkBackend::new();
    let config = ExecutionConfig::default().with_compaction(EventsCompactionConfig::sliding_window(1, 0).unwrap());
    let compiled = backend.compile(&Agent::new("helper", model.clone()).build().unwrap(), &config).unwrap();
    assert_eq!(final_text(&backend.run(&compiled, "first", RunOptions::default()).await.unwrap()), "one");
    assert_eq!(final_text(&backend.run(&compiled, "second", RunOptions::default()).await.unwrap()), "two");
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "two turns, each summarized after it");
    assert!(requests[1].0.contents[0].text().contains("user: first\nhelper: one"), "the summarizer reads the turn");
    let second: Vec<String> = requests[2].0.contents.iter().map(Content::text).collect();
    assert_eq!(second, ["SUMMARY", "second"], "the second turn reads the summary in place of the first");
    assert!(requests[3].0.contents[0].text().ends_with("\n\nuser: second\nhelper: two"), "then the second turn");
}

#[tokio::test]
async fn a_resumable_app_resumes_the_pipeline_after_a_long_running_call() {
    let ask: Arc<dyn Tool> = Arc::new(
        FunctionTool::new("ask_approval", "Asks a manager.", Value::Null, |_, _| async { Ok(Value::Null) })
            .long_running(),
    );
    let pipeline = || {
        let first = Arc::new(ScriptedLlm::new([
            ScriptedAnswer::call("ask_approval", json!({})),
            ScriptedAnswer::text("Approved."),
        ]));
        let second = Arc::new(ScriptedLlm::texts(["Shipped."]));
        (Agent::new("approve", first).tool(ask.clone()) >> Agent::new("ship", second)).build().unwrap()
    };
    let answer = |events: &[sinew_fluent::AgentEvent]| {
        let id =
            events.iter().flat_map(|e| &e.tool_calls).find(|c| c.tool_name == "ask_approval").unwrap().call_id.clone();
        let response = json!({"status": "approved"}).as_object().cloned().unwrap();
        Content::new(
            "user",
            vec![sinew_adk::Part::function_response(sinew_adk::genai::FunctionResponse::new(
                Some(id),
                "ask_approval",
                response,
            ))],
        )
    };
    for (resumable, expected) in [(true, vec!["approve", "ship"]), (false, vec!["approve"])] {
        let backend = AdkBackend::new();
        let config = if resumable { ExecutionConfig::default().resumable() } else { ExecutionConfig::default() };
        let compiled = backend.compile(&pipeline(), &config).unwrap();
        let paused = backend.run(&compiled, "ship it", RunOptions::default()).await.unwrap();
        let events: Vec<_> =
            backend.stream_content(&compiled, answer(&paused), RunOptions::default()).collect::<Vec<_>>().await;
        let events: Vec<_> = events.into_iter().map(Result::unwrap).collect();
        let mut authors: Vec<&str> =
            events.iter().map(|e| e.author.as_str()).filter(|a| expected.contains(a)).collect();
        authors.dedup();
        assert_eq!(authors, expected, "resumable: {resumable}");
    }
}
