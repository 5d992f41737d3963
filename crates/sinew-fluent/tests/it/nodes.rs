//! sinew-fluent's own nodes, run on the mock backend (and the ADK backend underneath it).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Map, Value, json};
use sinew_fluent::{
    Agent, AgentEvent, Backend as _, Error, Execute as _, ExecutionConfig, MockBackend, Node, Pipeline, Route,
    RunOptions, S, fallback, final_text, gate, map_over, race, tap, timeout, transfer, transfer_if,
};

use super::Probe;

/// Runs `node` on a mock backend with `answers`, from `initial` state; gives the events and the
/// state after.
async fn run(node: impl Into<Node>, answers: Value, initial: Value) -> (Vec<AgentEvent>, Map<String, Value>) {
    let answers: Map<String, Value> = serde_json::from_value(answers).unwrap();
    let backend = MockBackend::new(answers);
    let compiled = backend.compile(&node.into(), &ExecutionConfig::default()).unwrap();
    let options = RunOptions::default().with_state(serde_json::from_value(initial).unwrap());
    let events = backend.run(&compiled, "go", options).await.unwrap();
    let state = super::state(backend.adk(), &compiled).await;
    (events, state)
}

fn deltas(events: &[AgentEvent], author: &str) -> Vec<Map<String, Value>> {
    events.iter().filter(|e| e.author == author).map(|e| e.state_delta.clone()).collect()
}

fn authors(events: &[AgentEvent]) -> Vec<&str> {
    events.iter().map(|e| e.author.as_str()).filter(|a| *a != "user").collect()
}

#[tokio::test]
async fn set_default_and_merge_write_what_they_say() {
    let pipeline = S::set([("tone", json!("formal"))])
        >> S::default([("tone", json!("casual")), ("length", json!("short"))])
        >> S::merge(["greeting", "name"], "opening")
        >> S::merge(["tone", "count"], "summary");
    let (events, state) = run(pipeline, json!({}), json!({"greeting": "Hello", "name": "Ada", "count": 2})).await;
    assert_eq!(deltas(&events, "set_tone"), [json!({"tone": "formal"}).as_object().unwrap().clone()]);
    assert_eq!(deltas(&events, "default_length"), [json!({"length": "short"}).as_object().unwrap().clone()]);
    assert_eq!(state["opening"], "Hello\nAda");
    assert_eq!(state["summary"], json!({"tone": "formal", "count": 2}));
}

#[tokio::test]
async fn pick_drop_and_rename_remove_only_session_scoped_keys() {
    let initial = json!({"a": 1, "b": 2, "c": 3, "app:plan": "pro", "user:tier": "gold", "temp:scratch": "x"});
    let (events, state) = run(S::pick(["a", "app:plan"]), json!({}), initial.clone()).await;
    // Every other session key becomes null; app:, user: and temp: keys are never touched.
    assert_eq!(
        deltas(&events, "pick_a"),
        [json!({"a": 1, "app:plan": "pro", "b": null, "c": null}).as_object().unwrap().clone()]
    );
    assert_eq!((&state["b"], &state["user:tier"]), (&Value::Null, &json!("gold")));

    let (events, _) = run(S::drop(["b", "user:tier", "missing"]), json!({}), initial.clone()).await;
    assert_eq!(deltas(&events, "drop_b"), [json!({"b": null}).as_object().unwrap().clone()]);

    let (events, state) =
        run(S::rename([("a", "alpha"), ("app:plan", "plan"), ("missing", "m")]), json!({}), initial).await;
    assert_eq!(
        deltas(&events, "rename_a"),
        [json!({"alpha": 1, "a": null, "plan": "pro"}).as_object().unwrap().clone()]
    );
    assert_eq!((&state["alpha"], &state["a"], &state["app:plan"]), (&json!(1), &Value::Null, &json!("pro")));

    // Renames read the state as it was: a swap swaps, a chain moves each value once.
    let (_, state) = run(S::rename([("a", "b"), ("b", "a")]), json!({}), json!({"a": 1, "b": 2})).await;
    assert_eq!((&state["a"], &state["b"]), (&json!(2), &json!(1)));
    let (_, state) = run(S::rename([("a", "b"), ("b", "c")]), json!({}), json!({"a": 1, "b": 2})).await;
    assert_eq!((&state["a"], &state["b"], &state["c"]), (&Value::Null, &json!(1), &json!(2)));

    // Names made from scoped keys follow ADK's name rule.
    let (events, state) =
        run(S::set([("user:tone", json!("warm"))]) >> S::drop(["temp:x"]), json!({}), json!({})).await;
    assert_eq!(authors(&events), ["set_user_tone"]);
    assert_eq!(state["user:tone"], "warm");

    // A transform with nothing to write writes no event.
    let (events, _) = run(S::drop(["nothing_here"]), json!({}), json!({})).await;
    assert!(authors(&events).is_empty(), "{events:?}");
}

