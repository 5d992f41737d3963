//! An [`LlmAgent`]'s run (ADK's `BaseLlmFlow`): call the model, run the tools it calls, and again,
//! until an answer ends the turn, a call suspends the invocation, or the conversation moves to
//! another agent.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};

use crate::agent::{Agent, find_agent};
use crate::context::{CallbackContext, InvocationContext, StreamingMode, ToolContext};
use crate::error::{Error, Result};
use crate::event::{Event, EventActions, LlmResponse, ToolConfirmation};
use crate::genai::{Content, FunctionCall, FunctionResponse, MODEL, Part, USER};
use crate::llm_agent::{LlmAgent, SET_MODEL_RESPONSE, SetModelResponse, TransferToAgent};
use crate::tool::{Tool, response_object};
use crate::types::Session;

/// The function the framework calls to ask the user for a confirmation.
pub const REQUEST_CONFIRMATION: &str = "adk_request_confirmation";

/// The answer a call needing confirmation gets until the user confirms.
const NEEDS_CONFIRMATION: &str = "This tool call requires confirmation, please approve or reject.";
/// The answer a rejected call gets.
const REJECTED: &str = "This tool call is rejected.";

fn confirmation_hint(tool: &str) -> String {
    format!(
        "Please approve or reject the tool call {tool}() by responding with a FunctionResponse with an expected ToolConfirmation payload."
    )
}

/// What one model step leaves for the loop.
struct Step {
    last: Option<Event>,
    transferred: bool,
}

/// The `output_key` text gathered over the agent's run.
#[derive(Default)]
struct Output {
    text: String,
}

impl LlmAgent {
    /// Runs the model/tool loop; whether it ended in a transfer.
    pub(crate) async fn run_flow(&self, ctx: &InvocationContext) -> Result<bool> {
        let mut output = Output::default();
        loop {
            let step = self.step(ctx, &mut output).await?;
            if step.transferred || ctx.is_ended() {
                return Ok(step.transferred);
            }
            match step.last {
                Some(last) if !last.is_final_response() && !last.is_partial() => continue,
                _ => return Ok(false),
            }
        }
    }

    /// Writes `event` through the runner, saving the agent's text under `output_key` first.
    async fn emit(&self, ctx: &InvocationContext, mut event: Event, output: &mut Output) -> Result<Event> {
        if let Some(key) = &self.output_key
            && event.author == self.name
            && !event.is_partial()
            && let Some(content) = &event.content
        {
            let text = content.text();
            if self.output_schema.is_some() {
                // A structured answer is saved parsed, from the final response only.
                if event.is_final_response() && !text.trim().is_empty() {
                    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
                    event.actions.state_delta.insert(key.clone(), value);
                }
            } else if !text.is_empty() {
                // adk-python saves all the agent's text of the run, the text beside calls included.
                output.text.push_str(&text);
                event.actions.state_delta.insert(key.clone(), Value::String(output.text.clone()));
            }
        }
        ctx.emit(event).await
    }

    async fn step(&self, ctx: &InvocationContext, output: &mut Output) -> Result<Step> {
        if let Some(resumed) = self.resume_confirmations(ctx, output).await? {
            let resumed = self.emit(ctx, resumed, output).await?;
            if resumed.is_final_response() {
                return Ok(Step { last: Some(resumed), transferred: false });
            }
        }
        let mut model = match self.resolve_model(ctx.root_agent()) {
            Ok(model) => model,
            Err(error) => return Err(self.fail(ctx, error).await),
        };
        let callback = CallbackContext::new(ctx.clone());
        for plugin in &ctx.invocation.plugins {
            if let Some(replacement) = plugin.replace_model(&callback).await {
                model = replacement;
                break;
            }
        }
        self.note_model(ctx, model.as_ref());
        let mut request = match self.build_request(ctx, model.as_ref()).await {
            Ok(request) => request,
            Err(error) => return Err(self.fail(ctx, error).await),
        };
        // Resumable: a step whose branch still waits on a long-running call's answer does not call
        // the model (ADK's `decide_step_resume`).
        if ctx.waits_for_answers().await {
            return Ok(Step { last: None, transferred: false });
        }

        let mut answer = None;
        for plugin in &ctx.invocation.plugins {
            if let Some(response) = plugin.before_model(&callback, &mut request).await {
                answer = Some(response);
                break;
            }
        }
        if answer.is_none() {
            for before in &self.before_model {
                if let Some(response) = before.call(&callback, &mut request).await {
                    answer = Some(response);
                    break;
                }
            }
        }
        let labels = request.config.labels.get_or_insert_with(Map::new);
        labels.entry("adk_agent_name").or_insert_with(|| Value::String(self.name.clone()));

        let streaming = ctx.run_config().streaming_mode == StreamingMode::Sse;
        // The request as the model-error callbacks read it; without any, it moves to the model
        // instead of being copied.
        let mut kept = None;
        let mut responses: BoxStream<'static, Result<LlmResponse>> = match answer {
            Some(response) => futures::stream::once(async move { Ok(response) }).boxed(),
            None => {
                if let Err(error) = ctx.count_llm_call() {
                    let mut event = ctx.new_event();
                    event.error_code = Some("LlmCallsLimitExceededError".into());
                    event.error_message = Some(error.to_string());
                    ctx.emit(event).await?;
                    return Err(error);
                }
                if !self.on_model_error.is_empty() || !ctx.invocation.plugins.is_empty() {
                    kept = Some(request.clone());
                }
                model.generate_content(request, streaming)
            }
        };

