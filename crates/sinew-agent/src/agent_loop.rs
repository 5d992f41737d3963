//! The agent loop: prompt → model → tools → model … until the model is done.
//!
//! # Abort policy
//! Whatever ends a run (completion, abort, failure, a limit, a hook, a suspension), `AgentEnd` is
//! its last event, and the history it leaves is valid to send to any provider: an assistant
//! message with tool calls enters the history only together with one result per call. Calls that
//! never ran get an error result saying why.

use std::borrow::Cow;
use std::mem;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use sinew_compaction::{ContextTracker, TieredCompaction, total_tokens};
use sinew_core::{
    AgentEvent, AgentMessage, AgentTool, AssistantMessage, CancellationToken, ContinuationKind, EndReason,
    ExecutionTracker, FilterResult, HistoryCache, MAX_SERVER_DELAY, Message, PendingKind, ProviderError, StopReason,
    StreamEvent, StreamRequest, TokenCounter, ToolChoice, ToolDefinition, ToolResult, ToolResultMessage, TurnTrigger,
    Usage, WireCache, delay_for_attempt,
};
use tokio::time::Instant;
use tracing::Instrument;

use crate::approval::{Decisions, PendingToolCall, Suspension, ToolDecision};
use crate::config::{AgentContext, AgentLoopConfig, InstructionContext};
use crate::emit::{Emitter, EventSender, Sink};
use crate::error::{Error, Result};
use crate::execution::{PlannedCall, execute_tool_calls, take_steering};

/// The result text of tool calls in a model response that failed or was aborted.
pub const NOT_EXECUTED: &str = "Tool call was not executed: the model response did not complete.";

/// The result text of a tool call whose arguments the output token limit cut off.
pub const CUT_OFF: &str = "Tool call was not executed: its arguments were cut off by the output token limit. \
    Call the tool again with shorter arguments, or split the work into smaller calls.";

