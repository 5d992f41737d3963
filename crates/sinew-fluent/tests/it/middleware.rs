//! Middleware: the stack as one plugin before the agents' callbacks, and every built-in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use serde_json::{Map, Value, json};
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_adk::{CallbackContext, Content, FunctionResponse, FunctionTool, LlmRequest, LlmResponse, Part, ToolError};
use sinew_fluent::middleware::{
    BreakerState, CircuitBreaker, CostTracker, Middleware, PiiRedaction, Price, RateLimiter, ResponseCache, Retry,
    StructuredLog, TokenBudget, ToolApproval,
};
use sinew_fluent::{
    AdkBackend, Agent, AgentEvent, Backend as _, Execute as _, ExecutionConfig, Node, RunOptions, final_text,
};

use super::FakeLlm;

/// A model that always fails with `error`.
struct ErringLlm<F> {
    error: F,
    calls: AtomicUsize,
}

impl<F: Fn() -> sinew_adk::Error + Send + Sync> sinew_adk::Llm for ErringLlm<F> {
    fn name(&self) -> &str {
        "erring"
    }

    fn generate_content(
        &self,
        _request: LlmRequest,
        _stream: bool,
    ) -> futures::stream::BoxStream<'static, sinew_adk::Result<LlmResponse>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let error = (self.error)();
        futures::stream::once(async move { Err(error) }).boxed()
    }
}

/// Compiles `node` on a backend with `middleware`, runs `prompt` in session `session`.
async fn run_with(
    backend: &AdkBackend,
    node: impl Into<Node>,
    prompt: &str,
    session: &str,
) -> sinew_fluent::Result<Vec<AgentEvent>> {
    let compiled = backend.compile(&node.into(), &ExecutionConfig::default())?;
    backend.run(&compiled, prompt, RunOptions::session("u", session)).await
}

/// Records each call it sees as `name.hook`; answers `before_model` when told to.
struct Recorder {
    name: &'static str,
    log: Arc<Mutex<Vec<String>>>,
    answer: bool,
}

#[async_trait]
impl Middleware for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    async fn before_agent(&self, _ctx: &CallbackContext, agent: &str) -> Option<Content> {
        self.log.lock().unwrap().push(format!("{}.before_agent({agent})", self.name));
        None
    }

    async fn before_model(&self, _ctx: &CallbackContext, _request: &mut LlmRequest) -> Option<LlmResponse> {
        self.log.lock().unwrap().push(format!("{}.before_model", self.name));
        self.answer.then(|| LlmResponse::new(Content::model_text(format!("from {}", self.name))))
    }
}

#[tokio::test]
async fn middleware_runs_before_agent_callbacks_and_the_first_answer_wins() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let recorder = |name, answer| Arc::new(Recorder { name, log: log.clone(), answer }) as Arc<dyn Middleware>;
    let agent = |model: Arc<ScriptedLlm>| {
        let (before_agent, before_model) = (log.clone(), log.clone());
        Agent::new("helper", model)
            .before_agent(move |_: &CallbackContext| {
                before_agent.lock().unwrap().push("agent.before_agent".into());
                None
            })
            .before_model(move |_: &CallbackContext, _: &mut LlmRequest| {
                before_model.lock().unwrap().push("agent.before_model".into());
                None
            })
    };

    let model = Arc::new(ScriptedLlm::texts(["from the model"]));
    let backend = AdkBackend::new().with_middleware(recorder("a", false)).with_middleware(recorder("b", false));
    let events = run_with(&backend, agent(model.clone()), "hi", "s1").await.unwrap();
    assert_eq!(final_text(&events), "from the model");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "a.before_agent(helper)",
            "b.before_agent(helper)",
            "agent.before_agent",
            "a.before_model",
            "b.before_model",
            "agent.before_model"
        ]
    );

    log.lock().unwrap().clear();
    let model = Arc::new(ScriptedLlm::texts(["from the model"]));
    let backend = AdkBackend::new()
        .with_middleware(recorder("a", false))
        .with_middleware(recorder("b", true))
        .with_middleware(recorder("c", false));
    let events = run_with(&backend, agent(model.clone()), "hi", "s2").await.unwrap();
    assert_eq!(final_text(&events), "from b");
    let log = log.lock().unwrap();
    assert_eq!(log[log.len() - 2..], ["a.before_model", "b.before_model"], "c and the agent's callback never ran");
    assert!(model.requests().is_empty(), "the model was not called");
}

