//! MCP tools as agent tools (REQ-117, REQ-118, REQ-133).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use sinew_core::{AgentTool, Content, ToolContext, ToolError, ToolResult};

use crate::client::{McpClient, Progress, RequestOptions};
use crate::protocol::{CallToolResult, McpToolInfo};

/// One MCP tool as an [`AgentTool`]. Its name may carry a prefix (`{prefix}__{name}`) so that
/// tools of several servers cannot collide; the server is called by the tool's own name. MCP
/// allows names the model providers refuse (`files.read`, 128 characters): such a name is made
/// valid with [`sinew_core::valid_tool_name`] (`files_read_1a2b3c`), and the adapter keeps the
/// original to call the server by.
///
/// Results map to content: text → text, image → image, audio → a note (the data is in
/// `details.audio`), embedded text resources → their text, blob images → images, resource links
/// → a note, and `structuredContent` → JSON text when there is no other content (always in
/// `details.structuredContent`). `isError` results and every [`crate::McpError`] become
/// [`ToolError::Failed`] naming the server and tool.
#[derive(Clone)]
pub struct McpToolAdapter {
    client: McpClient,
    info: McpToolInfo,
    name: String,
    description: String,
}

impl fmt::Debug for McpToolAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolAdapter").field("name", &self.name).field("server", &self.client.name()).finish()
    }
}

impl McpToolAdapter {
    /// An adapter for `info`, served by `client`.
    pub fn new(client: McpClient, info: McpToolInfo, prefix: Option<&str>) -> Self {
        let name = match prefix {
            Some(prefix) if !prefix.is_empty() => format!("{prefix}__{}", info.name),
            _ => info.name.clone(),
        };
        let name = sinew_core::valid_tool_name(&name);
        let description = info.description.clone().or_else(|| info.title.clone()).unwrap_or_default();
        McpToolAdapter { client, info, name, description }
    }

    /// Adapters for every tool the server offers (listing them now).
    pub async fn from_client(client: &McpClient, prefix: Option<&str>) -> Result<Vec<Self>, crate::McpError> {
        let tools = client.list_tools().await?;
        Ok(tools.into_iter().map(|info| McpToolAdapter::new(client.clone(), info, prefix)).collect())
    }

    /// The tool as the server describes it.
    pub fn info(&self) -> &McpToolInfo {
        &self.info
    }
}

#[async_trait]
impl AgentTool for McpToolAdapter {
    fn name(&self) -> &str {
        &self.name
    }

    fn label(&self) -> &str {
        self.info.title.as_deref().unwrap_or(&self.info.name)
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        self.info.input_schema.clone()
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        ctx.check_cancelled()?;
        let arguments = if params.is_null() { json!({}) } else { params };
        let sink = ctx.clone();
        let options = RequestOptions {
            cancel: Some(ctx.cancel.clone()),
            on_progress: Some(Arc::new(move |progress: Progress| sink.progress(&progress_text(&progress)))),
            ..RequestOptions::default()
        };
        let result = self
            .client
            .call_tool_with(&self.info.name, arguments, &options)
            .await
            .map_err(|error| error.into_tool_error(&self.client.name(), &self.info.name))?;
        let (result, is_error) = to_tool_result(result);
        if is_error {
            let text = result.content.iter().filter_map(Content::as_text).collect::<Vec<_>>().join("\n");
            let text = if text.is_empty() { "the tool reported an error".to_owned() } else { text };
            return Err(ToolError::Failed(text.into()));
        }
        Ok(result)
    }
}

fn progress_text(progress: &Progress) -> String {
    let amount = match progress.total {
        Some(total) => format!("{}/{}", progress.progress, total),
        None => progress.progress.to_string(),
    };
    match &progress.message {
        Some(message) => format!("{message} ({amount})"),
        None => amount,
    }
}

