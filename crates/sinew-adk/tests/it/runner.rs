//! The runner's own behaviours (spec 002): resuming from a saved session, pausing on tool calls,
//! `temp:` state, cancellation, plugins, stateless runs, agent names.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};
use sinew_adk::genai::FunctionResponse;
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{
    Agent, AgentNames, CallbackContext, Content, Event, FunctionTool, InMemorySessionService, Llm, LlmAgent,
    LlmRequest, LlmResponse, Part, Plugin, RunConfig, Runner, Session, SessionService, ToolContext,
};

async fn sessions_with(session_id: &str) -> Arc<InMemorySessionService> {
    let sessions = Arc::new(InMemorySessionService::new());
    sessions.create_session("app", "u", Some(session_id), Map::new()).await.unwrap();
    sessions
}

/// A runner over `agent` with the session "s" created, and the store it writes.
async fn runner_for(agent: impl Agent + 'static) -> (Runner, Arc<InMemorySessionService>) {
    let sessions = sessions_with("s").await;
    (Runner::new("app", Arc::new(agent), sessions.clone()).unwrap(), sessions)
}

async fn collect(runner: &Runner, message: Content, config: RunConfig) -> Vec<Event> {
    runner
        .run("u", "s", Some(message), None, config)
        .map(|e| e.unwrap_or_else(|e| panic!("run failed: {e}")))
        .collect()
        .await
}

/// The confirmation request among `events`.
fn confirmation_request(events: &[Event]) -> sinew_adk::FunctionCall {
    events.iter().flat_map(Event::function_calls).find(|c| c.name() == sinew_adk::REQUEST_CONFIRMATION).unwrap().clone()
}

fn answer(call: &sinew_adk::FunctionCall, response: Value) -> Content {
    Content::new(
        "user",
        vec![Part::function_response(FunctionResponse::new(
            call.id.clone(),
            call.name(),
            response.as_object().cloned().unwrap(),
        ))],
    )
}

fn delete_tool(runs: Arc<AtomicUsize>) -> FunctionTool {
    FunctionTool::new(
        "delete_file",
        "Deletes a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        move |args, _| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move { Ok(json!({"deleted": args["path"]})) }
        },
    )
    .require_confirmation()
}

/// A confirmation asked in one process is answered in another: the session goes through JSON
/// and a fresh runner resumes the same invocation.
#[tokio::test]
async fn a_confirmation_resumes_from_a_saved_session_in_a_fresh_runner() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = |llm: Arc<ScriptedLlm>| {
        Arc::new(LlmAgent::builder("files").model(llm).tool(Arc::new(delete_tool(runs.clone()))).build().unwrap())
    };
    let first_llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("delete_file", json!({"path": "/tmp/x"}))]));
    let sessions = sessions_with("s").await;
    let first = Runner::new("app", agent(first_llm), sessions.clone()).unwrap();
    let asked = collect(&first, Content::user_text("delete /tmp/x"), RunConfig::default()).await;
    let request = confirmation_request(&asked);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing runs before the user confirms");

    let saved =
        serde_json::to_string(&sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap())
            .unwrap();
    drop(first);
    let loaded: Session = serde_json::from_str(&saved).unwrap();
    let fresh = Arc::new(InMemorySessionService::new());
    let mut session = fresh.create_session("app", "u", Some("s"), loaded.state.clone()).await.unwrap();
    for event in loaded.events {
        fresh.append_event(&mut session, event).await.unwrap();
    }
    let second_llm = Arc::new(ScriptedLlm::texts(["Deleted."]));
    let second = Runner::new("app", agent(second_llm.clone()), fresh.clone()).unwrap();
    let resumed = collect(&second, answer(&request, json!({"confirmed": true})), RunConfig::default()).await;

    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let invocation = &asked[0].invocation_id;
    assert!(resumed.iter().all(|e| &e.invocation_id == invocation), "the same invocation resumed");
    let response = resumed[0].function_responses().next().unwrap();
    assert_eq!(
        (response.name(), response.response.as_ref().unwrap()["deleted"].as_str()),
        ("delete_file", Some("/tmp/x"))
    );
    assert_eq!(resumed.last().unwrap().content.as_ref().unwrap().text(), "Deleted.");
    // The model saw the call and its real result, none of the plumbing.
    let (request, _) = second_llm.requests().pop().unwrap();
    let names: Vec<String> = request
        .contents
        .iter()
        .flat_map(|c| c.parts().iter())
        .filter_map(|p| {
            p.function_call
                .as_ref()
                .map(|c| c.name().to_owned())
                .or(p.function_response.as_ref().map(|r| r.name().to_owned()))
        })
        .collect();
    assert_eq!(names, ["delete_file", "delete_file"]);
}

/// With `pause_on_tool_calls` the host runs the tools: the run stops at the calls, and the
/// host's responses resume the invocation.
#[tokio::test]
async fn pausing_on_tool_calls_lets_the_host_run_them() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let tool = FunctionTool::new("lookup", "Looks up.", json!({"type": "object", "properties": {}}), move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!({"found": "by the agent"})) }
    });
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::calls([("lookup".to_owned(), json!({"q": 1})), ("lookup".to_owned(), json!({"q": 2}))]),
        ScriptedAnswer::text("Both found."),
    ]));
    let agent = LlmAgent::builder("host_tools").model(llm.clone()).tool(Arc::new(tool)).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await).unwrap();
    let paused =
        collect(&runner, Content::user_text("look both up"), RunConfig::default().pausing_on_tool_calls()).await;
    assert_eq!(paused.len(), 1, "{paused:#?}");
    let calls: Vec<_> = paused[0].function_calls().cloned().collect();
    assert_eq!(calls.len(), 2);
    let ids: std::collections::BTreeSet<String> = calls.iter().map(|c| c.id().to_owned()).collect();
    assert_eq!(paused[0].long_running_tool_ids.as_ref(), Some(&ids), "every call waits for the host");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let parts = calls
        .iter()
        .map(|c| {
            Part::function_response(FunctionResponse::new(
                c.id.clone(),
                c.name(),
                json!({"found": c.args.as_ref().unwrap()["q"]}).as_object().cloned().unwrap(),
            ))
        })
        .collect();
    let resumed = collect(&runner, Content::new("user", parts), RunConfig::default().pausing_on_tool_calls()).await;
    assert_eq!(resumed.last().unwrap().content.as_ref().unwrap().text(), "Both found.");
    assert!(resumed.iter().all(|e| e.invocation_id == paused[0].invocation_id));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the host ran the tools");
    let (request, _) = llm.requests().pop().unwrap();
    let last = request.contents.last().unwrap();
    assert_eq!(last.function_responses().count(), 2, "the host's responses reach the model: {last:?}");
}