        let mut template = ctx.new_event();
        let mut actions = Some(callback.take_actions());
        let mut last = None;
        let mut ended_on_fragment = false;
        while let Some(item) = responses.next().await {
            // Without callbacks a response goes straight on: this runs once per streamed token.
            let callbacks = !self.after_model.is_empty() || !ctx.invocation.plugins.is_empty();
            let response = match item {
                Ok(response) if !callbacks => response,
                Ok(response) => self.after_model(&callback, response).await,
                // An error callback's answer stands in for the model's, after-model callbacks
                // included, as in adk-python.
                Err(error) => match self.on_model_error(&callback, kept.as_ref(), &error).await {
                    Some(response) => self.after_model(&callback, response).await,
                    None => return Err(self.fail(ctx, error).await),
                },
            };
            if response.content.is_none()
                && response.error_code.is_none()
                && response.interrupted.is_none()
                && response.grounding_metadata.is_none()
            {
                continue;
            }
            let mut event = Box::new(finalize(&template, response, streaming));
            if !event.is_partial() {
                let mut merged = actions.take().unwrap_or_default();
                merge_actions(&mut merged, callback.take_actions());
                event.actions = merged;
            }
            if event.is_partial() {
                ctx.emit_fragment(event).await?;
                ended_on_fragment = true;
                continue;
            }
            ended_on_fragment = false;
            self.mark_calls(&mut event, ctx);
            let event = self.emit(ctx, *event, output).await?;
            template.id = crate::event::new_event_id().into();
            last = Some(event);
            if let Some(event) = last.as_ref().filter(|e| e.function_calls().next().is_some()) {
                let handled = self.handle_calls(ctx, event, output).await?;
                if handled.transferred {
                    return Ok(handled);
                }
                if handled.last.is_some() {
                    last = handled.last;
                }
            }
        }
        // A stream that ended on a fragment gave no answer: the turn ends there.
        Ok(Step { last: if ended_on_fragment { None } else { last }, transferred: false })
    }

    async fn after_model(&self, callback: &CallbackContext, response: LlmResponse) -> LlmResponse {
        let mut replaced = None;
        for plugin in &callback.invocation().invocation.plugins {
            if let Some(r) = plugin.after_model(callback, &response).await {
                replaced = Some(r);
                break;
            }
        }
        if replaced.is_none() {
            for after in &self.after_model {
                if let Some(r) = after.call(callback, &response).await {
                    replaced = Some(r);
                    break;
                }
            }
        }
        match replaced {
            Some(mut r) => {
                r.partial = r.partial.or(response.partial);
                r.turn_complete = r.turn_complete.or(response.turn_complete);
                r.usage_metadata = r.usage_metadata.or(response.usage_metadata);
                r
            }
            None => response,
        }
    }

    /// The first answer of the plugins' then the agent's model-error callbacks; none without
    /// callbacks, which is when the request was not kept.
    async fn on_model_error(
        &self,
        callback: &CallbackContext,
        request: Option<&crate::LlmRequest>,
        error: &Error,
    ) -> Option<LlmResponse> {
        let request = request?;
        for plugin in &callback.invocation().invocation.plugins {
            if let Some(r) = plugin.on_model_error(callback, request, error).await {
                return Some(r);
            }
        }
        for on_error in &self.on_model_error {
            if let Some(r) = on_error.call(callback, request, error).await {
                return Some(r);
            }
        }
        None
    }

    /// Gives calls without an id one (`adk-<uuid>`) and marks the long-running ones (all of them
    /// when the run pauses on tool calls).
    fn mark_calls(&self, event: &mut Event, ctx: &InvocationContext) {
        if event.is_partial() {
            return;
        }
        let pause_all = ctx.run_config().pause_on_tool_calls;
        let mut long_running = BTreeSet::new();
        let mut any = false;
        if let Some(parts) = event.content.as_mut().and_then(|c| c.parts.as_mut()) {
            for call in parts.iter_mut().filter_map(|p| p.function_call.as_mut()) {
                any = true;
                if call.id.as_deref().is_none_or(str::is_empty) {
                    call.id = Some(format!("adk-{}", crate::event::uuid4()));
                }
                let framework = call.name() == TransferToAgent::NAME;
                let tool_runs_long = self.tools.iter().any(|t| t.name() == call.name() && t.is_long_running());
                if (pause_all && !framework) || tool_runs_long {
                    long_running.insert(call.id().to_owned());
                }
            }
        }
        if any {
            event.long_running_tool_ids = Some(long_running);
        }
    }

    /// Runs the calls of `event` (unless the run pauses on them) and writes their responses, a
    /// confirmation request, and the transfer they ask for.
    async fn handle_calls(&self, ctx: &InvocationContext, event: &Event, output: &mut Output) -> Result<Step> {
        let long_running = event.long_running_tool_ids.clone().unwrap_or_default();
        let calls: Vec<(&FunctionCall, Option<ToolConfirmation>)> = event
            .function_calls()
            .filter(|c| !(ctx.run_config().pause_on_tool_calls && long_running.contains(c.id())))
            .map(|c| (c, None))
            .collect();
        let Some(mut responses) = self.run_calls(ctx, &calls, output).await? else {
            return Ok(Step { last: None, transferred: false });
        };
        let confirmations = responses.actions.requested_tool_confirmations.clone();
        let mut written = Vec::new();
        if confirmations.is_empty() {
            written.push(responses);
        } else {
            let request = confirmation_request(ctx, event, &confirmations);
            let all_waiting = responses.function_responses().all(|r| confirmations.contains_key(r.id()));
            if all_waiting {
                written.push(request);
                written.push(responses);
            } else {
                responses.actions.skip_summarization = None;
                written.push(responses);
                written.push(request);
            }
        }
        let mut last = None;
        let mut transfer = None;
        let mut structured = None;
        for event in written {
            let stored = self.emit(ctx, event, output).await?;
            if stored.function_responses().next().is_some() {
                transfer = stored.actions.transfer_to_agent.clone().or(transfer);
                structured = stored.actions.set_model_response.clone().or(structured);
            }
            last = Some(stored);
        }
        // A structured answer given through `set_model_response` is the agent's final answer, as
        // a model turn holding the JSON (Python's `json.dumps`); it comes before a transfer.
        if let Some(answer) = structured {
            let mut final_answer = ctx.new_event();
            final_answer.content = Some(Content::model_text(crate::pyrepr::json_dumps(&answer)));
            last = Some(self.emit(ctx, final_answer, output).await?);
        }
        if let Some(target) = transfer {
            self.transfer(ctx, &target).await?;
            return Ok(Step { last, transferred: true });
        }
        // The responses end the turn when they are final; the model is called again otherwise.
        Ok(Step { last, transferred: false })
    }

    /// Writes an error event for `error`, which ends the run (adk-python writes one before it
    /// raises), and gives the error back.
    async fn fail(&self, ctx: &InvocationContext, error: Error) -> Error {
        let mut event = ctx.new_event();
        let (code, message) = match &error {
            Error::Tool { source, .. } => ("ToolError", source.to_string()),
            // adk-python names the exception: a missing state key is its KeyError.
            Error::Instruction(message) => ("KeyError", message.clone()),
            Error::Model(source) => ("ModelError", source.to_string()),
            other => ("Error", other.to_string()),
        };
        event.error_code = Some(code.into());
        event.error_message = Some(message);
        match ctx.emit(event).await {
            Ok(_) => error,
            Err(cancelled) => cancelled,
        }
    }

    /// Runs the agent the conversation was handed to: one of the agent's transfer targets, with
    /// adk-python's messages otherwise.
    async fn transfer(&self, ctx: &InvocationContext, target: &str) -> Result<()> {
        let root = ctx.root_agent().clone();
        if target == self.name {
            return Err(Error::AgentNotFound(format!("Agent '{target}' cannot transfer to itself.")));
        }
        let Some(agent) = self.transfer_targets(&root).into_iter().find(|a| a.name() == target) else {
            return Err(match find_agent(&root, target) {
                None => Error::UnknownAgent { name: target.to_owned() },
                Some(_) => {
                    Error::AgentNotFound(format!("Agent {} is not allowed to transfer to agent {target}.", self.name))
                }
            });
        };
        // Resumable under an LLM root (ADK's router runs the target after the agent): the agent
        // finished when it handed the conversation on. Under a workflow root the target runs
        // inside the agent, which finishes after it.
        if ctx.is_resumable() && ctx.invocation.node_paths {
            ctx.end_of_agent(&self.name).await?;
        }
        ctx.transfer_context(&agent).run(&agent).await
    }

    /// Runs one call: plugins' and the agent's before-tool callbacks, the confirmation gate, the
    /// tool, the error callbacks, the after-tool callbacks. The response part (none for a
    /// long-running call that answered nothing) and the call's actions come back.
    async fn execute(
        &self,
        ctx: &InvocationContext,
        call: &FunctionCall,
        confirmation: Option<ToolConfirmation>,
    ) -> Result<(Option<Part>, EventActions)> {
        let tool_ctx = ToolContext::new(ctx.clone(), call.id().to_owned(), confirmation.clone());
        let mut args = call.args.clone().unwrap_or_default();
        let respond = |response: Map<String, Value>, tool_ctx: &ToolContext| {
            let part = Part::function_response(FunctionResponse::new(call.id.clone(), call.name(), response));
            (Some(part), tool_ctx.take_actions())
        };
        if call.name() == TransferToAgent::NAME && !self.transfer_targets(ctx.root_agent()).is_empty() {
            let response = TransferToAgent::run(&args, &tool_ctx);
            return Ok(respond(response, &tool_ctx));
        }
        let found = match &self.output_schema {
            // The structured answer goes through the callbacks like any tool's.
            Some(schema) if call.name() == SET_MODEL_RESPONSE && self.answers_through_set_model_response(ctx) => {
                Some(Arc::new(SetModelResponse { schema: schema.clone() }) as Arc<dyn Tool>)
            }
            _ => self.tools.iter().find(|t| t.name() == call.name()).cloned(),
        };
        // A call of a tool the agent does not have goes through the callbacks with a stand-in.
        let tool: Arc<dyn Tool> = found.clone().unwrap_or_else(|| Arc::new(Missing(call.name().to_owned())));
        let plugins = &ctx.invocation.plugins;

        let mut response = None;
        for plugin in plugins {
            if let Some(r) = plugin.before_tool(tool.as_ref(), &mut args, &tool_ctx).await {
                response = Some(r);
                break;
            }
        }
        if response.is_none() {
            for before in &self.before_tool {
                if let Some(r) = before.call(tool.as_ref(), &mut args, &tool_ctx).await {
                    response = Some(r);
                    break;
                }
            }
        }
        if found.is_none() {
            let response = match response {
                Some(r) => r,
                None => {
                    let error = sinew_core::ToolError::Failed(self.not_found_error(call.name()).into());
                    match self.tool_error(&tool, &args, &tool_ctx, &error).await {
                        Some(r) => r,
                        None => {
                            Map::from_iter([("error".to_owned(), Value::String(self.not_found_response(call.name())))])
                        }
                    }
                }
            };
            return Ok(respond(response, &tool_ctx));
        }

        if response.is_none() && tool.requires_confirmation(&args) {
            match &confirmation {
                None => {
                    tool_ctx.request_confirmation(Some(&confirmation_hint(tool.name())), None);
                    tool_ctx.skip_summarization();
                    response = Some(Map::from_iter([("error".to_owned(), Value::String(NEEDS_CONFIRMATION.into()))]));
                }
                Some(c) if !c.confirmed => {
                    response = Some(Map::from_iter([("error".to_owned(), Value::String(REJECTED.into()))]));
                }
                Some(_) => {}
            }
        }
        let mut response = match response {
            Some(r) => Some(r),
            None => match tool.run(args.clone(), &tool_ctx).await {
                Ok(Value::Null) if tool.is_long_running() => None,
                Ok(value) => Some(response_object(value)),
                Err(error) => match self.tool_error(&tool, &args, &tool_ctx, &error).await {
                    Some(r) => Some(r),
                    None => return Err(Error::Tool { name: tool.name().to_owned(), source: error }),
                },
            },
        };
        let current = response.clone().unwrap_or_default();
        let mut replaced = None;
        for plugin in plugins {
            if let Some(r) = plugin.after_tool(tool.as_ref(), &args, &tool_ctx, &current).await {
                replaced = Some(r);
                break;
            }
        }
        if replaced.is_none() {
            for after in &self.after_tool {
                if let Some(r) = after.call(tool.as_ref(), &args, &tool_ctx, &current).await {
                    replaced = Some(r);
                    break;
                }
            }
        }
        if replaced.is_some() {
            response = replaced;
        }
        match response {
            Some(r) if !(tool.is_long_running() && r.is_empty()) => Ok(respond(r, &tool_ctx)),
            _ => Ok((None, tool_ctx.take_actions())),
        }
    }

    async fn tool_error(
        &self,
        tool: &Arc<dyn Tool>,
        args: &Map<String, Value>,
        ctx: &ToolContext,
        error: &sinew_core::ToolError,
    ) -> Option<Map<String, Value>> {
        for plugin in &ctx.invocation().invocation.plugins {
            if let Some(r) = plugin.on_tool_error(tool.as_ref(), args, ctx, error).await {
                return Some(r);
            }
        }
        for on_error in &self.on_tool_error {
            if let Some(r) = on_error.call(tool.as_ref(), args, ctx, error).await {
                return Some(r);
            }
        }
        None
    }

    fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// What the on-tool-error callbacks get for a call of a tool the agent does not have.
    fn not_found_error(&self, name: &str) -> String {
        format!(
            "Tool '{name}' not found.\nAvailable tools: {}\n\nPossible causes:\n  1. LLM hallucinated the function name - review agent instruction clarity\n  2. Tool not registered - verify agent.tools list\n  3. Name mismatch - check for typos\n\nSuggested fixes:\n  - Review agent instruction to ensure tool usage is clear\n  - Verify tool is included in agent.tools list\n  - Check for typos in function name",
            self.tool_names().join(", ")
        )
    }

    /// What the model gets for a call of a tool the agent does not have.
    fn not_found_response(&self, name: &str) -> String {
        let names = self.tool_names();
        let available = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        format!(
            "Invoking `{name}()` failed as no tool with that name is available. The tools you can call are: {available}. You could retry, but it is IMPORTANT that you only call a tool from that list."
        )
    }

    /// Runs again the calls the user just confirmed or rejected (ADK's request-confirmation
    /// processor): one response event, the calls keeping their ids. An answer that does not
    /// hold (not a confirmation, or no such call asked) ends the run with an error event.
    async fn resume_confirmations(&self, ctx: &InvocationContext, output: &mut Output) -> Result<Option<Event>> {
        let resumed = match confirmed_calls(&ctx.session().await) {
            Ok(resumed) if resumed.is_empty() => return Ok(None),
            Ok(resumed) => resumed,
            Err(error) => return Err(self.fail(ctx, error).await),
        };
        let calls: Vec<(&FunctionCall, Option<ToolConfirmation>)> =
            resumed.iter().map(|(call, confirmation)| (call, Some(confirmation.clone()))).collect();
        self.run_calls(ctx, &calls, output).await
    }

    /// Runs `calls` at once and gathers their responses into one event (none when no call
    /// answered). When one fails, the others' results are written first, as adk-python writes
    /// them before it raises, then the error event; the error comes back.
    async fn run_calls(
        &self,
        ctx: &InvocationContext,
        calls: &[(&FunctionCall, Option<ToolConfirmation>)],
        output: &mut Output,
    ) -> Result<Option<Event>> {
        let outcomes = futures::future::join_all(
            calls.iter().map(|(call, confirmation)| self.execute(ctx, call, confirmation.clone())),
        )
        .await;
        let mut parts = Vec::new();
        let mut actions = EventActions::default();
        let mut failure = None;
        for outcome in outcomes {
            match outcome {
                Ok((part, call_actions)) => {
                    parts.extend(part);
                    merge_actions(&mut actions, call_actions);
                }
                Err(error) => failure = failure.or(Some(error)),
            }
        }
        let responses = (!parts.is_empty()).then(|| {
            let mut event = ctx.new_event();
            event.content = Some(Content::new(USER, parts));
            event.actions = actions;
            event
        });
        match failure {
            None => Ok(responses),
            Some(error) => {
                if let Some(done) = responses {
                    self.emit(ctx, done, output).await?;
                }
                Err(self.fail(ctx, error).await)
            }
        }
    }
}

