//! Tools: what an agent can do besides talking.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::Content;
use crate::error::ToolError;

/// A tool as the model sees it: name, description, JSON Schema of its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// What a tool call produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// What the model sees.
    pub content: Vec<Content>,
    /// Structured details for hosts and UIs (exit codes, paths, diffs); never sent to the model.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// The loop id of a sub-agent run this call started, for tracing parent → child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_loop_id: Option<String>,
}

impl ToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult { content: vec![Content::text(text)], ..ToolResult::default() }
    }

    /// Sets the details.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }
}

/// Receives partial results while a tool runs.
pub type ToolUpdateFn = Arc<dyn Fn(ToolResult) + Send + Sync>;
/// Receives progress notes while a tool runs.
pub type ProgressFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What a running tool knows about its call.
#[derive(Clone)]
pub struct ToolContext {
    pub tool_call_id: String,
    pub tool_name: String,
    /// The run that called the tool (`None` outside an agent loop). A sub-agent tool makes it its
    /// child run's `parent_loop_id`.
    pub loop_id: Option<Arc<str>>,
    /// Cancelled when the run is aborted. Long-running tools must watch it.
    pub cancel: CancellationToken,
    pub on_update: Option<ToolUpdateFn>,
    pub on_progress: Option<ProgressFn>,
}

impl ToolContext {
    /// A context without callbacks.
    pub fn new(tool_call_id: impl Into<String>, tool_name: impl Into<String>, cancel: CancellationToken) -> Self {
        ToolContext {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            loop_id: None,
            cancel,
            on_update: None,
            on_progress: None,
        }
    }

    /// Sets the calling run's loop id.
    #[must_use]
    pub fn with_loop_id(mut self, loop_id: Arc<str>) -> Self {
        self.loop_id = Some(loop_id);
        self
    }

    /// Reports a partial result (shown as a `ToolExecutionUpdate` event).
    pub fn update(&self, partial: ToolResult) {
        if let Some(f) = &self.on_update {
            f(partial);
        }
    }

    /// Reports progress (shown as a `ProgressMessage` event).
    pub fn progress(&self, text: &str) {
        if let Some(f) = &self.on_progress {
            f(text);
        }
    }

    /// `Err(ToolError::Cancelled)` once the call is cancelled; for checks before each I/O step.
    pub fn check_cancelled(&self) -> Result<(), ToolError> {
        if self.cancel.is_cancelled() { Err(ToolError::Cancelled) } else { Ok(()) }
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tool_call_id", &self.tool_call_id)
            .field("tool_name", &self.tool_name)
            .field("loop_id", &self.loop_id)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// A tool an agent can call.
///
/// ```
/// use async_trait::async_trait;
/// use serde_json::{json, Value};
/// use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};
///
/// struct Echo;
///
/// #[async_trait]
/// impl AgentTool for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn description(&self) -> &str { "Repeats its input." }
///     fn parameters_schema(&self) -> Value {
///         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
///     }
///     async fn execute(&self, params: Value, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
///         let text = params["text"].as_str().ok_or_else(|| ToolError::InvalidArgs("text must be a string".into()))?;
///         Ok(ToolResult::text(text))
///     }
/// }
/// ```
#[async_trait]
pub trait AgentTool: Send + Sync {
    /// The name the model calls it by; unique within an agent.
    fn name(&self) -> &str;

    /// A human-readable name for UIs.
    fn label(&self) -> &str {
        self.name()
    }

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the parameters.
    fn parameters_schema(&self) -> Value;

    /// Whether this call must be approved by a human before it runs.
    fn requires_approval(&self, _params: &Value) -> bool {
        false
    }

    /// Runs the tool.
    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError>;

    /// The definition sent to the model.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters_schema(),
        }
    }
}
