//! Contracts between steps, and a 100-agent pipeline.

use std::sync::Arc;

use serde_json::{Value, json};

use super::FakeLlm;
use sinew_fluent::middleware::{CostTracker, Price};
use sinew_fluent::{
    AdkBackend, Agent, Backend as _, DryRunBackend, Error, Execute as _, ExecutionConfig, MockBackend, Node, Pipeline,
    Route, RunOptions, S, check_contracts, check_contracts_with, final_text, map_over,
};

#[derive(schemars::JsonSchema, serde::Deserialize)]
#[allow(dead_code)]
struct Intent {
    category: String,
    confidence: f64,
}

#[test]
fn every_read_no_earlier_step_writes_is_reported_with_its_path() {
    let pipeline = (Agent::named("classifier").instruct("Classify {query}.").outputs("intent")
        >> Agent::named("resolver").instruct("Resolve {intent} for {customer} on {app:plan}, {extra?}.")
        >> (Agent::named("a").instruct("{intent}").outputs("left") | Agent::named("b").instruct("{left}")))
    .build()
    .unwrap();
    let issues: Vec<String> = check_contracts(&pipeline).iter().map(ToString::to_string).collect();
    assert_eq!(
        issues,
        [
            "`classifier_pipeline/classifier` reads `query`, which no earlier step writes",
            "`classifier_pipeline/resolver` reads `customer`, which no earlier step writes",
            // Parallel branches do not see each other's writes.
            "`classifier_pipeline/a_fanout/b` reads `left`, which no earlier step writes",
        ]
    );
    let issues = check_contracts_with(&pipeline, ["query", "customer"]);
    assert_eq!(issues.len(), 1);

    let error = DryRunBackend::new().compile(&pipeline, &ExecutionConfig::default()).unwrap_err();
    assert!(matches!(&error, Error::Contracts(i) if i.len() == 3), "{error}");
    let checked = DryRunBackend::with_initial_state(["query", "customer", "left"])
        .compile(&pipeline, &ExecutionConfig::default());
    assert_eq!(checked.unwrap(), 6);
}

#[test]
fn typed_contracts_and_untyped_steps_interoperate() {
    let typed = Agent::named("classifier").produces::<Intent>() >> Agent::named("router").consumes::<Intent>();
    assert!(check_contracts(&typed.build().unwrap()).is_empty());
    // An untyped step writing the fields by hand satisfies a typed reader.
    let by_hand = S::set([("category", json!("billing")), ("confidence", json!(1.0))])
        >> Agent::named("router").consumes::<Intent>();
    assert!(check_contracts(&by_hand.build().unwrap()).is_empty());
    let missing = Agent::named("router").consumes::<Intent>().build().unwrap();
    let keys: Vec<String> = check_contracts(&missing).into_iter().map(|i| i.key).collect();
    assert_eq!(keys, ["category", "confidence"]);
    // Routes read their key; map-over bodies see the item.
    let routed = Route::new("by", "intent").otherwise(Agent::named("x")).build().unwrap();
    assert_eq!(check_contracts(&routed)[0].key, "intent");
    let mapped = (S::set([("items", json!([1]))])
        >> map_over("each", "items", Agent::named("worker").instruct("Do {_item}.")))
    .build()
    .unwrap();
    assert!(check_contracts(&mapped).is_empty());
}