#[tokio::test]
async fn a_route_runs_the_first_matching_child_else_the_default() {
    let route = || {
        Route::new("by_intent", "intent")
            .when_eq(json!("billing"), Agent::named("billing"))
            .when("urgent", |v| v.as_str().is_some_and(|s| s.starts_with("urgent")), Agent::named("urgent"))
            .otherwise(Agent::named("general"))
    };
    let answers = json!({"billing": "billing here", "urgent": "on it", "general": "hello"});
    for (intent, answer) in [("billing", "billing here"), ("urgent: fire", "on it"), ("chat", "hello")] {
        let (events, _) = run(route(), answers.clone(), json!({"intent": intent})).await;
        assert_eq!(final_text(&events), answer, "{intent}");
        assert_eq!(authors(&events).len(), 1);
    }
    let no_default = Route::new("by_intent", "intent").when_eq(json!("billing"), Agent::named("billing"));
    let (events, _) = run(no_default, answers, json!({})).await;
    assert!(authors(&events).is_empty());
}

#[tokio::test]
async fn a_fallback_tries_its_children_in_order() {
    let (failing, _) = Probe::node("flaky", Duration::ZERO, true);
    let (events, _) =
        run(fallback("safe", [failing, Agent::named("backup").into()]), json!({"backup": "from backup"}), json!({}))
            .await;
    assert_eq!(final_text(&events), "from backup");

    let (first, _) = Probe::node("first", Duration::ZERO, true);
    let (second, _) = Probe::node("second", Duration::ZERO, true);
    let backend = MockBackend::new(Vec::<(String, Value)>::new());
    let compiled = backend.compile(&fallback("safe", [first, second]), &ExecutionConfig::default()).unwrap();
    let error = backend.run(&compiled, "go", RunOptions::default()).await.unwrap_err();
    assert!(error.to_string().contains("second failed"), "the last child's error: {error}");

    let (events, _) =
        run(Agent::named("main").or_else(Agent::named("spare")), json!({"main": "main", "spare": "spare"}), json!({}))
            .await;
    assert_eq!(authors(&events), ["main"], "the spare runs only when the main one fails");
}

#[tokio::test(start_paused = true)]
async fn a_race_keeps_the_first_to_finish_and_cancels_the_others() {
    let (slow, slow_done) = Probe::node("slow", Duration::from_secs(30), false);
    let (fast, fast_done) = Probe::node("fast", Duration::from_millis(10), false);
    let (events, _) = run(race("fastest", [slow, fast]), json!({}), json!({})).await;
    assert_eq!(final_text(&events), "fast done");
    assert!(fast_done.load(Ordering::SeqCst));
    // Long after the loser would have finished, it has not: it was cancelled.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!slow_done.load(Ordering::SeqCst), "the loser was cancelled");

    // A failing branch does not win.
    let (failing, _) = Probe::node("failing", Duration::ZERO, true);
    let (steady, _) = Probe::node("steady", Duration::from_millis(10), false);
    let (events, _) = run(race("fastest", [failing, steady]), json!({}), json!({})).await;
    assert_eq!(final_text(&events), "steady done");
}

fn over_1000(state: &Map<String, Value>) -> bool {
    state.get("amount").and_then(Value::as_i64).is_some_and(|amount| amount > 1000)
}

#[tokio::test]
async fn a_gate_stops_for_approval_and_the_answer_decides() {
    let pipeline = (S::set([("amount", json!(5000))])
        >> gate("approval", over_1000, "Approve a refund of 5000?")
        >> Agent::named("refund"))
    .build()
    .unwrap();
    let backend = MockBackend::new([("refund", json!("Refunded."))]);
    let compiled = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
    let session = |s: &str| RunOptions::session("u", s);
    let first = backend.run(&compiled, "refund me", session("yes")).await.unwrap();
    assert_eq!(final_text(&first), "Approve a refund of 5000?");
    assert!(!authors(&first).contains(&"refund"), "the invocation stopped at the gate");
    let approved = backend.run(&compiled, "Yes!", session("yes")).await.unwrap();
    assert_eq!(final_text(&approved), "Refunded.");
    assert_eq!(deltas(&approved, "approval"), [json!({"_gate_approval_pending": null}).as_object().unwrap().clone()]);

    // Anything but a yes stops the pipeline, and the question is not pending any more.
    backend.run(&compiled, "refund me", session("no")).await.unwrap();
    let refused = backend.run(&compiled, "no way", session("no")).await.unwrap();
    assert_eq!(final_text(&refused), "Not approved.");
    assert!(!authors(&refused).contains(&"refund"));
    let asked_again = backend.run(&compiled, "yes", session("no")).await.unwrap();
    assert_eq!(final_text(&asked_again), "Approve a refund of 5000?", "a new message asks again");

    // Below the threshold the gate does not ask.
    let (events, _) = run(
        gate("approval", over_1000, "?") >> Agent::named("refund"),
        json!({"refund": "Refunded."}),
        json!({"amount": 10}),
    )
    .await;
    assert_eq!(authors(&events), ["refund"]);
}