#[tokio::test]
async fn closing_the_app_closes_every_middleware() {
    struct Closing(Arc<AtomicUsize>);

    #[async_trait]
    impl Middleware for Closing {
        fn name(&self) -> &str {
            "closing"
        }

        async fn close(&self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    let closed = Arc::new(AtomicUsize::new(0));
    let backend = AdkBackend::new()
        .with_middleware(Arc::new(Closing(closed.clone())))
        .with_middleware(Arc::new(Closing(closed.clone())));
    let compiled = backend.compile(&Agent::named("a").build().unwrap(), &ExecutionConfig::default()).unwrap();
    backend.close(&compiled).await.unwrap();
    assert_eq!(closed.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_token_budget_refuses_calls_once_spent() {
    let model = FakeLlm::new("m", (60, 40), [Ok("one"), Ok("two"), Ok("three")]);
    let budget = Arc::new(TokenBudget::total(150));
    let backend = AdkBackend::new().with_middleware(budget.clone());
    let node = || Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>);
    assert_eq!(final_text(&run_with(&backend, node(), "1", "s").await.unwrap()), "one");
    assert_eq!(final_text(&run_with(&backend, node(), "2", "s").await.unwrap()), "two");
    assert_eq!(budget.used(""), 200);
    let refused = run_with(&backend, node(), "3", "s").await.unwrap();
    let last = refused.last().unwrap();
    assert_eq!(last.error_code.as_deref(), Some("TOKEN_BUDGET_EXCEEDED"));
    assert!(last.error_message.as_deref().unwrap().contains("the token budget of 150 is spent (200 used)"));
    assert_eq!(model.calls(), 2, "the third call was not made");

    // A per-invocation budget starts again with each message.
    let model = FakeLlm::new("m", (60, 40), [Ok("one"), Ok("two")]);
    let backend = AdkBackend::new().with_middleware(Arc::new(TokenBudget::per_invocation(100)));
    let node = || Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>);
    assert_eq!(final_text(&run_with(&backend, node(), "1", "s").await.unwrap()), "one");
    assert_eq!(final_text(&run_with(&backend, node(), "2", "s").await.unwrap()), "two");
}

#[tokio::test]
async fn the_cost_tracker_attributes_tokens_and_dollars_per_agent() {
    let priced = FakeLlm::new("priced-model", (1_000, 500), [Ok("a1"), Ok("a2")]);
    let unpriced = FakeLlm::new("mystery-model", (10, 5), [Ok("b1")]);
    let tracker = Arc::new(CostTracker::new(|model| (model == "priced-model").then(|| Price::new(3.0, 15.0))));
    let backend = AdkBackend::new().with_middleware(tracker.clone());
    let pipeline = Agent::new("writer", priced.clone() as Arc<dyn sinew_adk::Llm>)
        >> Agent::new("checker", unpriced as Arc<dyn sinew_adk::Llm>)
        >> Agent::new("editor", priced as Arc<dyn sinew_adk::Llm>);
    run_with(&backend, pipeline, "go", "s").await.unwrap();
    let costs = tracker.costs();
    let writer = &costs["writer"];
    assert_eq!((writer.calls, writer.input_tokens, writer.output_tokens), (1, 1_000, 500));
    assert!((writer.cost - 0.0105).abs() < 1e-12, "{}", writer.cost);
    assert_eq!((costs["checker"].unpriced_calls, costs["checker"].cost), (1, 0.0));
    assert!((tracker.total() - 0.021).abs() < 1e-12);

    // A stand-in answer of middleware earlier in the stack (a spent budget) is no model call.
    let model = FakeLlm::new("m", (10, 10), [Ok("one")]);
    let tracker = Arc::new(CostTracker::new(|_| Some(Price::new(1.0, 1.0))));
    let backend = AdkBackend::new().with_middleware(tracker.clone()).with_middleware(Arc::new(TokenBudget::total(1)));
    run_with(&backend, Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>), "1", "s2").await.unwrap();
    run_with(&backend, Agent::new("a", model as Arc<dyn sinew_adk::Llm>), "2", "s2").await.unwrap();
    assert_eq!(tracker.costs()["a"].calls, 1);
}

#[tokio::test]
async fn the_response_cache_answers_a_request_it_has_seen() {
    let model = FakeLlm::new("m", (1, 1), [Ok("fresh"), Ok("second call")]);
    let cache = Arc::new(ResponseCache::new(8));
    let backend = AdkBackend::new().with_middleware(cache.clone());
    let node = || Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>).instruct("Answer.");
    assert_eq!(final_text(&run_with(&backend, node(), "same question", "s1").await.unwrap()), "fresh");
    // The same request in a new session: answered from the cache.
    assert_eq!(final_text(&run_with(&backend, node(), "same question", "s2").await.unwrap()), "fresh");
    assert_eq!((cache.hits(), cache.misses(), model.calls()), (1, 1, 1));
    // Another question goes to the model.
    assert_eq!(final_text(&run_with(&backend, node(), "other question", "s3").await.unwrap()), "second call");
    assert_eq!((cache.hits(), cache.misses(), model.calls()), (1, 2, 2));

    // A replayed answer used no tokens; a cache of one keeps the latest answer only.
    let model = FakeLlm::new("m", (7, 7), [Ok("a"), Ok("b"), Ok("a again")]);
    let cache = Arc::new(ResponseCache::new(1));
    let tracker = Arc::new(CostTracker::new(|_| Some(Price::new(1.0, 1.0))));
    let backend = AdkBackend::new().with_middleware(tracker.clone()).with_middleware(cache.clone());
    let node = || Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>);
    run_with(&backend, node(), "q1", "t1").await.unwrap();
    run_with(&backend, node(), "q1", "t2").await.unwrap();
    let costs = tracker.costs();
    assert_eq!((costs["a"].calls, costs["a"].input_tokens), (1, 7), "the replay is no call and used no tokens");
    run_with(&backend, node(), "q2", "t3").await.unwrap();
    assert_eq!(final_text(&run_with(&backend, node(), "q1", "t4").await.unwrap()), "a again", "q1 was evicted by q2");
    assert_eq!(model.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_rate_limiter_spaces_calls_by_its_refill_rate() {
    let model = FakeLlm::new("m", (1, 1), [Ok("1"), Ok("2"), Ok("3"), Ok("4")]);
    let backend = AdkBackend::new().with_middleware(Arc::new(RateLimiter::new(2.0, 0.5)));
    let pipeline = Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>)
        >> Agent::new("b", model.clone() as Arc<dyn sinew_adk::Llm>)
        >> Agent::new("c", model.clone() as Arc<dyn sinew_adk::Llm>)
        >> Agent::new("d", model.clone() as Arc<dyn sinew_adk::Llm>);
    let start = tokio::time::Instant::now();
    run_with(&backend, pipeline, "go", "s").await.unwrap();
    // Two calls from the full bucket, then one every two seconds.
    let waited = start.elapsed();
    assert!(waited >= Duration::from_secs(4) && waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(model.calls(), 4);
}

#[tokio::test(start_paused = true)]
async fn retry_repeats_failed_model_and_tool_calls_with_backoff() {
    let model = FakeLlm::new("m", (1, 1), [Err("overloaded"), Err("overloaded"), Ok("third time")]);
    // The answer a retry got passes `after_model` as any answer does: the tracker counts it.
    let tracker = Arc::new(CostTracker::new(|_| None));
    let backend = AdkBackend::new()
        .with_middleware(Arc::new(Retry::new(3, Duration::from_secs(1))))
        .with_middleware(tracker.clone());
    let start = tokio::time::Instant::now();
    let events =
        run_with(&backend, Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>), "go", "s1").await.unwrap();
    assert_eq!(final_text(&events), "third time");
    assert_eq!(model.calls(), 3);
    assert!(start.elapsed() >= Duration::from_secs(3), "1 s, then 2 s: {:?}", start.elapsed());
    let cost = &tracker.costs()["a"];
    assert_eq!((cost.calls, cost.input_tokens, cost.output_tokens), (1, 1, 1), "the answered call, once");

    let model = FakeLlm::new("m", (1, 1), [Err("down"), Err("still down"), Ok("too late")]);
    let backend = AdkBackend::new().with_middleware(Arc::new(Retry::new(2, Duration::from_millis(10))));
    let error =
        run_with(&backend, Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>), "go", "s2").await.unwrap_err();
    assert!(error.to_string().contains("down"), "{error}");
    assert_eq!(model.calls(), 2, "two attempts, then the error stands");

    // A service asking for a wait longer than a minute has said no.
    let slow_down = || {
        sinew_adk::Error::Model(sinew_core::ProviderError::RateLimited {
            retry_after_ms: Some(u64::MAX),
            message: "come back much later".into(),
        })
    };
    let model = Arc::new(ErringLlm { error: slow_down, calls: AtomicUsize::new(0) });
    let backend = AdkBackend::new().with_middleware(Arc::new(Retry::new(5, Duration::from_millis(10))));
    let error =
        run_with(&backend, Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>), "go", "s5").await.unwrap_err();
    assert!(error.to_string().contains("come back much later"), "{error}");
    assert_eq!(model.calls.load(Ordering::SeqCst), 1);

    // A tool given arguments it refuses is not run again.
    let refusing = Arc::new(AtomicUsize::new(0));
    let counted = refusing.clone();
    let strict = FunctionTool::new("strict", "Refuses.", Value::Null, move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Err(ToolError::InvalidArgs("no such field".into())) }
    });
    let model = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("strict", json!({})), ScriptedAnswer::text("done")]));
    assert!(run_with(&backend, Agent::new("a", model).tool(Arc::new(strict)), "go", "s6").await.is_err());
    assert_eq!(refusing.load(Ordering::SeqCst), 1);

    // A failure a retry cannot cure is not retried.
    let model = FakeLlm::new("m", (1, 1), [Err("fatal: bad key"), Ok("never")]);
    let backend = AdkBackend::new().with_middleware(Arc::new(Retry::new(5, Duration::from_millis(10))));
    let error =
        run_with(&backend, Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>), "go", "s4").await.unwrap_err();
    assert!(error.to_string().contains("bad key"), "{error}");
    assert_eq!(model.calls(), 1);

    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    let flaky = FunctionTool::new("flaky", "Fails twice.", Value::Null, move |_, _| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        async move { if n < 2 { Err(ToolError::Failed("not yet".into())) } else { Ok(json!({"ok": n})) } }
    });
    let model = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("flaky", json!({})), ScriptedAnswer::text("done")]));
    let backend = AdkBackend::new().with_middleware(Arc::new(Retry::new(3, Duration::from_millis(10))));
    let events = run_with(&backend, Agent::new("a", model).tool(Arc::new(flaky)), "go", "s3").await.unwrap();
    assert_eq!(events[1].tool_responses[0].result, json!({"ok": 2}));
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn the_circuit_breaker_opens_cools_down_and_closes() {
    let model = FakeLlm::new("m", (1, 1), [Err("e1"), Err("e2"), Ok("recovered"), Err("e3"), Err("e4"), Err("e5")]);
    let breaker = Arc::new(CircuitBreaker::new(2, Duration::from_secs(30)));
    let backend = AdkBackend::new().with_middleware(breaker.clone());
    let node = || Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>);
    assert!(run_with(&backend, node(), "1", "s").await.is_err());
    assert_eq!(breaker.state("a"), BreakerState::Closed(1));
    assert!(run_with(&backend, node(), "2", "s").await.is_err());
    assert_eq!(breaker.state("a"), BreakerState::Open);

    let refused = run_with(&backend, node(), "3", "s").await.unwrap();
    assert_eq!(refused.last().unwrap().error_code.as_deref(), Some("CIRCUIT_OPEN"));
    assert_eq!(model.calls(), 2, "an open circuit calls nothing");

    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(breaker.state("a"), BreakerState::HalfOpen);
    assert_eq!(final_text(&run_with(&backend, node(), "4", "s").await.unwrap()), "recovered");
    assert_eq!(breaker.state("a"), BreakerState::Closed(0));

    // A failed trial opens the circuit again at once.
    assert!(run_with(&backend, node(), "5", "s").await.is_err());
    assert!(run_with(&backend, node(), "6", "s").await.is_err());
    assert_eq!(breaker.state("a"), BreakerState::Open);
    tokio::time::advance(Duration::from_secs(31)).await;
    assert!(run_with(&backend, node(), "7", "s").await.is_err());
    assert_eq!(breaker.state("a"), BreakerState::Open);
    assert_eq!(model.calls(), 6);
}