#[test]
fn a_key_counts_as_written_only_where_every_way_through_writes_it() {
    let issues = |node: Node| -> Vec<String> {
        check_contracts(&node.build().unwrap())
            .into_iter()
            .map(|i| format!("{}:{}", i.path.rsplit('/').next().unwrap(), i.key))
            .collect()
    };
    let reader = || Agent::named("reader").instruct("{ticket}");
    // One route branch writes the ticket, the other does not.
    let routed = Route::new("by", "kind")
        .when_eq(json!("new"), Agent::named("opener").outputs("ticket"))
        .otherwise(Agent::named("greeter"));
    assert_eq!(issues((S::set([("kind", json!("new"))]) >> routed >> reader()).into()), ["reader:ticket"]);
    // Both write it: fine. A fallback is the same.
    let both = Route::new("by", "kind")
        .when_eq(json!("new"), Agent::named("opener").outputs("ticket"))
        .otherwise(Agent::named("finder").outputs("ticket"));
    assert!(issues((S::set([("kind", json!("new"))]) >> both >> reader()).into()).is_empty());
    let fallback = sinew_fluent::fallback("safe", [Agent::named("x").outputs("ticket"), Agent::named("y")]);
    assert_eq!(issues((fallback >> reader()).into()), ["reader:ticket"]);
    // What a parallel group's branches write, any of them, is there after it.
    assert!(issues(((Agent::named("x").outputs("ticket") | Agent::named("y")) >> reader()).into()).is_empty());
    // A timeout's body may be cut short; a delegate may never be handed the conversation.
    let bounded =
        sinew_fluent::timeout("bounded", Agent::named("slow").outputs("ticket"), std::time::Duration::from_secs(1));
    assert_eq!(issues((bounded >> reader()).into()), ["reader:ticket"]);
    let delegating = Agent::named("front").delegate([Agent::named("helper").outputs("ticket")]);
    assert_eq!(issues((delegating >> reader()).into()), ["reader:ticket"]);
    // Dropped, picked away or renamed keys are gone.
    let written = || S::set([("ticket", json!(1)), ("other", json!(2))]);
    assert_eq!(issues((written() >> S::drop(["ticket"]) >> reader()).into()), ["reader:ticket"]);
    assert_eq!(issues((written() >> S::pick(["other"]) >> reader()).into()), ["reader:ticket"]);
    assert!(issues((written() >> S::pick(["ticket"]) >> reader()).into()).is_empty());
    assert_eq!(issues((written() >> S::rename([("ticket", "case")]) >> reader()).into()), ["reader:ticket"]);
    assert_eq!(issues((S::pick(["ticket"]) >> reader()).into()), ["reader:ticket"], "pick keeps, it does not write");
    // A branch that drops a key takes it away for what follows the group.
    assert_eq!(issues((written() >> (S::drop(["ticket"]) | Agent::named("y")) >> reader()).into()), ["reader:ticket"]);
    // A map over an empty list never writes its item key.
    let mapped = S::set([("items", json!([]))]) >> map_over("each", "items", Agent::named("w").outputs("result"));
    assert_eq!(issues((mapped >> Agent::named("after").instruct("{_item} {results}")).into()), ["after:_item"]);
}

/// Agent `i` reads what agent `i - 1` wrote and writes `step_i`.
fn hundred_agents(model: impl Fn(usize) -> Option<Arc<dyn sinew_adk::Llm>>) -> Node {
    let mut pipeline = Pipeline::new("hundred");
    for i in 0..100 {
        let mut agent = Agent::named(format!("agent_{i}")).outputs(format!("step_{i}"));
        if i > 0 {
            agent = agent.instruct(format!("Continue from {{step_{}}}.", i - 1));
        }
        if let Some(model) = model(i) {
            agent = agent.llm(model);
        }
        pipeline = pipeline.step(agent);
    }
    pipeline.build().unwrap()
}

#[tokio::test]
async fn a_hundred_agent_pipeline_checks_and_runs_on_both_backends() {
    let pipeline = hundred_agents(|_| None);
    assert!(check_contracts(&pipeline).is_empty());
    assert_eq!(pipeline.walk().len(), 101);

    let answers: Vec<(String, Value)> =
        (0..100).map(|i| (format!("agent_{i}"), json!(format!("answer {i}")))).collect();
    let backend = MockBackend::new(answers);
    let compiled = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
    let events = backend.run(&compiled, "go", RunOptions::default()).await.unwrap();
    let order: Vec<&str> = events.iter().map(|e| e.author.as_str()).collect();
    let expected: Vec<String> = (0..100).map(|i| format!("agent_{i}")).collect();
    assert_eq!(order, expected);
    assert_eq!(final_text(&events), "answer 99");

    // Through the ADK backend on scripted models, with the cost of each agent attributed to it.
    let models: Vec<Arc<FakeLlm>> =
        (0..100).map(|i| FakeLlm::new("scripted-model", (100, 10), [Ok(format!("scripted {i}"))])).collect();
    let scripted = hundred_agents(|i| Some(models[i].clone() as Arc<dyn sinew_adk::Llm>));
    let tracker = Arc::new(CostTracker::new(|m| (m == "scripted-model").then(|| Price::new(1.0, 10.0))));
    let backend = AdkBackend::new().with_middleware(tracker.clone());
    let compiled = backend.compile(&scripted, &ExecutionConfig::default()).unwrap();
    let events = backend.run(&compiled, "go", RunOptions::default()).await.unwrap();
    assert_eq!(final_text(&events), "scripted 99");
    let last_request = &models[99].requests.lock().unwrap()[0];
    assert!(serde_json::to_string(last_request).unwrap().contains("Continue from scripted 98."));
    let costs = tracker.costs();
    assert_eq!(costs.len(), 100);
    for i in 0..100 {
        let cost = &costs[&format!("agent_{i}")];
        assert_eq!((cost.calls, cost.input_tokens, cost.output_tokens), (1, 100, 10), "agent_{i}");
        assert!((cost.cost - 0.0002).abs() < 1e-12, "agent_{i}: {}", cost.cost);
    }
    assert!((tracker.total() - 0.02).abs() < 1e-9);
}
