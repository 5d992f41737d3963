//! The session, the model request and the run request, as adk-python writes them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::event::Event;
use crate::genai::{Content, GenerateContentConfig};
use crate::json::to_snake_value;

/// A conversation (`google.adk.sessions.Session`): its merged state (session keys plus the `app:`
/// and `user:` keys it sees) and its events, oldest first.
///
/// A session read from a SQL service remembers which stored revision it was read at (adk-python's
/// private `_storage_update_marker`), so that the service can refuse its appends once another
/// writer has moved on; the revision is not part of its JSON nor of its equality.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct Session {
    /// The session's id.
    pub id: String,
    /// The app that owns the session (`appName`).
    #[serde(alias = "app_name")]
    pub app_name: String,
    /// The user who owns the session (`userId`).
    #[serde(alias = "user_id")]
    pub user_id: String,
    /// The merged state: the session's keys plus the `app:` and `user:` keys it sees.
    #[serde(default)]
    pub state: Map<String, Value>,
    /// The history: user, model and tool events, oldest first.
    #[serde(default)]
    pub events: Vec<Event>,
    /// When the session last changed, in seconds since the epoch (`lastUpdateTime`).
    #[serde(default, alias = "last_update_time")]
    pub last_update_time: f64,
    /// The stored revision this object was read at (the stored update time, in microseconds).
    #[serde(skip)]
    pub(crate) storage_revision: Option<i64>,
}

impl PartialEq for Session {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.app_name == other.app_name
            && self.user_id == other.user_id
            && self.state == other.state
            && self.events == other.events
            && self.last_update_time == other.last_update_time
    }
}

impl Session {
    /// An empty session.
    pub fn new(app_name: impl Into<String>, user_id: impl Into<String>, id: impl Into<String>) -> Self {
        Session { id: id.into(), app_name: app_name.into(), user_id: user_id.into(), ..Session::default() }
    }
}

/// What a model is asked (`google.adk.models.LlmRequest`). Its JSON form is adk-python's
/// `model_dump()`: snake_case throughout ([`LlmRequest::to_json`]), the form the conformance
/// recordings hold.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LlmRequest {
    /// The model's name, when the agent names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The history sent to the model, oldest first.
    #[serde(default)]
    pub contents: Vec<Content>,
    /// The generation settings: system instruction, tools, sampling.
    #[serde(default)]
    pub config: GenerateContentConfig,
    /// The live (bidi) settings; ADK always sends its defaults.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::json::opaque")]
    pub live_connect_config: Option<Value>,
    /// ADK's context cache settings, kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_config: Option<Value>,
    /// The context cache earlier requests made, for this one to reuse; kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_metadata: Option<Value>,
    /// The previous request's prompt token count, to decide whether caching is worth it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacheable_contents_token_count: Option<u64>,
    /// The model-side interaction to continue from (a previous response's `interactionId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_interaction_id: Option<String>,
    /// The service tier to serve the request at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
}

impl LlmRequest {
    /// The request as adk-python dumps it (`model_dump(mode="json", exclude_none=True)`).
    pub fn to_json(&self) -> Value {
        // Every field serializes infallibly: maps have string keys and numbers are finite or null.
        to_snake_value(self).unwrap_or(Value::Null)
    }

    /// The system instruction's text, `None` when there is none.
    pub fn system_instruction(&self) -> Option<String> {
        self.config.system_instruction.as_ref().map(crate::genai::SystemInstruction::text)
    }
}

/// The body of `POST /run` and `/run_sse` (`google.adk.cli.api_server.RunAgentRequest`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunAgentRequest {
    /// The app to run (`appName`); sinew-server requires it.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "app_name")]
    pub app_name: Option<String>,
    /// The user the session belongs to (`userId`).
    #[serde(alias = "user_id")]
    pub user_id: String,
    /// The session to run in (`sessionId`); it must exist.
    #[serde(alias = "session_id")]
    pub session_id: String,
    /// The user's new message (`newMessage`); `None` runs the agent without one.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "new_message")]
    pub new_message: Option<Content>,
    /// `true` asks for partial fragments (`StreamingMode.SSE`).
    #[serde(default)]
    pub streaming: bool,
    /// State changes stored with the user's event (`stateDelta`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "state_delta")]
    pub state_delta: Option<Map<String, Value>>,
    /// The event whose function call the request answers (`functionCallEventId`); when set,
    /// `/run_sse` sends an event holding content and an artifact delta as one frame, not two.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "function_call_event_id")]
    pub function_call_event_id: Option<String>,
    /// The invocation to resume. The runner finds it from the function responses of
    /// `new_message`, as adk-python does for apps that are not resumable.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "invocation_id")]
    pub invocation_id: Option<String>,
    /// Metadata copied onto every event of the invocation (`customMetadata`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "custom_metadata")]
    pub custom_metadata: Option<Map<String, Value>>,
    /// The service tier to ask the model for (`serviceTier`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "service_tier")]
    pub service_tier: Option<String>,
}
