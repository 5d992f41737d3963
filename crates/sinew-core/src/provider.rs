//! The provider trait: how a model is called.

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::config::{CacheConfig, ThinkingLevel};
use crate::error::ProviderError;
use crate::message::{AssistantMessage, Message};
use crate::tool::ToolDefinition;

/// One model call. Borrowed: a provider serializes it into its wire format before returning its
/// stream, so the history is never copied per turn.
#[derive(Clone, Copy, Debug)]
pub struct StreamRequest<'a> {
    pub model: &'a str,
    pub system_prompt: &'a str,
    pub messages: &'a [&'a Message],
    pub tools: &'a [ToolDefinition],
    pub thinking_level: ThinkingLevel,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub cache_config: CacheConfig,
}

impl<'a> StreamRequest<'a> {
    /// A request with no tools and default settings.
    pub fn new(model: &'a str, system_prompt: &'a str, messages: &'a [&'a Message]) -> Self {
        StreamRequest {
            model,
            system_prompt,
            messages,
            tools: &[],
            thinking_level: ThinkingLevel::Off,
            max_tokens: None,
            temperature: None,
            cache_config: CacheConfig::default(),
        }
    }
}

/// An increment of the message being streamed. `index` is the position of the content block it
/// extends in the final message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum StreamDelta {
    Text {
        index: usize,
        delta: String,
    },
    Thinking {
        index: usize,
        delta: String,
    },
    /// A fragment of a tool call's JSON arguments. `id` and `name` are sent with the first fragment
    /// of each call when the provider has them.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        index: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        delta: String,
    },
}

/// What a provider's stream yields: `Start`, any number of `Delta`s, then exactly one terminal
/// `Done` or `Error`.
#[derive(Debug)]
#[non_exhaustive]
pub enum StreamEvent {
    /// The response began.
    Start,
    Delta(StreamDelta),
    /// The complete message.
    Done(AssistantMessage),
    /// The call failed. `partial` holds what arrived before the failure, with `stop_reason`
    /// `Error` (or `Aborted` on cancellation) and `error_message` set.
    Error {
        error: ProviderError,
        partial: AssistantMessage,
    },
}

/// A model behind some wire protocol.
///
/// Implementations build the request eagerly and return a `'static` stream; they must stop
/// promptly once `cancel` fires, ending with `Error { error: Cancelled, .. }`.
pub trait StreamProvider: Send + Sync {
    /// A stable id: `"anthropic"`, `"openai"`, `"openai_responses"`, `"azure_openai"`, `"google"`,
    /// `"google_vertex"`, `"bedrock"`, `"mock"`...
    fn provider_id(&self) -> &str;

    /// Calls the model.
    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent>;
}

impl<P: StreamProvider + ?Sized> StreamProvider for std::sync::Arc<P> {
    fn provider_id(&self) -> &str {
        (**self).provider_id()
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        (**self).stream(request, cancel)
    }
}
