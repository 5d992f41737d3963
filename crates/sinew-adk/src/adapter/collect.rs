//! [`run_and_collect`]: an agent's answer as text, with one retry when the model transferred to
//! an agent that does not exist.

use futures::StreamExt as _;

use crate::context::RunConfig;
use crate::error::{Error, Result};
use crate::genai::Content;
use crate::runner::Runner;

/// What a model that named a missing agent is told before its one retry.
pub fn correction_message(name: &str, valid: &[&str]) -> String {
    format!(
        "[System: Agent \"{name}\" does not exist. Valid agents: {}. Please retry using one of the valid agent names listed above.]",
        valid.join(", ")
    )
}

/// The name in a `failed to find agent: <name>` error.
fn missing_agent(error: &Error) -> Option<String> {
    if let Error::UnknownAgent { name } = error {
        return Some(name.clone());
    }
    let text = error.to_string();
    let (_, rest) = text.split_once("failed to find agent: ")?;
    let name = rest.lines().next().unwrap_or_default().trim().trim_matches(['"', '\'']);
    (!name.is_empty()).then(|| name.to_owned())
}

/// Runs `message` through `runner` and returns the agents' text (spec 000's `RunAndCollect`).
///
/// Each answer's text comes from its streamed fragments when it was streamed, and from its
/// complete event otherwise, never from both, so streaming does not double it (and an agent that
/// answers whole after one that streamed is not lost). When the run fails with
/// `failed to find agent: <name>` (a transfer to an agent that does not exist) and the root agent
/// has sub-agents, the model is told which agents exist ([`correction_message`]) and the run is
/// retried exactly once; the retry's error is returned if it fails too. Any other error, or a
/// root agent without sub-agents, is returned at once.
pub async fn run_and_collect(
    runner: &Runner,
    user_id: &str,
    session_id: &str,
    message: Content,
    config: RunConfig,
) -> Result<String> {
    let error = match run_once(runner, user_id, session_id, message, config.clone()).await {
        Ok(text) => return Ok(text),
        Err(error) => error,
    };
    let valid: Vec<&str> = runner.agent().sub_agents().iter().map(|agent| agent.name()).collect();
    let Some(name) = missing_agent(&error).filter(|_| !valid.is_empty()) else { return Err(error) };
    let correction = Content::user_text(correction_message(&name, &valid));
    run_once(runner, user_id, session_id, correction, config).await
}

/// One run's text, event by event: a response streamed in fragments counts its fragments, and
/// its complete event (which repeats them under the same id) is skipped; a response that came
/// whole counts its complete event.
async fn run_once(
    runner: &Runner,
    user_id: &str,
    session_id: &str,
    message: Content,
    config: RunConfig,
) -> Result<String> {
    let mut events = runner.run(user_id, session_id, Some(message), None, config);
    let mut text = String::new();
    let mut streamed: Option<crate::event::ArcStr> = None;
    while let Some(event) = events.next().await {
        let event = event?;
        let Some(content) = event.content.as_ref().filter(|_| &*event.author != crate::genai::USER) else { continue };
        if event.is_partial() {
            text.push_str(&content.text());
            streamed = Some(event.id.clone());
        } else if streamed.as_ref() != Some(&event.id) {
            text.push_str(&content.text());
        }
    }
    Ok(text)
}
