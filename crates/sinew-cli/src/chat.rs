//! One conversation: an agent, where its runs are saved, how they are shown, and the user's
//! answers. [`Chat::ask`] runs a prompt to its end, approvals and Ctrl-C included.

use std::time::Duration;

use anyhow::Result;
use futures::StreamExt;
use sinew::mcp::McpClient;
use sinew::{Agent, AgentEvent, EndReason, LoopOutcome};

use crate::approval::{Answer, Approvals};
use crate::exit::Interrupted;
use crate::input::{Input, Interrupts};
use crate::providers::Providers;
use crate::render::{Display, JsonLines, Level, Render};
use crate::sessions::Sessions;

/// What an aborted turn leaves.
const ABORTED: &str = "⏹ turn aborted; the conversation so far is kept";

/// How runs are shown.
#[derive(Debug)]
pub(crate) enum Output {
    Display(Display),
    Json(JsonLines),
}

impl Output {
    fn render(&mut self) -> &mut dyn Render {
        match self {
            Output::Display(display) => display,
            Output::Json(json) => json,
        }
    }

    pub(crate) fn notice(&mut self, level: Level, text: &str) {
        self.render().notice(level, text);
    }
}

#[derive(Debug)]
pub(crate) struct Chat {
    pub(crate) agent: Agent,
    pub(crate) providers: Option<Providers>,
    pub(crate) sessions: Sessions,
    pub(crate) output: Output,
    pub(crate) approvals: Approvals,
    pub(crate) input: Input,
    pub(crate) interrupts: Interrupts,
    pub(crate) mcp: Vec<McpClient>,
}

enum Step {
    Prompt(String),
    Resume(sinew::Decisions),
}

impl Chat {
    /// Runs `prompt` to its end. The first Ctrl-C (during the run, or at an approval question)
    /// aborts the run, and the conversation stays valid and saved; a second one during the same
    /// run is [`Interrupted`].
    pub(crate) async fn ask(&mut self, prompt: String) -> Result<LoopOutcome> {
        self.interrupts.drain();
        let mut step = Step::Prompt(prompt);
        let mut aborting = false;
        loop {
            let handle = self.agent.handle();
            let session_id = self.agent.session_id().to_owned();
            let mut run = match step {
                Step::Prompt(prompt) => self.agent.prompt(prompt),
                Step::Resume(decisions) => self.agent.resume(decisions)?,
            };
            let mut ticker = tokio::time::interval(Duration::from_millis(100));
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            let mut leave = false;
            loop {
                tokio::select! {
                    event = run.next() => {
                        let Some(event) = event else { break };
                        if aborting {
                            // A Ctrl-C that came before the run had started cancels it now.
                            handle.abort();
                        }
                        self.sessions.record(&event);
                        self.output.render().on_event(&event);
                        if matches!(event, AgentEvent::TurnEnd { .. }) {
                            save(&mut self.sessions, &mut self.output, Some(&session_id)).await;
                        }
                    }
                    () = self.interrupts.recv() => {
                        if aborting {
                            leave = true;
                            break;
                        }
                        aborting = true;
                        handle.abort();
                        self.output.notice(Level::Warning, "aborting the turn (Ctrl-C again to quit)");
                    }
                    _ = ticker.tick(), if self.output.render().spinning() => self.output.render().tick(),
                }
            }
            let outcome = run.outcome().cloned();
            drop(run);
            if leave {
                // The run is dropped mid-way: keep what was recorded of it.
                save(&mut self.sessions, &mut self.output, Some(&session_id)).await;
                return Err(Interrupted.into());
            }
            save(&mut self.sessions, &mut self.output, None).await;
            let Some(outcome) = outcome else {
                anyhow::bail!("the run ended without an outcome");
            };
            match outcome.reason {
                EndReason::Suspended => {
                    let Some(suspension) = self.agent.suspension().cloned() else { return Ok(outcome) };
                    let answer = self
                        .approvals
                        .ask(&suspension, &mut self.input, &mut self.interrupts, self.output.render())
                        .await;
                    match answer {
                        Answer::Decided(decisions) => step = Step::Resume(decisions),
                        // Ctrl-C at the question aborts the turn. The calls stay pending, and
                        // the next prompt answers them as superseded.
                        Answer::Interrupted => {
                            self.output.notice(Level::Warning, ABORTED);
                            return Ok(LoopOutcome { reason: EndReason::Aborted, ..outcome });
                        }
                    }
                }
                EndReason::Aborted => {
                    self.output.notice(Level::Warning, ABORTED);
                    return Ok(outcome);
                }
                EndReason::Failed => {
                    let error = outcome.error.as_deref().unwrap_or("the model call failed");
                    self.output.notice(Level::Error, &format!("error: {error}"));
                    return Ok(outcome);
                }
                EndReason::LimitReached => {
                    let limit = outcome.error.as_deref().unwrap_or("an execution limit was reached");
                    self.output.notice(Level::Warning, &format!("stopped: {limit}"));
                    return Ok(outcome);
                }
                _ => return Ok(outcome),
            }
        }
    }

    /// Closes the MCP servers and writes anything not yet saved.
    pub(crate) async fn shutdown(&mut self) {
        save(&mut self.sessions, &mut self.output, None).await;
        for client in self.mcp.drain(..) {
            client.close().await;
        }
    }
}

/// Writes completed sessions, and `open` as far as it goes. A store that fails is reported and
/// the conversation goes on: the agent still holds the history.
async fn save(sessions: &mut Sessions, output: &mut Output, open: Option<&str>) {
    let saved = match open {
        Some(session_id) => sessions.checkpoint(session_id).await,
        None => sessions.flush().await,
    };
    if let Err(error) = saved {
        output.notice(Level::Warning, &format!("warning: {error:#}"));
    }
}