/// `temp:` state set during an invocation is seen by its next model call, and gone afterwards.
#[tokio::test]
async fn temp_state_lives_for_one_invocation() {
    let tool = FunctionTool::new(
        "remember",
        "Remembers.",
        json!({"type": "object", "properties": {}}),
        |_, ctx: ToolContext| {
            ctx.set_state("temp:scratch", json!("noted"));
            ctx.set_state("kept", json!("yes"));
            async { Ok(json!({"ok": true})) }
        },
    );
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("remember", json!({})),
        ScriptedAnswer::text("done"),
        ScriptedAnswer::text("next turn"),
    ]));
    let agent = LlmAgent::builder("temp")
        .model(llm.clone())
        .instruction("scratch=[{temp:scratch?}]")
        .tool(Arc::new(tool))
        .build()
        .unwrap();
    let (runner, sessions) = runner_for(agent).await;
    let events = collect(&runner, Content::user_text("go"), RunConfig::default()).await;
    let system = |i: usize| llm.requests()[i].0.system_instruction().unwrap();
    assert!(system(0).starts_with("scratch=[]"));
    assert!(system(1).starts_with("scratch=[noted]"), "{}", system(1));
    let response_event = &events[1];
    assert_eq!(
        response_event.actions.state_delta,
        json!({"kept": "yes"}).as_object().cloned().unwrap(),
        "temp: is not stored"
    );
    let stored = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
    assert_eq!(stored.state, json!({"kept": "yes"}).as_object().cloned().unwrap());
    collect(&runner, Content::user_text("again"), RunConfig::default()).await;
    assert!(system(2).starts_with("scratch=[]"), "gone in the next invocation: {}", system(2));
}

/// A model that streams one fragment and then never finishes; it records when it is dropped.
struct Stalling {
    dropped: Arc<AtomicUsize>,
}

struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl Llm for Stalling {
    fn name(&self) -> &str {
        "stalling"
    }

    fn generate_content(
        &self,
        _request: LlmRequest,
        _stream: bool,
    ) -> BoxStream<'static, sinew_adk::Result<LlmResponse>> {
        let flag = DropFlag(self.dropped.clone());
        let mut fragment = LlmResponse::new(Content::model_text("Hel"));
        fragment.partial = Some(true);
        futures::stream::once(async move { Ok(fragment) })
            .chain(futures::stream::pending())
            .map(move |r| {
                let _ = &flag;
                r
            })
            .boxed()
    }
}

/// Dropping a run mid-stream cancels the model call and leaves a session that runs on.
#[tokio::test]
async fn cancelling_a_run_mid_stream_leaves_a_valid_session() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let agent = LlmAgent::builder("slow").model(Arc::new(Stalling { dropped: dropped.clone() })).build().unwrap();
    let (runner, sessions) = runner_for(agent).await;
    let mut run = runner.run("u", "s", Some(Content::user_text("hi")), None, RunConfig::default().sse());
    let first = run.next().await.expect("a fragment").unwrap();
    assert!(first.is_partial());
    drop(run);
    assert_eq!(dropped.load(Ordering::SeqCst), 1, "the model's stream is dropped with the run");

    let stored = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
    assert_eq!(stored.events.len(), 1, "only the user's message, no fragment: {:#?}", stored.events);
    let json = serde_json::to_value(&stored).unwrap();
    let back: Session = serde_json::from_value(json).unwrap();
    assert_eq!(back, stored);

    // The session takes the next run as if nothing happened.
    let agent = LlmAgent::builder("slow").model(Arc::new(ScriptedLlm::texts(["Hello"]))).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions.clone()).unwrap();
    let events = collect(&runner, Content::user_text("again"), RunConfig::default()).await;
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), "Hello");
}

/// Records the plugin callbacks it sees; answers where it is told to.
#[derive(Default)]
struct Recorder {
    name: &'static str,
    seen: Arc<Mutex<Vec<String>>>,
    answer_model: bool,
}

#[async_trait]
impl Plugin for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    async fn on_user_message(&self, _ctx: &sinew_adk::InvocationContext, message: &Content) -> Option<Content> {
        self.seen.lock().unwrap().push(format!("{}:user:{}", self.name, message.text()));
        None
    }

    async fn before_agent(&self, agent: &dyn Agent, _ctx: &CallbackContext) -> Option<Content> {
        self.seen.lock().unwrap().push(format!("{}:before_agent:{}", self.name, agent.name()));
        None
    }

    async fn before_model(&self, _ctx: &CallbackContext, _request: &mut LlmRequest) -> Option<LlmResponse> {
        self.seen.lock().unwrap().push(format!("{}:before_model", self.name));
        self.answer_model.then(|| LlmResponse::new(Content::model_text(format!("answered by {}", self.name))))
    }

    async fn on_event(&self, _ctx: &sinew_adk::InvocationContext, event: &Event) -> Option<Event> {
        self.seen.lock().unwrap().push(format!("{}:event:{}", self.name, event.author));
        None
    }

    async fn after_run(&self, _ctx: &sinew_adk::InvocationContext) {
        self.seen.lock().unwrap().push(format!("{}:after_run", self.name));
    }
}

