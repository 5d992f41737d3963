//! ADK's `LlmResponse`, `Event` and `EventActions`, as adk-python 2.13 writes them.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::genai::{Content, FunctionCall, FunctionResponse, UsageMetadata};
use crate::json::{opaque, opaque_boxed};

/// An immutable string that clones by reference: an event's id, invocation id, author and node
/// path, which every streamed fragment of a response repeats. It reads like a `&str` (it derefs
/// to one and compares with one) and serializes as a plain string.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArcStr(std::sync::Arc<str>);

impl ArcStr {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for ArcStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ArcStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for ArcStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ArcStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for ArcStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ArcStr {
    fn from(text: &str) -> Self {
        ArcStr(text.into())
    }
}

impl From<String> for ArcStr {
    fn from(text: String) -> Self {
        ArcStr(text.into())
    }
}

impl From<&String> for ArcStr {
    fn from(text: &String) -> Self {
        ArcStr(text.as_str().into())
    }
}

impl From<ArcStr> for String {
    fn from(text: ArcStr) -> Self {
        text.0.to_string()
    }
}

impl PartialEq<str> for ArcStr {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for ArcStr {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for ArcStr {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<ArcStr> for str {
    fn eq(&self, other: &ArcStr) -> bool {
        self == &*other.0
    }
}

impl PartialEq<ArcStr> for &str {
    fn eq(&self, other: &ArcStr) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<ArcStr> for String {
    fn eq(&self, other: &ArcStr) -> bool {
        **self == *other.0
    }
}

impl Serialize for ArcStr {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ArcStr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(ArcStr(std::borrow::Cow::<'de, str>::deserialize(deserializer)?.into()))
    }
}

/// Seconds since the epoch as a float, ADK's timestamp.
pub fn now_seconds() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// A fresh event id (a uuid4, as ADK's `Event.new_id`).
pub fn new_event_id() -> String {
    uuid4()
}

/// A random uuid4 as text. Ids need uniqueness, not secrecy: the bits come from a fast per-thread
/// generator (seeded from the OS) rather than a system call per id, which the streaming path would
/// pay for every fragment.
pub(crate) fn uuid4() -> String {
    let bytes = fastrand::u128(..).to_le_bytes();
    uuid::Builder::from_random_bytes(bytes).into_uuid().to_string()
}

/// Declares [`LlmResponse`] and [`Event`] over one list of response fields, so the two cannot drift.
macro_rules! response_types {
    ($( $(#[$attr:meta])* $field:ident : $ty:ty, )*) => {
        /// One response of a model (`google.adk.models.LlmResponse`).
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct LlmResponse {
            $( $(#[$attr])* pub $field: $ty, )*
        }

        /// One entry of a session's history (`google.adk.events.Event`): a response's fields plus who
        /// wrote it, in which invocation, and what it does to the session.
        ///
        /// Unknown top-level keys are ignored, as adk-python does (`extra="ignore"`); everything below
        /// the top level rejects them.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        pub struct Event {
            $( $(#[$attr])* pub $field: $ty, )*
            /// The invocation the event belongs to (`invocationId`): ADK's are `e-` and a uuid4, `p-` and
            /// a uuid for a state edit.
            #[serde(default, alias = "invocation_id")]
            pub invocation_id: ArcStr,
            /// Who wrote the event: `user`, or the name of the agent.
            #[serde(default)]
            pub author: ArcStr,
            /// What the event does besides its content: state and artifact changes, transfers, requested
            /// confirmations.
            #[serde(default)]
            pub actions: EventActions,
            /// A workflow node's output (ADK 2.x).
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub output: Option<Value>,
            /// Where the event sits in a workflow (`nodeInfo`, ADK 2.x).
            #[serde(default, alias = "node_info")]
            pub node_info: NodeInfo,
            /// Calls that run long: the invocation suspends until the client answers them.
            #[serde(default, skip_serializing_if = "Option::is_none", alias = "long_running_tool_ids")]
            pub long_running_tool_ids: Option<BTreeSet<String>>,
            /// `parent.child` path of the agent that wrote the event, isolating parallel branches.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub branch: Option<String>,
            /// Which logical context the event belongs to (`isolationScope`, ADK 2.x).
            #[serde(default, skip_serializing_if = "Option::is_none", alias = "isolation_scope")]
            pub isolation_scope: Option<String>,
            /// The event's id, a uuid4; every streamed fragment of a response shares it.
            #[serde(default)]
            pub id: ArcStr,
            /// When the event was made, in seconds since the epoch (a float, as ADK writes it).
            #[serde(default = "now_seconds")]
            pub timestamp: f64,
        }

        impl Event {
            /// An event of `author` in `invocation_id` carrying `response`, with a fresh id and the
            /// current time.
            pub fn from_response(invocation_id: impl Into<ArcStr>, author: impl Into<ArcStr>, response: LlmResponse) -> Self {
                Event::with_id(new_event_id().into(), invocation_id, author, response)
            }

            /// An event with the given id.
            pub(crate) fn with_id(id: ArcStr, invocation_id: impl Into<ArcStr>, author: impl Into<ArcStr>, response: LlmResponse) -> Self {
                Event {
                    $( $field: response.$field, )*
                    invocation_id: invocation_id.into(),
                    author: author.into(),
                    actions: EventActions::default(),
                    output: None,
                    node_info: NodeInfo::default(),
                    long_running_tool_ids: None,
                    branch: None,
                    isolation_scope: None,
                    id,
                    timestamp: now_seconds(),
                }
            }

            /// The response fields of this event.
            pub fn to_response(&self) -> LlmResponse {
                LlmResponse { $( $field: self.$field.clone(), )* }
            }
        }
    };
}

response_types! {
    /// The version of the model that answered (`modelVersion`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "model_version")]
    model_version: Option<String>,
    /// What was said: the turn's role and parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<Content>,
    /// The sources a grounded answer drew on (`groundingMetadata`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "grounding_metadata")]
    grounding_metadata: Option<Box<Value>>,
    /// A streaming fragment: shown, never stored, never acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partial: Option<bool>,
    /// Whether the model's turn is over (`turnComplete`); streaming (mainly live) mode only.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "turn_complete")]
    turn_complete: Option<bool>,
    /// Why the model's turn ended (`turnCompleteReason`); streaming (mainly live) mode only.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "turn_complete_reason")]
    turn_complete_reason: Option<String>,
    /// The status of the interaction (`interactionStatus`); streaming mode only.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "interaction_status")]
    interaction_status: Option<String>,
    /// Why the model stopped (`finishReason`), such as `STOP` or `MAX_TOKENS`.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "finish_reason")]
    finish_reason: Option<String>,
    /// The error's code when the model call failed (`errorCode`); it varies by model.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "error_code")]
    error_code: Option<String>,
    /// The error's message when the model call failed (`errorMessage`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "error_message")]
    error_message: Option<String>,
    /// Whether the user interrupted the model's answer (live mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    interrupted: Option<bool>,
    /// The caller's own labels (`customMetadata`); the run config's are copied onto every event.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "custom_metadata")]
    custom_metadata: Option<Map<String, Value>>,
    /// The tokens the model call used (`usageMetadata`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "usage_metadata")]
    usage_metadata: Option<Box<UsageMetadata>>,
    /// A new handle to resume the live session with (`liveSessionResumptionUpdate`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "live_session_resumption_update")]
    live_session_resumption_update: Option<Box<Value>>,
    /// The id of the live (bidirectional) session (`liveSessionId`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "live_session_id")]
    live_session_id: Option<String>,
    /// The server's notice that it will soon end the live connection (`goAway`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "go_away")]
    go_away: Option<Box<Value>>,
    /// Voice activity signals of a live session (`voiceActivity`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "voice_activity")]
    voice_activity: Option<Box<Value>>,
    /// The transcription of the user's audio in live mode (`inputTranscription`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "input_transcription")]
    input_transcription: Option<Box<Value>>,
    /// The transcription of the model's audio in live mode (`outputTranscription`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "output_transcription")]
    output_transcription: Option<Box<Value>>,
    /// The average log probability of the answer's tokens (`avgLogprobs`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "avg_logprobs")]
    avg_logprobs: Option<f64>,
    /// The log probabilities of the chosen and top candidate tokens (`logprobsResult`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "logprobs_result")]
    logprobs_result: Option<Box<Value>>,
    /// What context caching did for the call (`cacheMetadata`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "cache_metadata")]
    cache_metadata: Option<Box<Value>>,
    /// The sources the answer cites (`citationMetadata`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "citation_metadata")]
    citation_metadata: Option<Box<Value>>,
    /// The id the model's API gave this interaction (`interactionId`), which a later request can
    /// continue from.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "interaction_id")]
    interaction_id: Option<String>,
    /// The environment id the model's API gave with the response (`environmentId`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "environment_id")]
    environment_id: Option<String>,
}

impl LlmResponse {
    /// A complete response holding `content`.
    pub fn new(content: Content) -> Self {
        LlmResponse { content: Some(content), ..LlmResponse::default() }
    }

    /// A response reporting an error, ADK's way: a code and a message, no content.
    pub fn error(code: impl Into<String>, message: impl Into<String>) -> Self {
        LlmResponse { error_code: Some(code.into()), error_message: Some(message.into()), ..LlmResponse::default() }
    }

    /// Whether this is a streaming fragment.
    pub fn is_partial(&self) -> bool {
        self.partial == Some(true)
    }
}

impl Event {
    /// A user event in `invocation_id` holding `content`.
    pub fn user(invocation_id: impl Into<ArcStr>, content: Content) -> Self {
        Event::from_response(invocation_id, "user", LlmResponse::new(content))
    }

    /// Whether this is a streaming fragment (never stored).
    pub fn is_partial(&self) -> bool {
        self.partial == Some(true)
    }

    /// The function calls this event carries.
    pub fn function_calls(&self) -> impl Iterator<Item = &FunctionCall> {
        self.content.iter().flat_map(Content::function_calls)
    }

    /// The function responses this event carries.
    pub fn function_responses(&self) -> impl Iterator<Item = &FunctionResponse> {
        self.content.iter().flat_map(Content::function_responses)
    }

    /// ADK's `is_final_response`: the event ends its agent's turn for the user to see.
    pub fn is_final_response(&self) -> bool {
        if self.actions.skip_summarization == Some(true)
            || self.long_running_tool_ids.as_ref().is_some_and(|ids| !ids.is_empty())
        {
            return true;
        }
        if self.error_code.is_some() && !self.is_partial() && self.function_calls().next().is_none() {
            return true;
        }
        self.function_calls().next().is_none()
            && self.function_responses().next().is_none()
            && !self.is_partial()
            && !self.has_trailing_code_execution_result()
    }

    fn has_trailing_code_execution_result(&self) -> bool {
        self.content.as_ref().and_then(|c| c.parts().last()).is_some_and(|p| p.code_execution_result.is_some())
    }
}

/// Where an event sits in a workflow (ADK 2.x). `path` is `""` for events outside any agent node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct NodeInfo {
    /// The path of the node that wrote the event, such as `root@1/child@2`; `""` outside any node.
    #[serde(default)]
    pub path: ArcStr,
    /// The paths of the nodes whose output this event is (`outputFor`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "output_for")]
    pub output_for: Option<Vec<String>>,
    /// Whether the event's message is its node's output (`messageAsOutput`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "message_as_output")]
    pub message_as_output: Option<bool>,
}

impl NodeInfo {
    /// The node info of an event written by `path` (`agent@1`).
    pub fn at(path: impl Into<ArcStr>) -> Self {
        NodeInfo { path: path.into(), output_for: None, message_as_output: None }
    }
}

/// What an event does besides its content (`google.adk.events.EventActions`). The four maps are
/// always written, even when empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventActions {
    /// Show the tool's result to the user as is, without another model call.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "skip_summarization")]
    pub skip_summarization: Option<bool>,
    /// Changes to the session state (`stateDelta`), key to new value; `temp:` keys are not stored.
    #[serde(default, alias = "state_delta")]
    pub state_delta: Map<String, Value>,
    /// File name → the version saved.
    #[serde(default, alias = "artifact_delta")]
    pub artifact_delta: BTreeMap<String, i64>,
    /// The agent to hand the conversation to (`transferToAgent`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "transfer_to_agent")]
    pub transfer_to_agent: Option<String>,
    /// Why the conversation is handed over (`transferReason`, ADK 2.x).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "transfer_reason")]
    pub transfer_reason: Option<String>,
    /// Hands control back to the parent agent: a loop agent stops looping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate: Option<bool>,
    /// Function call id → the auth config requested (kept as given).
    #[serde(default, alias = "requested_auth_configs")]
    pub requested_auth_configs: Map<String, Value>,
    /// Function call id → the confirmation requested.
    #[serde(default, alias = "requested_tool_confirmations")]
    pub requested_tool_confirmations: BTreeMap<String, ToolConfirmation>,
    /// A summary that replaces a range of earlier events in the model's history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<EventCompaction>,
    /// Marks the end of the agent's run (`endOfAgent`), for resuming an invocation.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "end_of_agent")]
    pub end_of_agent: Option<bool>,
    /// The agent's state to resume from (`agentState`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "agent_state")]
    pub agent_state: Option<Map<String, Value>>,
    /// Rewinds the session: this invocation and everything after it leave the history
    /// (`rewindBeforeInvocationId`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "rewind_before_invocation_id")]
    pub rewind_before_invocation_id: Option<String>,
    /// A workflow route (ADK 2.x): a bool, a number, a string or a list of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Value>,
    /// UI widgets for the client to render (`renderUiWidgets`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "render_ui_widgets")]
    pub render_ui_widgets: Option<Value>,
    /// The structured answer the agent gave through the `set_model_response` tool
    /// (`setModelResponse`, ADK 2.x).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "set_model_response")]
    pub set_model_response: Option<Value>,
}

impl EventActions {
    /// Whether the actions do nothing at all.
    pub fn is_empty(&self) -> bool {
        *self == EventActions::default()
    }
}

/// A request to confirm a tool call, and the answer (`google.adk.tools.ToolConfirmation`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolConfirmation {
    /// What the user is told about the call to approve or reject.
    #[serde(default)]
    pub hint: String,
    /// Whether the user approved the call.
    #[serde(default)]
    pub confirmed: bool,
    /// Extra data the user answered with, for the tool to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

impl ToolConfirmation {
    /// A confirmation request with `hint`, not yet confirmed.
    pub fn request(hint: impl Into<String>) -> Self {
        ToolConfirmation { hint: hint.into(), confirmed: false, payload: None }
    }
}

impl EventCompaction {
    /// `compacted_content` standing in for the events from `start_timestamp` to `end_timestamp`.
    pub fn new(start_timestamp: f64, end_timestamp: f64, compacted_content: Content) -> Self {
        EventCompaction { start_timestamp, end_timestamp, compacted_content }
    }
}

/// A summary standing in for the events between two timestamps (`EventCompaction`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventCompaction {
    /// The timestamp of the first event summarized (`startTimestamp`), in seconds since the epoch.
    #[serde(alias = "start_timestamp")]
    pub start_timestamp: f64,
    /// The timestamp of the last event summarized (`endTimestamp`), in seconds since the epoch.
    #[serde(alias = "end_timestamp")]
    pub end_timestamp: f64,
    /// The summary standing in for those events (`compactedContent`).
    #[serde(alias = "compacted_content")]
    pub compacted_content: Content,
}
