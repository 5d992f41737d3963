//! Tool-layer middleware: approval through ADK's confirmation flow.

use std::collections::BTreeSet;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use sinew_adk::{Tool, ToolContext};

use super::Middleware;

/// Asks the user to approve calls of the named tools through ADK's confirmation flow (the
/// `adk_request_confirmation` call): the call waits; approved, it runs; rejected, the model reads
/// that it was rejected. The answers are adk-python's `FunctionTool` wording.
#[derive(Debug)]
pub struct ToolApproval {
    tools: BTreeSet<String>,
}

impl ToolApproval {
    /// Approval for calls of `tools`.
    pub fn new<S: Into<String>>(tools: impl IntoIterator<Item = S>) -> Self {
        ToolApproval { tools: tools.into_iter().map(Into::into).collect() }
    }
}

#[async_trait]
impl Middleware for ToolApproval {
    fn name(&self) -> &str {
        "tool_approval"
    }

    async fn before_tool(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        _args: &mut Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        if !self.tools.contains(tool.name()) {
            return None;
        }
        let answer = match ctx.tool_confirmation() {
            Some(confirmation) if confirmation.confirmed => return None,
            Some(_) => json!({"error": "This tool call is rejected."}),
            None => {
                let hint = format!(
                    "Please approve or reject the tool call {}() by responding with a FunctionResponse with an expected ToolConfirmation payload.",
                    tool.name()
                );
                ctx.request_confirmation(Some(&hint), None);
                // The turn ends on the waiting call, as adk-python's `FunctionTool` ends it.
                ctx.skip_summarization();
                json!({"error": "This tool call requires confirmation, please approve or reject."})
            }
        };
        answer.as_object().cloned()
    }
}
