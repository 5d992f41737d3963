//! Builders, operators and the IR they give.

use serde_json::json;
use sinew_fluent::config::IncludeContents;
use sinew_fluent::ir::{Node, template_keys};
use sinew_fluent::{Agent, Error, FanOut, Loop, Pipeline, S};

fn names(node: &Node) -> Vec<String> {
    node.walk().iter().map(|n| format!("{}:{}", n.kind(), n.name())).collect()
}

#[test]
fn operators_make_the_workflow_agents_of_adk() {
    let a = || Agent::named("a");
    let sequence = (a() >> Agent::named("b") >> Agent::named("c")).build().unwrap();
    assert_eq!(names(&sequence), ["sequence:a_pipeline", "agent:a", "agent:b", "agent:c"]);

    let parallel = (a() | Agent::named("b") | Agent::named("c")).build().unwrap();
    assert_eq!(names(&parallel), ["parallel:a_fanout", "agent:a", "agent:b", "agent:c"]);

    let looped = (a() * 3).build().unwrap();
    let Node::Loop(node) = &looped else { panic!("{looped:?}") };
    assert_eq!(node.config.max_iterations, Some(3));
    assert_eq!(names(&looped), ["loop:a_loop", "agent:a"]);

    // An operator's pipeline loops over its steps; a named pipeline is kept whole.
    let body = ((a() >> Agent::named("b")) * 2).build().unwrap();
    assert_eq!(names(&body), ["loop:a_loop", "agent:a", "agent:b"]);
    let named = Pipeline::new("review").step(Agent::named("r1")).step(Agent::named("r2"));
    let nested = (a() >> named).build().unwrap();
    assert_eq!(names(&nested), ["sequence:a_pipeline", "agent:a", "sequence:review", "agent:r1", "agent:r2"]);
}

#[test]
fn made_up_names_are_unique_and_stable() {
    let tree = ((Agent::named("a") >> Agent::named("b"))
        | (Agent::named("a2") >> S::set([("x", json!(1))]))
        | S::set([("x", json!(2))]))
    .build()
    .unwrap();
    assert_eq!(
        names(&tree),
        [
            "parallel:a_pipeline_fanout",
            "sequence:a_pipeline",
            "agent:a",
            "agent:b",
            "sequence:a2_pipeline",
            "agent:a2",
            "transform:set_x",
            "transform:set_x_2"
        ]
    );
    // Building a built tree changes nothing.
    assert_eq!(names(&tree.clone().build().unwrap()), names(&tree));
    // A made-up name steps aside for a name the user chose.
    let taken = (Agent::named("a") >> Agent::named("a_pipeline")).build().unwrap();
    assert_eq!(names(&taken), ["sequence:a_pipeline_2", "agent:a", "agent:a_pipeline"]);
}

#[test]
fn names_follow_adks_rule_and_are_unique() {
    let error = (Agent::named("a") >> Agent::named("a")).build().unwrap_err();
    assert!(matches!(&error, Error::DuplicateName(n) if n == "a"), "{error}");
    let error = Agent::named("bad name").build().unwrap_err();
    assert!(error.to_string().contains("Found invalid agent name: `bad name`"), "{error}");
    let error = Agent::named("user").build().unwrap_err();
    assert!(error.to_string().contains("reserved for end-user's input"), "{error}");
    let error = FanOut::new("x y").branch(Agent::named("a")).build().unwrap_err();
    assert!(matches!(error, Error::InvalidName(_)));
}

#[test]
fn reads_come_from_templates_and_contracts_writes_from_outputs() {
    assert_eq!(
        template_keys(
            "Hi {name}, {app:plan} {user:tier} {temp:scratch} { spaced } {maybe?} {artifact.doc} {not a key} {{x}}"
        )
        .into_iter()
        .collect::<Vec<_>>(),
        ["app:plan", "name", "spaced", "temp:scratch", "user:tier", "x"]
    );

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Intent {
        category: String,
        confidence: f64,
    }
    let node =
        Agent::named("resolver").instruct("Resolve {ticket}.").consumes::<Intent>().outputs("answer").build().unwrap();
    assert_eq!(node.reads_keys().into_iter().collect::<Vec<_>>(), ["category", "confidence", "ticket"]);
    assert_eq!(node.writes_keys().into_iter().collect::<Vec<_>>(), ["answer"]);
    let node = Agent::named("classifier").produces::<Intent>().build().unwrap();
    let Node::Agent(agent) = &node else { panic!() };
    assert_eq!(agent.output_schema.as_ref().unwrap()["properties"]["confidence"]["type"], "number");
    assert_eq!(node.writes_keys().into_iter().collect::<Vec<_>>(), ["category", "confidence"]);

    // A sequence reads what its steps read before an earlier step wrote it.
    let pipeline =
        (Agent::named("a").instruct("{x}").outputs("y") >> Agent::named("b").instruct("{y} {z}")).build().unwrap();
    assert_eq!(pipeline.reads_keys().into_iter().collect::<Vec<_>>(), ["x", "z"]);
    assert_eq!(pipeline.writes_keys().into_iter().collect::<Vec<_>>(), ["y"]);
}

#[test]
fn generated_setters_write_adks_configuration_fields() {
    let node = Agent::new("helper", "gemini-2.5-flash")
        .description("Helps.")
        .instruction("Help with {topic}.")
        .static_instruction("You are careful.")
        .disallow_transfer_to_parent(true)
        .disallow_transfer_to_peers(false)
        .include_contents(IncludeContents::None)
        .generate_content_config(json!({"temperature": 0.2}))
        .output_key("help")
        .build()
        .unwrap();
    let Node::Agent(agent) = &node else { panic!() };
    let config = &agent.config;
    assert_eq!(config.model.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(config.static_instruction, Some(json!("You are careful.")));
    assert_eq!(
        config.set_fields(),
        [
            "name",
            "description",
            "model",
            "instruction",
            "static_instruction",
            "disallow_transfer_to_parent",
            "disallow_transfer_to_peers",
            "output_key",
            "include_contents",
            "generate_content_config"
        ]
    );
    let looped =
        Loop::new("retry").step(Agent::named("try_once")).max_iterations(4).description("Tries.").build().unwrap();
    let Node::Loop(node) = &looped else { panic!() };
    assert_eq!((node.config.max_iterations, node.config.description.as_str()), (Some(4), "Tries."));
}
