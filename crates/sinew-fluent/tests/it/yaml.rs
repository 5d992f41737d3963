//! The IR as ADK AgentConfig YAML, both ways.

use std::sync::Arc;

use serde_json::{Value, json};
use sinew_adk::testing::ScriptedLlm;
use sinew_adk::{FunctionTool, Tool};
use sinew_fluent::yaml::{read_yaml_dir, read_yaml_file, to_yaml_files, write_yaml_dir};
use sinew_fluent::{
    AdkBackend, Agent, Backend as _, Error, Execute as _, ExecutionConfig, MockBackend, Node, Registry, RunOptions, S,
    final_text,
};

fn lookup() -> Arc<dyn Tool> {
    Arc::new(FunctionTool::new("lookup", "Looks up.", Value::Null, |_, _| async { Ok(json!({"found": true})) }))
}

fn support() -> Node {
    (Agent::new("classifier", "mock/model")
        .description("Classifies.")
        .instruct("Classify {topic?}.")
        .outputs("intent")
        .tool(lookup())
        .delegate([Agent::named("helper").instruct("Help.")])
        >> (Agent::named("a").outputs("left") | Agent::named("b").outputs("right"))
        >> (Agent::named("review").instruct("Review {intent}.") * 2))
        .build()
        .unwrap()
}

/// The kinds and names of a tree, depth first.
fn shape(node: &Node) -> Vec<String> {
    node.walk().iter().map(|n| format!("{}:{}", n.kind(), n.name())).collect()
}

#[test]
fn a_tree_is_one_file_per_agent_with_adks_fields() {
    let files = to_yaml_files(&support()).unwrap();
    let names: Vec<&String> = files.keys().collect();
    assert_eq!(
        names,
        [
            "a.yaml",
            "a_fanout.yaml",
            "b.yaml",
            "classifier.yaml",
            "helper.yaml",
            "review.yaml",
            "review_loop.yaml",
            "root_agent.yaml"
        ]
    );
    insta::assert_snapshot!("root_agent", files["root_agent.yaml"]);
    insta::assert_snapshot!("classifier", files["classifier.yaml"]);
    insta::assert_snapshot!("review_loop", files["review_loop.yaml"]);
}

#[tokio::test]
async fn what_is_written_reads_back_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    write_yaml_dir(&support(), dir.path()).unwrap();
    let read = read_yaml_dir(dir.path()).unwrap();
    assert_eq!(shape(&read), shape(&support()));
    let Node::Agent(classifier) = &read.children()[0] else { panic!("{read:?}") };
    let original = support();
    let Node::Agent(written) = &original.children()[0] else { unreachable!() };
    let mut expected = written.config.clone();
    expected.tools = Some(vec![sinew_fluent::config::ToolConfig::new("lookup")]);
    assert_eq!(classifier.config, expected);

    // Names are resolved by the backend's registry when it compiles.
    let registry = Registry::new()
        .models(|name| {
            (name == "mock/model")
                .then(|| Arc::new(ScriptedLlm::texts(["billing"]).named(name)) as Arc<dyn sinew_adk::Llm>)
        })
        .tool(lookup());
    let backend = MockBackend::over(
        AdkBackend::new().with_registry(registry.clone()),
        [
            ("classifier", json!("billing")),
            ("helper", json!("helped")),
            ("a", json!("l")),
            ("b", json!("r")),
            ("review", json!("reviewed")),
        ],
    );
    let compiled = backend.compile(&read, &ExecutionConfig::default()).unwrap();
    let events = backend.run(&compiled, "go", RunOptions::default()).await.unwrap();
    assert_eq!(final_text(&events), "reviewed");
    // On the ADK backend the tool name is resolved too.
    let single = read_yaml_file(&dir.path().join("classifier.yaml")).unwrap();
    let app = AdkBackend::new().with_registry(registry).compile(&single, &ExecutionConfig::default()).unwrap();
    let agent = app.app.root_agent().as_llm_agent().unwrap();
    assert_eq!(agent.tools()[0].name(), "lookup");
}