/// The calls the latest user message confirms or rejects, with the answers, leaving out the
/// ones already acted on (the same approval sent twice runs nothing again).
fn confirmed_calls(session: &Session) -> Result<Vec<(FunctionCall, ToolConfirmation)>> {
    let Some(user_index) = session.events.iter().rposition(|e| e.author == "user") else { return Ok(Vec::new()) };
    let answers = session.events[user_index].function_responses().filter(|r| r.name() == REQUEST_CONFIRMATION);
    let mut resumed = Vec::new();
    for answer in answers {
        let found = session.events[..user_index].iter().enumerate().rev().find_map(|(i, e)| {
            e.function_calls()
                .find(|c| c.name() == REQUEST_CONFIRMATION && c.id.is_some() && c.id == answer.id)
                .map(|c| (i, c))
        });
        let Some((request_index, request)) = found else { continue };
        let original: FunctionCall = request
            .args
            .as_ref()
            .and_then(|a| a.get("originalFunctionCall"))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .ok_or_else(|| {
                Error::InvalidRequest(format!("the confirmation request {} has no original call", request.id()))
            })?;
        let asked = session.events[..request_index]
            .iter()
            .flat_map(|e| e.function_calls())
            .any(|c| c.id == original.id && c.name() == original.name() && c.args == original.args);
        if !asked {
            return Err(Error::InvalidRequest(format!(
                "Original function call for ID '{}' not found in session history.",
                original.id()
            )));
        }
        // An answer already acted on (the same approval sent twice) runs nothing again.
        let consumed = session.events[request_index + 1..].iter().flat_map(|e| e.function_responses()).any(|r| {
            r.id == original.id
                && r.response.as_ref().and_then(|m| m.get("error")).and_then(Value::as_str) != Some(NEEDS_CONFIRMATION)
        });
        if consumed {
            continue;
        }
        let confirmation = parse_confirmation(answer.response.as_ref())?;
        resumed.push((original, confirmation));
    }
    Ok(resumed)
}