/// Answers, without running them, the calls of an answer the output token limit stopped whose
/// arguments did not arrive whole (not a JSON object: `null`, or the raw text that did not
/// parse). Calls that arrived whole still run, as do calls the host answered or edited after a
/// suspension.
fn refuse_cut_off_calls(assistant: &AssistantMessage, calls: &mut [PlannedCall]) {
    if assistant.stop_reason != StopReason::Length {
        return;
    }
    let would_run = |c: &PlannedCall| matches!(c.decision, None | Some(ToolDecision::Approve));
    for call in calls.iter_mut().filter(|c| !c.arguments.is_object() && would_run(c)) {
        tracing::warn!(tool = %call.name, id = %call.id, "the output token limit cut off a tool call's arguments");
        let result = ToolResult::text(CUT_OFF);
        call.decision = Some(ToolDecision::Result { result, is_error: true });
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopOutcome {
    /// The run's id, `"{session_id}.{config_segment}.{N}"`, as its events carry it.
    pub loop_id: String,
    /// Why the run ended; `Failed` also fills `error`, `Suspended` also fills `suspension`.
    pub reason: EndReason,
    /// The messages the run appended to the history.
    pub messages: Vec<AgentMessage>,
    /// Usage of every model call of the run.
    pub usage: Usage,
    /// The failed model call's error, when `reason` is `Failed`.
    pub error: Option<String>,
    /// What the run waits for, when `reason` is `Suspended`.
    pub suspension: Option<Suspension>,
}

impl LoopOutcome {
    /// The text of the last assistant message of the run.
    pub fn final_text(&self) -> Option<String> {
        self.messages.iter().rev().find_map(AgentMessage::as_assistant).map(AssistantMessage::text)
    }
}

pub(crate) enum Entry {
    Prompt(Vec<AgentMessage>),
    /// Continue, first injecting these messages (empty for a plain continuation).
    Continue(Vec<AgentMessage>),
    Resume(Suspension, Vec<Option<ToolDecision>>),
}

/// Runs a new prompt against `context`.
///
/// Generates `agent_id`, `session_id` and `loop_id` when they are `None` and writes them back, so
/// a later [`agent_loop_continue`] on the same context reuses them.
pub async fn agent_loop(
    prompts: Vec<AgentMessage>,
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    tx: &EventSender,
    cancel: &CancellationToken,
) -> LoopOutcome {
    prompt_loop(prompts, context, config, Sink::Channel(tx.clone()), cancel).await
}

/// [`agent_loop`] with any sink.
pub(crate) async fn prompt_loop(
    prompts: Vec<AgentMessage>,
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    sink: Sink,
    cancel: &CancellationToken,
) -> LoopOutcome {
    context.agent_id.get_or_insert_with(new_id);
    let session_id = context.session_id.get_or_insert_with(new_id);
    if context.loop_id.is_none() {
        context.loop_id = Some(format!("{session_id}.{}.1", config.config_segment()));
    }
    run(context, config, sink, cancel, Entry::Prompt(prompts), None).await
}

/// Continues `context` without a new prompt: the model answers the history as it stands.
///
/// The context must carry `agent_id`, `session_id` and `loop_id`, be non-empty, and not end with
/// an assistant message.
pub async fn agent_loop_continue(
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    tx: &EventSender,
    cancel: &CancellationToken,
) -> Result<LoopOutcome> {
    check_identity(context)?;
    check_continuable(&context.messages)?;
    Ok(run(context, config, Sink::Channel(tx.clone()), cancel, Entry::Continue(Vec::new()), None).await)
}

/// A history can be continued when it is non-empty and does not end with the model's answer.
pub(crate) fn check_continuable(messages: &[AgentMessage]) -> Result<()> {
    match messages.last() {
        None => Err(Error::InvalidContext("the context has no messages".into())),
        Some(m) if m.as_assistant().is_some() => {
            Err(Error::InvalidContext("the last message is from the assistant; add a prompt".into()))
        }
        Some(_) => Ok(()),
    }
}

/// Resumes a suspended run: applies `decisions` to the pending calls, runs what was approved,
/// and lets the model continue.
pub async fn agent_loop_resume(
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    suspension: Suspension,
    decisions: Decisions,
    tx: &EventSender,
    cancel: &CancellationToken,
) -> Result<LoopOutcome> {
    check_identity(context)?;
    let plan = decisions.plan(&suspension)?;
    Ok(run(context, config, Sink::Channel(tx.clone()), cancel, Entry::Resume(suspension, plan), None).await)
}

fn check_identity(context: &AgentContext) -> Result<()> {
    let missing =
        |field: &str| Error::InvalidContext(format!("agent_loop_continue requires context.{field} to be set"));
    context.agent_id.as_ref().ok_or_else(|| missing("agent_id"))?;
    context.session_id.as_ref().ok_or_else(|| missing("session_id"))?;
    context.loop_id.as_ref().ok_or_else(|| missing("loop_id"))?;
    Ok(())
}

pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// An [`Agent`](crate::Agent)'s history's [`WireCache`], and how many of the history's model
/// messages its last request sent: the loop tells the provider that many are unchanged (the loop
/// only appends to a history, and whoever rewrites it calls [`HistoryWire::forget`]), so the
/// provider writes only what is new. A loop run on a caller's own context has none: its history
/// may change between runs in ways no one reports.
/// The same promise keeps the history's estimated size: only appended messages are counted.
#[derive(Default)]
pub(crate) struct HistoryWire {
    cache: WireCache,
    sent: usize,
    /// The first `counted` messages hold `tokens` tokens, as `counter` counts.
    counted: usize,
    tokens: usize,
    counter: Option<Arc<dyn TokenCounter>>,
}

impl HistoryWire {
    /// The history was rewritten: nothing of it is as the last request sent it.
    pub(crate) fn forget(&mut self) {
        self.cache.clear();
        self.sent = 0;
        self.counted = 0;
        self.tokens = 0;
    }

    /// The history's estimated tokens ([`total_tokens`]), counting only what was appended since
    /// the last call.
    fn tokens(&mut self, messages: &[AgentMessage], counter: &Arc<dyn TokenCounter>) -> usize {
        if self.counted > messages.len() || !self.counter.as_ref().is_some_and(|c| Arc::ptr_eq(c, counter)) {
            self.counter = Some(Arc::clone(counter));
            self.counted = 0;
            self.tokens = 0;
        }
        self.tokens += total_tokens(&messages[self.counted..], &**counter);
        self.counted = messages.len();
        self.tokens
    }
}

impl std::fmt::Debug for HistoryWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistoryWire")
            .field("cache", &self.cache)
            .field("sent", &self.sent)
            .field("counted", &self.counted)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

pub(crate) async fn run(
    context: &mut AgentContext,
    config: &AgentLoopConfig,
    sink: Sink,
    cancel: &CancellationToken,
    entry: Entry,
    wire: Option<&mut HistoryWire>,
) -> LoopOutcome {
    let loop_id: Arc<str> = context.loop_id.as_deref().unwrap_or_default().into();
    let emitter = Emitter::new(sink, config.hooks.on_event.clone(), Arc::clone(&loop_id));
    let mut run = Run {
        config,
        emitter,
        cancel,
        deadline: config.execution_limits.and_then(|limits| Instant::now().checked_add(limits.max_duration)),
        tools: context.tools.iter().map(|t| t.definition()).collect(),
        new_from: context.messages.len(),
        compacted_new: Vec::new(),
        called_a_tool: false,
        usage: Usage::default(),
        tracker: config.execution_limits.map(ExecutionTracker::new),
        turn: 0,
        error: None,
        suspension: None,
        overflow_recovered: false,
        force_compaction: false,
        wire,
        context_size: config
            .context_config
            .as_ref()
            .map_or_else(ContextTracker::default, |c| ContextTracker::new(Arc::clone(&c.token_counter))),
    };
    // The newest answer's usage still describes the history: compaction only rewrites it right
    // before a model call, whose answer then reports anew.
    run.context_size.record_latest(&context.messages);

    if let Some(before_loop) = &config.hooks.before_loop
        && !before_loop(context)
    {
        return run.finish(context, EndReason::Stopped);
    }
    // A provider would reject the request: say why before calling it.
    if let Err(reason) = sinew_core::check_tool_names(run.tools.iter().map(|t| t.name.as_str())) {
        tracing::error!(%reason, "the run's tools cannot be offered to a model");
        run.error = Some(reason);
        return run.finish(context, EndReason::Failed);
    }
    run.emitter.emit(AgentEvent::AgentStart {
        agent_id: context.agent_id.as_deref().unwrap_or_default().into(),
        session_id: context.session_id.as_deref().unwrap_or_default().into(),
        loop_id: Arc::clone(&loop_id),
        parent_loop_id: context.parent_loop_id.clone(),
        continuation_kind: context.continuation_kind.clone(),
        model: config.model.clone(),
        provider: config.provider.provider_id_for(&config.model).to_owned(),
        config_id: config.config_segment(),
    });
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.id = context.agent_id.as_deref().unwrap_or_default(),
        gen_ai.conversation.id = context.session_id.as_deref().unwrap_or_default(),
        gen_ai.provider.name = config.provider.provider_id_for(&config.model),
        gen_ai.request.model = %config.model,
        sinew.loop_id = %loop_id,
        gen_ai.usage.input_tokens = tracing::field::Empty,
        gen_ai.usage.output_tokens = tracing::field::Empty,
    );
    let reason = async {
        let first_trigger = match (&entry, &context.continuation_kind) {
            (Entry::Resume(..), _) | (_, Some(ContinuationKind::Default | ContinuationKind::Rerun { .. })) => {
                TurnTrigger::Continuation
            }
            (_, Some(ContinuationKind::Branch { .. })) => TurnTrigger::Branch,
            (_, None) => config.first_turn_trigger,
        };
        match entry {
            Entry::Prompt(prompts) => match run.filter_input(prompts) {
                Ok(prompts) => run.turns(context, prompts, None, first_trigger).await,
                Err(reason) => {
                    run.emitter.emit(AgentEvent::InputRejected { loop_id: run.emitter.loop_id(), reason });
                    EndReason::Rejected
                }
            },
            Entry::Continue(pending) => run.turns(context, pending, None, first_trigger).await,
            Entry::Resume(suspension, plan) => {
                run.turns(context, Vec::new(), Some((suspension, plan)), first_trigger).await
            }
        }
    }
    .instrument(span.clone())
    .await;
    span.record("gen_ai.usage.input_tokens", run.usage.prompt_tokens());
    span.record("gen_ai.usage.output_tokens", run.usage.output);
    run.finish(context, reason)
}

/// A turn to end ([`Run::end_turn`]): its tokens and, when the run's events are observed, its
/// answer and results for `TurnEnd`.
struct TurnEnded {
    /// The tokens the turn's answer used.
    tokens: u64,
    /// The answer and its results, for `TurnEnd`.
    announced: Option<(AssistantMessage, Vec<ToolResultMessage>)>,
}

fn turn_tokens(message: &AssistantMessage) -> u64 {
    message.usage.total_tokens.max(message.usage.input.saturating_add(message.usage.output))
}

/// The state of one run.
struct Run<'a> {
    config: &'a AgentLoopConfig,
    emitter: Emitter,
    cancel: &'a CancellationToken,
    /// When `max_duration` runs out: a model call or a tool batch still running then is cut.
    deadline: Option<Instant>,
    tools: Vec<ToolDefinition>,
    /// Where this run's messages begin in the history: they are kept there alone, and copied out
    /// once, at the end.
    new_from: usize,
    /// This run's messages that a compaction took out of the history, moved here whole.
    compacted_new: Vec<AgentMessage>,
    /// A model answer of this run called a tool.
    called_a_tool: bool,
    usage: Usage,
    tracker: Option<ExecutionTracker>,
    turn: usize,
    error: Option<String>,
    suspension: Option<Suspension>,
    overflow_recovered: bool,
    force_compaction: bool,
    /// The history's wire cache, for an agent's own history.
    wire: Option<&'a mut HistoryWire>,
    /// The context's size as the provider reports it.
    context_size: ContextTracker,
}