#[tokio::test]
async fn a_yaml_agent_is_extended_here() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("root_agent.yaml"),
        "# An agent written for adk web.\nagent_class: LlmAgent\nname: writer\nmodel: gemini-2.5-flash\ninstruction: Write about {topic}.\noutput_key: draft\n",
    )
    .unwrap();
    let writer = read_yaml_dir(dir.path()).unwrap();
    let pipeline = (S::set([("topic", json!("tides"))]) >> writer >> Agent::named("editor").instruct("Edit {draft}."))
        .build()
        .unwrap();
    assert!(sinew_fluent::check_contracts(&pipeline).is_empty());
    let backend = MockBackend::new([("writer", json!("a draft")), ("editor", json!("an edit"))]);
    let compiled = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
    let events = backend.run(&compiled, "go", RunOptions::default()).await.unwrap();
    assert_eq!(final_text(&events), "an edit");
}

#[test]
fn tools_the_backend_cannot_make_from_yaml_are_refused_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let compile = |tools: &str| {
        std::fs::write(
            dir.path().join("root_agent.yaml"),
            format!("name: a\nmodel: m\ninstruction: x\ntools:\n{tools}"),
        )
        .unwrap();
        let node = read_yaml_dir(dir.path()).unwrap();
        let registry = Registry::new()
            .models(|_| Some(Arc::new(ScriptedLlm::texts(["x"])) as Arc<dyn sinew_adk::Llm>))
            .tool(lookup());
        AdkBackend::new().with_registry(registry).compile(&node, &ExecutionConfig::default()).unwrap_err().to_string()
    };
    // Arguments of a tool factory: sinew has no factory to call.
    let error = compile("  - name: lookup\n    args:\n      index: products\n");
    assert!(error.contains("tool `lookup` is given arguments"), "{error}");
    // A name the registry does not know: the error lists those it knows.
    let error = compile("  - name: search\n");
    assert!(error.contains("no tool is known as `search` (known: lookup)"), "{error}");
}

#[test]
fn naming_a_model_drops_a_model_object_given_before() {
    let object = Arc::new(ScriptedLlm::texts(["x"]).named("object-model"));
    let node = Agent::new("a", object).model("named-model").build().unwrap();
    let Node::Agent(agent) = &node else { panic!() };
    assert!(agent.model.is_none());
    assert_eq!(agent.config.model.as_deref(), Some("named-model"));
    assert!(to_yaml_files(&node).unwrap()["root_agent.yaml"].contains("model: named-model"));
}

#[test]
fn what_yaml_cannot_hold_is_an_error_naming_it() {
    let error = |node: Node| to_yaml_files(&node).unwrap_err().to_string();
    assert!(error((S::set([("k", json!(1))]) >> Agent::named("a")).into()).contains("`set_k` is a transform node"));
    let with_callback = Agent::named("a").before_agent(|_: &sinew_adk::CallbackContext| None).into();
    assert!(error(with_callback).contains("`a` has callbacks given as code"));
    assert!(error(Agent::named("a").output_schema(json!({"type": "object"})).into()).contains("use produces::<T>()"));
    assert!(error((Agent::named("a") >> Agent::named("root_agent")).into()).contains("would take the root's file"));

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Verdict {
        ok: bool,
    }
    let files = to_yaml_files(&Agent::named("judge").produces::<Verdict>().into()).unwrap();
    assert!(files["root_agent.yaml"].contains("output_schema:\n  name: Verdict"), "{}", files["root_agent.yaml"]);
}

