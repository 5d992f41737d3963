//! Tools: what an agent can do besides talking.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::content::Content;
use crate::error::ToolError;

/// The longest tool name the providers accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// Whether `name` follows the rule every provider enforces on tool names:
/// `^[a-zA-Z0-9_-]{1,64}$` (Anthropic, OpenAI and Gemini reject anything else).
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=MAX_TOOL_NAME_LEN).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `name` made valid (see [`is_valid_tool_name`]) for tools named elsewhere (MCP's `files.read`,
/// an OpenAPI operation): every other character becomes `_`, and a name that had to change
/// keeps a short hash of the original (`files_read_1a2b3c`), so that two names that differ only
/// in such characters (`files.read`, `files/read`) stay apart, cut to 64 characters. A valid
/// name is returned as it is. The caller keeps the original to call the tool by it.
pub fn valid_tool_name(name: &str) -> String {
    if is_valid_tool_name(name) {
        return name.to_owned();
    }
    let mapped: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    // FNV-1a: stable across processes and versions, unlike the std hasher.
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    let suffix = format!("_{:06x}", hash & 0xff_ffff);
    let keep = MAX_TOOL_NAME_LEN - suffix.len();
    let head: String = mapped.chars().take(keep).collect();
    let head = if head.is_empty() { "tool".to_owned() } else { head };
    format!("{head}{suffix}")
}

/// Why a set of tools cannot be offered to a model: a name that breaks the providers' rule, or
/// two tools with one name.
pub fn check_tool_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for name in names {
        if !is_valid_tool_name(name) {
            return Err(format!(
                "tool name `{name}` is not accepted by the providers: use 1 to {MAX_TOOL_NAME_LEN} of a-z, A-Z, 0-9, `_` and `-` (sinew_core::valid_tool_name maps a name to such a one)"
            ));
        }
        if !seen.insert(name) {
            return Err(format!("two tools are named `{name}`: tool names must be unique"));
        }
    }
    Ok(())
}

/// A tool as the model sees it: name, description, JSON Schema of its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by: 1 to [`MAX_TOOL_NAME_LEN`] of a-z, A-Z, 0-9, `_` and `-`.
    pub name: String,
    /// What the tool does and when to use it, for the model.
    pub description: String,
    /// A JSON Schema (an object schema) of the arguments.
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
#[non_exhaustive]
pub struct ToolContext {
    /// The model's id for the call.
    pub tool_call_id: String,
    /// The name the tool was called by.
    pub tool_name: String,
    /// The run that called the tool (`None` outside an agent loop). A sub-agent tool makes it its
    /// child run's `parent_loop_id`.
    pub loop_id: Option<Arc<str>>,
    /// Cancelled when the run is aborted. Long-running tools must watch it.
    pub cancel: CancellationToken,
    /// Receives [`update`](Self::update)'s partial results; `None` drops them (the agent loop
    /// leaves it `None` when no event reader, observer or update hook would receive them).
    pub on_update: Option<ToolUpdateFn>,
    /// Receives [`progress`](Self::progress)'s notes; `None` drops them (as `on_update`).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_providers_rule_and_invalid_ones_map_apart() {
        for valid in ["echo", "read_file", "jira__create-issue", &"a".repeat(64)] {
            assert!(is_valid_tool_name(valid), "{valid}");
            assert_eq!(valid_tool_name(valid), valid, "a valid name is kept");
        }
        for invalid in ["", "files.read", "a b", "naïve", &"a".repeat(65)] {
            assert!(!is_valid_tool_name(invalid), "{invalid}");
            let mapped = valid_tool_name(invalid);
            assert!(is_valid_tool_name(&mapped), "{invalid} -> {mapped}");
        }
        assert!(valid_tool_name("files.read").starts_with("files_read_"));
        // Names that differ only in what is replaced stay apart, and the mapping is stable.
        assert_ne!(valid_tool_name("files.read"), valid_tool_name("files/read"));
        assert_ne!(valid_tool_name("files.read"), "files_read");
        assert_eq!(valid_tool_name("files.read"), valid_tool_name("files.read"));
        let long = format!("{}.x", "a".repeat(100));
        assert_eq!(valid_tool_name(&long).len(), MAX_TOOL_NAME_LEN);
        assert_ne!(valid_tool_name(&long), valid_tool_name(&format!("{}.y", "a".repeat(100))));
    }

    #[test]
    fn duplicates_and_invalid_names_are_reported() {
        assert_eq!(check_tool_names(["a", "b"]), Ok(()));
        assert_eq!(check_tool_names(["a", "b", "a"]), Err("two tools are named `a`: tool names must be unique".into()));
        assert!(check_tool_names(["a", "x.y"]).unwrap_err().contains("`x.y` is not accepted"));
    }
}
