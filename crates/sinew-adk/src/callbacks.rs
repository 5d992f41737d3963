//! An agent's callbacks (ADK's `before_agent_callback` ... `on_tool_error_callback`). Each kind is
//! a list: they run in order and the first that answers wins, short-circuiting what it stands
//! in front of. A plain closure is a callback; implement the trait for one that awaits.

use async_trait::async_trait;
use serde_json::{Map, Value};
use sinew_core::ToolError;

use crate::context::{CallbackContext, ToolContext};
use crate::error::Error;
use crate::event::LlmResponse;
use crate::genai::Content;
use crate::tool::Tool;
use crate::types::LlmRequest;

macro_rules! callback {
    ($(#[$doc:meta])* $name:ident ( $($arg:ident : $ty:ty),* ) -> $out:ty) => {
        $(#[$doc])*
        #[async_trait]
        pub trait $name: Send + Sync {
            /// Runs the callback; an answer short-circuits.
            async fn call(&self, $($arg: $ty),*) -> $out;
        }

        #[async_trait]
        impl<F> $name for F
        where
            F: Fn($($ty),*) -> $out + Send + Sync,
        {
            async fn call(&self, $($arg: $ty),*) -> $out {
                self($($arg),*)
            }
        }
    };
}

callback! {
    /// Before the agent runs: content answers for the agent, which then does not run.
    BeforeAgentCallback(ctx: &CallbackContext) -> Option<Content>
}
callback! {
    /// After the agent ran: content is added as the agent's last event.
    AfterAgentCallback(ctx: &CallbackContext) -> Option<Content>
}
callback! {
    /// Before a model call, which may be changed: a response stands in for the call.
    BeforeModelCallback(ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse>
}
callback! {
    /// After each model response: a response replaces it.
    AfterModelCallback(ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse>
}
callback! {
    /// When a model call fails: a response stands in for the failure.
    OnModelErrorCallback(ctx: &CallbackContext, request: &LlmRequest, error: &Error) -> Option<LlmResponse>
}
callback! {
    /// Before a tool runs, with arguments that may be changed: a response stands in for the call.
    BeforeToolCallback(tool: &dyn Tool, args: &mut Map<String, Value>, ctx: &ToolContext) -> Option<Map<String, Value>>
}
callback! {
    /// After a tool ran: a response replaces its own.
    AfterToolCallback(tool: &dyn Tool, args: &Map<String, Value>, ctx: &ToolContext, response: &Map<String, Value>) -> Option<Map<String, Value>>
}
callback! {
    /// When a tool fails: a response stands in for the failure.
    OnToolErrorCallback(tool: &dyn Tool, args: &Map<String, Value>, ctx: &ToolContext, error: &ToolError) -> Option<Map<String, Value>>
}
