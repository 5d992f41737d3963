//! Plugins (ADK's `BasePlugin`): callbacks for every agent, model and tool of a runner. They run
//! before the agents' own callbacks, in the order they were added, and the first that answers
//! wins: the agents' callbacks then do not run.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sinew_core::ToolError;

use crate::agent::Agent;
use crate::context::{CallbackContext, InvocationContext, ToolContext};
use crate::error::Error;
use crate::event::{Event, LlmResponse};
use crate::genai::Content;
use crate::model::Llm;
use crate::tool::Tool;
use crate::types::LlmRequest;

/// ADK's 13 plugin callbacks, plus the two error notifications of ADK 2.x. Every method does
/// nothing by default.
#[async_trait]
pub trait Plugin: Send + Sync {
    /// The plugin's name, unique in a runner.
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

    /// Each event before it is stored and yielded: an event replaces it. The runner waits for
    /// this callback, so it must not emit events itself.
    async fn on_event(&self, ctx: &InvocationContext, event: &Event) -> Option<Event> {
        let _ = (ctx, event);
        None
    }

    /// After the invocation ran.
    async fn after_run(&self, ctx: &InvocationContext) {
        let _ = ctx;
    }

    /// When the runner closes.
    async fn close(&self) {}

    /// Before each agent runs (see [`BeforeAgentCallback`](crate::callbacks::BeforeAgentCallback)).
    async fn before_agent(&self, agent: &dyn Agent, ctx: &CallbackContext) -> Option<Content> {
        let _ = (agent, ctx);
        None
    }

    /// After each agent ran.
    async fn after_agent(&self, agent: &dyn Agent, ctx: &CallbackContext) -> Option<Content> {
        let _ = (agent, ctx);
        None
    }

    /// The model the running agent calls this time instead of its own; the first plugin that
    /// answers wins. ADK's conformance replay substitutes its recorded model this way (adk-python
    /// does it in `resolve_llm`). The request is built for the model given back.
    async fn replace_model(&self, ctx: &CallbackContext) -> Option<Arc<dyn Llm>> {
        let _ = ctx;
        None
    }

    /// Before each model call.
    async fn before_model(&self, ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        let _ = (ctx, request);
        None
    }

    /// After each model response.
    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        let _ = (ctx, response);
        None
    }

    /// When a model call fails.
    async fn on_model_error(&self, ctx: &CallbackContext, request: &LlmRequest, error: &Error) -> Option<LlmResponse> {
        let _ = (ctx, request, error);
        None
    }

    /// Before each tool call.
    async fn before_tool(
        &self,
        tool: &dyn Tool,
        args: &mut Map<String, Value>,
        ctx: &ToolContext,
    ) -> Option<Map<String, Value>> {
        let _ = (tool, args, ctx);
        None
    }

    /// After each tool call.
    async fn after_tool(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        response: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let _ = (tool, args, ctx, response);
        None
    }

    /// When a tool call fails.
    async fn on_tool_error(
        &self,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        error: &ToolError,
    ) -> Option<Map<String, Value>> {
        let _ = (tool, args, ctx, error);
        None
    }

    /// An agent failed (a notification: the error still ends the run).
    async fn on_agent_error(&self, agent: &dyn Agent, ctx: &CallbackContext, error: &Error) {
        let _ = (agent, ctx, error);
    }

    /// The run failed (a notification).
    async fn on_run_error(&self, ctx: &InvocationContext, error: &Error) {
        let _ = (ctx, error);
    }
}