/// Plugins run before the agent's callbacks, in order, and the first answer wins.
#[tokio::test]
async fn plugins_run_first_and_the_first_answer_wins() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent_callback_ran = Arc::new(AtomicUsize::new(0));
    let flag = agent_callback_ran.clone();
    let llm = Arc::new(ScriptedLlm::texts(["from the model"]));
    let agent = LlmAgent::builder("plugged")
        .model(llm.clone())
        .before_model_callback(move |_: &CallbackContext, _: &mut LlmRequest| {
            flag.fetch_add(1, Ordering::SeqCst);
            None
        })
        .build()
        .unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await)
        .unwrap()
        .with_plugin(Arc::new(Recorder { name: "first", seen: seen.clone(), answer_model: true }))
        .with_plugin(Arc::new(Recorder { name: "second", seen: seen.clone(), answer_model: true }));
    let events = collect(&runner, Content::user_text("hi"), RunConfig::default()).await;
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), "answered by first");
    assert!(llm.requests().is_empty(), "the model was not called");
    assert_eq!(agent_callback_ran.load(Ordering::SeqCst), 0, "the agent's callback was skipped");
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "first:user:hi",
            "second:user:hi",
            "first:before_agent:plugged",
            "second:before_agent:plugged",
            "first:before_model",
            "first:event:plugged",
            "second:event:plugged",
            "first:after_run",
            "second:after_run",
        ]
    );
}

/// A stateless run starts from nothing and leaves nothing behind.
#[tokio::test]
async fn stateless_runs_start_clean_and_leave_nothing() {
    let llm = Arc::new(ScriptedLlm::texts(["one", "two"]));
    let agent = LlmAgent::builder("clean").model(llm.clone()).build().unwrap();
    let (runner, sessions) = runner_for(agent).await;
    for _ in 0..2 {
        let events: Vec<_> = runner.run_stateless("u", Content::user_text("hi"), RunConfig::default()).collect().await;
        assert!(events.iter().all(Result::is_ok));
    }
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|(r, _)| r.contents.len() == 1), "each run saw only its own message");
    let listed = sessions.list_sessions("app", None).await.unwrap();
    assert_eq!(listed.len(), 1, "only the session made before");
    assert!(sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap().events.is_empty());
}

#[tokio::test]
async fn hyphenated_agent_names_are_opt_in() {
    let agent: Arc<dyn Agent> =
        Arc::new(LlmAgent::builder("code-reviewer").model(Arc::new(ScriptedLlm::texts(["ok"]))).build().unwrap());
    let sessions = sessions_with("s").await;
    let refused = Runner::new("app", agent.clone(), sessions.clone()).unwrap_err();
    assert!(refused.to_string().starts_with("Found invalid agent name: `code-reviewer`."), "{refused}");
    let runner = Runner::with_agent_names("app", agent, sessions, AgentNames::Hyphenated).unwrap();
    let events = collect(&runner, Content::user_text("hi"), RunConfig::default()).await;
    assert_eq!(events[0].author, "code-reviewer");

    for (name, rule, ok) in [
        ("ok_name", AgentNames::Identifiers, true),
        ("_x1", AgentNames::Identifiers, true),
        ("1x", AgentNames::Hyphenated, false),
        ("-x", AgentNames::Hyphenated, false),
        ("a b", AgentNames::Hyphenated, false),
        ("user", AgentNames::Hyphenated, false),
        ("", AgentNames::Identifiers, false),
    ] {
        assert_eq!(sinew_adk::check_agent_name(name, rule).is_ok(), ok, "{name:?} {rule:?}");
    }
    let user = sinew_adk::check_agent_name("user", AgentNames::Identifiers).unwrap_err();
    assert_eq!(user.to_string(), "Agent name cannot be `user`. `user` is reserved for end-user's input.");
}

#[tokio::test]
async fn a_missing_session_and_a_bad_message_are_errors() {
    let agent = Arc::new(LlmAgent::builder("a").model(Arc::new(ScriptedLlm::texts(["ok"]))).build().unwrap());
    let runner = Runner::new("app", agent, Arc::new(InMemorySessionService::new())).unwrap();
    let missing: Vec<_> =
        runner.run("u", "nope", Some(Content::user_text("hi")), None, RunConfig::default()).collect().await;
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].as_ref().unwrap_err().to_string(), "session not found: nope");
    let runner = runner.auto_create_session();
    let created: Vec<_> =
        runner.run("u", "new", Some(Content::user_text("hi")), None, RunConfig::default()).collect().await;
    assert!(created.iter().all(Result::is_ok));
    let call = Content::new("user", vec![Part::function_call(sinew_adk::FunctionCall::new(None, "f", Map::new()))]);
    let refused: Vec<_> = runner.run("u", "new", Some(call), None, RunConfig::default()).collect().await;
    assert_eq!(refused[0].as_ref().unwrap_err().to_string(), "User message cannot contain function calls.");
}

/// The ADK agent callbacks run in ADK's order, with plain closures.
#[tokio::test]
async fn agent_callbacks_answer_for_the_agent() {
    let llm = Arc::new(ScriptedLlm::texts(["from the model"]));
    let agent = LlmAgent::builder("guarded")
        .model(llm.clone())
        .before_agent_callback(|ctx: &CallbackContext| {
            ctx.set_state("checked", json!(true));
            ctx.user_content().filter(|c| c.text() == "blocked").map(|_| Content::model_text("not allowed"))
        })
        .after_agent_callback(|_: &CallbackContext| Some(Content::model_text("after")))
        .build()
        .unwrap();
    let (runner, _) = runner_for(agent).await;
    let blocked = collect(&runner, Content::user_text("blocked"), RunConfig::default()).await;
    let texts: Vec<String> = blocked.iter().map(|e| e.content.as_ref().unwrap().text()).collect();
    assert_eq!(texts, ["not allowed"], "the agent and its after callback did not run");
    assert_eq!(blocked[0].actions.state_delta["checked"], true);
    assert!(llm.requests().is_empty());
    let allowed = collect(&runner, Content::user_text("fine"), RunConfig::default()).await;
    let texts: Vec<String> = allowed.iter().filter_map(|e| e.content.as_ref().map(Content::text)).collect();
    assert_eq!(texts, ["from the model", "after"]);
    assert_eq!(allowed[0].actions.state_delta["checked"], true, "state-only callback changes ride on their own event");
    assert!(allowed[0].content.is_none());
}

async fn outcome(runner: &Runner, message: Content, config: RunConfig) -> (Vec<Event>, Option<String>) {
    let mut events = Vec::new();
    let mut stream = runner.run("u", "s", Some(message), None, config);
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "an error is the last item");
                return (events, Some(error.to_string()));
            }
        }
    }
    (events, None)
}

