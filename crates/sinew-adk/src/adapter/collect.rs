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
/// The text comes from the streamed fragments when there were any, and from the complete events
/// otherwise, never from both, so streaming does not double it. When the run fails with
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

/// One run's text: fragments' when there were any, complete events' otherwise.
async fn run_once(
    runner: &Runner,
    user_id: &str,
    session_id: &str,
    message: Content,
    config: RunConfig,
) -> Result<String> {
    let mut events = runner.run(user_id, session_id, Some(message), None, config);
    let (mut streamed, mut complete) = (String::new(), String::new());
    let mut saw_fragments = false;
    while let Some(event) = events.next().await {
        let event = event?;
        let Some(content) = event.content.as_ref().filter(|_| &*event.author != crate::genai::USER) else { continue };
        if event.is_partial() {
            saw_fragments = true;
            streamed.push_str(&content.text());
        } else {
            complete.push_str(&content.text());
        }
    }
    Ok(if saw_fragments { streamed } else { complete })
}
