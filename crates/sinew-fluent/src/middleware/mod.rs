//! Middleware (spec 003 §5): cross-cutting behaviour over every agent, model call and tool call
//! of a pipeline, with ADK's 13 plugin callbacks.
//!
//! A backend compiles its middleware stack into one sinew-adk [`Plugin`], registered before any
//! other plugin. ADK runs plugins before the agents' own callbacks, so middleware runs first;
//! within the stack, middleware runs in the order it was added and the first answer
//! short-circuits the rest (and the agents' callbacks), as ADK's plugin manager does.

mod errors;
mod model;
mod observe;
mod tools;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sinew_adk::{
    CallbackContext, Content, Event, InvocationContext, LlmRequest, LlmResponse, Plugin, Tool, ToolContext, ToolError,
};

pub use errors::{BreakerState, CircuitBreaker, Retry};
pub use model::{AgentCost, CostTracker, Price, RateLimiter, ResponseCache, TokenBudget};
pub use observe::{PiiRedaction, StructuredLog};
pub use tools::ToolApproval;

/// A unit of cross-cutting behaviour: ADK's plugin callbacks, each optional (the default does
/// nothing). Callbacks that answer short-circuit: the rest of the stack and the agents' own
/// callbacks do not run.
#[async_trait]
pub trait Middleware: Send + Sync {
    /// Its name, for logs.
    fn name(&self) -> &str;

    /// The user's message as it arrives: content replaces it.
    async fn on_user_message(&self, ctx: &InvocationContext, message: &Content) -> Option<Content> {
        let _ = (ctx, message);
        None
    }

    /// Before the invocation runs: content ends it at once, as the answer.
    async fn before_run(&self, ctx: &InvocationContext) -> Option<Content> {
        let _ = ctx;
        None
    }

    /// Each event before it is stored and yielded: an event replaces it.
    async fn on_event(&self, ctx: &InvocationContext, event: &Event) -> Option<Event> {
        let _ = (ctx, event);
        None
    }

    /// After the invocation ran (every middleware runs).
    async fn after_run(&self, ctx: &InvocationContext) {
        let _ = ctx;
    }

    /// Before each agent runs: content answers for the agent, which then does not run.
    async fn before_agent(&self, ctx: &CallbackContext, agent: &str) -> Option<Content> {
        let _ = (ctx, agent);
        None
    }

    /// After each agent ran: content is added as the agent's last event.
    async fn after_agent(&self, ctx: &CallbackContext, agent: &str) -> Option<Content> {
        let _ = (ctx, agent);
        None
    }

    /// Before each model call, which may be changed: a response stands in for the call.
    async fn before_model(&self, ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        let _ = (ctx, request);
        None
    }

    /// After each model response: a response replaces it.
    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        let _ = (ctx, response);
        None
    }

    /// When a model call fails: a response stands in for the failure.
    async fn on_model_error(
        &self,
        ctx: &CallbackContext,
        request: &LlmRequest,
        error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        let _ = (ctx, request, error);
        None
    }

    /// Before each tool call, with arguments that may be changed: a result stands in for the call.
    async fn before_tool(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        args: &mut Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let _ = (ctx, tool, args);
        None
    }

    /// After each tool call: a result replaces the tool's.
    async fn after_tool(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        result: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let _ = (ctx, tool, args, result);
        None
    }

    /// When a tool call fails: a result stands in for the failure.
    async fn on_tool_error(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        error: &ToolError,
    ) -> Option<Map<String, Value>> {
        let _ = (ctx, tool, args, error);
        None
    }

    /// When the runner closes.
    async fn close(&self) {}
}

/// A middleware stack as one sinew-adk plugin.
pub(crate) struct MiddlewarePlugin {
    stack: Vec<Arc<dyn Middleware>>,
}

impl MiddlewarePlugin {
    pub(crate) fn new(stack: Vec<Arc<dyn Middleware>>) -> Self {
        MiddlewarePlugin { stack }
    }
}

/// The first answer of the stack, in order.
macro_rules! first_answer {
    ($stack:expr, |$mw:ident| $call:expr) => {{
        for $mw in $stack {
            if let Some(answer) = $call.await {
                return Some(answer);
            }
        }
        None
    }};
}

#[async_trait]
impl Plugin for MiddlewarePlugin {
    fn name(&self) -> &str {
        "sinew_fluent_middleware"
    }

    async fn on_user_message(&self, ctx: &InvocationContext, message: &Content) -> Option<Content> {
        first_answer!(&self.stack, |mw| mw.on_user_message(ctx, message))
    }

    async fn before_run(&self, ctx: &InvocationContext) -> Option<Content> {
        first_answer!(&self.stack, |mw| mw.before_run(ctx))
    }

    async fn on_event(&self, ctx: &InvocationContext, event: &Event) -> Option<Event> {
        first_answer!(&self.stack, |mw| mw.on_event(ctx, event))
    }

    async fn after_run(&self, ctx: &InvocationContext) {
        for mw in &self.stack {
            mw.after_run(ctx).await;
        }
    }

    async fn close(&self) {
        for mw in &self.stack {
            mw.close().await;
        }
    }

    async fn before_agent(&self, agent: &dyn sinew_adk::Agent, ctx: &CallbackContext) -> Option<Content> {
        first_answer!(&self.stack, |mw| mw.before_agent(ctx, agent.name()))
    }

    async fn after_agent(&self, agent: &dyn sinew_adk::Agent, ctx: &CallbackContext) -> Option<Content> {
        first_answer!(&self.stack, |mw| mw.after_agent(ctx, agent.name()))
    }

    async fn before_model(&self, ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        for mw in &self.stack {
            if let Some(answer) = mw.before_model(ctx, request).await {
                return Some(answer);
            }
        }
        None
    }

    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        first_answer!(&self.stack, |mw| mw.after_model(ctx, response))
    }

    async fn on_model_error(
        &self,
        ctx: &CallbackContext,
        request: &LlmRequest,
        error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        first_answer!(&self.stack, |mw| mw.on_model_error(ctx, request, error))
    }

    async fn before_tool(
        &self,
        tool: &dyn Tool,
        args: &mut Map<String, Value>,
        ctx: &ToolContext,
    ) -> Option<Map<String, Value>> {
        for mw in &self.stack {
            if let Some(answer) = mw.before_tool(ctx, tool, args).await {
                return Some(answer);
            }
        }
        None
    }

    async fn after_tool(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        result: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        first_answer!(&self.stack, |mw| mw.after_tool(ctx, tool, args, result))
    }

    async fn on_tool_error(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        error: &ToolError,
    ) -> Option<Map<String, Value>> {
        first_answer!(&self.stack, |mw| mw.on_tool_error(ctx, tool, args, error))
    }
}

/// The key of per-call state a middleware keeps between `before_model` and `after_model`: the
/// invocation, the branch and the agent (parallel branches call at once).
pub(crate) fn call_key(ctx: &CallbackContext) -> String {
    let invocation = ctx.invocation();
    format!("{}/{}/{}", invocation.invocation_id(), invocation.branch().unwrap_or_default(), ctx.agent_name())
}