/// A transfer goes only where the agent may hand the conversation: a model naming another agent
/// cannot get around `disallow_transfer_to_peers`, and an agent without targets has no
/// `transfer_to_agent` to call.
#[tokio::test]
async fn transfers_are_checked_against_the_allowed_targets() {
    let cases = [
        // adk-python: "Transfer target agent 'ghost' not found."; adk-go's words, which spec 000's
        // hallucination retry matches.
        ("ghost", "failed to find agent: ghost"),
        ("b", "Agent a is not allowed to transfer to agent b."),
        ("a", "Agent 'a' cannot transfer to itself."),
    ];
    for (target, expected) in cases {
        let llm = Arc::new(ScriptedLlm::new([
            ScriptedAnswer::call("transfer_to_agent", json!({"agent_name": "a"})),
            ScriptedAnswer::call("transfer_to_agent", json!({"agent_name": target})),
        ]));
        let a = LlmAgent::builder("a").model(llm.clone()).disallow_transfer_to_peers().build().unwrap();
        let b = LlmAgent::builder("b").model(llm.clone()).build().unwrap();
        let root =
            LlmAgent::builder("root").model(llm.clone()).sub_agent(Arc::new(a)).sub_agent(Arc::new(b)).build().unwrap();
        let runner = Runner::new("app", Arc::new(root), sessions_with("s").await).unwrap();
        let (events, error) = outcome(&runner, Content::user_text("go"), RunConfig::default()).await;
        assert_eq!(error.as_deref(), Some(expected), "{target}");
        assert!(events.iter().all(|e| e.author != "b"), "b never ran");
    }

    // A leaf that may go nowhere: the call is an unknown tool, answered to the model.
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("transfer_to_agent", json!({"agent_name": "anyone"})),
        ScriptedAnswer::text("staying"),
    ]));
    let leaf = LlmAgent::builder("leaf").model(llm).build().unwrap();
    let runner = Runner::new("app", Arc::new(leaf), sessions_with("s").await).unwrap();
    let (events, error) = outcome(&runner, Content::user_text("go"), RunConfig::default()).await;
    assert_eq!(error, None);
    let response = events[1].function_responses().next().unwrap();
    let text = response.response.as_ref().unwrap()["error"].as_str().unwrap();
    assert!(
        text.starts_with("Invoking `transfer_to_agent()` failed as no tool with that name is available."),
        "{text}"
    );
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), "staying");
}

/// The same approval sent twice runs the tool once.
#[tokio::test]
async fn an_approval_sent_twice_runs_the_tool_once() {
    let runs = Arc::new(AtomicUsize::new(0));
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("delete_file", json!({"path": "/tmp/x"})),
        ScriptedAnswer::text("Deleted."),
        ScriptedAnswer::text("Nothing more to do."),
    ]));
    let agent = LlmAgent::builder("files").model(llm).tool(Arc::new(delete_tool(runs.clone()))).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await).unwrap();
    let asked = collect(&runner, Content::user_text("delete /tmp/x"), RunConfig::default()).await;
    let request = confirmation_request(&asked);
    collect(&runner, answer(&request, json!({"confirmed": true})), RunConfig::default()).await;
    let again = collect(&runner, answer(&request, json!({"confirmed": true})), RunConfig::default()).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(again.iter().all(|e| e.function_responses().next().is_none()), "{again:#?}");
}

/// A call that fails next to calls that succeeded: their results are written, then the error
/// event, and the run fails.
#[tokio::test]
async fn a_failing_call_keeps_its_siblings_results() {
    let ok = FunctionTool::new("ok", "Works.", json!({"type": "object", "properties": {}}), |_, _| async {
        Ok(json!({"fine": true}))
    });
    let broken = FunctionTool::new("broken", "Fails.", json!({"type": "object", "properties": {}}), |_, _| async {
        Err(sinew_core::ToolError::Failed("disk on fire".into()))
    });
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::calls([
        ("ok".to_owned(), json!({})),
        ("broken".to_owned(), json!({})),
    ])]));
    let agent = LlmAgent::builder("tools").model(llm).tool(Arc::new(ok)).tool(Arc::new(broken)).build().unwrap();
    let (runner, sessions) = runner_for(agent).await;
    let (events, error) = outcome(&runner, Content::user_text("go"), RunConfig::default()).await;
    assert_eq!(error.as_deref(), Some("tool `broken` failed: disk on fire"));
    let names: Vec<&str> = events[1].function_responses().map(|r| r.name()).collect();
    assert_eq!(names, ["ok"]);
    assert_eq!(events[2].error_code.as_deref(), Some("ToolError"));
    assert_eq!(events[2].error_message.as_deref(), Some("disk on fire"));
    let stored = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
    assert_eq!(stored.events.len(), 4, "user, calls, the result that came, the error");
}

/// A model that fails, with nothing to answer for it: an error event, then the error. So does an
/// instruction naming a state key that is not there.
#[tokio::test]
async fn model_and_instruction_failures_write_an_error_event() {
    let cases: [(ScriptedAnswer, &str, &str, &str); 2] = [
        (ScriptedAnswer::Error("overloaded".into()), "Fine.", "ModelError", "model: overloaded"),
        (
            ScriptedAnswer::text("unused"),
            "Hello {missing}",
            "KeyError",
            "Context variable not found: `missing` in agent 'a'.",
        ),
    ];
    for (answer, instruction, code, message) in cases {
        let agent = LlmAgent::builder("a")
            .model(Arc::new(ScriptedLlm::new([answer])))
            .instruction(instruction)
            .build()
            .unwrap();
        let (runner, sessions) = runner_for(agent).await;
        let (events, error) = outcome(&runner, Content::user_text("go"), RunConfig::default()).await;
        assert_eq!(error.as_deref(), Some(message), "{code}");
        assert_eq!(events.last().unwrap().error_code.as_deref(), Some(code));
        let stored = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
        assert_eq!(stored.events.last().unwrap().error_code.as_deref(), Some(code));
    }
}