#[tokio::test]
async fn tool_approval_goes_through_adks_confirmation_flow() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let delete = FunctionTool::new("delete_file", "Deletes a file.", Value::Null, move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok(json!({"deleted": true})) }
    });
    let model = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("delete_file", json!({"path": "a.txt"})),
        ScriptedAnswer::text("Deleted."),
        ScriptedAnswer::call("delete_file", json!({"path": "b.txt"})),
        ScriptedAnswer::text("Not deleted."),
    ]));
    let backend = AdkBackend::new().with_middleware(Arc::new(ToolApproval::new(["delete_file"])));
    let node = Agent::new("a", model).tool(Arc::new(delete)).build().unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();

    let answer = |events: &[AgentEvent], confirmed: bool| {
        let call =
            events.iter().flat_map(|e| &e.tool_calls).find(|c| c.tool_name == sinew_adk::REQUEST_CONFIRMATION).unwrap();
        let response = Map::from_iter([("confirmed".to_owned(), json!(confirmed))]);
        Content::new(
            "user",
            vec![Part::function_response(FunctionResponse::new(Some(call.call_id.clone()), &call.tool_name, response))],
        )
    };
    let first = backend.run(&compiled, "delete a.txt", RunOptions::default()).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the call waits for approval");
    let approved: Vec<_> =
        backend.stream_content(&compiled, answer(&first, true), RunOptions::default()).collect().await;
    let approved: Vec<AgentEvent> = approved.into_iter().map(Result::unwrap).collect();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(final_text(&approved), "Deleted.");

    let second = backend.run(&compiled, "delete b.txt", RunOptions::default()).await.unwrap();
    let rejected: Vec<_> =
        backend.stream_content(&compiled, answer(&second, false), RunOptions::default()).collect().await;
    let rejected: Vec<AgentEvent> = rejected.into_iter().map(Result::unwrap).collect();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a rejected call does not run");
    let response = rejected.iter().flat_map(|e| &e.tool_responses).find(|r| r.tool_name == "delete_file").unwrap();
    assert_eq!(response.result, json!({"error": "This tool call is rejected."}));
}

