//! `read_file`: a text file with line numbers (a window of it with `offset`/`limit`), or an image.

use std::path::Path;

use async_trait::async_trait;
use base64::Engine;
use serde_json::{Value, json};
use sinew_core::{AgentTool, Content, ToolContext, ToolError, ToolResult};
use tokio::io::AsyncBufReadExt;

use crate::workspace::Workspace;

/// Text files larger than this are read only through `offset`/`limit`.
pub const MAX_TEXT_BYTES: u64 = 1024 * 1024;
/// Images larger than this are refused.
pub const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// Lines returned when no `limit` is given.
pub const DEFAULT_LINE_LIMIT: usize = 2000;
/// Longer lines are cut, with a marker.
pub const MAX_LINE_CHARS: usize = 2000;
/// What one line may hold in memory while it is read: enough for [`MAX_LINE_CHARS`] characters
/// of any width; the rest of a longer line is read and dropped.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// Reads files inside a [`Workspace`].
#[derive(Clone, Debug)]
pub struct ReadFileTool {
    workspace: Workspace,
}

impl ReadFileTool {
    /// Reads any file inside `workspace`.
    pub fn new(workspace: Workspace) -> Self {
        ReadFileTool { workspace }
    }
}

fn image_mime(path: &Path) -> Option<&'static str> {
    match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

fn failed(path: &str, error: std::io::Error) -> ToolError {
    ToolError::Failed(sinew_core::Failure::with_source(format!("cannot read {path}: {error}"), error))
}

#[async_trait]
impl AgentTool for ReadFileTool {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read a file. Text comes back with line numbers; use offset (first line, 1-based) and limit \
         (number of lines) for large files. Images (png, jpg, gif, webp) come back as images."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file, relative to the workspace or absolute"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read"}
            },
            "required": ["path"]
        })
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let path_arg =
            params["path"].as_str().ok_or_else(|| ToolError::InvalidArgs("`path` must be a string".into()))?;
        let offset = params["offset"].as_u64().map(|n| n.max(1) as usize);
        let limit = params["limit"].as_u64().map(|n| n.max(1) as usize);
        let path = self.workspace.resolve_async(path_arg).await?;
        ctx.check_cancelled()?;
        let metadata = tokio::fs::metadata(&path).await.map_err(|e| failed(path_arg, e))?;
        if metadata.is_dir() {
            return Err(ToolError::Failed(format!("{path_arg} is a directory; use list_files").into()));
        }
        let details = json!({"path": path.display().to_string()});
        if let Some(mime_type) = image_mime(&path) {
            if metadata.len() > MAX_IMAGE_BYTES {
                return Err(ToolError::Failed(
                    format!("Image too large: {path_arg} is {} bytes, the limit is {MAX_IMAGE_BYTES}", metadata.len())
                        .into(),
                ));
            }
            ctx.check_cancelled()?;
            let bytes = tokio::fs::read(&path).await.map_err(|e| failed(path_arg, e))?;
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            return Ok(ToolResult {
                content: vec![Content::text(format!("Image {path_arg}")), Content::image(data, mime_type)],
                details,
                child_loop_id: None,
            });
        }
        if metadata.len() > MAX_TEXT_BYTES && offset.is_none() && limit.is_none() {
            return Err(ToolError::Failed(format!(
                "File too large: {path_arg} is {} bytes (limit {MAX_TEXT_BYTES}). Use offset/limit to read it in parts.",
                metadata.len()
            ).into()));
        }
        ctx.check_cancelled()?;
        let file = tokio::fs::File::open(&path).await.map_err(|e| failed(path_arg, e))?;
        let mut reader = tokio::io::BufReader::new(file);
        // Binary files are reported, not mangled.
        let head = reader.fill_buf().await.map_err(|e| failed(path_arg, e))?;
        if head[..head.len().min(8192)].contains(&0) {
            return Err(ToolError::Failed(format!("{path_arg} is a binary file ({} bytes)", metadata.len()).into()));
        }
        let first = offset.unwrap_or(1);
        let wanted = limit.unwrap_or(DEFAULT_LINE_LIMIT);
        let mut out = String::new();
        let (mut number, mut shown, mut line) = (0usize, 0usize, Vec::new());
        // However many lines are asked for, no more than a whole small file's worth comes back.
        let mut full = false;
        loop {
            line.clear();
            if !read_line_bounded(&mut reader, &mut line).await.map_err(|e| failed(path_arg, e))? {
                break;
            }
            number += 1;
            if number < first {
                continue;
            }
            if shown == wanted || full {
                // Count the rest without keeping it.
                continue;
            }
            if out.len() as u64 >= MAX_TEXT_BYTES {
                full = true;
                continue;
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            let cut = text.char_indices().nth(MAX_LINE_CHARS).map(|(i, _)| i);
            out.push_str(&format!("{number:>6}\t{}", &text[..cut.unwrap_or(text.len())]));
            if cut.is_some() {
                out.push_str(" [line truncated]");
            }
            out.push('\n');
            shown += 1;
        }
        let header = if shown == 0 {
            format!("{path_arg}: {number} lines; nothing at line {first}")
        } else {
            format!("{path_arg} (lines {first}-{} of {number})", first + shown - 1)
        };
        let mut text = header;
        text.push('\n');
        text.push_str(&out);
        if first + shown - 1 < number && shown > 0 {
            text.push_str(&format!(
                "[{} more lines: use offset={} to continue]\n",
                number - (first + shown - 1),
                first + shown
            ));
        }
        Ok(ToolResult { content: vec![Content::text(text)], details, child_loop_id: None })
    }
}

/// Reads one line into `line`, keeping at most [`MAX_LINE_BYTES`] of it (the rest is read and
/// dropped; what is kept ends with the `\n` if the line was whole). `false` at the end of the file.
async fn read_line_bounded(
    reader: &mut (impl tokio::io::AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<bool> {
    let mut read_any = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(read_any);
        }
        read_any = true;
        let (piece, complete) = match memchr::memchr(b'\n', buffer) {
            Some(at) => (&buffer[..=at], true),
            None => (buffer, false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        let used = piece.len();
        reader.consume(used);
        if complete {
            return Ok(true);
        }
    }
}