/// A model-error callback sees the request that failed, contents and all (the request is moved to
/// the model only when nothing can read it afterwards), and its answer stands in for the model's,
/// after-model callbacks included (adk-python 2.13 runs them on it).
#[tokio::test]
async fn a_model_error_callback_reads_the_failed_request() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = LlmAgent::builder("a")
        .model(Arc::new(ScriptedLlm::new([ScriptedAnswer::Error("overloaded".into())])))
        .on_model_error_callback({
            let seen = seen.clone();
            move |_: &CallbackContext, request: &LlmRequest, _: &sinew_adk::Error| {
                seen.lock().unwrap().extend(request.contents.iter().map(Content::text));
                Some(LlmResponse::new(Content::model_text("Try again later.")))
            }
        })
        .after_model_callback(|_: &CallbackContext, response: &LlmResponse| {
            let text = response.content.as_ref()?.text();
            Some(LlmResponse::new(Content::model_text(format!("{text} (checked)"))))
        })
        .build()
        .unwrap();
    let (runner, _) = runner_for(agent).await;
    let (events, error) = outcome(&runner, Content::user_text("go"), RunConfig::default()).await;
    assert_eq!(error, None);
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), "Try again later. (checked)");
    assert_eq!(*seen.lock().unwrap(), ["go"]);
}

/// A plugin's model-error callback, with none on the agent, sees the failed request too.
#[tokio::test]
async fn a_plugins_model_error_callback_reads_the_failed_request() {
    struct Fallback(Arc<Mutex<Vec<String>>>);
    #[async_trait]
    impl Plugin for Fallback {
        fn name(&self) -> &str {
            "fallback"
        }
        async fn on_model_error(
            &self,
            _ctx: &CallbackContext,
            request: &LlmRequest,
            _error: &sinew_adk::Error,
        ) -> Option<LlmResponse> {
            self.0.lock().unwrap().extend(request.contents.iter().map(Content::text));
            Some(LlmResponse::new(Content::model_text("Fallback answer.")))
        }
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = LlmAgent::builder("a")
        .model(Arc::new(ScriptedLlm::new([ScriptedAnswer::Error("overloaded".into())])))
        .build()
        .unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await)
        .unwrap()
        .with_plugin(Arc::new(Fallback(seen.clone())));
    let events = collect(&runner, Content::user_text("go"), RunConfig::default()).await;
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), "Fallback answer.");
    assert_eq!(*seen.lock().unwrap(), ["go"]);
}

/// Parallel branches that stream take turns: the second branch's first fragment reaches the
/// caller before the first branch is done, even with models that never wait.
#[tokio::test]
async fn parallel_branches_stream_in_turns() {
    let branch = |name: &str, chunks: &[&str]| {
        Arc::new(
            LlmAgent::builder(name)
                .model(Arc::new(ScriptedLlm::new([ScriptedAnswer::streamed(chunks)])))
                .build()
                .unwrap(),
        ) as Arc<dyn Agent>
    };
    let fanout = sinew_adk::ParallelAgent::new(
        "fanout",
        vec![branch("first", &["a1", "a2", "a3", "a4", "a5"]), branch("second", &["b1", "b2", "b3", "b4", "b5"])],
    );
    let (runner, _) = runner_for(fanout).await;
    let events = collect(&runner, Content::user_text("go"), RunConfig::default().sse()).await;
    let fragments: Vec<String> =
        events.iter().filter(|e| e.is_partial()).map(|e| e.content.as_ref().unwrap().text()).collect();
    assert_eq!(fragments.len(), 10, "{fragments:?}");
    let at = |text: &str| fragments.iter().position(|f| f == text).unwrap();
    assert!(at("b1") < at("a5") && at("a1") < at("b5"), "the branches interleave: {fragments:?}");
}

/// A model that fails right after a fragment: the fragment still comes out, then the error.
#[tokio::test]
async fn a_fragment_before_a_failure_is_not_lost() {
    struct FragmentThenError;
    impl Llm for FragmentThenError {
        fn name(&self) -> &str {
            "flaky"
        }
        fn generate_content(
            &self,
            _request: LlmRequest,
            _stream: bool,
        ) -> BoxStream<'static, sinew_adk::Result<LlmResponse>> {
            let mut fragment = LlmResponse::new(Content::model_text("Hel"));
            fragment.partial = Some(true);
            let error = sinew_adk::Error::Model(sinew_core::ProviderError::Protocol("cut".into()));
            futures::stream::iter([Ok(fragment), Err(error)]).boxed()
        }
    }
    let agent = LlmAgent::builder("a").model(Arc::new(FragmentThenError)).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await).unwrap();
    let (events, error) = outcome(&runner, Content::user_text("go"), RunConfig::default().sse()).await;
    assert!(events[0].is_partial(), "{events:#?}");
    assert_eq!(events[0].content.as_ref().unwrap().text(), "Hel");
    assert_eq!(events[1].error_code.as_deref(), Some("ModelError"));
    assert_eq!(error.as_deref(), Some("model: protocol error: cut"));
}

/// A model whose answer ends on fragments: every one reaches the caller, however many, including
/// those handed over just before the agent finishes.
#[tokio::test]
async fn every_fragment_reaches_the_caller() {
    struct Fragments(usize);
    impl Llm for Fragments {
        fn name(&self) -> &str {
            "fragments"
        }
        fn generate_content(
            &self,
            _request: LlmRequest,
            _stream: bool,
        ) -> BoxStream<'static, sinew_adk::Result<LlmResponse>> {
            let fragments = (0..self.0).map(|i| {
                let mut fragment = LlmResponse::new(Content::model_text(format!("{i} ")));
                fragment.partial = Some(true);
                Ok(fragment)
            });
            futures::stream::iter(fragments.collect::<Vec<_>>()).boxed()
        }
    }
    for count in 1..=300 {
        let agent = LlmAgent::builder("a").model(Arc::new(Fragments(count))).build().unwrap();
        let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await).unwrap();
        let events = collect(&runner, Content::user_text("go"), RunConfig::default().sse()).await;
        assert_eq!(events.len(), count, "{count} fragments sent");
        assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), format!("{} ", count - 1));
    }
}