/// The user's answer to a confirmation request: a `ToolConfirmation`, or the web UI's
/// `{"response": "<json>"}`.
fn parse_confirmation(response: Option<&Map<String, Value>>) -> Result<ToolConfirmation> {
    let response = response.cloned().unwrap_or_default();
    let value = match response.get("response") {
        Some(Value::String(text)) if response.len() == 1 => serde_json::from_str(text)
            .map_err(|e| Error::InvalidRequest(format!("the confirmation's `response` is not JSON: {e}")))?,
        _ => Value::Object(response),
    };
    serde_json::from_value(value).map_err(|e| Error::InvalidRequest(format!("not a tool confirmation: {e}")))
}

/// The event asking the user to confirm calls (ADK's `adk_request_confirmation` calls).
fn confirmation_request(
    ctx: &InvocationContext,
    event: &Event,
    confirmations: &std::collections::BTreeMap<String, ToolConfirmation>,
) -> Event {
    let mut parts = Vec::new();
    let mut ids = BTreeSet::new();
    for call in event.function_calls().filter(|c| confirmations.contains_key(c.id())) {
        let id = format!("adk-{}", crate::event::uuid4());
        let confirmation = &confirmations[call.id()];
        let args = json!({
            "originalFunctionCall": call,
            "toolConfirmation": confirmation,
        });
        let args = args.as_object().cloned().unwrap_or_default();
        parts.push(Part::function_call(FunctionCall::new(Some(id.clone()), REQUEST_CONFIRMATION, args)));
        ids.insert(id);
    }
    let mut request = ctx.new_event();
    request.content = Some(Content::new(MODEL, parts));
    request.long_running_tool_ids = Some(ids);
    request
}

