//! Integration tests of the agent loop, driven by `MockProvider`.

mod abort;
mod approval;
mod basics;
mod compaction;
#[cfg(feature = "schema")]
mod extract;
mod hooks;
mod identity;
mod limits_retry;
mod parallel;
mod property;
mod skills;
mod spans;
mod sub_agent;
mod tools;
#[cfg(feature = "schema")]
mod typed;

use std::sync::{Arc, Mutex};

use sinew_agent::Agent;
use sinew_core::{AgentEvent, AgentMessage, Content, Message};
use sinew_testing::{MockProvider, MockResponse};

/// An agent on a shared mock, so tests can inspect the requests.
pub(crate) fn agent(responses: impl IntoIterator<Item = MockResponse>) -> (Agent, Arc<MockProvider>) {
    let mock = Arc::new(MockProvider::new(responses));
    (Agent::new(Arc::clone(&mock), "mock-model"), mock)
}

/// A shared log for hooks and observers.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub(crate) fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }

    pub(crate) fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// The text of a user or tool result message.
pub(crate) fn text_of(message: &AgentMessage) -> String {
    match message {
        AgentMessage::Llm(m) => sinew_core::content::join_text(m.content(), "\n"),
        AgentMessage::Extension(e) => e.kind.clone(),
    }
}

/// The roles of a history, for compact assertions.
pub(crate) fn roles(messages: &[AgentMessage]) -> Vec<&'static str> {
    messages
        .iter()
        .map(|m| match m {
            AgentMessage::Llm(Message::User(_)) => "user",
            AgentMessage::Llm(Message::Assistant(_)) => "assistant",
            AgentMessage::Llm(Message::ToolResult(_)) => "toolResult",
            AgentMessage::Extension(_) => "extension",
        })
        .collect()
}

pub(crate) fn user_texts(request: &sinew_testing::RecordedRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => Some(sinew_core::content::join_text(&u.content, "\n")),
            _ => None,
        })
        .collect()
}

pub(crate) fn tool_result_texts(events: &[AgentEvent]) -> Vec<(String, String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd { message: AgentMessage::Llm(Message::ToolResult(r)), .. } => {
                Some((r.tool_call_id.clone(), sinew_core::content::join_text(&r.content, ""), r.is_error))
            }
            _ => None,
        })
        .collect()
}

pub(crate) fn first_text(content: &[Content]) -> &str {
    content.iter().find_map(Content::as_text).unwrap_or_default()
}
