//! Messages: what a conversation is made of.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::content::{Content, ToolCallRef};
use crate::usage::Usage;

/// Milliseconds since the Unix epoch, the unit of every timestamp in sinew.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Why the model stopped producing output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StopReason {
    /// The model finished its answer.
    #[default]
    Stop,
    /// The output token limit was reached.
    Length,
    /// The model asks for tool calls.
    ToolUse,
    /// The call failed; see `error_message`.
    Error,
    /// The call was cancelled.
    Aborted,
    /// The model declined to answer (Anthropic's `refusal`: its safety classifiers stopped the
    /// answer). What it said before is kept; the run ends as after any answer.
    Refusal,
    /// The service paused a long turn (Anthropic's `pause_turn`, during server-side tools). The
    /// answer is not over: the agent loop sends the history back, this message last, and the
    /// model continues it.
    PauseTurn,
}

/// A message from the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// The message's blocks: text and images.
    pub content: Vec<Content>,
    /// When the message was created, in milliseconds since the Unix epoch.
    pub timestamp: u64,
}

/// A message from the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    /// The answer's blocks, in the order the model produced them.
    pub content: Vec<Content>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// The model that answered: the name the service reports, or else the one requested.
    pub model: String,
    /// The `provider_id` of the provider that produced this message.
    pub provider: String,
    /// Tokens the call used, as the provider reported them.
    pub usage: Usage,
    /// When the message was created, in milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// What went wrong when `stop_reason` is [`StopReason::Error`]; `None` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

impl AssistantMessage {
    /// An empty message from `provider` / `model`, stamped now.
    pub fn new(provider: impl Into<String>, model: impl Into<String>) -> Self {
        AssistantMessage {
            content: Vec::new(),
            stop_reason: StopReason::Stop,
            model: model.into(),
            provider: provider.into(),
            usage: Usage::default(),
            timestamp: now_ms(),
            error_message: None,
        }
    }

    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = ToolCallRef<'_>> {
        self.content.iter().filter_map(Content::as_tool_call)
    }

    /// The text blocks joined with newlines.
    pub fn text(&self) -> String {
        crate::content::join_text(&self.content, "\n")
    }

    /// Whether this message failed because the context window overflowed.
    pub fn is_context_overflow(&self) -> bool {
        self.stop_reason == StopReason::Error
            && self.error_message.as_deref().is_some_and(|m| crate::error::is_context_overflow(0, m))
    }
}

/// The result of a tool call, sent back to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultMessage {
    /// The id of the tool call this answers.
    pub tool_call_id: String,
    /// The called tool's name.
    pub tool_name: String,
    /// What the model sees of the result.
    pub content: Vec<Content>,
    /// Whether the call failed; the model is told so.
    pub is_error: bool,
    /// When the result was made, in milliseconds since the Unix epoch.
    pub timestamp: u64,
    /// Structured details for hosts and UIs; never sent to the model.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
}

impl ToolResultMessage {
    /// An error result with a text explanation.
    pub fn error(tool_call_id: impl Into<String>, tool_name: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResultMessage {
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            content: vec![Content::text(text)],
            is_error: true,
            timestamp: now_ms(),
            details: Value::Null,
        }
    }
}

/// A message a model understands. Serialized with `"role"`: `"user"`, `"assistant"`, `"toolResult"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// From the user (`"user"`).
    User(UserMessage),
    /// From the model (`"assistant"`).
    Assistant(AssistantMessage),
    /// A tool call's result (`"toolResult"`).
    ToolResult(ToolResultMessage),
}

impl Message {
    /// A user message with one text block, stamped now.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User(UserMessage { content: vec![Content::text(text)], timestamp: now_ms() })
    }

    /// A user message with the given content, stamped now.
    pub fn user_content(content: Vec<Content>) -> Self {
        Message::User(UserMessage { content, timestamp: now_ms() })
    }

    /// The message's content blocks.
    pub fn content(&self) -> &[Content] {
        match self {
            Message::User(m) => &m.content,
            Message::Assistant(m) => &m.content,
            Message::ToolResult(m) => &m.content,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Message::Assistant(m) => Some(m),
            _ => None,
        }
    }
}

/// An application-defined message kept in the history but never sent to a model.
///
/// Serialized as `{"role":"extension","kind":"...","data":...}`.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtensionMessage {
    /// The application's name for the message type, to dispatch on.
    pub kind: String,
    /// The payload, any JSON.
    pub data: Value,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "role", rename = "extension")]
struct ExtensionRepr<K, T> {
    kind: K,
    data: T,
}

impl Serialize for ExtensionMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ExtensionRepr { kind: &self.kind, data: &self.data }.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ExtensionMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let repr = ExtensionRepr::<String, Value>::deserialize(deserializer)?;
        Ok(ExtensionMessage { kind: repr.kind, data: repr.data })
    }
}

/// A message in an agent's history: one for the model, or an extension message for the host.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AgentMessage {
    /// A message sent to the model.
    Llm(Message),
    /// A host message the model never sees.
    Extension(ExtensionMessage),
}

impl<'de> Deserialize<'de> for AgentMessage {
    // Dispatch on `role` ourselves: an untagged derive would answer a malformed message with
    // "did not match any variant", hiding which field was wrong.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(deserializer)?;
        let role = value.get("role").and_then(Value::as_str).ok_or_else(|| D::Error::missing_field("role"))?;
        match role {
            "extension" => serde_json::from_value(value).map(AgentMessage::Extension).map_err(D::Error::custom),
            "user" | "assistant" | "toolResult" => {
                serde_json::from_value(value).map(AgentMessage::Llm).map_err(D::Error::custom)
            }
            other => Err(D::Error::unknown_variant(other, &["user", "assistant", "toolResult", "extension"])),
        }
    }
}

impl AgentMessage {
    /// A user text message.
    pub fn user(text: impl Into<String>) -> Self {
        AgentMessage::Llm(Message::user(text))
    }

    /// The model message, if this is one.
    pub fn as_llm(&self) -> Option<&Message> {
        match self {
            AgentMessage::Llm(m) => Some(m),
            AgentMessage::Extension(_) => None,
        }
    }

    /// The assistant message, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        self.as_llm().and_then(Message::as_assistant)
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResultMessage> {
        match self {
            AgentMessage::Llm(Message::ToolResult(m)) => Some(m),
            _ => None,
        }
    }

    /// Whether this is a user message.
    pub fn is_user(&self) -> bool {
        matches!(self, AgentMessage::Llm(Message::User(_)))
    }
}

impl From<Message> for AgentMessage {
    fn from(m: Message) -> Self {
        AgentMessage::Llm(m)
    }
}

impl From<AssistantMessage> for AgentMessage {
    fn from(m: AssistantMessage) -> Self {
        AgentMessage::Llm(Message::Assistant(m))
    }
}

impl From<ToolResultMessage> for AgentMessage {
    fn from(m: ToolResultMessage) -> Self {
        AgentMessage::Llm(Message::ToolResult(m))
    }
}

impl From<ExtensionMessage> for AgentMessage {
    fn from(m: ExtensionMessage) -> Self {
        AgentMessage::Extension(m)
    }
}
