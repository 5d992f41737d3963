//! Small tools for tests.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};

/// `echo`: returns its `text` argument.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoTool;

#[async_trait]
impl AgentTool for EchoTool {
    fn name(&self) -> &str {
        "echo"
    }

    fn description(&self) -> &str {
        "Returns the given text."
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }

    async fn execute(&self, params: Value, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
        match params.get("text").and_then(Value::as_str) {
            Some(text) => Ok(ToolResult::text(text)),
            None => Err(ToolError::InvalidArgs("`text` must be a string".into())),
        }
    }
}

type ToolFn = Arc<dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send + Sync>;

/// A tool made from an async closure.
///
/// ```
/// use sinew_core::ToolResult;
/// use sinew_testing::FnTool;
///
/// let upper = FnTool::new("upper", |args, _ctx| async move {
///     Ok(ToolResult::text(args["text"].as_str().unwrap_or_default().to_uppercase()))
/// });
/// # let _ = upper;
/// ```
#[derive(Clone)]
pub struct FnTool {
    name: String,
    description: String,
    schema: Value,
    approval: bool,
    run: ToolFn,
}

impl FnTool {
    /// A tool called `name` whose calls run `run(arguments, context)`; described as "A test tool.",
    /// with schema `{"type": "object"}` and no approval.
    pub fn new<F, Fut>(name: impl Into<String>, run: F) -> Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolResult, ToolError>> + Send + 'static,
    {
        FnTool {
            name: name.into(),
            description: "A test tool.".into(),
            schema: json!({"type": "object"}),
            approval: false,
            run: Arc::new(move |args, ctx| Box::pin(run(args, ctx))),
        }
    }

    /// Replaces the description the model sees (default: "A test tool.").
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Replaces the arguments' JSON Schema (default: `{"type": "object"}`).
    #[must_use]
    pub fn with_schema(mut self, schema: Value) -> Self {
        self.schema = schema;
        self
    }

    /// Every call of this tool needs approval.
    #[must_use]
    pub fn requiring_approval(mut self) -> Self {
        self.approval = true;
        self
    }
}

impl fmt::Debug for FnTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnTool").field("name", &self.name).finish_non_exhaustive()
    }
}

#[async_trait]
impl AgentTool for FnTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        self.schema.clone()
    }

    fn requires_approval(&self, _params: &Value) -> bool {
        self.approval
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        (self.run)(params, ctx).await
    }
}