/// A writer into a shared buffer.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_structured_log_writes_one_json_line_per_step_and_no_values() {
    let buffer = Buffer::default();
    let lookup =
        FunctionTool::new("lookup", "Looks up.", Value::Null, |_, _| async { Ok(json!({"secret_answer": "s3cr3t"})) });
    let model = Arc::new(ScriptedLlm::new([
        ScriptedAnswer::call("lookup", json!({"api_key": "sk-live-123"})),
        ScriptedAnswer::text("ok"),
    ]));
    let backend = AdkBackend::new().with_middleware(Arc::new(StructuredLog::to_writer(buffer.clone())));
    run_with(&backend, Agent::new("a", model).tool(Arc::new(lookup)), "go", "s").await.unwrap();
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let hooks: Vec<&str> = lines.iter().map(|l| l["hook"].as_str().unwrap()).collect();
    assert_eq!(
        hooks,
        [
            "before_run",
            "before_agent",
            "before_model",
            "after_model",
            "before_tool",
            "after_tool",
            "before_model",
            "after_model",
            "after_agent",
            "after_run"
        ]
    );
    assert_eq!(lines[4]["args"], json!(["api_key"]));
    assert_eq!(lines[5]["result"], json!(["secret_answer"]));
    assert!(!text.contains("sk-live-123") && !text.contains("s3cr3t"), "values never reach the log: {text}");
}