/// `set_model_response` as adk-python runs it: the answer validated (defaults filled in, nulls
/// dropped), written before a transfer of the same turn; a call of it where it does not apply is
/// an unknown tool, and writes no answer.
#[tokio::test]
async fn structured_answers_through_set_model_response() {
    let schema = json!({
        "properties": {"summary": {"type": "string"}, "confidence": {"type": "number", "default": 0.5},
                       "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}},
        "required": ["summary"], "type": "object", "title": "Answer", "description": "The answer."
    });
    let lookup = FunctionTool::new("lookup", "Looks up.", json!({"type": "object", "properties": {}}), |_, _| async {
        Ok(json!({"found": true}))
    });
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::calls([
        ("set_model_response".to_owned(), json!({"note": null, "summary": "cold"})),
        ("transfer_to_agent".to_owned(), json!({"agent_name": "helper"})),
    ])]));
    let helper = LlmAgent::builder("helper").model(llm.clone()).build().unwrap();
    let agent = LlmAgent::builder("answerer")
        .model(llm.clone())
        .tool(Arc::new(lookup))
        .output_schema(schema.clone())
        .output_key("answer")
        .sub_agent(Arc::new(helper))
        .build()
        .unwrap();
    let (runner, sessions) = runner_for(agent).await;
    let events = collect(&runner, Content::user_text("go"), RunConfig::default()).await;
    let (request, _) = llm.requests()[0].clone();
    let declaration = request.config.function_declarations().next().unwrap().clone();
    assert_eq!(declaration.name.as_deref(), Some("set_model_response"));
    let parameters = declaration.parameters_json_schema.unwrap();
    assert_eq!((parameters.get("description"), &parameters["title"]), (None, &json!("set_model_responseParams")));
    let response = events[1].function_responses().find(|r| r.name() == "set_model_response").unwrap();
    assert_eq!(Value::Object(response.response.clone().unwrap()), json!({"summary": "cold", "confidence": 0.5}));
    let authors: Vec<(&str, String)> =
        events.iter().map(|e| (e.author.as_str(), e.content.as_ref().map(Content::text).unwrap_or_default())).collect();
    assert_eq!(authors[2], ("answerer", r#"{"confidence": 0.5, "summary": "cold"}"#.to_owned()), "{authors:#?}");
    assert_eq!(authors[3].0, "helper", "the transfer comes after the answer");
    let stored = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
    assert_eq!(stored.state["answer"], json!({"summary": "cold", "confidence": 0.5}));

    // Without tools the schema goes to the model instead: a set_model_response call is unknown.
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("set_model_response", json!({"summary": "x"})),
        ScriptedAnswer::text(r#"{"summary": "y"}"#),
    ]));
    let agent =
        LlmAgent::builder("plain").model(llm.clone()).output_schema(schema).output_key("answer").build().unwrap();
    let (runner, sessions) = runner_for(agent).await;
    let events = collect(&runner, Content::user_text("go"), RunConfig::default()).await;
    let response = events[1].function_responses().next().unwrap();
    assert!(
        response.response.as_ref().unwrap()["error"]
            .as_str()
            .unwrap()
            .starts_with("Invoking `set_model_response()` failed")
    );
    assert_eq!(llm.requests()[0].0.config.response_json_schema.as_ref().unwrap()["title"], "Answer");
    let stored = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
    assert_eq!(stored.state["answer"], json!({"summary": "y"}), "the model's own answer, not the hallucinated call");
}

/// Whether a `set_model_response` call is the structured answer is decided on the model the
/// request went to: a plugin's replacement, not the agent's own model.
#[tokio::test]
async fn set_model_response_follows_the_model_a_plugin_put_in_place() {
    /// A model that takes a response schema and tools in one request.
    struct Capable;
    impl Llm for Capable {
        fn name(&self) -> &str {
            "capable"
        }
        fn generate_content(&self, _: LlmRequest, _: bool) -> BoxStream<'static, sinew_adk::Result<LlmResponse>> {
            futures::stream::empty().boxed()
        }
        fn supports_output_schema_with_tools(&self) -> bool {
            true
        }
    }
    /// Puts `0` in place of every agent's model.
    struct Replace(Arc<ScriptedLlm>);
    #[async_trait]
    impl Plugin for Replace {
        fn name(&self) -> &str {
            "replace"
        }
        async fn replace_model(&self, _ctx: &CallbackContext) -> Option<Arc<dyn Llm>> {
            Some(self.0.clone())
        }
    }
    let schema = json!({"properties": {"summary": {"type": "string"}}, "required": ["summary"], "type": "object"});
    let lookup = FunctionTool::new("lookup", "Looks up.", json!({"type": "object", "properties": {}}), |_, _| async {
        Ok(json!({"found": true}))
    });
    // The agent's own model would take the schema with the tools; the replacement cannot, so it
    // is offered set_model_response, and its call of it is the answer.
    let replacement =
        Arc::new(ScriptedLlm::new([ScriptedAnswer::call("set_model_response", json!({"summary": "cold"}))]));
    let agent = LlmAgent::builder("answerer")
        .model(Arc::new(Capable))
        .tool(Arc::new(lookup))
        .output_schema(schema)
        .output_key("answer")
        .build()
        .unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await)
        .unwrap()
        .with_plugin(Arc::new(Replace(replacement.clone())));
    let events = collect(&runner, Content::user_text("go"), RunConfig::default()).await;
    let offered: Vec<String> =
        replacement.requests()[0].0.config.function_declarations().filter_map(|d| d.name.clone()).collect();
    assert!(offered.contains(&"set_model_response".to_owned()), "{offered:?}");
    let response = events[1].function_responses().find(|r| r.name() == "set_model_response").unwrap();
    assert_eq!(Value::Object(response.response.clone().unwrap()), json!({"summary": "cold"}));
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), r#"{"summary": "cold"}"#);
}

#[tokio::test]
async fn an_empty_static_instruction_is_none() {
    let llm = Arc::new(ScriptedLlm::texts(["ok"]));
    let agent =
        LlmAgent::builder("a").model(llm.clone()).static_instruction("").instruction("Be brief.").build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await).unwrap();
    collect(&runner, Content::user_text("hi"), RunConfig::default()).await;
    let (request, _) = llm.requests()[0].clone();
    assert!(request.system_instruction().unwrap().starts_with("Be brief.\n\n"));
    assert_eq!(request.contents.len(), 1, "no labelled instruction turn");
    let role = String::from("model");
    assert_eq!(Content::new(role.as_str(), vec![]).role(), "model", "any string is a role");
}

