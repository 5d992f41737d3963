//! Parallel exploration: several continuations of one history, each a run of its own
//! ([`Agent::explore_branches`](crate::Agent::explore_branches)).

use sinew_core::{AgentMessage, CancellationToken};
use tokio::task::JoinHandle;
use tokio_util::sync::DropGuard;

use crate::agent_loop::{Entry, LoopOutcome, run};
use crate::config::{AgentContext, AgentLoopConfig};
use crate::emit::{EventReceiver, Sink, event_channel};
use crate::error::{Error, Result};

/// How one branch differs from the shared history.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct BranchSpec {
    /// The branch's tag (its `ContinuationKind::Branch` tag).
    pub tag: String,
    /// Appended to the history before the branch continues it (a different tool result, a
    /// different follow-up...).
    pub messages: Vec<AgentMessage>,
    /// Replaces the system prompt in this branch.
    pub system_prompt: Option<String>,
    /// Replaces the model in this branch.
    pub model: Option<String>,
}

impl BranchSpec {
    /// A branch tagged `tag` that continues the shared history as it is.
    pub fn new(tag: impl Into<String>) -> Self {
        BranchSpec { tag: tag.into(), ..BranchSpec::default() }
    }

    /// Appends a message to the history this branch continues.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<AgentMessage>) -> Self {
        self.messages.push(message.into());
        self
    }

    /// Replaces the system prompt in this branch.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Replaces the model in this branch.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// The branch's context and configuration, from the shared ones.
    pub(crate) fn apply(&self, context: &AgentContext, config: &AgentLoopConfig) -> (AgentContext, AgentLoopConfig) {
        let mut context = context.clone();
        context.messages.extend(self.messages.iter().cloned());
        if let Some(prompt) = &self.system_prompt {
            context.system_prompt.clone_from(prompt);
        }
        let mut config = config.clone();
        if let Some(model) = &self.model {
            config.model.clone_from(model);
        }
        (context, config)
    }
}

/// A running branch: its own task, event channel and cancel token.
///
/// Dropping it cancels the branch (its run ends as an abort would, tools included), and so
/// does [`Agent::abort`](crate::Agent::abort); [`Branch::finish`] waits for its end.
#[derive(Debug)]
#[must_use = "a dropped branch is cancelled: keep it, or `finish()` it"]
pub struct Branch {
    /// The tag of the [`BranchSpec`] the branch was started from.
    pub tag: String,
    /// The branch run's loop id, a new one in the agent's session.
    pub loop_id: String,
    /// The branch's events, from `AgentStart` to `AgentEnd`.
    pub events: EventReceiver,
    /// Cancels this branch only.
    pub cancel: CancellationToken,
    task: JoinHandle<BranchOutcome>,
    /// Cancels the branch when the `Branch` is dropped.
    _guard: DropGuard,
}

/// How a branch ended.
#[derive(Clone, Debug, PartialEq)]
pub struct BranchOutcome {
    /// The tag of the branch's [`BranchSpec`].
    pub tag: String,
    /// How the branch's run ended: its reason, new messages, usage and any error.
    pub outcome: LoopOutcome,
    /// The branch's whole history; [`Agent::adopt_branch`](crate::Agent::adopt_branch) makes it
    /// the agent's.
    pub messages: Vec<AgentMessage>,
}

impl Branch {
    /// Starts `context` (identity and continuation already set) on a task of its own.
    pub(crate) fn spawn(
        tag: String,
        mut context: AgentContext,
        config: AgentLoopConfig,
        cancel: CancellationToken,
    ) -> Branch {
        let (tx, events) = event_channel();
        let loop_id = context.loop_id.clone().unwrap_or_default();
        let token = cancel.clone();
        let branch_tag = tag.clone();
        let task = tokio::spawn(async move {
            let outcome =
                run(&mut context, &config, Sink::Channel(tx), &token, Entry::Continue(Vec::new()), None).await;
            BranchOutcome { tag: branch_tag, outcome, messages: context.messages }
        });
        let guard = cancel.clone().drop_guard();
        Branch { tag, loop_id, events, cancel, task, _guard: guard }
    }

    /// Waits for the branch to end. Events not yet read stay in [`Branch::events`]' channel; read
    /// them first if they matter. Dropping the returned future cancels the branch.
    pub async fn finish(self) -> Result<BranchOutcome> {
        let Branch { tag, task, _guard: guard, .. } = self;
        let outcome = task.await.map_err(|error| Error::InvalidContext(format!("branch {tag} crashed: {error}")));
        // It ended on its own: nothing to cancel.
        guard.disarm();
        outcome
    }
}