#[test]
fn broken_yaml_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |file: &str, text: &str| std::fs::write(dir.path().join(file), text).unwrap();
    let read = |file: &str| match read_yaml_file(&dir.path().join(file)) {
        Err(Error::Yaml(message)) => message,
        other => panic!("{other:?}"),
    };
    write("unknown.yaml", "name: a\ninstruction: x\ncolour: red\n");
    assert!(read("unknown.yaml").contains("unknown.yaml") && read("unknown.yaml").contains("unknown field `colour`"));
    write("class.yaml", "agent_class: RemoteA2aAgent\nname: a\n");
    assert!(read("class.yaml").contains("agent_class `RemoteA2aAgent` is not one of"));
    write("cycle.yaml", "agent_class: SequentialAgent\nname: a\nsub_agents:\n  - config_path: cycle.yaml\n");
    assert!(read("cycle.yaml").contains("refers to itself"));
    write("code.yaml", "agent_class: SequentialAgent\nname: a\nsub_agents:\n  - code: my.agents.helper\n");
    assert!(read("code.yaml").contains("sub-agent `my.agents.helper` is a code reference"));
    write("missing.yaml", "agent_class: SequentialAgent\nname: a\nsub_agents:\n  - config_path: nowhere.yaml\n");
    assert!(read("missing.yaml").contains("nowhere.yaml"));
    write("no_instruction.yaml", "name: a\n");
    assert!(read("no_instruction.yaml").contains("missing field `instruction`"), "ADK requires it");
    write(
        "twice.yaml",
        "agent_class: SequentialAgent\nname: a\nsub_agents:\n  - config_path: leaf.yaml\n  - config_path: ./leaf.yaml\n",
    );
    write("leaf.yaml", "name: leaf\ninstruction: x\n");
    assert!(read("twice.yaml").contains("is a sub-agent twice"), "read once, however it is spelled");
    write("empty_ref.yaml", "agent_class: SequentialAgent\nname: a\nsub_agents:\n  - {}\n");
    assert!(read("empty_ref.yaml").contains("names neither a file nor code"));
    write("huge.yaml", &format!("name: a\ninstruction: x\ndescription: {}\n", "x".repeat(1 << 20)));
    assert!(read("huge.yaml").contains("more than an agent file may hold"));
    write("device.yaml", "agent_class: SequentialAgent\nname: a\nsub_agents:\n  - config_path: /dev/zero\n");
    assert!(read("device.yaml").contains("not a regular file"));
    write("not_yaml.yaml", "name: [unclosed\n");
    assert!(read("not_yaml.yaml").contains("not_yaml.yaml"));
}

#[cfg_attr(not(sinew_test_adk_python), ignore = "set SINEW_ADK_PYTHON to a python with google-adk 2.13.0")]
#[test]
fn adk_python_reads_what_is_written() {
    let python = std::env::var("SINEW_ADK_PYTHON").expect("SINEW_ADK_PYTHON names a python with google-adk 2.13.0");
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/adk_load_yaml.py");
    let run = |dir: &std::path::Path, build: bool| {
        let mut command = std::process::Command::new(&python);
        command.arg(&script).arg(dir);
        if build {
            command.arg("--build");
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "adk-python refused:\n{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    // Every file validates against adk-python's AgentConfig (tools by name included).
    let dir = tempfile::tempdir().unwrap();
    write_yaml_dir(&support(), dir.path()).unwrap();
    assert_eq!(run(dir.path(), false), json!({"validated": 8}));

    // Without custom tools, adk-python builds the very tree.
    let pipeline = (Agent::new("classifier", "gemini-2.5-flash").instruct("Classify.").outputs("intent")
        >> (Agent::new("a", "gemini-2.5-flash") | Agent::new("b", "gemini-2.5-flash"))
        >> (Agent::new("review", "gemini-2.5-flash") * 2))
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_yaml_dir(&pipeline, dir.path()).unwrap();
    let leaf = |name: &str| json!({"name": name, "class": "LlmAgent", "sub_agents": []});
    assert_eq!(
        run(dir.path(), true),
        json!({"name": "classifier_pipeline", "class": "SequentialAgent", "sub_agents": [
            leaf("classifier"),
            {"name": "a_fanout", "class": "ParallelAgent", "sub_agents": [leaf("a"), leaf("b")]},
            {"name": "review_loop", "class": "LoopAgent", "sub_agents": [leaf("review")]},
        ]})
    );
}