impl Run<'_> {
    fn finish(self, context: &AgentContext, reason: EndReason) -> LoopOutcome {
        let mut messages = self.compacted_new;
        messages.extend_from_slice(context.messages.get(self.new_from..).unwrap_or_default());
        if self.emitter.observed() {
            self.emitter.emit(AgentEvent::AgentEnd {
                loop_id: self.emitter.loop_id(),
                messages: messages.clone(),
                reason,
            });
        }
        if let Some(after_loop) = &self.config.hooks.after_loop {
            after_loop(&messages, &self.usage);
        }
        LoopOutcome {
            loop_id: self.emitter.loop_id.to_string(),
            reason,
            messages,
            usage: self.usage,
            error: self.error,
            suspension: self.suspension,
        }
    }

    /// Runs the input filters over the prompts' user text. `Err` carries the rejection reason.
    fn filter_input(&self, mut prompts: Vec<AgentMessage>) -> Result<Vec<AgentMessage>, String> {
        if self.config.input_filters.is_empty() {
            return Ok(prompts);
        }
        let text = prompts
            .iter()
            .filter_map(|m| match m {
                AgentMessage::Llm(Message::User(u)) => Some(sinew_core::content::join_text(&u.content, "\n")),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let mut warnings = Vec::new();
        for filter in &self.config.input_filters {
            match filter.filter(&text) {
                FilterResult::Pass => {}
                FilterResult::Warn(w) => warnings.push(w),
                FilterResult::Reject(reason) => return Err(reason),
            }
        }
        if !warnings.is_empty() {
            let last_user = prompts.iter_mut().rev().find_map(|m| match m {
                AgentMessage::Llm(Message::User(u)) => Some(u),
                _ => None,
            });
            if let Some(user) = last_user {
                user.content.extend(warnings.into_iter().map(|w| sinew_core::Content::text(format!("[Warning: {w}]"))));
            }
        }
        Ok(prompts)
    }

    fn append(&mut self, context: &mut AgentContext, message: AgentMessage) {
        let mut reported = false;
        if let Some(answer) = message.as_assistant() {
            reported = true;
            self.called_a_tool |= answer.tool_calls().next().is_some();
        }
        context.messages.push(message);
        if reported {
            self.context_size.record(&context.messages, context.messages.len() - 1);
        }
    }

    fn emit_message(&self, message: &AgentMessage) {
        if !self.emitter.observed() {
            return;
        }
        let loop_id = self.emitter.loop_id();
        self.emitter.emit(AgentEvent::MessageStart { loop_id: Arc::clone(&loop_id), message: message.clone() });
        self.emitter.emit(AgentEvent::MessageEnd { loop_id, message: message.clone() });
    }

    /// Appends a turn's answer and its tool results in call order, announcing each result.
    /// Returns the turn's end, for [`Run::end_turn`].
    fn append_turn(
        &mut self,
        context: &mut AgentContext,
        assistant: AssistantMessage,
        results: Vec<ToolResultMessage>,
    ) -> TurnEnded {
        let ended = TurnEnded {
            tokens: turn_tokens(&assistant),
            announced: self.emitter.observed().then(|| (assistant.clone(), results.clone())),
        };
        self.append(context, AgentMessage::from(assistant));
        for result in results {
            let message = AgentMessage::from(result);
            self.emit_message(&message);
            self.append(context, message);
        }
        ended
    }

    fn end_turn(&mut self, context: &AgentContext, ended: TurnEnded) {
        let TurnEnded { tokens, announced } = ended;
        if let Some((message, tool_results)) = announced {
            self.emitter.emit(AgentEvent::TurnEnd {
                loop_id: self.emitter.loop_id(),
                turn: self.turn,
                message,
                tool_results,
            });
        }
        if let Some(after_turn) = &self.config.hooks.after_turn {
            after_turn(&context.messages, &self.usage);
        }
        if let Some(tracker) = &mut self.tracker {
            tracker.record_turn(tokens);
        }
    }

    async fn turns(
        &mut self,
        context: &mut AgentContext,
        prompts: Vec<AgentMessage>,
        mut resume: Option<(Suspension, Vec<Option<ToolDecision>>)>,
        first_trigger: TurnTrigger,
    ) -> EndReason {
        let mut pending = prompts;
        if resume.is_none() {
            // On resume, steering waits until the pending batch has its results.
            pending.extend(take_steering(self.config));
        }
        let mut trigger = first_trigger;
        loop {
            let mut more_tool_calls = true;
            while more_tool_calls || !pending.is_empty() {
                let limit =
                    self.duration_exceeded().or_else(|| self.tracker.as_ref().and_then(ExecutionTracker::check_limits));
                if let Some(reason) = limit {
                    pending.push(AgentMessage::user(format!("[Agent stopped: {reason}]")));
                    for message in mem::take(&mut pending) {
                        self.emit_message(&message);
                        self.append(context, message);
                    }
                    if let Some((suspension, _)) = resume.take() {
                        self.abandon(
                            context,
                            suspension,
                            "Tool call was not executed: an execution limit was reached.",
                        );
                    }
                    return EndReason::LimitReached;
                }
                let injected = pending.len();
                for message in mem::take(&mut pending) {
                    self.append(context, message);
                }
                let stop = if self.cancel.is_cancelled() {
                    Some((EndReason::Aborted, crate::execution::ABORTED))
                } else {
                    self.turn += 1;
                    let go_on = self.config.hooks.before_turn.as_ref().is_none_or(|f| f(&context.messages, self.turn));
                    (!go_on).then_some((EndReason::Stopped, "Tool call was not executed: the run was stopped."))
                };
                if stop.is_none() {
                    self.emitter.emit(AgentEvent::TurnStart {
                        loop_id: self.emitter.loop_id(),
                        turn: self.turn,
                        triggered_by: mem::replace(&mut trigger, TurnTrigger::Continuation),
                    });
                }
                for message in &context.messages[context.messages.len() - injected..] {
                    self.emit_message(message);
                }
                if let Some((reason, why)) = stop {
                    if let Some((suspension, _)) = resume.take() {
                        self.abandon(context, suspension, why);
                    }
                    return reason;
                }

                let (assistant, calls) = match resume.take() {
                    Some((suspension, plan)) => {
                        let calls = suspension
                            .calls
                            .into_iter()
                            .zip(plan)
                            .map(|(c, decision)| PlannedCall {
                                id: c.tool_call_id,
                                name: c.tool_name,
                                arguments: c.arguments,
                                decision,
                            })
                            .collect();
                        (suspension.assistant, calls)
                    }
                    None => {
                        let assistant = self.model_turn(context).await;
                        if matches!(assistant.stop_reason, StopReason::Error | StopReason::Aborted) {
                            match self.failed_turn(context, assistant) {
                                // Cut by the run's deadline, not by the caller: a limit.
                                Some(EndReason::Aborted) if !self.cancel.is_cancelled() => {
                                    if let Some(reason) = self.duration_exceeded() {
                                        return self.stop_at_limit(context, &reason);
                                    }
                                    return EndReason::Aborted;
                                }
                                Some(end) => return end,
                                None => {
                                    // Overflow recovery: compact and ask again.
                                    more_tool_calls = true;
                                    continue;
                                }
                            }
                        }
                        let mut calls: Vec<PlannedCall> = assistant
                            .tool_calls()
                            .map(|c| PlannedCall {
                                id: c.id.to_owned(),
                                name: c.name.to_owned(),
                                arguments: c.arguments.clone(),
                                decision: None,
                            })
                            .collect();
                        refuse_cut_off_calls(&assistant, &mut calls);
                        if let Some(suspension) = self.suspension_for(&context.tools, &assistant, &calls) {
                            self.suspend(context, assistant, suspension);
                            return EndReason::Suspended;
                        }
                        (assistant, calls)
                    }
                };

                // Also for calls resumed from a suspension, whatever their decision.
                let mut calls = calls;
                refuse_cut_off_calls(&assistant, &mut calls);
                // A paused turn is not over: the model continues it from the history, this answer
                // last (Anthropic's `pause_turn`).
                more_tool_calls = !calls.is_empty() || assistant.stop_reason == StopReason::PauseTurn;
                let (results, steering) = if calls.is_empty() {
                    (Vec::new(), take_steering(self.config))
                } else {
                    // The deadline cuts the batch as an abort would: calls still running get an
                    // error result, and the next turn's limit check ends the run.
                    let tools_cancel = self.cancel.child_token();
                    let execution =
                        execute_tool_calls(&context.tools, self.config, &self.emitter, &tools_cancel, calls);
                    let mut execution = std::pin::pin!(execution);
                    let batch = tokio::select! {
                        batch = &mut execution => batch,
                        () = until(self.deadline) => {
                            tools_cancel.cancel();
                            execution.await
                        }
                    };
                    let steering = if batch.steering.is_empty() { take_steering(self.config) } else { batch.steering };
                    (batch.results, steering)
                };
                // The assistant message and its results enter the history together.
                let ended = self.append_turn(context, assistant, results);
                self.end_turn(context, ended);
                pending = steering;
            }
            let follow_ups = self.config.get_follow_up_messages.as_ref().map(|f| f()).unwrap_or_default();
            if follow_ups.is_empty() {
                return EndReason::Completed;
            }
            pending = follow_ups;
        }
    }

    /// The duration limit's reason, once the run's deadline has passed.
    fn duration_exceeded(&self) -> Option<String> {
        let limits = self.config.execution_limits?;
        let deadline = self.deadline?;
        (Instant::now() >= deadline).then(|| format!("max duration exceeded ({}s)", limits.max_duration.as_secs_f64()))
    }

    /// Ends the run at a limit, with its note in the history.
    fn stop_at_limit(&mut self, context: &mut AgentContext, reason: &str) -> EndReason {
        let note = AgentMessage::user(format!("[Agent stopped: {reason}]"));
        self.emit_message(&note);
        self.append(context, note);
        EndReason::LimitReached
    }

    /// Ends a turn whose model call failed or was aborted. Returns the run's end, or `None` when
    /// the failure was a context overflow that compaction may fix and the run goes on.
    fn failed_turn(&mut self, context: &mut AgentContext, assistant: AssistantMessage) -> Option<EndReason> {
        let results: Vec<ToolResultMessage> =
            assistant.tool_calls().map(|c| ToolResultMessage::error(c.id, c.name, NOT_EXECUTED)).collect();
        let aborted = assistant.stop_reason == StopReason::Aborted;
        let error = assistant.error_message.clone().unwrap_or_else(|| "model call failed".to_owned());
        let overflow = assistant.is_context_overflow();
        let ended = self.append_turn(context, assistant, results);
        if !aborted && let Some(on_error) = &self.config.hooks.on_error {
            on_error(&error);
        }
        self.end_turn(context, ended);
        if aborted {
            return Some(EndReason::Aborted);
        }
        let can_compact = self.config.context_config.is_some();
        if overflow && can_compact && !self.overflow_recovered && !self.cancel.is_cancelled() {
            tracing::warn!(error = %error, "context overflow; compacting before the next turn");
            // Compact and ask again; the failed message stays in the history (request builders
            // skip failed assistant messages without content).
            self.overflow_recovered = true;
            self.force_compaction = true;
            return None;
        }
        self.error = Some(error);
        Some(EndReason::Failed)
    }

    fn suspension_for(
        &self,
        tools: &[Arc<dyn AgentTool>],
        assistant: &AssistantMessage,
        calls: &[PlannedCall],
    ) -> Option<Suspension> {
        if calls.is_empty() {
            return None;
        }
        let kinds: Vec<PendingKind> = calls
            .iter()
            .map(|call| {
                let call_ref = sinew_core::ToolCallRef { id: &call.id, name: &call.name, arguments: &call.arguments };
                if call.decision.is_some() {
                    // Already answered (a call the token limit cut off).
                    PendingKind::Ready
                } else if self.config.pause_on_tool_calls {
                    PendingKind::ClientSide
                } else if self.config.approval_policy.as_ref().is_some_and(|policy| policy(call_ref))
                    || tools.iter().any(|t| t.name() == call.name && t.requires_approval(&call.arguments))
                {
                    PendingKind::Approval
                } else {
                    PendingKind::Ready
                }
            })
            .collect();
        if kinds.iter().all(|k| *k == PendingKind::Ready) {
            return None;
        }
        Some(Suspension {
            loop_id: self.emitter.loop_id.to_string(),
            assistant: assistant.clone(),
            calls: calls
                .iter()
                .zip(kinds)
                .map(|(c, kind)| PendingToolCall {
                    tool_call_id: c.id.clone(),
                    tool_name: c.name.clone(),
                    arguments: c.arguments.clone(),
                    kind,
                })
                .collect(),
        })
    }

    fn suspend(&mut self, context: &AgentContext, assistant: AssistantMessage, suspension: Suspension) {
        for call in suspension.waiting() {
            self.emitter.emit(AgentEvent::ToolApprovalRequest {
                loop_id: self.emitter.loop_id(),
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                args: call.arguments.clone(),
                kind: call.kind,
            });
        }
        let ended = TurnEnded {
            tokens: turn_tokens(&assistant),
            announced: self.emitter.observed().then_some((assistant, Vec::new())),
        };
        self.end_turn(context, ended);
        self.suspension = Some(suspension);
    }

    fn abandon(&mut self, context: &mut AgentContext, suspension: Suspension, why: &str) {
        for message in suspension.abandon(why) {
            self.emit_message(&message);
            self.append(context, message);
        }
    }

    /// Compacts if configured, asks the model, and accounts for its usage.
    async fn model_turn(&mut self, context: &mut AgentContext) -> AssistantMessage {
        self.compact(context).await;
        let system_prompt = match &self.config.instruction_provider {
            Some(provider) => {
                let ctx = InstructionContext {
                    messages: &context.messages,
                    turn: self.turn,
                    agent_id: context.agent_id.as_deref().unwrap_or_default(),
                    session_id: context.session_id.as_deref().unwrap_or_default(),
                    loop_id: &self.emitter.loop_id,
                };
                provider.instruction(ctx).await
            }
            None => context.system_prompt.clone(),
        };
        let message = self.stream_assistant_response(context, &system_prompt).await;
        self.usage.add(&message.usage);
        message
    }

    /// The history's estimated tokens: an agent's counted as it grows, another's counted whole.
    fn estimate(&mut self, messages: &[AgentMessage], counter: &Arc<dyn TokenCounter>) -> usize {
        match self.wire.as_deref_mut() {
            Some(wire) => wire.tokens(messages, counter),
            None => total_tokens(messages, &**counter),
        }
    }

    /// Runs the compaction strategy (the tiered cascade unless configured otherwise) when a
    /// context configuration is set.
    async fn compact(&mut self, context: &mut AgentContext) {
        let Some(context_config) = &self.config.context_config else { return };
        let strategy = self.config.compaction_strategy.as_deref().unwrap_or(&TieredCompaction);
        let counter = &*context_config.token_counter;
        let history_budget = context_config.history_budget();
        let mut budget = Cow::Borrowed(context_config);
        if mem::take(&mut self.force_compaction) {
            // The provider said the prompt overflowed, whatever our estimate says: aim for three
            // quarters of what was sent.
            let estimate = self.estimate(&context.messages, &context_config.token_counter);
            budget.to_mut().max_context_tokens =
                (estimate * 3 / 4 + context_config.system_prompt_tokens).min(context_config.max_context_tokens);
        } else {
            let reported = if self.context_size.is_current(&context.messages) {
                self.context_size.current_tokens(&context.messages)
            } else {
                self.estimate(&context.messages, &context_config.token_counter)
            };
            if reported > history_budget {
                // The provider counts more than our estimate: shrink the budget by the same ratio,
                // so the strategy, which estimates, still brings the real size under the budget.
                let estimate = self.estimate(&context.messages, &context_config.token_counter);
                if estimate < reported {
                    budget.to_mut().max_context_tokens =
                        history_budget * estimate / reported + context_config.system_prompt_tokens;
                }
            }
        }
        // The default strategy leaves a history within the budget as it is: an agent's history,
        // counted as it grows, is not counted whole again on every call to learn that.
        if self.config.compaction_strategy.is_none()
            && self.wire.is_some()
            && self.estimate(&context.messages, &context_config.token_counter) <= budget.history_budget()
        {
            return;
        }
        // The strategy borrows the history: if the run is dropped meanwhile, the history is intact.
        let Some(compacted) = strategy.compact(&context.messages, &budget).await else { return };
        let event = AgentEvent::ContextCompacted {
            loop_id: self.emitter.loop_id(),
            messages_before: context.messages.len(),
            messages_after: compacted.len(),
            tokens_before: total_tokens(&context.messages, counter),
            tokens_after: total_tokens(&compacted, counter),
        };
        // This run's messages leave the history whole: the run's outcome still holds them.
        let before = mem::replace(&mut context.messages, compacted);
        self.compacted_new.extend(before.into_iter().skip(self.new_from));
        self.new_from = context.messages.len();
        if let Some(wire) = &mut self.wire {
            wire.forget();
        }
        // The last report described the history before it was rewritten (a rewrite that keeps
        // the reported message in place would otherwise go unnoticed).
        self.context_size.reset();
        self.emitter.emit(event);
    }

    /// One model call, with retries for transient failures before anything was streamed.
    async fn stream_assistant_response(&mut self, context: &AgentContext, system_prompt: &str) -> AssistantMessage {
        let config = self.config;
        let transformed;
        let source: &[AgentMessage] = match &config.hooks.transform_context {
            Some(transform) => {
                transformed = transform(&context.messages);
                &transformed
            }
            None => &context.messages,
        };
        let converted;
        let messages: Vec<&Message> = match &config.hooks.convert_to_llm {
            Some(convert) => {
                converted = convert(source);
                converted.iter().collect()
            }
            None => source.iter().filter_map(AgentMessage::as_llm).collect(),
        };
        // What the hooks return is new every call: only the history itself is sent unchanged.
        let hooked = config.hooks.transform_context.is_some() || config.hooks.convert_to_llm.is_some();
        let unchanged = self.wire.as_deref_mut().map(|wire| {
            if hooked {
                wire.forget();
            }
            mem::replace(&mut wire.sent, if hooked { 0 } else { messages.len() }).min(messages.len())
        });
        let mut request = StreamRequest::new(&config.model, system_prompt, &messages);
        request.history = self
            .wire
            .as_deref()
            .zip(unchanged)
            .filter(|_| !hooked)
            .map(|(wire, unchanged)| HistoryCache { cache: &wire.cache, unchanged });
        request.tools = &self.tools;
        request.thinking_level = config.thinking_level;
        request.max_tokens = config.max_tokens;
        request.temperature = config.temperature;
        request.cache_config = config.cache_config;
        request.cache_key = context.session_id.as_deref();
        let relaxed;
        request.options = if config.request_options.tool_choice.is_forced() && self.called_a_tool {
            // The forced choice is spent: the model decides from here on (see
            // `AgentLoopConfig::request_options`).
            let mut options = config.request_options.clone();
            options.tool_choice = ToolChoice::Auto;
            relaxed = options;
            &relaxed
        } else {
            &config.request_options
        };
        let provider_id = config.provider.provider_id_for(&config.model);
        let span = tracing::info_span!(
            "chat",
            otel.name = format!("chat {}", config.model),
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = provider_id,
            gen_ai.request.model = %config.model,
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            error.r#type = tracing::field::Empty,
            sinew.time_to_first_chunk = tracing::field::Empty,
            gen_ai.system_instructions = tracing::field::Empty,
            gen_ai.input.messages = tracing::field::Empty,
            gen_ai.output.messages = tracing::field::Empty,
        );
        if config.capture_message_content {
            span.record(
                "gen_ai.system_instructions",
                crate::content_capture::system_instructions(request.system_prompt),
            );
            span.record("gen_ai.input.messages", crate::content_capture::input_messages(request.messages));
        }
        let message = self.call_with_retry(&mut request).instrument(span.clone()).await;
        if config.capture_message_content {
            span.record("gen_ai.output.messages", crate::content_capture::output_messages(&message));
        }
        span.record("gen_ai.response.model", message.model.as_str());
        span.record("gen_ai.response.finish_reasons", tracing::field::debug(message.stop_reason));
        span.record("gen_ai.usage.input_tokens", message.usage.prompt_tokens());
        span.record("gen_ai.usage.output_tokens", message.usage.output);
        if message.stop_reason == StopReason::Error {
            span.record("error.type", "provider_error");
        }
        message
    }

    /// One model call under the run's retry policy: one budget of retries for the call,
    /// whoever makes them. A provider that retries requests itself gets what is left of the
    /// budget in the request and reports each retry; the loop retries only what such a provider
    /// cannot (a failure after its response began), and everything for one that does not. No
    /// retry happens once something streamed, and no wait is longer than [`MAX_SERVER_DELAY`].
    async fn call_with_retry(&self, request: &mut StreamRequest<'_>) -> AssistantMessage {
        let config = self.config;
        let policy = config.retry_config;
        let provider_retries = config.provider.retries_requests(request.model);
        let mut started = false;
        let mut attempt = 0;
        let called_at = Instant::now();
        loop {
            request.retry = Some(policy.with_max_retries(policy.max_retries.saturating_sub(attempt)));
            let call_cancel = self.cancel.child_token();
            let mut stream = config.provider.stream(request, call_cancel.clone());
            let mut streamed = false;
            let mut response_began = false;
            let terminal = loop {
                // Checked before waiting too: a stream that always has an event ready would
                // otherwise keep the deadline from being polled.
                let out_of_time = self.deadline.is_some_and(|deadline| Instant::now() >= deadline);
                let event = if out_of_time {
                    call_cancel.cancel();
                    end_now(
                        &mut stream,
                        ProviderError::Cancelled,
                        config.provider.provider_id_for(&config.model),
                        request,
                    )
                } else {
                    tokio::select! {
                    biased;
                    event = stream.next() => event,
                    () = self.cancel.cancelled() => end_now(&mut stream, ProviderError::Cancelled, config.provider.provider_id_for(&config.model), request),
                    () = until(self.deadline) => {
                        // The run's time is up: the call ends as an abort would.
                        call_cancel.cancel();
                        end_now(&mut stream, ProviderError::Cancelled, config.provider.provider_id_for(&config.model), request)
                    }
                    }
                };
                match event {
                    Some(StreamEvent::Start) => {
                        response_began = true;
                        self.start_message(&mut started, request);
                    }
                    Some(StreamEvent::Delta(delta)) => {
                        self.start_message(&mut started, request);
                        if !streamed {
                            // The chat span's time to first chunk (GenAI metrics derive it).
                            tracing::Span::current()
                                .record("sinew.time_to_first_chunk", called_at.elapsed().as_secs_f64());
                        }
                        streamed = true;
                        if self.emitter.observed() {
                            self.emitter.emit(AgentEvent::MessageUpdate { loop_id: self.emitter.loop_id(), delta });
                            self.emitter.hand_on().await;
                        }
                    }
                    Some(StreamEvent::Retry { delay, error, .. }) => {
                        attempt += 1;
                        self.announce_retry(attempt, delay, &error);
                    }
                    Some(StreamEvent::Done(message)) => break Ok(*message),
                    Some(StreamEvent::Error { error, partial }) => break Err((error, *partial)),
                    Some(_) => {}
                    None => {
                        break Err((
                            ProviderError::Protocol("the provider stream ended without a final message".into()),
                            AssistantMessage::new(config.provider.provider_id_for(&config.model), request.model),
                        ));
                    }
                }
            };
            let message = match terminal {
                Ok(message) => message,
                Err((error, partial)) => {
                    let left_to_provider = provider_retries && !response_began;
                    let retry = error.is_retryable()
                        && !streamed
                        && !left_to_provider
                        && attempt < policy.max_retries
                        && !self.cancel.is_cancelled();
                    if retry {
                        attempt += 1;
                        let delay = error
                            .retry_after()
                            .filter(|d| *d <= MAX_SERVER_DELAY)
                            .unwrap_or_else(|| delay_for_attempt(&policy, attempt))
                            .min(MAX_SERVER_DELAY);
                        let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
                        tracing::warn!(attempt, max_retries = policy.max_retries, delay_ms, error = %error, "retrying model call");
                        self.announce_retry(attempt, delay, &error);
                        if self.wait_before_retry(delay).await {
                            continue;
                        }
                        failed_message(partial, ProviderError::Cancelled)
                    } else {
                        failed_message(partial, error)
                    }
                }
            };
            self.start_message(&mut started, request);
            if self.emitter.observed() {
                self.emitter
                    .emit(AgentEvent::MessageEnd { loop_id: self.emitter.loop_id(), message: message.clone().into() });
            }
            return message;
        }
    }

    fn start_message(&self, started: &mut bool, request: &StreamRequest<'_>) {
        if !mem::replace(started, true) && self.emitter.observed() {
            let empty = AssistantMessage::new(self.config.provider.provider_id_for(&self.config.model), request.model);
            self.emitter.emit(AgentEvent::MessageStart { loop_id: self.emitter.loop_id(), message: empty.into() });
        }
    }

    /// Announces a retry, by the loop or the provider.
    fn announce_retry(&self, attempt: u32, delay: Duration, error: &ProviderError) {
        self.emitter.emit(AgentEvent::ProviderRetry {
            loop_id: self.emitter.loop_id(),
            attempt,
            max_retries: self.config.retry_config.max_retries,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error: error.to_string(),
        });
    }

    /// Sleeps before a retry. `false` when cancelled, or the run's time ran out, while waiting.
    async fn wait_before_retry(&self, delay: Duration) -> bool {
        tokio::select! {
            biased;
            () = self.cancel.cancelled() => false,
            () = until(self.deadline) => false,
            () = tokio::time::sleep(delay) => true,
        }
    }
}

/// The next event of a call being cut short: the provider's, if it has one ready (so it can end
/// with its partial message), else `error` with an empty message.
fn end_now(
    stream: &mut futures::stream::BoxStream<'static, StreamEvent>,
    error: ProviderError,
    provider: &str,
    request: &StreamRequest<'_>,
) -> Option<StreamEvent> {
    match stream.next().now_or_never() {
        // A retry that will not happen is not announced.
        Some(Some(StreamEvent::Retry { .. })) | None => {
            Some(StreamEvent::error(error, AssistantMessage::new(provider, request.model)))
        }
        Some(event) => event,
    }
}

/// Resolves at `instant`, or never.
async fn until(instant: Option<Instant>) {
    match instant {
        Some(instant) => tokio::time::sleep_until(instant).await,
        None => std::future::pending().await,
    }
}

/// `partial` marked as failed by `error`: `Aborted` for cancellation, `Error` otherwise.
fn failed_message(mut partial: AssistantMessage, error: ProviderError) -> AssistantMessage {
    partial.stop_reason = if error == ProviderError::Cancelled { StopReason::Aborted } else { StopReason::Error };
    if partial.error_message.is_none() {
        partial.error_message = Some(error.to_string());
    }
    partial
}

#[cfg(test)]
mod tests {
    use sinew_core::HeuristicTokenCounter;

    use super::*;

    /// The count kept as the history grows is the count of the whole history; it starts over when
    /// the history is forgotten, shrinks, or another counter counts.
    #[test]
    fn a_history_counted_as_it_grows_counts_as_a_whole() {
        let counter: Arc<dyn TokenCounter> = Arc::new(HeuristicTokenCounter);
        let mut wire = HistoryWire::default();
        let mut history = Vec::new();
        for turn in 0..20 {
            history.push(AgentMessage::user("a question ".repeat(turn)));
            assert_eq!(wire.tokens(&history, &counter), total_tokens(&history, &*counter), "turn {turn}");
        }
        // Rewritten in place, then forgotten: counted again.
        history[0] = AgentMessage::user("x".repeat(4_000));
        wire.forget();
        assert_eq!(wire.tokens(&history, &counter), total_tokens(&history, &*counter));
        // Shorter than what was counted: counted again.
        history.truncate(3);
        assert_eq!(wire.tokens(&history, &counter), total_tokens(&history, &*counter));
        // Another counter: counted again, by it.
        let doubled: Arc<dyn TokenCounter> = Arc::new(Doubled);
        assert_eq!(wire.tokens(&history, &doubled), total_tokens(&history, &*doubled));
        assert_ne!(total_tokens(&history, &*doubled), total_tokens(&history, &*counter));
    }

    struct Doubled;

    impl TokenCounter for Doubled {
        fn count(&self, text: &str) -> usize {
            text.len() / 2
        }
    }
}