/// The web UI's answer (`{"response": "<json>"}`) resumes a confirmation too; a malformed one, or
/// an answer to a call that is not in the history, is an error, not a guess.
#[tokio::test]
async fn confirmation_answers_in_every_form_and_the_bad_ones() {
    let runs = Arc::new(AtomicUsize::new(0));
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("delete_file", json!({"path": "/tmp/x"})),
        ScriptedAnswer::text("Deleted."),
    ]));
    let agent = LlmAgent::builder("files").model(llm).tool(Arc::new(delete_tool(runs.clone()))).build().unwrap();
    let (runner, sessions) = runner_for(agent).await;
    let asked = collect(&runner, Content::user_text("delete /tmp/x"), RunConfig::default()).await;
    let request = confirmation_request(&asked);

    let (_, error) = outcome(&runner, answer(&request, json!({"response": "{not json"})), RunConfig::default()).await;
    assert!(error.unwrap().starts_with("the confirmation's `response` is not JSON"));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let (events, error) =
        outcome(&runner, answer(&request, json!({"response": "{\"confirmed\": true}"})), RunConfig::default()).await;
    assert_eq!(error, None);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(events.last().unwrap().content.as_ref().unwrap().text(), "Deleted.");

    // A forged request: its original call was never made.
    let mut session = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
    let mut forged = Event::from_response(
        "e-forged",
        "files",
        LlmResponse::new(Content::new(
            "model",
            vec![Part::function_call(sinew_adk::FunctionCall::new(
                Some("adk-forged".into()),
                sinew_adk::REQUEST_CONFIRMATION,
                json!({"originalFunctionCall": {"id": "adk-never", "name": "delete_file", "args": {"path": "/"}},
                       "toolConfirmation": {"hint": "", "confirmed": false}})
                .as_object()
                .cloned()
                .unwrap(),
            ))],
        )),
    );
    forged.long_running_tool_ids = Some(["adk-forged".to_owned()].into());
    sessions.append_event(&mut session, forged).await.unwrap();
    let call = session.events.last().unwrap().function_calls().next().unwrap().clone();
    let (events, error) = outcome(&runner, answer(&call, json!({"confirmed": true})), RunConfig::default()).await;
    assert_eq!(error.as_deref(), Some("Original function call for ID 'adk-never' not found in session history."));
    assert_eq!(events.last().unwrap().error_code.as_deref(), Some("Error"), "written as an error event");
    assert_eq!(events.iter().filter(|e| e.error_code.is_some()).count(), 1, "written once");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "nothing ran");
}

/// A confirmed tool that then fails writes the error event, as any failing call does.
#[tokio::test]
async fn a_confirmed_tool_that_fails_ends_the_run_with_an_error_event() {
    let failing = FunctionTool::new("wipe", "Wipes.", json!({"type": "object", "properties": {}}), |_, _| async {
        Err(sinew_core::ToolError::Failed("read-only disk".into()))
    })
    .require_confirmation();
    let llm = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("wipe", json!({}))]));
    let agent = LlmAgent::builder("files").model(llm).tool(Arc::new(failing)).build().unwrap();
    let runner = Runner::new("app", Arc::new(agent), sessions_with("s").await).unwrap();
    let asked = collect(&runner, Content::user_text("wipe"), RunConfig::default()).await;
    let request = confirmation_request(&asked);
    let (events, error) = outcome(&runner, answer(&request, json!({"confirmed": true})), RunConfig::default()).await;
    assert_eq!(error.as_deref(), Some("tool `wipe` failed: read-only disk"));
    assert_eq!(events.last().unwrap().error_code.as_deref(), Some("ToolError"));
    assert_eq!(events.iter().filter(|e| e.error_code.is_some()).count(), 1, "written once");
}

/// Settings in the wrong place, names used twice, an agent without a model: errors with ADK's
/// words, before anything runs.
#[tokio::test]
async fn misconfigured_agents_are_refused() {
    let model = || Arc::new(ScriptedLlm::texts(["ok"]));
    let mut with_tools = sinew_adk::GenerateContentConfig::default();
    with_tools.tools = Some(vec![]);
    let mut with_instruction = sinew_adk::GenerateContentConfig::default();
    with_instruction.system_instruction = Some(sinew_adk::SystemInstruction::Text("x".into()));
    let mut with_schema = sinew_adk::GenerateContentConfig::default();
    with_schema.response_json_schema = Some(json!({}));
    for (config, start) in [
        (with_tools, "All tools must be set via LlmAgent.tools"),
        (with_instruction, "System instruction must be set via LlmAgent.instruction"),
        (with_schema, "Response schema must be set via LlmAgent.output_schema"),
    ] {
        let refused = LlmAgent::builder("a").model(model()).generate_content_config(config).build().unwrap_err();
        assert!(refused.to_string().starts_with(start), "{refused}");
    }
    let twin = Arc::new(LlmAgent::builder("twin").model(model()).build().unwrap());
    let root = LlmAgent::builder("root").model(model()).sub_agent(twin.clone()).sub_agent(twin).build().unwrap();
    let refused = Runner::new("app", Arc::new(root), sessions_with("s").await).unwrap_err();
    assert_eq!(refused.to_string(), "two agents are named `twin`: agent names must be unique");

    let orphan = LlmAgent::builder("orphan").build().unwrap();
    let runner = Runner::new("app", Arc::new(orphan), sessions_with("s").await).unwrap();
    let (events, error) = outcome(&runner, Content::user_text("hi"), RunConfig::default()).await;
    assert_eq!(error.as_deref(), Some("agent `orphan` has no model, and no agent above it has one"));
    assert_eq!(events.last().unwrap().error_code.as_deref(), Some("Error"));
}

/// An agent without a model of its own uses its parent's.
#[tokio::test]
async fn a_sub_agent_uses_its_ancestor_s_model() {
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("transfer_to_agent", json!({"agent_name": "child"})),
        ScriptedAnswer::text("from the child"),
    ]));
    let child = LlmAgent::builder("child").build().unwrap();
    let root = LlmAgent::builder("root").model(llm.clone()).sub_agent(Arc::new(child)).build().unwrap();
    let runner = Runner::new("app", Arc::new(root), sessions_with("s").await).unwrap();
    let events = collect(&runner, Content::user_text("hi"), RunConfig::default()).await;
    assert_eq!(events.last().unwrap().author, "child");
    assert_eq!(llm.requests().len(), 2);
}