#[tokio::test]
async fn pii_is_redacted_before_the_model_and_in_tool_results() {
    let redaction = PiiRedaction::new();
    assert_eq!(
        redaction.redact(
            "mail ada@example.co.uk, call +1 415-555-0134 or (020) 7946 0958, card 4111 1111 1111 1111, ssn 123-45-6789"
        ),
        "mail [EMAIL], call [PHONE] or [PHONE], card [CARD], ssn [SSN]"
    );
    assert_eq!(
        redaction.redact("order 1234 5678 9012 3456 shipped in 2024"),
        "order 1234 5678 9012 3456 shipped in 2024",
        "no Luhn, no card"
    );
    assert!(matches!(redaction.redact("nothing here"), std::borrow::Cow::Borrowed(_)));
    assert_eq!(
        redaction.redact("card 4111 1111 1111 1111 05 27 please"),
        "card [CARD] 05 27 please",
        "an expiry after the card"
    );

    let owner = FunctionTool::new("owner", "Finds the owner.", Value::Null, |_, _| async {
        Ok(json!({"owner": {"email": "bob@example.com"}}))
    });
    let model = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("owner", json!({})), ScriptedAnswer::text("done")]));
    let backend = AdkBackend::new().with_middleware(Arc::new(redaction));
    let node =
        Agent::new("a", model.clone()).instruct("The user's card: {card}").tool(Arc::new(owner)).build().unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();
    let card = Map::from_iter([("card".to_owned(), json!("4111 1111 1111 1111"))]);
    let events =
        backend.run(&compiled, "I am ada@example.com", RunOptions::session("u", "s").with_state(card)).await.unwrap();
    assert_eq!(events[1].tool_responses[0].result, json!({"owner": {"email": "[EMAIL]"}}));
    for (request, _) in model.requests() {
        let sent = serde_json::to_string(&request).unwrap();
        assert!(!sent.contains("@example.com") && !sent.contains("4111 1111"), "{sent}");
        assert!(sent.contains("I am [EMAIL]") && sent.contains("The user's card: [CARD]"), "{sent}");
    }
}

