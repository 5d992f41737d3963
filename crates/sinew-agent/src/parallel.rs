//! Parallel evaluation: one prompt, several configurations, one winner (REQ-196…REQ-209).

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::join_all;
use sinew_core::{AgentEvent, AgentMessage, CancellationToken, ContinuationKind, Usage};

use crate::agent_loop::{LoopOutcome, check_continuable, new_id, run};
use crate::config::{AgentContext, AgentLoopConfig};
use crate::emit::{EventSender, Sink};
use crate::error::{Error, Result};

/// One branch of a parallel group, as it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct ParallelLoopOutcome {
    /// The index of the branch's configuration.
    pub config_index: usize,
    /// How the branch's run ended: its reason, new messages, usage and any error.
    pub outcome: LoopOutcome,
    /// The length of the history the branch started from: its full history is that prefix
    /// followed by `outcome.messages`.
    pub original_context_len: usize,
}

/// What [`agent_loop_parallel`] did.
#[derive(Clone, Debug, PartialEq)]
pub struct ParallelLoopResult {
    /// The group's id (the `loop_id` of its `ParallelLoopStart` and `ParallelLoopEnd` events).
    pub group_id: String,
    /// Every branch, in configuration order.
    pub branches: Vec<ParallelLoopOutcome>,
    /// The winner's index in `branches`; `None` when the strategy selected none.
    pub selected_index: Option<usize>,
    /// Why none was selected, when none was.
    pub no_selection_reason: Option<String>,
    /// What the evaluation used (a judge model's calls), apart from the branches' own usage.
    pub evaluation_usage: Usage,
}

impl ParallelLoopResult {
    /// The winning branch.
    pub fn selected(&self) -> Option<&ParallelLoopOutcome> {
        self.selected_index.and_then(|i| self.branches.get(i))
    }

    /// The branches' usage and the evaluation's, summed.
    pub fn total_usage(&self) -> Usage {
        self.branches.iter().fold(self.evaluation_usage, |sum, b| sum.combine(&b.outcome.usage))
    }
}

/// A strategy's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvaluationDecision {
    /// The branch at this index wins.
    Select(usize),
    /// No branch wins; the reason says why.
    NoSelection(String),
}

/// What a strategy decided, and what deciding cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The strategy's verdict.
    pub decision: EvaluationDecision,
    /// Tokens the decision cost (a judge model's calls); zero for strategies that run no model.
    pub usage: Usage,
}

impl Evaluation {
    /// A decision that cost nothing.
    pub fn free(decision: EvaluationDecision) -> Self {
        Evaluation { decision, usage: Usage::default() }
    }
}

/// What a strategy looks at.
#[derive(Clone, Copy, Debug)]
pub struct EvaluationInput<'a> {
    /// The prompts the branches answered (empty when they continued the history).
    pub prompts: &'a [AgentMessage],
    /// The history the branches started from.
    pub history: &'a [AgentMessage],
    /// Every branch, in configuration order.
    pub branches: &'a [ParallelLoopOutcome],
    /// The session the group and its branches run in; a judge runs in it too.
    pub session_id: &'a str,
    /// The group's id; a judge's loop id is `"{group_id}.judge"`.
    pub group_id: &'a str,
}

/// Picks the winner of a parallel group.
#[async_trait]
pub trait EvaluationStrategy: Send + Sync {
    /// A short name, recorded with the group.
    fn name(&self) -> &str;

