//! Resources injected into tools by type, per app, session or invocation.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_fluent::resources::{Lifetime, ResourceTool, Resources};
use sinew_fluent::{AdkBackend, Agent, Backend as _, Execute as _, ExecutionConfig, RunOptions};

/// Counts the instances made of each kind, and those dropped.
#[derive(Default)]
struct Counters {
    made: [AtomicUsize; 3],
    dropped: AtomicUsize,
}

struct Pool(usize);
struct UserCache(usize);
struct Scratch {
    id: usize,
    counters: Arc<Counters>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.counters.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

fn tools() -> (ResourceTool<Pool>, ResourceTool<UserCache>, ResourceTool<Scratch>) {
    let params = json!({"type": "object", "properties": {"query": {"type": "string"}}});
    (
        ResourceTool::new("pool", "Uses the pool.", params.clone(), |_, _, pool: Arc<Pool>| async move {
            Ok(json!(pool.0))
        }),
        ResourceTool::new("cache", "Uses the cache.", params.clone(), |_, _, cache: Arc<UserCache>| async move {
            Ok(json!(cache.0))
        }),
        ResourceTool::new("scratch", "Uses scratch space.", params, |_, _, scratch: Arc<Scratch>| async move {
            Ok(json!(scratch.id))
        }),
    )
}

fn model() -> Arc<ScriptedLlm> {
    Arc::new(ScriptedLlm::new([
        ScriptedAnswer::calls([
            ("pool".to_owned(), json!({})),
            ("cache".to_owned(), json!({})),
            ("scratch".to_owned(), json!({})),
        ]),
        ScriptedAnswer::text("done"),
    ]))
}

#[tokio::test]
async fn each_lifetime_makes_its_own_instances_and_the_model_never_sees_them() {
    let counters = Arc::new(Counters::default());
    let c = counters.clone();
    let resources = Resources::new()
        .provide(Lifetime::App, {
            let c = c.clone();
            move || Pool(c.made[0].fetch_add(1, Ordering::SeqCst))
        })
        .provide(Lifetime::Session, {
            let c = c.clone();
            move || UserCache(c.made[1].fetch_add(1, Ordering::SeqCst))
        })
        .provide(Lifetime::Invocation, move || Scratch {
            id: c.made[2].fetch_add(1, Ordering::SeqCst),
            counters: c.clone(),
        });
    let backend = AdkBackend::new().with_resources(resources);
    let mut results = Vec::new();
    let mut requests = Vec::new();
    for session in ["s1", "s1", "s2"] {
        let model = model();
        let (pool, cache, scratch) = tools();
        let node = Agent::new("a", model.clone()).resource_tool(pool).resource_tool(cache).resource_tool(scratch);
        let compiled = backend.compile(&node.build().unwrap(), &ExecutionConfig::default()).unwrap();
        let events = backend.run(&compiled, "go", RunOptions::session("u", session)).await.unwrap();
        let responses: Vec<Value> =
            events.iter().flat_map(|e| &e.tool_responses).map(|r| r.result["result"].clone()).collect();
        results.push(responses);
        requests.push(model.requests()[0].0.clone());
    }
    // Each run compiled its own app here, so each has its own app instance.
    assert_eq!(counters.made[0].load(Ordering::SeqCst), 3);
    assert_eq!(counters.made[2].load(Ordering::SeqCst), 3, "one scratch per invocation");
    assert_eq!(counters.dropped.load(Ordering::SeqCst), 3, "dropped when each invocation ended");
    // The model is offered the arguments only.
    let declarations = serde_json::to_value(&requests[0].config.tools).unwrap();
    for declaration in declarations[0]["functionDeclarations"].as_array().unwrap() {
        assert_eq!(
            declaration["parametersJsonSchema"],
            json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            "{declaration}"
        );
    }
    assert_eq!(results[0][0], json!(0));
}

#[tokio::test]
async fn one_compiled_app_shares_app_instances_and_keeps_one_per_session() {
    let made = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let (m0, m1) = (made.clone(), made.clone());
    let resources = Resources::new()
        .provide(Lifetime::App, move || Pool(m0[0].fetch_add(1, Ordering::SeqCst)))
        .provide(Lifetime::Session, move || UserCache(m1[1].fetch_add(1, Ordering::SeqCst)));
    let backend = AdkBackend::new().with_resources(resources);
    let model = Arc::new(ScriptedLlm::new([]));
    let (pool, cache, _) = tools();
    let node = Agent::new("a", model.clone()).resource_tool(pool).resource_tool(cache).build().unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();
    let mut seen = Vec::new();
    for session in ["s1", "s1", "s2"] {
        model.push(ScriptedAnswer::calls([("pool".to_owned(), json!({})), ("cache".to_owned(), json!({}))]));
        model.push(ScriptedAnswer::text("done"));
        let events = backend.run(&compiled, "go", RunOptions::session("u", session)).await.unwrap();
        let results: Vec<Value> =
            events.iter().flat_map(|e| &e.tool_responses).map(|r| r.result["result"].clone()).collect();
        seen.push(results);
    }
    assert_eq!(seen, [vec![json!(0), json!(0)], vec![json!(0), json!(0)], vec![json!(0), json!(1)]]);
    assert_eq!((made[0].load(Ordering::SeqCst), made[1].load(Ordering::SeqCst)), (1, 2));
}

#[tokio::test]
async fn an_invocations_instances_are_dropped_when_it_ends_while_the_app_lives_on() {
    let counters = Arc::new(Counters::default());
    let c = counters.clone();
    let resources = Resources::new().provide(Lifetime::Invocation, move || Scratch {
        id: c.made[2].fetch_add(1, Ordering::SeqCst),
        counters: c.clone(),
    });
    let backend = AdkBackend::new().with_resources(resources);
    let model = Arc::new(ScriptedLlm::new([]));
    let (_, _, scratch) = tools();
    let node = Agent::new("a", model.clone()).resource_tool(scratch).build().unwrap();
    let compiled = backend.compile(&node, &ExecutionConfig::default()).unwrap();
    for (i, session) in ["s1", "s2"].into_iter().enumerate() {
        model.push(ScriptedAnswer::calls([("scratch".to_owned(), json!({})), ("scratch".to_owned(), json!({}))]));
        model.push(ScriptedAnswer::text("done"));
        let events = backend.run(&compiled, "go", RunOptions::session("u", session)).await.unwrap();
        let ids: Vec<Value> =
            events.iter().flat_map(|e| &e.tool_responses).map(|r| r.result["result"].clone()).collect();
        assert_eq!(ids, [json!(i), json!(i)], "one instance for both calls of the invocation");
        assert_eq!(counters.dropped.load(Ordering::SeqCst), i + 1, "dropped at the invocation's end, the app alive");
    }
    drop(compiled);
}

#[tokio::test]
async fn a_resource_the_backend_does_not_provide_is_a_compile_error() {
    let (pool, _, _) = tools();
    let node = Agent::new("a", Arc::new(ScriptedLlm::new([]))).resource_tool(pool).build().unwrap();
    let error = AdkBackend::new().compile(&node, &ExecutionConfig::default()).unwrap_err();
    assert!(error.to_string().contains("tool `pool` takes a resource of type `it::resources::Pool`"), "{error}");
}
