//! `list_files`: the files of a tree, `.gitignore` honoured, in-process (no `find`).

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};

use crate::walk::{NameFilter, walk_files};
use crate::workspace::Workspace;

/// Lists files inside a [`Workspace`].
#[derive(Clone, Debug)]
pub struct ListFilesTool {
    workspace: Workspace,
    max_results: usize,
    timeout: Duration,
}

impl ListFilesTool {
    /// At most 200 results; 10 s at most (REQ-105).
    pub fn new(workspace: Workspace) -> Self {
        ListFilesTool { workspace, max_results: 200, timeout: Duration::from_secs(10) }
    }

    /// Paths listed per call (default 200); the rest are counted and the output says it was cut.
    #[must_use]
    pub fn with_max_results(mut self, max: usize) -> Self {
        self.max_results = max;
        self
    }

    /// How long the walk may take (default 10 s); past it, the call fails.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

#[async_trait]
impl AgentTool for ListFilesTool {
    fn name(&self) -> &str {
        "list_files"
    }

    fn description(&self) -> &str {
        "List files under a directory (default: the workspace), honouring .gitignore and skipping \
         .git, target and node_modules. Filter with a glob such as *.rs or src/**/*.ts."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default: the workspace)"},
                "pattern": {"type": "string", "description": "Glob on file names, or on paths if it contains /"},
                "max_depth": {"type": "integer", "minimum": 1, "description": "How deep to descend"}
            }
        })
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let path_arg = params["path"].as_str().unwrap_or(".");
        let root = self.workspace.resolve_async(path_arg).await?;
        if !root.is_dir() {
            return Err(ToolError::Failed(format!("{path_arg} is not a directory").into()));
        }
        let filter = params["pattern"].as_str().map(NameFilter::new).transpose()?;
        let max_depth = params["max_depth"].as_u64().map(|d| d as usize);
        ctx.check_cancelled()?;
        let (max, timeout, cancel) = (self.max_results, self.timeout, ctx.cancel.clone());
        let (files, total) = tokio::task::spawn_blocking(move || {
            let (mut files, mut total) = (Vec::new(), 0usize);
            walk_files(&root, max_depth, &cancel, timeout, |relative, _| {
                if filter.as_ref().is_none_or(|f| f.matches(relative)) {
                    total += 1;
                    if files.len() < max {
                        files.push(relative.display().to_string());
                    }
                }
                true
            })
            .map(|()| (files, total))
        })
        .await
        .map_err(|e| ToolError::Failed(sinew_core::Failure::with_source(format!("listing failed: {e}"), e)))??;
        let truncated = total > files.len();
        let mut text = files.join("\n");
        if files.is_empty() {
            text = format!("No files found under {path_arg}");
        }
        if truncated {
            text.push_str(&format!(
                "\n... (truncated: showing {} of {total} files; narrow with pattern or path)",
                files.len()
            ));
        }
        Ok(ToolResult::text(text).with_details(json!({"total": total, "truncated": truncated})))
    }
}
