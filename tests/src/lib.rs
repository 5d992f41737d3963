//! Helpers shared by the end-to-end tests and their helper binaries.

use sinew::ToolResult;
use sinew::testing::{EchoTool, FnTool, MockProvider};

/// `write_file`: pretends to write, answering `wrote <path>`.
pub fn write_tool() -> FnTool {
    FnTool::new("write_file", |args, _| async move {
        Ok(ToolResult::text(format!("wrote {}", args["path"].as_str().unwrap_or_default())))
    })
}

/// The agent both processes build: the same tools and approval policy, the given model.
pub fn guarded_agent(model: MockProvider) -> sinew::Agent {
    sinew::Agent::new(model, "mock-model")
        .with_tool(EchoTool)
        .with_tool(write_tool())
        .with_approval_required_for(["write_file"])
}