/// The model event for `response`: the step's id, author, branch and node, the response's fields.
fn finalize(template: &Event, response: LlmResponse, streaming: bool) -> Event {
    let mut response = response;
    if !streaming && !response.is_partial() && response.error_code.is_none() {
        flag_empty(&mut response);
    }
    let mut event =
        Event::with_id(template.id.clone(), template.invocation_id.clone(), template.author.clone(), response);
    event.branch = template.branch.clone();
    event.node_info = template.node_info.clone();
    event
}

/// ADK's empty-response policy: a model that stopped without saying anything is an error.
fn flag_empty(response: &mut LlmResponse) {
    if response.finish_reason.as_deref() != Some("STOP") {
        return;
    }
    let parts = response.content.as_ref().map(Content::parts).unwrap_or_default();
    let actionable = parts.iter().any(|p| {
        p.function_call.is_some()
            || p.function_response.is_some()
            || p.inline_data.is_some()
            || p.file_data.is_some()
            || p.executable_code.is_some()
            || p.code_execution_result.is_some()
            || (!p.is_thought() && p.text.as_deref().is_some_and(|t| !t.trim().is_empty()))
    });
    if actionable {
        return;
    }
    response.error_code = Some("MODEL_RETURNED_NO_CONTENT".into());
    response.error_message = Some(if parts.is_empty() {
        "The model returned no content (finish_reason=STOP with empty parts).".into()
    } else {
        "The model returned no actionable content (finish_reason=STOP with thought-only or whitespace-only parts)."
            .into()
    });
}

