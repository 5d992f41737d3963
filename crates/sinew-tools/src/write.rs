//! `write_file`: creates or replaces a file, atomically.

use async_trait::async_trait;
use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};

use crate::fs_util::atomic_write;
use crate::workspace::Workspace;

/// Writes files inside a [`Workspace`].
#[derive(Clone, Debug)]
pub struct WriteFileTool {
    workspace: Workspace,
    approval: bool,
}

impl WriteFileTool {
    /// Writes any file inside `workspace`, without asking for approval.
    pub fn new(workspace: Workspace) -> Self {
        WriteFileTool { workspace, approval: false }
    }

    /// Every call suspends the run until the host approves it (the agent's approval flow).
    #[must_use]
    pub fn requiring_approval(mut self) -> Self {
        self.approval = true;
        self
    }
}

#[async_trait]
impl AgentTool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Create or overwrite a file with the given content. Parent directories are created."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the workspace or absolute"},
                "content": {"type": "string", "description": "The whole new content"}
            },
            "required": ["path", "content"]
        })
    }

    fn requires_approval(&self, _params: &Value) -> bool {
        self.approval
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let path_arg =
            params["path"].as_str().ok_or_else(|| ToolError::InvalidArgs("`path` must be a string".into()))?;
        let content =
            params["content"].as_str().ok_or_else(|| ToolError::InvalidArgs("`content` must be a string".into()))?;
        let path = self.workspace.resolve_async(path_arg).await?;
        if path.is_dir() {
            return Err(ToolError::Failed(format!("{path_arg} is a directory").into()));
        }
        let existed = path.exists();
        ctx.check_cancelled()?;
        atomic_write(&path, content.as_bytes()).await?;
        let verb = if existed { "Overwrote" } else { "Created" };
        Ok(ToolResult::text(format!("{verb} {path_arg} ({} bytes)", content.len()))
            .with_details(json!({"path": path.display().to_string()})))
    }
}
