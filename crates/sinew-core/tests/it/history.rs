use serde_json::json;
use sinew_core::history::{orphaned_tool_results, synthesize_missing_results, unmatched_tool_calls};
use sinew_core::*;

fn call(ids: &[&str]) -> AgentMessage {
    let mut m = AssistantMessage::new("mock", "m");
    m.content = ids.iter().map(|id| Content::tool_call(*id, "t", json!({}))).collect();
    m.into()
}

fn result(id: &str) -> AgentMessage {
    ToolResultMessage::error(id, "t", "r").into()
}

#[test]
fn finds_unmatched_calls_and_orphaned_results() {
    let history = vec![AgentMessage::user("q"), call(&["a", "b"]), result("a"), result("z")];
    assert_eq!(unmatched_tool_calls(&history), vec![("b".to_owned(), "t".to_owned())]);
    assert_eq!(orphaned_tool_results(&history), vec!["z".to_owned()]);
    let repaired = synthesize_missing_results(&history, "never ran");
    assert_eq!(repaired.len(), 1);
    assert_eq!((repaired[0].tool_call_id.as_str(), repaired[0].is_error), ("b", true));
    assert_eq!(repaired[0].content, vec![Content::text("never ran")]);
}

#[test]
fn a_result_before_its_call_is_orphaned() {
    assert_eq!(orphaned_tool_results(&[result("a"), call(&["a"])]), vec!["a".to_owned()]);
}
