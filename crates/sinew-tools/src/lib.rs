//! Built-in coding tools for sinew agents.
//!
//! Every file tool works inside a [`Workspace`]: relative paths resolve against its root, and a
//! confined workspace refuses paths that leave it (`..`, absolute paths elsewhere, symbolic links
//! pointing out).
//!
//! Today: [`ReadFileTool`] (line-numbered text, windows with `offset`/`limit`, images, size limits,
//! binary files detected) and [`WriteFileTool`] (atomic: a temporary file renamed over the
//! target, which keeps its mode) and [`EditFileTool`] (one exact match, CRLF kept, a unified diff
//! in `details`), and [`BashTool`] (its own process group, and every process carrying the
//! call's cookie, killed on timeout, cancellation or completion; both pipes read at once, never
//! waited on past the end; the agent's secrets kept out of the environment; deny patterns;
//! output bounded), [`ListFilesTool`] and
//! [`SearchTool`] (ripgrep's own crates in-process: `.gitignore` honoured, no `find`, `rg` or
//! `grep` binary needed).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use sinew_core::{AgentTool, CancellationToken, ToolContext};
//! use sinew_tools::{ReadFileTool, Workspace};
//!
//! let dir = std::env::temp_dir().join(format!("sinew-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(dir.join("notes.txt"), "alpha\nbeta\n").unwrap();
//! let tool = ReadFileTool::new(Workspace::confined(&dir).unwrap());
//! let ctx = ToolContext::new("call-1", "read_file", CancellationToken::new());
//! let result = tool.execute(serde_json::json!({"path": "notes.txt"}), ctx).await.unwrap();
//! assert!(sinew_core::join_text(&result.content, "").contains("     2\tbeta"));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # });
//! ```
//!
//! ## Feature flags
//! None.

mod bash;
mod edit;
mod fs_util;
mod list;
mod read;
mod search;
mod walk;
mod workspace;
mod write;

use std::sync::Arc;

use sinew_core::AgentTool;

/// The six built-in tools (REQ-053) on one workspace: `bash` (running in its root), `read_file`,
/// `write_file`, `edit_file`, `list_files`, `search`.
pub fn default_tools(workspace: &Workspace) -> Vec<Arc<dyn AgentTool>> {
    vec![
        Arc::new(BashTool::new(workspace.root())),
        Arc::new(ReadFileTool::new(workspace.clone())),
        Arc::new(WriteFileTool::new(workspace.clone())),
        Arc::new(EditFileTool::new(workspace.clone())),
        Arc::new(ListFilesTool::new(workspace.clone())),
        Arc::new(SearchTool::new(workspace.clone())),
    ]
}

pub use bash::{BashTool, ConfirmFn, DEFAULT_DENY_PATTERNS, is_secret_env_var};
pub use edit::EditFileTool;
pub use list::ListFilesTool;
pub use read::{DEFAULT_LINE_LIMIT, MAX_IMAGE_BYTES, MAX_LINE_CHARS, MAX_TEXT_BYTES, ReadFileTool};
pub use search::SearchTool;
pub use workspace::Workspace;
pub use write::WriteFileTool;