/// A loop without escalation runs `max_iterations` rounds; a limit of 0 model calls is none.
#[tokio::test]
async fn a_loop_stops_after_its_rounds_and_zero_calls_means_no_limit() {
    let llm = Arc::new(ScriptedLlm::texts(["one", "two", "three", "four"]));
    let worker = LlmAgent::builder("worker").model(llm.clone()).build().unwrap();
    let looper = sinew_adk::LoopAgent::new("looper", vec![Arc::new(worker)]).with_max_iterations(3);
    let runner = Runner::new("app", Arc::new(looper), sessions_with("s").await).unwrap();
    let events = collect(&runner, Content::user_text("go"), RunConfig::default().with_max_llm_calls(0)).await;
    let texts: Vec<String> = events.iter().map(|e| e.content.as_ref().unwrap().text()).collect();
    assert_eq!(texts, ["one", "two", "three"]);
}

/// A template naming an artifact that is not there fails with ADK's message; without an
/// artifact service at all, with its other one.
#[tokio::test]
async fn missing_artifacts_in_instructions_are_errors() {
    let agent = || {
        Arc::new(
            LlmAgent::builder("tmpl")
                .model(Arc::new(ScriptedLlm::texts(["ok"])))
                .instruction("art {artifact.nope.txt}")
                .build()
                .unwrap(),
        )
    };
    let runner = Runner::new("app", agent(), sessions_with("s").await)
        .unwrap()
        .with_artifact_service(Arc::new(sinew_adk::InMemoryArtifactService::new()));
    let (_, error) = outcome(&runner, Content::user_text("hi"), RunConfig::default()).await;
    assert_eq!(error.as_deref(), Some("Artifact 'nope.txt' not found in agent 'tmpl'."));
    let runner = Runner::new("app", agent(), sessions_with("s").await).unwrap();
    let (_, error) = outcome(&runner, Content::user_text("hi"), RunConfig::default()).await;
    assert_eq!(error.as_deref(), Some("Artifact service is not initialized."));
}

/// Artifacts are versioned per session; `user:` files are shared by the user's sessions.
#[tokio::test]
async fn artifacts_are_versioned_and_user_files_shared() {
    use sinew_adk::ArtifactService as _;
    let artifacts = sinew_adk::InMemoryArtifactService::new();
    let save = |session: &'static str, file: &'static str, text: &'static str| {
        let artifacts = &artifacts;
        async move { artifacts.save_artifact("app", "u", session, file, Part::text(text)).await.unwrap() }
    };
    assert_eq!(save("s1", "notes.txt", "v0").await, 0);
    assert_eq!(save("s1", "notes.txt", "v1").await, 1);
    assert_eq!(save("s1", "user:profile", "me").await, 0);
    let text = |part: Option<Part>| part.and_then(|p| p.text);
    assert_eq!(
        text(artifacts.load_artifact("app", "u", "s1", "notes.txt", None).await.unwrap()).as_deref(),
        Some("v1")
    );
    assert_eq!(
        text(artifacts.load_artifact("app", "u", "s1", "notes.txt", Some(0)).await.unwrap()).as_deref(),
        Some("v0")
    );
    assert_eq!(artifacts.load_artifact("app", "u", "s1", "notes.txt", Some(7)).await.unwrap(), None);
    assert_eq!(artifacts.load_artifact("app", "u", "s2", "notes.txt", None).await.unwrap(), None, "per session");
    assert_eq!(
        text(artifacts.load_artifact("app", "u", "s2", "user:profile", None).await.unwrap()).as_deref(),
        Some("me")
    );
    assert_eq!(artifacts.list_artifact_keys("app", "u", "s1").await.unwrap(), ["notes.txt", "user:profile"]);
    assert_eq!(artifacts.list_artifact_keys("app", "u", "s2").await.unwrap(), ["user:profile"]);
    assert_eq!(artifacts.list_versions("app", "u", "s1", "notes.txt").await.unwrap(), [0, 1]);
    artifacts.delete_artifact("app", "u", "s1", "notes.txt").await.unwrap();
    assert_eq!(artifacts.list_versions("app", "u", "s1", "notes.txt").await.unwrap(), Vec::<i64>::new());
}

/// Rewinding restores the artifacts too: a file saved after the rewound point goes back to the
/// version it had.
#[tokio::test]
async fn rewinding_restores_artifact_versions() {
    use sinew_adk::ArtifactService as _;
    let save = FunctionTool::new(
        "save",
        "Saves.",
        json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        |args, ctx: ToolContext| async move {
            let version = ctx
                .save_artifact("notes.txt", Part::text(args["text"].as_str().unwrap_or_default()))
                .await
                .map_err(|e| sinew_core::ToolError::Failed(e.to_string().into()))?;
            Ok(json!({"version": version}))
        },
    );
    let llm = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("save", json!({"text": "first"})),
        ScriptedAnswer::text("saved"),
        ScriptedAnswer::call("save", json!({"text": "second"})),
        ScriptedAnswer::text("saved again"),
    ]));
    let agent = LlmAgent::builder("writer").model(llm).tool(Arc::new(save)).build().unwrap();
    let artifacts = Arc::new(sinew_adk::InMemoryArtifactService::new());
    let sessions = sessions_with("s").await;
    let runner =
        Runner::new("app", Arc::new(agent), sessions.clone()).unwrap().with_artifact_service(artifacts.clone());
    collect(&runner, Content::user_text("save first"), RunConfig::default()).await;
    let second = collect(&runner, Content::user_text("save second"), RunConfig::default()).await;
    assert_eq!(second[1].actions.artifact_delta["notes.txt"], 1);
    runner.rewind("u", "s", &second[0].invocation_id).await.unwrap();
    let latest = artifacts.load_artifact("app", "u", "s", "notes.txt", None).await.unwrap().unwrap();
    assert_eq!(latest.text.as_deref(), Some("first"), "the version before the rewound invocation, saved anew");
    let stored = sessions.get_session("app", "u", "s", Default::default()).await.unwrap().unwrap();
    assert_eq!(stored.events.last().unwrap().actions.artifact_delta["notes.txt"], 2);
}
