//! Typed tools: a tool from an `async fn(Args) -> Result<Output, E>`, its parameters' schema
//! derived from `Args` with `schemars`, and the model's arguments checked against it before the
//! function runs.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use sinew_agent::typed::TypedTool;
//! use sinew_core::{AgentTool, CancellationToken, ToolContext};
//!
//! /// Adds two numbers.
//! #[derive(Deserialize, JsonSchema)]
//! struct Add {
//!     /// The first term.
//!     a: i64,
//!     /// The second term.
//!     b: i64,
//! }
//!
//! let tool = TypedTool::new("add", "Adds two numbers.", |args: Add| async move {
//!     Ok::<_, std::convert::Infallible>(args.a + args.b)
//! });
//! assert_eq!(tool.parameters_schema()["required"], serde_json::json!(["a", "b"]));
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let ctx = || ToolContext::new("call_1", "add", CancellationToken::new());
//! let sum = tool.execute(serde_json::json!({"a": 2, "b": 3}), ctx()).await.unwrap();
//! assert_eq!(sinew_core::join_text(&sum.content, ""), "5");
//! // Arguments that do not fit are refused before the function runs, naming the field.
//! let error = tool.execute(serde_json::json!({"a": 2, "b": "three"}), ctx()).await.unwrap_err();
//! assert_eq!(error.to_string(), r#"invalid arguments: at /b: "three" is not of type "integer""#);
//! # });
//! ```

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
pub use schemars::{self, JsonSchema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};

use crate::error::{Error, Result};

/// At most this many problems are listed when a value does not fit a schema.
const MAX_REPORTED: usize = 5;
/// Each problem is cut to this many bytes.
const MAX_PROBLEM_LEN: usize = 300;

/// The JSON Schema `schemars` derives for `T` (draft 2020-12; shared types under `$defs`).
pub fn schema_for<T: JsonSchema>() -> Value {
    schemars::SchemaGenerator::default().into_root_schema_for::<T>().to_value()
}

/// A JSON Schema compiled once, that says of a value what does not fit and where.
#[derive(Clone)]
pub struct SchemaValidator {
    schema: Value,
    validator: Arc<jsonschema::Validator>,
}

impl SchemaValidator {
    /// Compiles `schema`; refuses one that is not a valid JSON Schema. References must be local
    /// (`#/$defs/...`): nothing is fetched.
    pub fn new(schema: Value) -> Result<Self> {
        // Built without jsonschema's HTTP and file resolvers: remote references are refused.
        let validator = jsonschema::validator_for(&schema).map_err(|error| Error::InvalidSchema(error.to_string()))?;
        Ok(SchemaValidator { schema, validator: Arc::new(validator) })
    }

    /// The schema, as given.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// `Ok` when `value` fits; otherwise what does not, each problem with its JSON pointer
    /// (`at /lines/0/quantity: -1 is less than the minimum of 0`) and cut to 300 bytes, the first
    /// five joined by `; `.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        let mut problems = Vec::new();
        let mut more = 0usize;
        for error in self.validator.iter_errors(value) {
            if problems.len() == MAX_REPORTED {
                more += 1;
                continue;
            }
            let path = error.instance_path().to_string();
            let path = if path.is_empty() { "/" } else { path.as_str() };
            // The message quotes the value, which may be the whole argument: keep it short.
            let mut problem = format!("at {path}: {error}");
            if problem.len() > MAX_PROBLEM_LEN {
                let cut = problem.floor_char_boundary(MAX_PROBLEM_LEN);
                problem.truncate(cut);
                problem.push('…');
            }
            problems.push(problem);
        }
        if problems.is_empty() {
            return Ok(());
        }
        if more > 0 {
            problems.push(format!("and {more} more"));
        }
        Err(problems.join("; "))
    }
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemaValidator").field("schema", &self.schema).finish_non_exhaustive()
    }
}

type Call = Arc<dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolResult, ToolError>> + Send + Sync>;

/// A tool from an async Rust function over typed arguments.
///
/// - The parameters' schema is derived from `Args` ([`schema_for`]); each provider rewrites it
///   into its service's dialect when it sends it.
/// - The model's arguments are checked against the schema before the function runs; a call that
///   does not fit is answered as an error naming the field
///   ([`ToolError::InvalidArgs`]), which the model reads and corrects.
/// - The output is the tool's result: a string as it is, anything else as its JSON. The JSON
///   value is also the result's `details`, for hosts.
/// - The function's error is the model's error result, through its `Display`.
pub struct TypedTool<Args> {
    name: String,
    description: String,
    validator: SchemaValidator,
    call: Call,
    approval: bool,
    _args: PhantomData<fn(Args)>,
}

impl<Args> TypedTool<Args>
where
    Args: DeserializeOwned + JsonSchema + Send + 'static,
{
    /// A tool named `name` that runs `f` on each call's arguments.
    ///
    /// # Panics
    /// As [`with_context`](Self::with_context).
    pub fn new<F, Fut, Out, E>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(Args) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, E>> + Send + 'static,
        Out: Serialize,
        E: fmt::Display,
    {
        Self::with_context(name, description, move |args, _ctx| f(args))
    }

    /// Like [`new`](Self::new), for functions that also take the call's [`ToolContext`]
    /// (cancellation, progress, partial results).
    ///
    /// # Panics
    /// When `Args`'s `JsonSchema` gives a schema that is not valid JSON Schema; derived ones
    /// always are, so only a hand-written implementation can.
    pub fn with_context<F, Fut, Out, E>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn(Args, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Out, E>> + Send + 'static,
        Out: Serialize,
        E: fmt::Display,
    {
        let name: String = name.into();
        let validator = SchemaValidator::new(schema_for::<Args>())
            .unwrap_or_else(|error| panic!("the parameters' schema of tool {name}: {error}"));
        let call: Call = Arc::new(move |params, ctx| {
            let args = serde_json::from_value::<Args>(params);
            let cancel = ctx.cancel.clone();
            let run = args.map(|args| f(args, ctx));
            Box::pin(async move {
                let output = match run {
                    Ok(run) => tokio::select! {
                        output = run => output,
                        () = cancel.cancelled() => return Err(ToolError::Cancelled),
                    },
                    Err(error) => return Err(ToolError::InvalidArgs(error.to_string())),
                };
                let output = output.map_err(|error| ToolError::Failed(error.to_string().into()))?;
                let value = serde_json::to_value(output)
                    .map_err(|error| ToolError::Failed(format!("the result is not JSON: {error}").into()))?;
                let text = match &value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                Ok(ToolResult::text(text).with_details(value))
            })
        });
        TypedTool { name, description: description.into(), validator, call, approval: false, _args: PhantomData }
    }

    /// Every call waits for a human's approval before it runs.
    #[must_use]
    pub fn with_approval(mut self) -> Self {
        self.approval = true;
        self
    }
}

impl<Args> fmt::Debug for TypedTool<Args> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedTool").field("name", &self.name).finish_non_exhaustive()
    }
}

#[async_trait]
impl<Args: Send + 'static> AgentTool for TypedTool<Args> {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters_schema(&self) -> Value {
        self.validator.schema().clone()
    }

    fn requires_approval(&self, _params: &Value) -> bool {
        self.approval
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        self.validator.check(&params).map_err(ToolError::InvalidArgs)?;
        (self.call)(params, ctx).await
    }
}