#[tokio::test]
async fn an_approved_gate_resumes_the_pipeline_at_the_gate_in_nested_sequences_and_loops() {
    let checkout = Pipeline::new("checkout")
        .step(Agent::named("price"))
        .step(gate("approval", |_| true, "Approve?"))
        .step(Agent::named("charge"));
    let pipeline = (Agent::named("draft") >> checkout.build().unwrap() >> Agent::named("receipt")).build().unwrap();
    let answers = [("draft", "Drafted."), ("price", "Priced."), ("charge", "Charged."), ("receipt", "Sent.")];
    let backend = MockBackend::new(answers.map(|(agent, text)| (agent, json!(text))));
    let compiled = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
    let asked = backend.run(&compiled, "buy it", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&asked), ["draft", "price", "approval"]);
    let approved = backend.run(&compiled, "yes", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&approved), ["approval", "charge", "receipt"], "the steps before the gate do not run again");
    // The next message starts from the top again.
    let again = backend.run(&compiled, "buy another", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&again), ["draft", "price", "approval"]);
    let refused = backend.run(&compiled, "no", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&refused), ["approval"]);
    assert_eq!(final_text(&refused), "Not approved.");

    // In a loop, the answer resumes the loop's body at the gate.
    let body = Agent::named("work") >> gate("check", |_| true, "Continue?") >> Agent::named("finish");
    let looped = (body * 1).build().unwrap();
    let backend = MockBackend::new([("work", json!("Worked.")), ("finish", json!("Finished."))]);
    let compiled = backend.compile(&looped, &ExecutionConfig::default()).unwrap();
    // The round number is kept while the gate waits (a state write of the loop's).
    assert_eq!(
        authors(&backend.run(&compiled, "go", RunOptions::default()).await.unwrap()),
        ["work", "check", "work_loop"]
    );
    let resumed = backend.run(&compiled, "ok", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&resumed), ["work_loop", "check", "finish"]);
}

#[tokio::test]
async fn a_gate_in_a_later_round_resumes_that_round_and_the_loop_ends_on_time() {
    // The gate asks in the second round only; the answer finishes that round, which is the last.
    let checks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = checks.clone();
    let asks = move |_: &Map<String, Value>| counter.fetch_add(1, Ordering::SeqCst) == 1;
    let looped = ((Agent::named("work") >> gate("check", asks, "Continue?") >> Agent::named("finish")) * 2).build();
    let backend = MockBackend::new([("work", json!("Worked.")), ("finish", json!("Finished."))]);
    let compiled = backend.compile(&looped.unwrap(), &ExecutionConfig::default()).unwrap();
    let asked = backend.run(&compiled, "go", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&asked), ["work", "finish", "work", "check", "work_loop"]);
    let resumed = backend.run(&compiled, "yes", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&resumed), ["work_loop", "check", "finish"], "round two finished, and no third round");
}

#[tokio::test]
async fn a_message_that_goes_elsewhere_runs_the_steps_before_a_routed_gate_again() {
    // The gate sits in a route's branch: the sequence above the route does not skip ahead.
    let pipeline = (Agent::named("classify")
        >> Route::new("by_topic", "topic")
            .when_eq(
                json!("refund"),
                (gate("approval", |_| true, "Approve?") >> Agent::named("refund")).build().unwrap(),
            )
            .otherwise(Agent::named("chat")))
    .build()
    .unwrap();
    let answers = [("classify", json!("Classified.")), ("refund", json!("Refunded.")), ("chat", json!("Hello."))];
    let backend = MockBackend::new(answers);
    let compiled = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
    let with_topic =
        |topic: &str| RunOptions::default().with_state(Map::from_iter([("topic".to_owned(), json!(topic))]));
    let asked = backend.run(&compiled, "refund me", with_topic("refund")).await.unwrap();
    assert_eq!(authors(&asked), ["classify", "approval"]);
    let elsewhere = backend.run(&compiled, "hi", with_topic("chat")).await.unwrap();
    assert_eq!(authors(&elsewhere), ["classify", "chat"]);
    // Answered right away, the branch's own sequence resumes at the gate.
    backend.run(&compiled, "refund me", with_topic("refund")).await.unwrap();
    let approved = backend.run(&compiled, "yes", with_topic("refund")).await.unwrap();
    assert_eq!(authors(&approved), ["classify", "approval", "refund"]);
}

