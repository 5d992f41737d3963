//! Between stored messages and ADK events, both ways.

use serde_json::{Map, Value};

use super::{ChatMessage, ToolCall};
use crate::event::{Event, LlmResponse};
use crate::genai::{Content, FunctionCall, FunctionResponse, MODEL, Part, USER};

/// The author of agent messages when neither the message nor the adapter names one.
pub const DEFAULT_AUTHOR: &str = "sinew-agent";

/// The role ADK events rebuilt from tool messages carry (spec 000).
const FUNCTION: &str = "function";

/// Stored messages as ADK events (spec 000's `EventsAdapter`).
///
/// - `user` messages are the user's; every other role (`assistant`, `model`, `system`, unknown)
///   is the agent's: its author is the message's, else the root agent's name, else the default
///   author, never the literal `model`.
/// - An assistant message's tool calls become function calls with their ids (`call_<name>` when
///   a stored id is empty) and their arguments parsed.
/// - A tool message's responses become function responses with role `function`. A legacy tool
///   message without them answers the preceding assistant message's calls by position; with
///   nothing to answer, it is a text part.
#[derive(Clone, Debug)]
pub struct EventsAdapter {
    agent_author: String,
}

impl Default for EventsAdapter {
    fn default() -> Self {
        EventsAdapter::new("")
    }
}

impl EventsAdapter {
    /// Agent messages without an author are `root_agent_name`'s ([`DEFAULT_AUTHOR`]'s when empty).
    pub fn new(root_agent_name: impl Into<String>) -> Self {
        let name = root_agent_name.into();
        EventsAdapter { agent_author: if name.is_empty() { DEFAULT_AUTHOR.to_owned() } else { name } }
    }

    /// The author agent messages without one get.
    pub fn agent_author(&self) -> &str {
        &self.agent_author
    }

    /// The events of `messages`, in order.
    pub fn events(&self, messages: &[ChatMessage]) -> Vec<Event> {
        let mut events = Vec::with_capacity(messages.len());
        // The calls of the latest assistant message, and how many tool messages answered since.
        let mut pending: &[ToolCall] = &[];
        let mut answered = 0;
        for (index, message) in messages.iter().enumerate() {
            let content = if message.role == USER {
                Content::new(USER, text_parts(&message.content))
            } else if message.is_tool() {
                let parts = if message.tool_calls.iter().any(|c| c.output.is_some()) {
                    message.tool_calls.iter().filter_map(response_part).collect()
                } else if let Some(call) = pending.get(answered) {
                    vec![Part::function_response(FunctionResponse::new(
                        Some(call_id(call)),
                        &call.name,
                        response_map(&message.content),
                    ))]
                } else {
                    text_parts(&message.content)
                };
                answered += 1;
                Content::new(FUNCTION, parts)
            } else {
                pending = &message.tool_calls;
                answered = 0;
                let mut parts = text_parts(&message.content);
                parts.extend(message.tool_calls.iter().map(|call| {
                    Part::function_call(FunctionCall::new(Some(call_id(call)), &call.name, args_map(&call.input)))
                }));
                Content::new(MODEL, parts)
            };
            let author = if !message.author.is_empty() {
                message.author.as_str()
            } else if message.role == USER {
                USER
            } else {
                &self.agent_author
            };
            let id = if message.id.is_empty() { format!("message-{index}") } else { message.id.clone() };
            let mut event = Event::with_id(id.into(), "", author, LlmResponse::new(content));
            event.timestamp = message.timestamp;
            events.push(event);
        }
        events
    }
}

fn text_parts(text: &str) -> Vec<Part> {
    if text.is_empty() { Vec::new() } else { vec![Part::text(text)] }
}

fn call_id(call: &ToolCall) -> String {
    if call.id.is_empty() { format!("call_{}", call.name) } else { call.id.clone() }
}

fn response_part(call: &ToolCall) -> Option<Part> {
    let output = call.output.as_deref()?;
    Some(Part::function_response(FunctionResponse::new(Some(call_id(call)), &call.name, response_map(output))))
}

/// A response as ADK wants it, an object: a JSON object as it is, anything else under `result`.
fn response_map(text: &str) -> Map<String, Value> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => map,
        Ok(other) => Map::from_iter([("result".to_owned(), other)]),
        Err(_) => Map::from_iter([("result".to_owned(), Value::String(text.to_owned()))]),
    }
}

/// Arguments as ADK wants them, an object: empty text is none, other JSON or text goes under
/// `input` so nothing is lost.
fn args_map(text: &str) -> Map<String, Value> {
    if text.trim().is_empty() {
        return Map::new();
    }
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => map,
        Ok(other) => Map::from_iter([("input".to_owned(), other)]),
        Err(_) => Map::from_iter([("input".to_owned(), Value::String(text.to_owned()))]),
    }
}

/// The message an event is stored as, `None` when it has nothing a message holds (a state
/// delta alone, an error without content).
///
/// Function calls keep their ids (`call_<name>` when empty) and their arguments as JSON; function
/// responses are stored with id, name and the serialized response in the tool calls **and** in
/// the content (one line per response), and make a `tool` message. The user's events make `user`
/// messages, every other author's `assistant` messages.
pub fn message_from_event(event: &Event) -> Option<ChatMessage> {
    let content = event.content.as_ref()?;
    let text = content.text();
    let mut tool_calls = Vec::new();
    let mut responses = Vec::new();
    for call in content.function_calls() {
        let id = if call.id().is_empty() { format!("call_{}", call.name()) } else { call.id().to_owned() };
        let input = Value::Object(call.args.clone().unwrap_or_default()).to_string();
        tool_calls.push(ToolCall::call(id, call.name(), input));
    }
    for response in content.function_responses() {
        let id = if response.id().is_empty() { format!("call_{}", response.name()) } else { response.id().to_owned() };
        let output = Value::Object(response.response.clone().unwrap_or_default()).to_string();
        responses.push(output.clone());
        tool_calls.push(ToolCall::response(id, response.name(), output));
    }
    if text.is_empty() && tool_calls.is_empty() {
        return None;
    }
    let role = if !responses.is_empty() {
        "tool"
    } else if &*event.author == USER {
        USER
    } else {
        "assistant"
    };
    let content = if responses.is_empty() { text } else { responses.join("\n") };
    Some(ChatMessage {
        id: event.id.to_string(),
        role: role.to_owned(),
        author: event.author.to_string(),
        content,
        tool_calls,
        timestamp: event.timestamp,
    })
}