/// Merges `from` into `into` (ADK's deep merge of parallel calls' actions).
pub(crate) fn merge_actions(into: &mut EventActions, from: EventActions) {
    into.state_delta.extend(from.state_delta);
    into.artifact_delta.extend(from.artifact_delta);
    into.requested_auth_configs.extend(from.requested_auth_configs);
    into.requested_tool_confirmations.extend(from.requested_tool_confirmations);
    into.skip_summarization = from.skip_summarization.or(into.skip_summarization);
    into.transfer_to_agent = from.transfer_to_agent.or(into.transfer_to_agent.take());
    into.transfer_reason = from.transfer_reason.or(into.transfer_reason.take());
    into.escalate = from.escalate.or(into.escalate);
    into.end_of_agent = from.end_of_agent.or(into.end_of_agent);
    into.compaction = from.compaction.or(into.compaction.take());
    into.agent_state = from.agent_state.or(into.agent_state.take());
    into.rewind_before_invocation_id = from.rewind_before_invocation_id.or(into.rewind_before_invocation_id.take());
    into.route = from.route.or(into.route.take());
    into.render_ui_widgets = from.render_ui_widgets.or(into.render_ui_widgets.take());
    into.set_model_response = from.set_model_response.or(into.set_model_response.take());
}

/// The stand-in an unknown tool's error callbacks see.
struct Missing(String);

