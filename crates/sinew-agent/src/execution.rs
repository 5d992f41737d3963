//! Running the tool calls of one model response.

use std::sync::Arc;

use futures::future::join_all;
use serde_json::Value;
use sinew_core::{
    AgentEvent, AgentMessage, AgentTool, CancellationToken, ToolCallRef, ToolContext, ToolError, ToolExecution,
    ToolResult, ToolResultMessage, now_ms,
};
use tracing::Instrument;

use crate::approval::ToolDecision;
use crate::config::AgentLoopConfig;
use crate::emit::Emitter;

/// The result text of a call skipped because the user queued a steering message.
pub const SKIPPED_FOR_STEERING: &str = "Skipped due to queued user message.";
/// The result text of a call cut short by an abort.
pub const ABORTED: &str = "Tool execution was aborted.";
/// The result text of a call a `before_tool_execution` hook refused.
pub const SKIPPED_BY_HOOK: &str = "Tool execution was skipped by the host.";

/// One call to run, with the host's decision when the batch was suspended.
#[derive(Debug)]
pub(crate) struct PlannedCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: Value,
    pub(crate) decision: Option<ToolDecision>,
}

pub(crate) struct BatchOutput {
    /// One result per call, in call order.
    pub(crate) results: Vec<ToolResultMessage>,
    /// Steering messages that arrived while the batch ran.
    pub(crate) steering: Vec<AgentMessage>,
}

pub(crate) fn take_steering(config: &AgentLoopConfig) -> Vec<AgentMessage> {
    config.get_steering_messages.as_ref().map(|f| f()).unwrap_or_default()
}

/// Runs `calls` with the configured strategy. Steering is checked after each group (one call for
/// `Sequential`, all for `Parallel`, `size` for `Batched`); once it arrives, the remaining calls
/// are skipped with [`SKIPPED_FOR_STEERING`].
pub(crate) async fn execute_tool_calls(
    tools: &[Arc<dyn AgentTool>],
    config: &AgentLoopConfig,
    emitter: &Emitter,
    cancel: &CancellationToken,
    calls: Vec<PlannedCall>,
) -> BatchOutput {
    let group_size = match config.tool_execution {
        ToolExecution::Sequential => 1,
        ToolExecution::Parallel => calls.len().max(1),
        ToolExecution::Batched { size } => size.max(1),
    };
    let mut results = Vec::with_capacity(calls.len());
    let mut steering = Vec::new();
    let mut calls = calls.into_iter().peekable();
    while calls.peek().is_some() {
        let group: Vec<PlannedCall> = calls.by_ref().take(group_size).collect();
        if !steering.is_empty() {
            results.extend(group.into_iter().map(|c| ToolResultMessage::error(c.id, c.name, SKIPPED_FOR_STEERING)));
            continue;
        }
        let outputs =
            join_all(group.into_iter().map(|call| execute_single(tools, config, emitter, cancel, call))).await;
        results.extend(outputs);
        steering = take_steering(config);
    }
    BatchOutput { results, steering }
}

