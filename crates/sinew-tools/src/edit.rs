//! `edit_file`: replaces one exact occurrence of a text, atomically, and reports the diff.

use async_trait::async_trait;
use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};

use crate::fs_util::atomic_write;
use crate::workspace::Workspace;

/// Lines of context around a change in the reported diff.
const CONTEXT: usize = 3;

/// Edits files inside a [`Workspace`]: `old_text` must occur exactly once. Line endings are the
/// file's, whatever the model sends: every line keeps its own (CRLF, LF, or a mix of both), and
/// lines the edit adds take the ending of the line they replace.
#[derive(Clone, Debug)]
pub struct EditFileTool {
    workspace: Workspace,
    approval: bool,
}

impl EditFileTool {
    /// Edits any file inside `workspace`, without asking for approval.
    pub fn new(workspace: Workspace) -> Self {
        EditFileTool { workspace, approval: false }
    }

    /// Every call suspends the run until the host approves it (the agent's approval flow).
    #[must_use]
    pub fn requiring_approval(mut self) -> Self {
        self.approval = true;
        self
    }
}

#[async_trait]
impl AgentTool for EditFileTool {
    fn name(&self) -> &str {
        "edit_file"
    }

    fn description(&self) -> &str {
        "Replace old_text with new_text in a file. old_text must match exactly once: include enough \
         surrounding lines to make it unique."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the workspace or absolute"},
                "old_text": {"type": "string", "description": "The exact text to replace"},
                "new_text": {"type": "string", "description": "The replacement"}
            },
            "required": ["path", "old_text", "new_text"]
        })
    }

    fn requires_approval(&self, _params: &Value) -> bool {
        self.approval
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let arg = |name: &str| {
            params[name].as_str().ok_or_else(|| ToolError::InvalidArgs(format!("`{name}` must be a string")))
        };
        let (path_arg, old_text, new_text) = (arg("path")?, arg("old_text")?, arg("new_text")?);
        if old_text.is_empty() {
            return Err(ToolError::InvalidArgs("`old_text` must not be empty".into()));
        }
        let path = self.workspace.resolve_async(path_arg).await?;
        ctx.check_cancelled()?;
        let bytes = tokio::fs::read(&path).await.map_err(|e| {
            ToolError::Failed(sinew_core::Failure::with_source(format!("cannot read {path_arg}: {e}"), e))
        })?;
        if bytes[..bytes.len().min(8192)].contains(&0) {
            return Err(ToolError::Failed(
                format!("{path_arg} is a binary file; edit_file changes text files only").into(),
            ));
        }
        let original = String::from_utf8(bytes).map_err(|_| {
            ToolError::Failed(format!("{path_arg} is not UTF-8 text; edit_file changes text files only").into())
        })?;
        // Matched and replaced with LF line endings; each line gets its own back when written.
        let endings = crlf_endings(&original);
        let content = if endings.contains(&true) { original.replace("\r\n", "\n") } else { original };
        let (old, new) = (old_text.replace("\r\n", "\n"), new_text.replace("\r\n", "\n"));
        let mut matches = content.match_indices(old.as_str());
        let Some((at, _)) = matches.next() else {
            // The closest-line search is CPU work on a file of any size: off the runtime.
            let (path_arg, old) = (path_arg.to_owned(), old.clone());
            let message =
                tokio::task::spawn_blocking(move || not_found(&path_arg, &content, &old)).await.map_err(|e| {
                    ToolError::Failed(sinew_core::Failure::with_source(
                        format!("searching for old_text failed: {e}"),
                        e,
                    ))
                })?;
            return Err(ToolError::Failed(message.into()));
        };
        let more = matches.count();
        if more > 0 {
            return Err(ToolError::Failed(
                format!(
                    "old_text matches {} locations in {path_arg}. Include more context to make it unique.",
                    more + 1
                )
                .into(),
            ));
        }
        let edited = content.replacen(old.as_str(), &new, 1);
        let diff = unified_diff(path_arg, &content, &edited);
        let output = if endings.contains(&true) {
            let start_line = content[..at].matches('\n').count();
            let endings = edited_endings(&endings, start_line, old.matches('\n').count(), new.matches('\n').count());
            with_endings(&edited, &endings)
        } else {
            edited
        };
        ctx.check_cancelled()?;
        atomic_write(&path, output.as_bytes()).await?;
        let details = json!({
            "path": path.display().to_string(),
            "old_lines": old.lines().count(),
            "new_lines": new.lines().count(),
            "diff": diff,
        });
        Ok(ToolResult::text(format!("Edited {path_arg}\n{diff}")).with_details(details))
    }
}

