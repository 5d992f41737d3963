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

/// The pictures the renderers are checked on: every kind of node, names Mermaid and DOT reserve,
/// and quotes and backslashes in labels.
fn pictures() -> [Node; 4] {
    [
        support(),
        Agent::named("alone").build().unwrap(),
        (Agent::named("end") >> Agent::named("subgraph")).build().unwrap(),
        (fallback("empty", Vec::<Node>::new()) >> Agent::named("quoted").instruct("Say \"{x}\" \\ {y}"))
            .build()
            .unwrap(),
    ]
}

#[cfg_attr(not(sinew_test_mermaid), ignore = "set SINEW_TEST_MERMAID to a directory with Mermaid's packages")]
#[test]
fn mermaid_parses_every_picture() {
    use std::io::Write as _;

    let modules = std::env::var("SINEW_TEST_MERMAID").expect("SINEW_TEST_MERMAID names Mermaid's packages");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mermaid/parse.mjs");
    let sources: Vec<String> = pictures()
        .iter()
        .map(|node| VizBackend::new(Format::Mermaid).compile(node, &ExecutionConfig::default()).unwrap())
        .collect();
    // A broken picture must be refused, or the check proves nothing.
    let mut inputs = sources.clone();
    inputs.push("flowchart TD\n  a -->".to_owned());
    let mut child = std::process::Command::new("node")
        .arg(script)
        .env("SINEW_TEST_MERMAID", modules)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node runs");
    // A node that stopped early shows why below, through its status and stderr.
    let _ = child.stdin.take().unwrap().write_all(serde_json::to_string(&inputs).unwrap().as_bytes());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "node failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let verdicts: Vec<serde_json::Value> =
        String::from_utf8(output.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(verdicts.len(), inputs.len());
    for (source, verdict) in sources.iter().zip(&verdicts) {
        assert_eq!(verdict["ok"], true, "Mermaid refused:\n{source}\n{verdict}");
        assert_eq!(verdict["type"], "flowchart-v2");
    }
    assert_eq!(verdicts.last().unwrap()["ok"], false, "the broken picture is refused");
}

#[cfg_attr(not(sinew_test_dot), ignore = "set SINEW_TEST_DOT to Graphviz's dot")]
#[test]
fn graphviz_renders_every_picture() {
    use std::io::Write as _;

    let dot = std::env::var("SINEW_TEST_DOT").expect("SINEW_TEST_DOT names Graphviz's dot");
    for node in pictures() {
        let source = VizBackend::new(Format::Dot).compile(&node, &ExecutionConfig::default()).unwrap();
        let mut child = std::process::Command::new(&dot)
            .arg("-Tsvg")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(source.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "dot refused:\n{source}\n{}", String::from_utf8_lossy(&output.stderr));
        let svg = String::from_utf8(output.stdout).unwrap();
        for n in node.walk() {
            assert!(svg.contains(n.name()), "{} is drawn:\n{svg}", n.name());
        }
    }
}
