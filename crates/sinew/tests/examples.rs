//! The examples run end to end (REQ-175): their own code, compiled in here, with scripted models
//! in place of the environment's provider.

use std::sync::Arc;

use serde_json::json;
use sinew::testing::{MockProvider, MockResponse};
use sinew::tools::Workspace;
use sinew::{AgentMessage, EndReason, Message};

#[allow(dead_code, reason = "`main` needs the environment's provider")]
#[path = "../examples/coding_assistant.rs"]
mod coding_assistant;

#[allow(dead_code, reason = "`main` needs the environment's provider")]
#[path = "../examples/pipeline.rs"]
mod pipeline;

fn lines(input: &[&str]) -> impl Iterator<Item = String> {
    input.iter().map(|l| (*l).to_owned()).collect::<Vec<_>>().into_iter()
}

fn text_of(message: &Message) -> String {
    match message {
        Message::User(m) => sinew::content::join_text(&m.content, ""),
        Message::Assistant(m) => m.text(),
        Message::ToolResult(m) => sinew::content::join_text(&m.content, ""),
    }
}

#[tokio::test]
async fn the_coding_assistant_uses_its_tools_and_answers_its_three_commands() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("notes.txt"), "the build is green\n").unwrap();
    let model = Arc::new(MockProvider::new([
        MockResponse::new().text_delta("Reading. ").tool_call("c1", "read_file", json!({"path": "notes.txt"})),
        MockResponse::text("It says the build is green."),
        MockResponse::text("Still here, on another model."),
        MockResponse::text("A fresh start."),
    ]));
    let workspace = Workspace::confined(project.path()).unwrap();
    let agent = coding_assistant::assistant(Arc::clone(&model), "model-a", &workspace);
    let input = lines(&[
        "What do my notes say?",
        "/model",
        "/model model-b",
        "/nope",
        "And now?",
        "/clear",
        "Hello again",
        "/quit",
        "never sent",
    ]);
    let mut out = Vec::new();
    let agent = coding_assistant::repl(agent, input, &mut out).await.unwrap();
    let out = String::from_utf8(out).unwrap();

    // The read tool ran in the workspace and its output went back to the model.
    assert!(out.contains("[read_file] {\"path\":\"notes.txt\"}"), "{out}");
    assert!(out.contains("Reading. ") && out.contains("It says the build is green."), "{out}");
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "one call per model turn, nothing after /quit");
    assert!(text_of(requests[1].messages.last().unwrap()).contains("the build is green"));
    assert_eq!(requests[0].tools.len(), 6, "all six built-in tools");
    // /model shows, then switches, keeping the conversation.
    assert!(out.contains("(model: model-a; /model NAME to switch)") && out.contains("(model: model-b)"), "{out}");
    assert_eq!((requests[1].model.as_str(), requests[2].model.as_str()), ("model-a", "model-b"));
    assert_eq!(requests[2].messages.len(), 5, "the first exchange, then the new prompt");
    assert!(out.contains("(unknown command /nope; try /model, /clear, /quit)"), "{out}");
    // /clear forgets it.
    assert!(out.contains("(conversation cleared)"), "{out}");
    assert_eq!(requests[3].messages.len(), 1);
    assert_eq!(agent.messages().len(), 2);
    assert!(matches!(&agent.messages()[0], AgentMessage::Llm(m) if text_of(m) == "Hello again"));
}

#[tokio::test]
async fn the_pipeline_delegates_to_its_researcher_and_writer() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("lib.rs"), "//! Parses invoices.\n").unwrap();
    let lead = MockProvider::new([
        MockResponse::new().tool_call("l1", "researcher", json!({"task": "What does lib.rs do?"})),
        MockResponse::new().tool_call("l2", "writer", json!({"task": "Notes: lib.rs parses invoices."})),
        MockResponse::text("This crate parses invoices."),
    ]);
    let researcher = Arc::new(MockProvider::new([
        MockResponse::new().tool_call("r1", "read_file", json!({"path": "lib.rs"})),
        MockResponse::new().text_delta("lib.rs: parses invoices."),
    ]));
    let writer = Arc::new(MockProvider::new([MockResponse::new().text_delta("This crate parses invoices.")]));
    let workspace = Workspace::confined(project.path()).unwrap();
    let providers: [Arc<MockProvider>; 3] = [Arc::new(lead), Arc::clone(&researcher), Arc::clone(&writer)];
    let mut agent = pipeline::pipeline(providers, "model", &workspace);
    let mut out = Vec::new();
    let outcome = pipeline::run(&mut agent, "Describe the crate", &mut out).await.unwrap();
    let out = String::from_utf8(out).unwrap();

    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(outcome.final_text().as_deref(), Some("This crate parses invoices."));
    // The researcher read the file with its own tools, on a history of its own.
    let research = researcher.requests();
    assert_eq!(
        research[0].tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["read_file", "list_files", "search"]
    );
    assert_eq!(text_of(&research[0].messages[0]), "What does lib.rs do?");
    assert!(text_of(research[1].messages.last().unwrap()).contains("Parses invoices."));
    // The writer has no tools and got the lead's notes.
    let writing = writer.requests();
    assert!(writing[0].tools.is_empty());
    assert_eq!(text_of(&writing[0].messages[0]), "Notes: lib.rs parses invoices.");
    // The progress was printed as it came.
    for expected in [
        "[researcher <- lead] What does lib.rs do?",
        "lib.rs: parses invoices.",
        "[researcher -> lead after 2 turns]",
        "[writer -> lead after 1 turn]",
        "This crate parses invoices.",
        "(Completed)",
    ] {
        assert!(out.contains(expected), "{expected:?} in {out}");
    }
}
