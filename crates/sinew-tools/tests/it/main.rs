//! The built-in tools on real files.

mod bash;
mod edit;
mod read;
mod tree;
mod write;

use sinew_core::{CancellationToken, ToolContext};

pub(crate) fn ctx() -> ToolContext {
    ToolContext::new("call-1", "tool", CancellationToken::new())
}

#[test]
fn the_default_tools_are_the_six_with_distinct_names_and_object_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let tools = sinew_tools::default_tools(&sinew_tools::Workspace::confined(dir.path()).unwrap());
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["bash", "read_file", "write_file", "edit_file", "list_files", "search"]);
    for tool in &tools {
        let definition = tool.definition();
        assert_eq!(definition.parameters["type"], "object", "{}", definition.name);
        assert!(!definition.description.is_empty());
    }
}