#[async_trait::async_trait]
impl Tool for Missing {
    fn name(&self) -> &str {
        &self.0
    }

    fn description(&self) -> &str {
        "Tool not found"
    }

    fn declaration(&self) -> Option<crate::genai::FunctionDeclaration> {
        None
    }

    async fn run(&self, _args: Map<String, Value>, _ctx: &ToolContext) -> Result<Value, sinew_core::ToolError> {
        Err(sinew_core::ToolError::Failed(format!("no tool named `{}`", self.0).into()))
    }
}

impl InvocationContext {
    /// The context a transfer target runs in: below the current agent for its own sub-agent, beside
    /// it for a peer, in the grandparent's place for the parent.
    pub(crate) fn transfer_context(&self, target: &Arc<dyn Agent>) -> InvocationContext {
        let root = self.root_agent().clone();
        let current = self.agent.name().to_owned();
        let is_child = self.agent.sub_agents().iter().any(|a| a.name() == target.name());
        if is_child {
            return self.clone();
        }
        let parent_of_current = crate::agent::find_parent(&root, &current);
        let mut ctx = self.clone();
        ctx.node_path = parent_path(&self.node_path).to_owned();
        if parent_of_current.as_ref().is_some_and(|p| p.name() == target.name()) {
            ctx.node_path = parent_path(&ctx.node_path).to_owned();
        }
        ctx
    }
}

fn parent_path(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(parent, _)| parent)
}
