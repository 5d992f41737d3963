//! The visualisation backend's pictures, snapshotted.

use std::time::Duration;

use serde_json::json;
use sinew_fluent::{Agent, Backend as _, ExecutionConfig, Format, Node, Route, S, VizBackend, fallback, timeout};

fn support() -> Node {
    (S::set([("tone", json!("formal"))])
        >> Agent::named("classifier").instruct("Classify in a {tone} way.").outputs("intent")
        >> Route::new("by_intent", "intent")
            .when_eq(json!("billing"), Agent::named("billing").outputs("resolution"))
            .otherwise(fallback("general", [Agent::named("general_a"), Agent::named("general_b")]))
        >> (Agent::named("summarize").instruct("Summarize {resolution?}.") | Agent::named("notify"))
        >> timeout("bounded", Agent::named("review").instruct("Review {intent}.") * 2, Duration::from_secs(30)))
    .build()
    .unwrap()
}

#[test]
fn a_pipeline_as_mermaid() {
    let picture = VizBackend::new(Format::Mermaid).compile(&support(), &ExecutionConfig::default()).unwrap();
    insta::assert_snapshot!(picture);
    assert_eq!(support().visualize().unwrap(), picture, "visualize() draws Mermaid");
}

#[test]
fn a_pipeline_as_dot() {
    insta::assert_snapshot!(VizBackend::new(Format::Dot).compile(&support(), &ExecutionConfig::default()).unwrap());
}