/// For each `\n` of `text`, in order, whether it ends a CRLF.
fn crlf_endings(text: &str) -> Vec<bool> {
    let bytes = text.as_bytes();
    memchr::memchr_iter(b'\n', bytes).map(|at| at > 0 && bytes[at - 1] == b'\r').collect()
}

/// The endings after replacing, from line `start`, `old_lines` line breaks with `new_lines`: the
/// lines before and after keep theirs, the new ones take the ending of the line they replace.
fn edited_endings(endings: &[bool], start: usize, old_lines: usize, new_lines: usize) -> Vec<bool> {
    let crlf_lines = endings.iter().filter(|e| **e).count();
    let fill = endings.get(start).copied().unwrap_or(2 * crlf_lines >= endings.len());
    let after = endings.get(start + old_lines..).unwrap_or_default();
    let before = &endings[..start.min(endings.len())];
    before.iter().copied().chain(std::iter::repeat_n(fill, new_lines)).chain(after.iter().copied()).collect()
}

/// `text` (LF line breaks) with each break written as `endings` says (CRLF for `true`).
fn with_endings(text: &str, endings: &[bool]) -> String {
    let mut out = String::with_capacity(text.len() + endings.len());
    for (i, piece) in text.split('\n').enumerate() {
        if i > 0 {
            out.push_str(if endings.get(i - 1).copied().unwrap_or(false) { "\r\n" } else { "\n" });
        }
        out.push_str(piece);
    }
    out
}

/// The error for an `old_text` that is not in the file, with the closest line as a hint.
fn not_found(path: &str, content: &str, old: &str) -> String {
    let mut message = format!("old_text not found in {path}.");
    let wanted = old.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let best = content
        .lines()
        .enumerate()
        .map(|(i, line)| (similarity(wanted, line.trim()), i, line))
        .filter(|(score, _, _)| *score >= 0.6)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, i, line)) = best {
        message.push_str(&format!(" Did you mean line {}: {}", i + 1, line.trim()));
    }
    message
}

/// How alike two lines are, 0 to 1: the share of characters in their longest common
/// subsequence (whitespace ignored).
fn similarity(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().filter(|c| !c.is_whitespace()).collect();
    let b: Vec<char> = b.chars().filter(|c| !c.is_whitespace()).collect();
    if a.is_empty() || b.is_empty() || a.len() > 400 || b.len() > 400 {
        return if a == b { 1.0 } else { 0.0 };
    }
    let mut row = vec![0usize; b.len() + 1];
    for ca in &a {
        let mut diagonal = 0;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == cb { diagonal + 1 } else { row[j + 1].max(row[j]) };
            diagonal = above;
        }
    }
    2.0 * row[b.len()] as f64 / (a.len() + b.len()) as f64
}

/// A one-hunk unified diff of `before` → `after` (an edit changes one region).
fn unified_diff(path: &str, before: &str, after: &str) -> String {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..].iter().rev().zip(new[prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let start = prefix.saturating_sub(CONTEXT);
    let old_end = (old.len() - suffix + CONTEXT).min(old.len());
    let new_end = (new.len() - suffix + CONTEXT).min(new.len());
    let mut diff = format!(
        "--- a/{path}\n+++ b/{path}\n@@ -{},{} +{},{} @@\n",
        start + 1,
        old_end - start,
        start + 1,
        new_end - start
    );
    for line in &old[start..prefix] {
        diff.push_str(&format!(" {line}\n"));
    }
    for line in &old[prefix..old.len() - suffix] {
        diff.push_str(&format!("-{line}\n"));
    }
    for line in &new[prefix..new.len() - suffix] {
        diff.push_str(&format!("+{line}\n"));
    }
    for line in &old[old.len() - suffix..old_end] {
        diff.push_str(&format!(" {line}\n"));
    }
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diffs_show_the_changed_lines_with_context() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let after = "a\nb\nc\nd\nE1\nE2\nf\ng\nh\n";
        assert_eq!(
            unified_diff("x.txt", before, after),
            "--- a/x.txt\n+++ b/x.txt\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E1\n+E2\n f\n g\n h\n"
        );
    }

    #[test]
    fn similar_lines_score_high_and_others_low() {
        assert!(similarity("let x = 1;", "let  x = 1 ;") > 0.99);
        assert!(similarity("fn main() {", "fn mian() {") > 0.8);
        assert!(similarity("fn main() {", "struct Config;") < 0.6);
    }
}
