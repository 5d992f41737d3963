//! ADK runs as sinew loop records: an ADK session becomes a `sinew-session` session, so the
//! stores, the CLI's session commands and everything else that reads loop records read ADK runs.

use sinew_core::{AgentMessage, Message, Usage};
use sinew_session::{LoopRecord, LoopStatus};

use crate::event::Event;
use crate::model::to_messages;
use crate::types::Session;

/// The provider name recorded on the assistant messages of ADK runs.
const PROVIDER: &str = "adk";

/// An ADK session as sinew loop records: one loop per invocation, in the order the invocations
/// started, holding the invocation's turns as sinew messages (the model's as assistant messages
/// with their calls, function responses as tool results, the rest as user turns), the token usage
/// its events report, its first and last times, and how it ended: `Failed` when its last event
/// carries an error, `Suspended` when it waits for a long-running call's answer, `Completed`
/// otherwise. The session's id and app name become the record's session and agent ids.
///
/// Save the result with any [`sinew_session::SessionStore`] (`merge` adds the loops of later
/// invocations to what is stored). ADK's own fields that loop records have no place for (state,
/// actions, branches) stay in the ADK session, which remains the source of truth.
pub fn to_sinew_session(session: &Session) -> sinew_session::Session {
    let ms = |seconds: f64| {
        // Saturating: a time before the epoch is 0.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ms = (seconds * 1000.0).max(0.0) as u64;
        ms
    };
    let created = session.events.first().map_or(session.last_update_time, |e| e.timestamp);
    let mut record = sinew_session::Session::new(session.id.clone(), session.app_name.clone(), ms(created));
    record.updated_at = ms(session.last_update_time).max(record.created_at);
    for invocation in invocations(&session.events) {
        let invocation = invocation.as_slice();
        let (first, last) = (&invocation[0], &invocation[invocation.len() - 1]);
        let agent = invocation.iter().find(|e| &*e.author != crate::genai::USER).map_or("", |e| &*e.author);
        let mut messages = Vec::new();
        let mut usage = Usage::default();
        for event in invocation {
            if let Some(metadata) = &event.usage_metadata {
                let input = metadata.prompt_token_count.unwrap_or(0);
                let cached = metadata.cached_content_token_count.unwrap_or(0).min(input);
                // Stored counts: saturating, never a panic.
                let output = metadata
                    .candidates_token_count
                    .unwrap_or(0)
                    .saturating_add(metadata.thoughts_token_count.unwrap_or(0));
                let mut used = Usage::new(input - cached, output);
                used.cache_read = cached;
                used.total_tokens = metadata.total_token_count.unwrap_or(used.total_tokens);
                usage = usage.combine(&used);
            }
            let Some(content) = &event.content else { continue };
            for mut message in to_messages(vec![content.clone()], PROVIDER, agent) {
                let at = ms(event.timestamp);
                match &mut message {
                    Message::User(m) => m.timestamp = at,
                    Message::Assistant(m) => m.timestamp = at,
                    Message::ToolResult(m) => m.timestamp = at,
                }
                messages.push(AgentMessage::Llm(message));
            }
        }
        let status = if last.error_code.is_some() || last.error_message.is_some() {
            LoopStatus::Failed
        } else if waits_for_an_answer(invocation) {
            LoopStatus::Suspended
        } else {
            LoopStatus::Completed
        };
        record.loops.push(LoopRecord {
            loop_id: first.invocation_id.to_string(),
            session_id: session.id.clone(),
            agent_id: agent.to_owned(),
            status,
            started_at: ms(first.timestamp),
            ended_at: Some(ms(last.timestamp)),
            messages,
            usage,
            ..LoopRecord::default()
        });
    }
    record
}

/// The session's events grouped by invocation, in the order the invocations started.
fn invocations(events: &[Event]) -> Vec<Vec<&Event>> {
    let mut groups: Vec<Vec<&Event>> = Vec::new();
    for event in events {
        match groups.iter_mut().find(|g| g[0].invocation_id == event.invocation_id) {
            Some(group) => group.push(event),
            None => groups.push(vec![event]),
        }
    }
    groups
}

/// Whether a long-running call of the invocation has no response in it.
fn waits_for_an_answer(invocation: &[&Event]) -> bool {
    invocation
        .iter()
        .flat_map(|e| e.long_running_tool_ids.iter().flatten())
        .any(|id| !invocation.iter().flat_map(|e| e.function_responses()).any(|r| r.id() == id))
}