    /// Decides. Strategies that run a model send its events to `tx` and stop on `cancel`.
    async fn evaluate(&self, input: EvaluationInput<'_>, tx: &EventSender, cancel: &CancellationToken) -> Evaluation;
}

/// Runs `prompts` against `context` once per configuration, concurrently, then lets `strategy`
/// pick a winner, whose history becomes `context`'s.
///
/// Each branch is a run of its own: a copy of the context, its own loop id, `parent_loop_id` the
/// context's current loop, `continuation_kind` a branch tagged with its index, and a child of
/// `cancel`. All events go to `tx`: `ParallelLoopStart` (which a session recorder uses to
/// register the branches ahead), the branches' events interleaved (each carries its loop id), the
/// strategy's, then `ParallelLoopEnd`.
///
/// With no `prompts`, each branch continues the history instead (as `agent_loop_continue`
/// would): the history must then be one that can be continued (non-empty, not ending with the
/// model's answer). A context without agent or session id gets new ones, written back.
///
/// When the strategy selects none, `context` keeps its history.
pub async fn agent_loop_parallel(
    prompts: Vec<AgentMessage>,
    context: &mut AgentContext,
    configs: &[AgentLoopConfig],
    strategy: &dyn EvaluationStrategy,
    tx: &EventSender,
    cancel: &CancellationToken,
) -> Result<ParallelLoopResult> {
    if configs.is_empty() {
        return Err(Error::InvalidContext("agent_loop_parallel needs at least one configuration".into()));
    }
    if prompts.is_empty() {
        check_continuable(&context.messages)?;
    }
    let agent_id = context.agent_id.get_or_insert_with(new_id).clone();
    let session_id = context.session_id.get_or_insert_with(new_id).clone();
    let group = short_id();
    let group_id = format!("{session_id}.parallel.{group}");
    let loop_ids: Vec<String> = configs
        .iter()
        .enumerate()
        .map(|(i, config)| format!("{session_id}.{}.{group}-{}", config.config_segment(), i + 1))
        .collect();
    let group_loop_id: Arc<str> = group_id.as_str().into();
    send(
        tx,
        config_observer(configs),
        AgentEvent::ParallelLoopStart {
            loop_id: Arc::clone(&group_loop_id),
            agent_id: agent_id.into(),
            session_id: session_id.as_str().into(),
            loop_ids: loop_ids.clone(),
            strategy: strategy.name().to_owned(),
        },
    );

    let original_context_len = context.messages.len();
    let branches = configs.iter().zip(&loop_ids).enumerate().map(|(i, (config, loop_id))| {
        let mut branch = context.clone();
        branch.parent_loop_id = context.loop_id.clone();
        branch.loop_id = Some(loop_id.clone());
        branch.continuation_kind = Some(ContinuationKind::Branch { tag: format!("branch-{}", i + 1) });
        let prompts = prompts.clone();
        let cancel = cancel.child_token();
        async move {
            let entry = if prompts.is_empty() {
                crate::agent_loop::Entry::Continue(Vec::new())
            } else {
                crate::agent_loop::Entry::Prompt(prompts)
            };
            let outcome = run(&mut branch, config, Sink::Channel(tx.clone()), &cancel, entry, None).await;
            (ParallelLoopOutcome { config_index: i, outcome, original_context_len }, branch)
        }
    });
    let (branches, contexts): (Vec<ParallelLoopOutcome>, Vec<AgentContext>) =
        join_all(branches).await.into_iter().unzip();

    let input = EvaluationInput {
        prompts: &prompts,
        history: &context.messages,
        branches: &branches,
        session_id: &session_id,
        group_id: &group_id,
    };
    let evaluation = strategy.evaluate(input, tx, cancel).await;
    let (selected_index, no_selection_reason) = match evaluation.decision {
        EvaluationDecision::Select(i) if i < branches.len() => (Some(i), None),
        EvaluationDecision::Select(i) => {
            (None, Some(format!("the strategy selected branch {i} of {}", branches.len())))
        }
        EvaluationDecision::NoSelection(reason) => (None, Some(reason)),
    };
    let selected_loop_id = selected_index.map(|i| branches[i].outcome.loop_id.clone());
    send(
        tx,
        config_observer(configs),
        AgentEvent::ParallelLoopEnd {
            loop_id: group_loop_id,
            session_id: session_id.as_str().into(),
            selected_loop_id,
            selected_index,
            evaluation_usage: evaluation.usage,
        },
    );
    if let Some(winner) = selected_index.and_then(|i| contexts.into_iter().nth(i)) {
        // The winner's own history: never the compacted text a judge may have read.
        context.messages = winner.messages;
        context.loop_id = winner.loop_id;
    }
    Ok(ParallelLoopResult {
        group_id,
        branches,
        selected_index,
        no_selection_reason,
        evaluation_usage: evaluation.usage,
    })
}

/// The group events go to the first configuration's observer, as a run's events go to its own.
fn config_observer(configs: &[AgentLoopConfig]) -> Option<&crate::config::EventObserver> {
    configs.first().and_then(|c| c.hooks.on_event.as_ref())
}

fn send(tx: &EventSender, observer: Option<&crate::config::EventObserver>, event: AgentEvent) {
    if let Some(observe) = observer {
        observe(&event);
    }
    // A host that dropped its receiver no longer listens; the group runs on regardless.
    let _ = tx.send(event);
}

/// Eight hex digits: unique enough within a session, short enough to read in a loop id.
fn short_id() -> String {
    new_id().chars().filter(char::is_ascii_hexdigit).take(8).collect()
}
