//! `search`: a regex over the files of a tree, with ripgrep's own crates, in-process (no `rg` or
//! `grep` needed).

use std::time::Duration;

use async_trait::async_trait;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};

use crate::walk::{NameFilter, walk_files};
use crate::workspace::Workspace;

/// Matching lines longer than this are cut.
const MAX_LINE_CHARS: usize = 500;

/// Searches files inside a [`Workspace`].
#[derive(Clone, Debug)]
pub struct SearchTool {
    workspace: Workspace,
    max_results: usize,
    timeout: Duration,
}

impl SearchTool {
    /// At most 100 matching lines; 10 s at most.
    pub fn new(workspace: Workspace) -> Self {
        SearchTool { workspace, max_results: 100, timeout: Duration::from_secs(10) }
    }

    /// Matching lines shown per call (default 100); the rest are counted and the output says it
    /// was cut.
    #[must_use]
    pub fn with_max_results(mut self, max: usize) -> Self {
        self.max_results = max;
        self
    }
}

#[async_trait]
impl AgentTool for SearchTool {
    fn name(&self) -> &str {
        "search"
    }

    fn description(&self) -> &str {
        "Search file contents for a regular expression (Rust regex syntax). Returns path:line:text \
         for each match, honouring .gitignore. Narrow with include (a glob such as *.rs)."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression"},
                "path": {"type": "string", "description": "Directory or file to search (default: the workspace)"},
                "include": {"type": "string", "description": "Glob of files to search, e.g. *.rs"},
                "case_sensitive": {"type": "boolean", "description": "Default true"}
            },
            "required": ["pattern"]
        })
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let pattern =
            params["pattern"].as_str().ok_or_else(|| ToolError::InvalidArgs("`pattern` must be a string".into()))?;
        let path_arg = params["path"].as_str().unwrap_or(".");
        let root = self.workspace.resolve_async(path_arg).await?;
        let include = params["include"].as_str().map(NameFilter::new).transpose()?;
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(params["case_sensitive"] == false)
            .build(pattern)
            .map_err(|e| ToolError::InvalidArgs(format!("invalid pattern: {e}")))?;
        ctx.check_cancelled()?;
        let (max, timeout, cancel) = (self.max_results, self.timeout, ctx.cancel.clone());
        let (lines, total) = tokio::task::spawn_blocking(move || {
            let mut searcher =
                SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
            let (mut lines, mut total) = (Vec::new(), 0usize);
            let base = if root.is_file() {
                root.parent().map(std::path::Path::to_path_buf).unwrap_or_default()
            } else {
                root.clone()
            };
            let mut search_file = |relative: &std::path::Path, path: &std::path::Path| {
                let shown = relative.display().to_string();
                let _ = searcher.search_path(
                    &matcher,
                    path,
                    UTF8(|number, line| {
                        total += 1;
                        if lines.len() < max {
                            let line = line.trim_end_matches(['\n', '\r']);
                            let cut = line.char_indices().nth(MAX_LINE_CHARS).map_or(line.len(), |(i, _)| i);
                            lines.push(format!("{shown}:{number}:{}", &line[..cut]));
                        }
                        Ok(true)
                    }),
                );
            };
            if root.is_file() {
                let relative = root.strip_prefix(&base).unwrap_or(&root).to_path_buf();
                search_file(&relative, &root);
                return Ok((lines, total));
            }
            walk_files(&root, None, &cancel, timeout, |relative, path| {
                if include.as_ref().is_none_or(|f| f.matches(relative)) {
                    search_file(relative, path);
                }
                true
            })
            .map(|()| (lines, total))
        })
        .await
        .map_err(|e| ToolError::Failed(sinew_core::Failure::with_source(format!("search failed: {e}"), e)))??;
        let truncated = total > lines.len();
        let mut text = if lines.is_empty() { format!("No matches for `{pattern}`") } else { lines.join("\n") };
        if truncated {
            text.push_str(&format!("\n... (truncated: showing {} of {total} matches)", lines.len()));
        }
        Ok(ToolResult::text(text).with_details(json!({"total": total, "truncated": truncated})))
    }
}