/// Maps an MCP result to sinew content; returns whether the tool reported an error.
pub fn to_tool_result(result: CallToolResult) -> (ToolResult, bool) {
    let mut content = Vec::with_capacity(result.content.len());
    let mut audio = Vec::new();
    for block in result.content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => content.push(Content::text(block.get("text").and_then(Value::as_str).unwrap_or_default())),
            Some("image") => match (str_of(&block, "data"), str_of(&block, "mimeType")) {
                (Some(data), Some(mime)) => {
                    content.push(Content::Image { data: data.to_owned(), mime_type: mime.to_owned() })
                }
                _ => content.push(Content::text("[an image the server sent without data or type]")),
            },
            Some("audio") => {
                let mime = str_of(&block, "mimeType").unwrap_or("audio");
                let size = str_of(&block, "data").map_or(0, |d| d.len() / 4 * 3);
                content.push(Content::text(format!("[{mime} audio, about {size} bytes, not shown to the model]")));
                audio.push(block);
            }
            Some("resource") => content.push(resource_content(block.get("resource").unwrap_or(&Value::Null))),
            Some("resource_link") => {
                let uri = str_of(&block, "uri").unwrap_or_default();
                let name = str_of(&block, "name").unwrap_or(uri);
                let description = str_of(&block, "description").map(|d| format!(": {d}")).unwrap_or_default();
                content.push(Content::text(format!("[resource {name} <{uri}>{description}]")));
            }
            _ => content.push(Content::text(block.to_string())),
        }
    }
    if content.is_empty()
        && let Some(structured) = &result.structured_content
    {
        content.push(Content::text(structured.to_string()));
    }
    let mut details = serde_json::Map::new();
    if let Some(structured) = result.structured_content {
        details.insert("structuredContent".into(), structured);
    }
    if !audio.is_empty() {
        details.insert("audio".into(), Value::Array(audio));
    }
    let details = if details.is_empty() { Value::Null } else { Value::Object(details) };
    (ToolResult { content, details, child_loop_id: None }, result.is_error)
}

fn str_of<'a>(block: &'a Value, key: &str) -> Option<&'a str> {
    block.get(key).and_then(Value::as_str)
}

fn resource_content(resource: &Value) -> Content {
    let uri = str_of(resource, "uri").unwrap_or_default();
    if let Some(text) = str_of(resource, "text") {
        return Content::text(format!("[resource <{uri}>]\n{text}"));
    }
    match (str_of(resource, "blob"), str_of(resource, "mimeType")) {
        (Some(blob), Some(mime)) if mime.starts_with("image/") => {
            Content::Image { data: blob.to_owned(), mime_type: mime.to_owned() }
        }
        (Some(blob), mime) => Content::text(format!(
            "[resource <{uri}>: {} binary, about {} bytes]",
            mime.unwrap_or("application/octet-stream"),
            blob.len() / 4 * 3
        )),
        _ => Content::text(format!("[resource <{uri}>]")),
    }
}

impl McpClient {
    /// Every tool of this server as an agent tool, optionally prefixed (`{prefix}__{name}`).
    pub async fn agent_tools(&self, prefix: Option<&str>) -> Result<Vec<Arc<dyn AgentTool>>, crate::McpError> {
        let tools = McpToolAdapter::from_client(self, prefix).await?;
        Ok(tools.into_iter().map(|tool| Arc::new(tool) as Arc<dyn AgentTool>).collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_content_kind_maps_to_content() {
        let result = CallToolResult {
            content: vec![
                json!({"type": "text", "text": "hello"}),
                json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
                json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}),
                json!({"type": "resource", "resource": {"uri": "file:///a.txt", "text": "body"}}),
                json!({"type": "resource", "resource": {"uri": "file:///b.png", "blob": "aGk=", "mimeType": "image/png"}}),
                json!({"type": "resource_link", "uri": "file:///c", "name": "c", "description": "a file"}),
            ],
            structured_content: Some(json!({"result": 42})),
            is_error: false,
        };
        let (result, is_error) = to_tool_result(result);
        assert!(!is_error);
        assert_eq!(result.content[0], Content::text("hello"));
        assert_eq!(result.content[1], Content::Image { data: "aGk=".into(), mime_type: "image/png".into() });
        assert_eq!(result.content[2], Content::text("[audio/wav audio, about 3 bytes, not shown to the model]"));
        assert_eq!(result.content[3], Content::text("[resource <file:///a.txt>]\nbody"));
        assert_eq!(result.content[4], Content::Image { data: "aGk=".into(), mime_type: "image/png".into() });
        assert_eq!(result.content[5], Content::text("[resource c <file:///c>: a file]"));
        assert_eq!(result.details["structuredContent"], json!({"result": 42}));
        assert_eq!(result.details["audio"][0]["mimeType"], "audio/wav");
    }

    #[test]
    fn structured_content_alone_becomes_json_text() {
        let result = CallToolResult { content: vec![], structured_content: Some(json!({"a": 1})), is_error: true };
        let (result, is_error) = to_tool_result(result);
        assert!(is_error);
        assert_eq!(result.content, [Content::text(r#"{"a":1}"#)]);
    }
}