#[tokio::test]
async fn an_approved_gate_brings_back_the_temp_state_of_the_steps_it_skips() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let pipeline = (Agent::named("quote").outputs("temp:quote")
        >> gate("approval", |_| true, "Approve?")
        >> tap(move |state| record.lock().unwrap().push(state.get("temp:quote").cloned())))
    .build()
    .unwrap();
    let backend = MockBackend::new([("quote", json!("42 EUR"))]);
    let compiled = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
    backend.run(&compiled, "quote me", RunOptions::default()).await.unwrap();
    backend.run(&compiled, "yes", RunOptions::default()).await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [Some(json!("42 EUR"))]);
}

#[tokio::test]
async fn a_summary_written_after_the_question_does_not_hide_the_answer() {
    let pipeline = (gate("approval", |_| true, "Approve?") >> Agent::named("refund")).build().unwrap();
    let summarizer = Arc::new(sinew_adk::LlmEventSummarizer::new(Arc::new(sinew_adk::testing::ScriptedLlm::texts([
        "SUMMARY", "SUMMARY",
    ]))));
    let config = ExecutionConfig::default().with_compaction(
        sinew_fluent::EventsCompactionConfig::sliding_window(1, 0).unwrap().with_summarizer(summarizer),
    );
    let backend = MockBackend::new([("refund", json!("Refunded."))]);
    let compiled = backend.compile(&pipeline, &config).unwrap();
    backend.run(&compiled, "refund me", RunOptions::default()).await.unwrap();
    let approved = backend.run(&compiled, "yes", RunOptions::default()).await.unwrap();
    assert_eq!(authors(&approved), ["approval", "refund"]);
}

#[test]
fn a_gate_where_its_answer_could_not_resume_is_refused() {
    let parallel =
        (Agent::named("a") | (gate("approval", |_| true, "?") >> Agent::named("b")).build().unwrap()).build().unwrap();
    let error = MockBackend::new(Vec::<(String, Value)>::new()).compile(&parallel, &ExecutionConfig::default());
    let error = error.expect_err("refused").to_string();
    assert!(error.contains("gate `approval` sits inside the parallel group"), "{error}");
}

#[tokio::test]
async fn a_question_left_unanswered_does_not_approve_a_later_one() {
    // The first message reaches the gate; the second goes elsewhere (the route skips the gate);
    // the third reaches the gate again: the old question must not count as answered.
    let pipeline = (Route::new("by_topic", "topic")
        .when_eq(json!("refund"), (gate("approval", |_| true, "Approve?") >> Agent::named("refund")).build().unwrap())
        .otherwise(Agent::named("chat")))
    .build()
    .unwrap();
    let backend = MockBackend::new([("refund", json!("Refunded.")), ("chat", json!("Hello."))]);
    let compiled = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
    let with_topic =
        |topic: &str| RunOptions::default().with_state(Map::from_iter([("topic".to_owned(), json!(topic))]));
    assert_eq!(final_text(&backend.run(&compiled, "refund me", with_topic("refund")).await.unwrap()), "Approve?");
    assert_eq!(final_text(&backend.run(&compiled, "hi", with_topic("chat")).await.unwrap()), "Hello.");
    let later = backend.run(&compiled, "yes", with_topic("refund")).await.unwrap();
    assert_eq!(final_text(&later), "Approve?", "asked again, not waved through");
}

#[tokio::test]
async fn a_tap_reads_the_state_and_writes_nothing() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let seen_by_tap = seen.clone();
    let pipeline =
        S::set([("k", json!("v"))]) >> tap(move |state| *seen_by_tap.lock().unwrap() = state.get("k").cloned());
    let (events, _) = run(pipeline, json!({}), json!({})).await;
    assert_eq!(*seen.lock().unwrap(), Some(json!("v")));
    assert_eq!(authors(&events), ["set_k"], "the tap wrote no event");
}

