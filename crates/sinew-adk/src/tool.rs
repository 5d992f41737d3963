//! The tool side: ADK's `BaseTool` as the [`Tool`] trait, tools from Rust closures
//! ([`FunctionTool`]), and [`ToolAdapter`], which makes any sinew [`AgentTool`] (the built-in
//! tools, MCP tools, OpenAPI tools) an ADK tool (spec 000, "Tool Adapter").

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use sinew_core::{AgentTool, ToolError};

use crate::context::ToolContext;
use crate::genai::FunctionDeclaration;

/// A tool an [`LlmAgent`](crate::LlmAgent) offers its model (ADK's `BaseTool`). Object-safe.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// Its declaration; `None` for a tool the model runs itself (nothing to declare).
    fn declaration(&self) -> Option<FunctionDeclaration>;

    /// A long-running call suspends the invocation until the client sends its response.
    fn is_long_running(&self) -> bool {
        false
    }

    /// Whether a call with `args` needs the user's confirmation before it runs (ADK's
    /// `require_confirmation`).
    fn requires_confirmation(&self, args: &Map<String, Value>) -> bool {
        let _ = args;
        false
    }

    /// Runs a call. The answer becomes the function response: an object as is, anything else as
    /// `{"result": value}`. An error goes to the `on_tool_error` callbacks; when none answers for
    /// it, an error event is written and the run fails, as in adk-python. A failure the model
    /// should read and act on is an answer: `Ok(json!({"error": ...}))`.
    async fn run(&self, args: Map<String, Value>, ctx: &ToolContext) -> Result<Value, ToolError>;
}

/// A function response from what a tool answered: an object as is, anything else wrapped as
/// `{"result": value}`.
pub fn response_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => Map::from_iter([("result".to_owned(), other)]),
    }
}

type Handler =
    Arc<dyn Fn(Map<String, Value>, ToolContext) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

type NeedsConfirmation = Arc<dyn Fn(&Map<String, Value>) -> bool + Send + Sync>;

/// A tool from a Rust closure and a JSON schema of its arguments (ADK's `FunctionTool`).
///
/// ```
/// use serde_json::json;
/// use sinew_adk::FunctionTool;
///
/// let weather = FunctionTool::new(
///     "get_weather",
///     "Returns the weather for a city.",
///     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
///     |args, _ctx| async move { Ok(json!({"city": args["city"], "forecast": "sunny"})) },
/// );
/// # let _ = weather;
/// ```
#[derive(Clone)]
pub struct FunctionTool {
    name: String,
    description: String,
    parameters: Value,
    long_running: bool,
    confirmation: Option<NeedsConfirmation>,
    handler: Handler,
}

impl std::fmt::Debug for FunctionTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionTool")
            .field("name", &self.name)
            .field("long_running", &self.long_running)
            .field("confirmation", &self.confirmation.is_some())
            .finish_non_exhaustive()
    }
}

impl FunctionTool {
    /// `name` runs `handler` with the call's arguments and its context; `parameters` is their
    /// JSON schema (`Value::Null` for a function without parameters). A call missing an argument
    /// the schema requires gets ADK's error response without running the handler.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, parameters: Value, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        FunctionTool {
            name: name.into(),
            description: description.into(),
            parameters,
            long_running: false,
            confirmation: None,
            handler: Arc::new(move |args, ctx| Box::pin(handler(args, ctx))),
        }
    }

    /// Marks the tool long-running (ADK's `LongRunningFunctionTool`).
    #[must_use]
    pub fn long_running(mut self) -> Self {
        self.long_running = true;
        self
    }

    /// Every call needs the user's confirmation.
    #[must_use]
    pub fn require_confirmation(self) -> Self {
        self.require_confirmation_if(|_| true)
    }

    /// Calls for which `needs` holds need the user's confirmation.
    #[must_use]
    pub fn require_confirmation_if(
        mut self,
        needs: impl Fn(&Map<String, Value>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.confirmation = Some(Arc::new(needs));
        self
    }
}

#[async_trait]
impl Tool for FunctionTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn declaration(&self) -> Option<FunctionDeclaration> {
        let parameters = Some(self.parameters.clone()).filter(|p| !p.is_null());
        Some(FunctionDeclaration::new(&self.name, &self.description, parameters))
    }

    fn is_long_running(&self) -> bool {
        self.long_running
    }

    fn requires_confirmation(&self, args: &Map<String, Value>) -> bool {
        self.confirmation.as_ref().is_some_and(|needs| needs(args))
    }

    async fn run(&self, args: Map<String, Value>, ctx: &ToolContext) -> Result<Value, ToolError> {
        let missing: Vec<&str> = self.parameters["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|name| !args.contains_key(*name))
            .collect();
        if !missing.is_empty() {
            return Ok(json!({"error": format!(
                "Invoking `{}()` failed as the following mandatory input parameters are not present:\n{}\nYou could retry calling this tool, but it is IMPORTANT for you to provide all the mandatory parameters.",
                self.name,
                missing.join("\n")
            )}));
        }
        (self.handler)(args, ctx.clone()).await
    }
}

/// ADK's `exit_loop` tool: ends the enclosing [`LoopAgent`](crate::LoopAgent) (it escalates) and
/// shows its result without another model call.
pub fn exit_loop() -> FunctionTool {
    FunctionTool::new(
        "exit_loop",
        "Exits the loop.\n\nCall this function only when you are instructed to do so.",
        Value::Null,
        |_args, ctx| {
            ctx.escalate();
            ctx.skip_summarization();
            async { Ok(Value::Null) }
        },
    )
}

/// Any sinew [`AgentTool`] as an ADK [`Tool`]: its schema becomes the declaration's
/// `parametersJsonSchema`, a call its `execute` (cancelled with the invocation), its text result
/// `{"result": text}` (its `details` are the host's and stay out), a failure `{"error": message}`
/// for the model to read, as in sinew's own loop; a tool that asks for approval asks for ADK's
/// confirmation.
#[derive(Clone)]
pub struct ToolAdapter {
    tool: Arc<dyn AgentTool>,
}

impl std::fmt::Debug for ToolAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolAdapter").field("tool", &self.tool.name()).finish()
    }
}

impl ToolAdapter {
    /// Adapts `tool`.
    pub fn new(tool: Arc<dyn AgentTool>) -> Self {
        ToolAdapter { tool }
    }
}

#[async_trait]
impl Tool for ToolAdapter {
    fn name(&self) -> &str {
        self.tool.name()
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn declaration(&self) -> Option<FunctionDeclaration> {
        Some(FunctionDeclaration::new(self.tool.name(), self.tool.description(), Some(self.tool.parameters_schema())))
    }

    fn requires_confirmation(&self, args: &Map<String, Value>) -> bool {
        self.tool.requires_approval(&Value::Object(args.clone()))
    }

    async fn run(&self, args: Map<String, Value>, ctx: &ToolContext) -> Result<Value, ToolError> {
        let cancel = ctx.invocation().cancellation().child_token();
        let sinew_ctx = sinew_core::ToolContext::new(ctx.function_call_id(), self.tool.name(), cancel);
        match self.tool.execute(Value::Object(args), sinew_ctx).await {
            // `details` are for the host, never for the model: they stay out of the response.
            Ok(result) => Ok(json!({"result": sinew_core::join_text(&result.content, "\n")})),
            // A sinew tool's failure is meant for the model to read and act on.
            Err(ToolError::Cancelled) => Err(ToolError::Cancelled),
            Err(error) => Ok(json!({"error": error.to_string()})),
        }
    }
}