async fn execute_single(
    tools: &[Arc<dyn AgentTool>],
    config: &AgentLoopConfig,
    emitter: &Emitter,
    cancel: &CancellationToken,
    call: PlannedCall,
) -> ToolResultMessage {
    let PlannedCall { id, name, arguments, decision } = call;
    let arguments = match decision {
        Some(ToolDecision::Reject { reason }) => {
            let text = match reason {
                Some(reason) => format!("The user rejected this tool call: {reason}"),
                None => "The user rejected this tool call.".to_owned(),
            };
            return ToolResultMessage::error(id, name, text);
        }
        Some(ToolDecision::Result { result, is_error }) => return result_message(id, name, result, is_error),
        Some(ToolDecision::Edit { arguments }) => arguments,
        Some(ToolDecision::Approve) | None => arguments,
    };
    let call_ref = ToolCallRef { id: &id, name: &name, arguments: &arguments };
    if let Some(before) = &config.hooks.before_tool_execution
        && !before(call_ref)
    {
        return ToolResultMessage::error(id, name, SKIPPED_BY_HOOK);
    }
    let observed = emitter.observed();
    if observed {
        emitter.emit(AgentEvent::ToolExecutionStart {
            loop_id: emitter.loop_id(),
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            args: arguments.clone(),
        });
    }
    // The tool takes the arguments; the hook after it sees them too.
    let after_arguments = config.hooks.after_tool_execution.as_ref().map(|_| arguments.clone());

    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {name}"),
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %name,
        gen_ai.tool.call.id = %id,
        error.r#type = tracing::field::Empty,
    );
    let outcome = match tools.iter().find(|t| t.name() == name) {
        None => Err(ToolError::NotFound(name.clone())),
        Some(tool) => {
            let ctx = tool_context(config, emitter, cancel, &id, &name);
            let run = tool.execute(arguments, ctx).instrument(span.clone());
            tokio::select! {
                biased;
                () = cancel.cancelled() => Err(ToolError::Cancelled),
                result = run => result,
            }
        }
    };
    let (result, is_error) = match outcome {
        Ok(result) => (result, false),
        Err(ToolError::Cancelled) if cancel.is_cancelled() => (ToolResult::text(ABORTED), true),
        Err(error) => (ToolResult::text(error.to_string()), true),
    };
    if is_error {
        span.record("error.type", "tool_error");
    }
    if observed {
        emitter.emit(AgentEvent::ToolExecutionEnd {
            loop_id: emitter.loop_id(),
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            result: result.clone(),
            is_error,
            child_loop_id: result.child_loop_id.clone(),
        });
    }
    if let (Some(after), Some(arguments)) = (&config.hooks.after_tool_execution, &after_arguments) {
        after(ToolCallRef { id: &id, name: &name, arguments }, &result, is_error);
    }
    result_message(id, name, result, is_error)
}

fn result_message(id: String, name: String, result: ToolResult, is_error: bool) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: id,
        tool_name: name,
        content: result.content,
        is_error,
        timestamp: now_ms(),
        details: result.details,
    }
}

/// The context handed to a tool: a child cancel token, and callbacks that turn updates and
/// progress into events (through the update hooks).
fn tool_context(
    config: &AgentLoopConfig,
    emitter: &Emitter,
    cancel: &CancellationToken,
    id: &str,
    name: &str,
) -> ToolContext {
    let mut ctx = ToolContext::new(id, name, cancel.child_token()).with_loop_id(emitter.loop_id());
    let hooked =
        config.hooks.before_tool_execution_update.is_some() || config.hooks.after_tool_execution_update.is_some();
    if !emitter.observed() && !hooked {
        // Updates and progress would reach no one.
        return ctx;
    }
    let (updates, before, after) = (
        emitter.clone(),
        config.hooks.before_tool_execution_update.clone(),
        config.hooks.after_tool_execution_update.clone(),
    );
    let (call_id, tool_name) = (id.to_owned(), name.to_owned());
    ctx.on_update = Some(Arc::new(move |partial: ToolResult| {
        if before.as_ref().is_some_and(|before| !before(&call_id, &tool_name, &partial)) {
            return;
        }
        let kept = after.as_ref().map(|_| partial.clone());
        updates.emit(AgentEvent::ToolExecutionUpdate {
            loop_id: updates.loop_id(),
            tool_call_id: call_id.clone(),
            tool_name: tool_name.clone(),
            partial_result: partial,
        });
        if let (Some(after), Some(partial)) = (&after, kept) {
            after(&call_id, &tool_name, &partial);
        }
    }));
    let progress = emitter.clone();
    let (call_id, tool_name) = (id.to_owned(), name.to_owned());
    ctx.on_progress = Some(Arc::new(move |text: &str| {
        progress.emit(AgentEvent::ProgressMessage {
            loop_id: progress.loop_id(),
            tool_call_id: call_id.clone(),
            tool_name: tool_name.clone(),
            text: text.to_owned(),
        });
    }));
    ctx
}