/// A model that never answers.
struct Silent;

impl sinew_adk::Llm for Silent {
    fn name(&self) -> &str {
        "silent"
    }

    fn generate_content(
        &self,
        _request: LlmRequest,
        _stream: bool,
    ) -> futures::stream::BoxStream<'static, sinew_adk::Result<LlmResponse>> {
        futures::stream::pending().boxed()
    }
}

#[tokio::test(start_paused = true)]
async fn a_trial_the_breaker_never_hears_back_from_expires() {
    // The trial's run is dropped while the model is silent, so the breaker never learns how the
    // trial went: after a cool-down the next call is a trial again, not refused for good.
    let model = FakeLlm::new("m", (1, 1), [Err("down"), Ok("later")]);
    let breaker = Arc::new(CircuitBreaker::new(1, Duration::from_secs(30)));
    let backend = AdkBackend::new().with_middleware(breaker.clone());
    let node = || Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>);
    assert!(run_with(&backend, node(), "1", "s").await.is_err());
    assert_eq!(breaker.state("a"), BreakerState::Open);
    tokio::time::advance(Duration::from_secs(31)).await;
    let silent = run_with(&backend, Agent::new("a", Arc::new(Silent) as Arc<dyn sinew_adk::Llm>), "2", "s");
    assert!(tokio::time::timeout(Duration::from_secs(5), silent).await.is_err(), "the trial's run is dropped");
    assert_eq!(breaker.state("a"), BreakerState::HalfOpen, "the trial's outcome never reached the breaker");
    let refused = run_with(&backend, node(), "3", "s").await.unwrap();
    assert_eq!(refused.last().unwrap().error_code.as_deref(), Some("CIRCUIT_OPEN"), "one trial at a time");
    tokio::time::advance(Duration::from_secs(31)).await;
    assert_eq!(final_text(&run_with(&backend, node(), "4", "s").await.unwrap()), "later");
    assert_eq!(breaker.state("a"), BreakerState::Closed(0));
}

#[tokio::test(start_paused = true)]
async fn a_trial_a_retry_answers_closes_the_breaker() {
    // The retry's answer passes `after_model`: the breaker hears the trial went well.
    let model = FakeLlm::new("m", (1, 1), [Err("down"), Err("down again"), Ok("retried")]);
    let breaker = Arc::new(CircuitBreaker::new(1, Duration::from_secs(30)));
    let opener = AdkBackend::new().with_middleware(breaker.clone());
    let node = || Agent::new("a", model.clone() as Arc<dyn sinew_adk::Llm>);
    assert!(run_with(&opener, node(), "1", "s").await.is_err());
    tokio::time::advance(Duration::from_secs(31)).await;
    let both = AdkBackend::new()
        .with_middleware(Arc::new(Retry::new(2, Duration::from_millis(1))))
        .with_middleware(breaker.clone());
    assert_eq!(final_text(&run_with(&both, node(), "2", "s").await.unwrap()), "retried");
    assert_eq!(breaker.state("a"), BreakerState::Closed(0));
}