#[tokio::test]
async fn map_over_runs_the_body_per_item_and_collects_results_in_order() {
    let double = S::compute("double", |state| {
        Map::from_iter([("doubled".to_owned(), json!(state["_item"].as_i64().unwrap_or_default() * 2))])
    });
    let node = map_over("each", "numbers", double).result_key("doubled");
    let (_, state) = run(node.clone(), json!({}), json!({"numbers": [3, 1, 2]})).await;
    assert_eq!(state["results"], json!([6, 2, 4]));

    let (_, state) = run(node.clone().output_key("doubles").item_key("_item"), json!({}), json!({})).await;
    assert_eq!(state["doubles"], json!([]), "a missing list maps to nothing");

    let backend = MockBackend::new(Vec::<(String, Value)>::new());
    let compiled = backend.compile(&node.into(), &ExecutionConfig::default()).unwrap();
    let options = RunOptions::default().with_state(serde_json::from_value(json!({"numbers": "1,2"})).unwrap());
    let error = backend.run(&compiled, "go", options).await.unwrap_err();
    assert!(error.to_string().contains("maps over state `numbers`, which is not a list"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_timeout_cancels_its_body_and_the_pipeline_goes_on() {
    let (slow, finished) = Probe::node("slow", Duration::from_secs(30), false);
    let pipeline = timeout("bounded", slow, Duration::from_millis(20)) >> Agent::named("after");
    let (events, state) = run(pipeline, json!({"after": "carried on"}), json!({"kept": true})).await;
    assert_eq!(authors(&events), ["bounded", "after"]);
    assert_eq!(
        events.iter().find(|e| e.author == "bounded").unwrap().content.as_deref(),
        Some("`slow` timed out after 0.02 s")
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!finished.load(Ordering::SeqCst), "the body was cancelled");
    assert_eq!(state["kept"], true, "the session is intact");

    let (quick, _) = Probe::node("quick", Duration::ZERO, false);
    let (events, _) = run(timeout("bounded", quick, Duration::from_secs(5)), json!({}), json!({})).await;
    assert_eq!(final_text(&events), "quick done");
}

#[tokio::test]
async fn a_transfer_hands_the_conversation_to_its_target() {
    let tree = || {
        transfer_if("handoff", "helper", |s| s.get("escalate") == Some(&json!(true)))
            >> Agent::named("front").delegate([Agent::named("helper")])
    };
    let answers = json!({"front": "front here", "helper": "helper here"});
    let (events, _) = run(tree(), answers.clone(), json!({"escalate": true})).await;
    assert_eq!(authors(&events), ["handoff", "helper", "front"]);
    assert_eq!(events.iter().find(|e| e.author == "handoff").unwrap().transfer_to.as_deref(), Some("helper"));
    let (events, _) = run(tree(), answers.clone(), json!({})).await;
    assert_eq!(authors(&events), ["front"], "the condition did not hold");

    // A fragment may transfer to what it is put beside; the whole tree must hold the target.
    let fragment = transfer("handoff", "nobody").build().unwrap();
    let error =
        MockBackend::new(Vec::<(String, Value)>::new()).compile(&fragment, &ExecutionConfig::default()).unwrap_err();
    assert!(error.to_string().contains("`handoff` transfers to `nobody`, which is not in the pipeline"), "{error}");
    // A transfer that leads back to itself would run without end: into a group that holds it,
    // to itself, or through another transfer.
    let error = Pipeline::new("outer").step(Agent::named("a")).step(transfer("again", "outer")).build().unwrap_err();
    assert!(error.to_string().contains("`again` transfers to `outer`, which leads back to it"), "{error}");
    assert!(transfer("me", "me").build().is_err());
    let ping = Pipeline::new("ping").step(transfer("to_pong", "pong"));
    let pong = Pipeline::new("pong").step(transfer("to_ping", "ping"));
    let error = (ping | pong).build().unwrap_err();
    assert!(error.to_string().contains("which leads back to it"), "{error}");
}

#[tokio::test]
async fn the_mock_backend_answers_per_agent_and_refuses_unknown_ones() {
    let pipeline = Agent::named("classifier") >> Agent::named("resolver").outputs("resolution");
    let (events, state) = run(
        pipeline.clone(),
        json!({"classifier": {"intent": "billing"}, "resolver": "Ticket #1234 created."}),
        json!({}),
    )
    .await;
    assert_eq!(events.iter().find(|e| e.author == "classifier").unwrap().state_delta["intent"], "billing");
    assert_eq!(final_text(&events), "Ticket #1234 created.");
    assert_eq!(state["resolution"], "Ticket #1234 created.");

    let error = MockBackend::new([("classifier", json!("x"))])
        .compile(&pipeline.into(), &ExecutionConfig::default())
        .unwrap_err();
    assert!(matches!(&error, Error::Compile(m) if m.contains("no answer for agent `resolver`")), "{error}");
}
