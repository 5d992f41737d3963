//! The provider trait: how a model is called.

use std::time::Duration;

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::config::{CacheConfig, CacheStrategy, ThinkingLevel};
use crate::content::Content;
use crate::error::ProviderError;
use crate::message::{AssistantMessage, Message};
use crate::options::{RequestOptions, ToolChoice};
use crate::retry::RetryConfig;
use crate::tool::ToolDefinition;
use crate::wire::{HistoryCache, WirePrefix};

/// One model call. Borrowed: a provider serializes it into its wire format before returning its
/// stream, so the history is never copied per turn.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct StreamRequest<'a> {
    /// The model to call, as the provider names it.
    pub model: &'a str,
    /// The system prompt; empty for none.
    pub system_prompt: &'a str,
    /// The conversation so far, oldest first.
    pub messages: &'a [&'a Message],
    /// The tools the model may call; empty by default.
    pub tools: &'a [ToolDefinition],
    /// How much the model should reason. Default [`ThinkingLevel::Off`].
    pub thinking_level: ThinkingLevel,
    /// The cap on output tokens; `None`: the provider's default.
    pub max_tokens: Option<u32>,
    /// The sampling temperature; `None`: the service's default.
    pub temperature: Option<f32>,
    /// Prompt caching, for providers with explicit caching. Default: on, automatic breakpoints.
    pub cache_config: CacheConfig,
    /// A stable key shared by the requests of one conversation, for services that route by it
    /// to hit their cache (OpenAI's `prompt_cache_key`); the agent loop sets its session id.
    /// Sent only while caching is enabled; `None`: no key.
    pub cache_key: Option<&'a str>,
    /// The caller's retry policy for this call, for a provider that retries failed requests
    /// itself (see [`StreamProvider::retries_requests`]); `None`: the provider's own policy.
    pub retry: Option<RetryConfig>,
    /// Tool choice, stop sequences, sampling, seed, penalties, end-user id. Default: none set.
    pub options: &'a RequestOptions,
    /// Where the provider may keep what it wrote of `messages` for the next request of the same
    /// history, and how much of `messages` that request left unchanged (see [`crate::wire`]); the
    /// agent loop sets it for an [`Agent`](https://docs.rs/sinew-agent)'s history. `None`: every
    /// message is written.
    pub history: Option<HistoryCache<'a>>,
}

/// Where a provider with explicit caching marks the prompt as cacheable
/// ([`StreamRequest::cache_breakpoints`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheBreakpoints {
    /// After the system prompt.
    pub system: bool,
    /// After the last tool definition.
    pub tools: bool,
    /// On this message (an index into [`StreamRequest::messages`]).
    pub message: Option<usize>,
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
            cache_key: None,
            retry: None,
            options: &crate::options::DEFAULT_OPTIONS,
            history: None,
        }
    }

    /// Writes this request's messages resuming from what [`history`](Self::history)'s cache kept
    /// of earlier requests (see [`crate::wire`]), for a request builder: takes the bytes kept in
    /// `format`, cut back to the unchanged messages and to the first `within` (a builder whose
    /// bytes for a message depend on where it stands, as a cache breakpoint near the end does,
    /// reuses none after those); checks the inputs of the messages after them (`check(first)`;
    /// the others were checked when first written); writes with `write`, which returns what it
    /// made and the prefix of this request's messages; and keeps that prefix for the next request
    /// (the prefix it took, when the check fails). Without a cache, every message is checked and
    /// written.
    pub fn resume_messages<T>(
        &self,
        format: u64,
        within: usize,
        check: impl FnOnce(usize) -> Result<(), ProviderError>,
        write: impl FnOnce(WirePrefix) -> (T, WirePrefix),
    ) -> Result<T, ProviderError> {
        let Some(history) = self.history else {
            check(0)?;
            return Ok(write(WirePrefix::new(format)).0);
        };
        let prefix = history.cache.take(format, history.unchanged.min(self.messages.len()).min(within));
        if let Err(error) = check(prefix.messages()) {
            history.cache.keep(prefix);
            return Err(error);
        }
        let (made, prefix) = write(prefix);
        history.cache.keep(prefix);
        Ok(made)
    }

    /// Where explicit caching puts its breakpoints for this request, from
    /// [`cache_config`](Self::cache_config): `Auto` after the system prompt, after the last tool
    /// and on the second-to-last message; `Manual` where its flags say; none when disabled.
    pub fn cache_breakpoints(&self) -> CacheBreakpoints {
        let (system, tools) = match (self.cache_config.enabled, self.cache_config.strategy) {
            (false, _) | (true, CacheStrategy::Disabled) => (false, false),
            (true, CacheStrategy::Auto) => (true, true),
            (true, CacheStrategy::Manual { cache_system, cache_tools, .. }) => (cache_system, cache_tools),
        };
        let message = if self.cache_config.caches_messages() { self.messages.len().checked_sub(2) } else { None };
        CacheBreakpoints { system, tools, message }
    }

    /// The cache key to send: [`cache_key`](Self::cache_key) while caching is enabled.
    pub fn active_cache_key(&self) -> Option<&'a str> {
        self.cache_key.filter(|_| self.cache_config.enabled && self.cache_config.strategy != CacheStrategy::Disabled)
    }

    /// [`active_cache_key`](Self::active_cache_key) within `max` bytes, for services that cap
    /// it (OpenAI at 64): a longer key is sent as a stable 16-hex-digit hash of itself.
    pub fn active_cache_key_within(&self, max: usize) -> Option<std::borrow::Cow<'a, str>> {
        let key = self.active_cache_key()?;
        if key.len() <= max {
            return Some(std::borrow::Cow::Borrowed(key));
        }
        // FNV-1a: stable across builds and platforms, which the std hasher does not promise.
        let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        Some(std::borrow::Cow::Owned(format!("{hash:016x}")))
    }

    /// Refuses the first block of a user message or tool result that `service` cannot carry
    /// (`carries` answers `Ok` for a block it can, or why not), naming its kind and where it is,
    /// rather than letting the request builder drop it.
    pub fn check_inputs(
        &self,
        service: &str,
        carries: impl Fn(&Content) -> Result<(), String>,
    ) -> Result<(), ProviderError> {
        self.check_inputs_from(0, service, carries)
    }

    /// [`check_inputs`](Self::check_inputs) for the messages from index `first` on: a provider
    /// that reuses what it wrote of the first messages ([`crate::wire`]) checked those already.
    pub fn check_inputs_from(
        &self,
        first: usize,
        service: &str,
        carries: impl Fn(&Content) -> Result<(), String>,
    ) -> Result<(), ProviderError> {
        for (index, message) in self.messages.iter().enumerate().skip(first) {
            let content = match message {
                Message::User(user) => &user.content,
                Message::ToolResult(result) => &result.content,
                Message::Assistant(_) => continue,
            };
            for block in content {
                if let Err(why) = carries(block) {
                    let kind = block.kind();
                    return Err(ProviderError::Other(format!(
                        "{service} cannot take the {kind} in message {index}: {why}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Refuses options `service` has no equivalent for (those not in `supported`, see
    /// [`RequestOptions::check`]), and a forced tool call the request's tools cannot satisfy.
    pub fn check_options(&self, service: &str, supported: &[&str]) -> Result<(), ProviderError> {
        self.options.check(service, supported)?;
        match &self.options.tool_choice {
            ToolChoice::Required if self.tools.is_empty() => {
                Err(ProviderError::Other("the request requires a tool call but offers no tools".into()))
            }
            ToolChoice::Tool { name } if !self.tools.iter().any(|t| t.name == *name) => Err(ProviderError::Other(
                format!("the request forces a call of `{name}`, which is not among its tools"),
            )),
            _ => Ok(()),
        }
    }

    /// The same request for another model.
    #[must_use]
    pub fn with_model(self, model: &'a str) -> Self {
        StreamRequest { model, ..self }
    }
}

/// An increment of the message being streamed. `index` is the position of the content block it
/// extends in the final message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum StreamDelta {
    /// More text of a text block.
    Text {
        /// The block's position in the final message.
        index: usize,
        /// The text to append.
        delta: String,
    },
    /// More reasoning text of a thinking block.
    Thinking {
        /// The block's position in the final message.
        index: usize,
        /// The text to append.
        delta: String,
    },
    /// A fragment of a tool call's JSON arguments. `id` and `name` are sent with the first fragment
    /// of each call when the provider has them.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The block's position in the final message.
        index: usize,
        /// The call's id; `None` after the first fragment, or when the provider has none yet.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The called tool's name; `None` after the first fragment, or when the provider has none
        /// yet.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// The argument JSON text to append; not valid JSON on its own.
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
    /// An increment of the message.
    Delta(StreamDelta),
    /// The complete message. Boxed, as in `Error`: every event moves through queues and
    /// streams, and the other variants are about half a message's size.
    Done(Box<AssistantMessage>),
    /// The call failed. `partial` holds what arrived before the failure, with `stop_reason`
    /// `Error` (or `Aborted` on cancellation) and `error_message` set.
    Error {
        /// Why the call failed.
        error: ProviderError,
        /// The message as far as it got.
        partial: Box<AssistantMessage>,
    },
    /// A request failed and will be sent again after `delay`: retry number `attempt` (1-based)
    /// of the call's retry policy. Only before the response began; nothing streamed is retried.
    Retry {
        /// The retry's number, from 1.
        attempt: u32,
        /// The wait before the request is sent again.
        delay: Duration,
        /// Why the request failed.
        error: ProviderError,
    },
}

impl StreamEvent {
    /// [`StreamEvent::Done`] with `message`.
    pub fn done(message: AssistantMessage) -> Self {
        StreamEvent::Done(Box::new(message))
    }

    /// [`StreamEvent::Error`]: `error`, and the message as far as it got.
    pub fn error(error: ProviderError, partial: AssistantMessage) -> Self {
        StreamEvent::Error { error, partial: Box::new(partial) }
    }
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

    /// The id of the provider that serves `model`: [`StreamProvider::provider_id`], except for
    /// a provider that routes to others (the facade's registry names the one it picks). What
    /// telemetry (`gen_ai.provider.name`) and `AgentStart` report.
    fn provider_id_for(&self, model: &str) -> &str {
        let _ = model;
        self.provider_id()
    }

    /// Whether calls for `model` retry failed requests themselves, with the request's
    /// [`StreamRequest::retry`] as their policy, announcing each retry with
    /// [`StreamEvent::Retry`]. A caller with a retry policy of its own (the agent loop) then
    /// leaves failures before the response began to the provider, so one call never retries
    /// more often than its policy allows. Default: `false`.
    fn retries_requests(&self, model: &str) -> bool {
        let _ = model;
        false
    }

    /// The context window of `model`, in tokens, when the provider knows it (a model catalog
    /// does). The agent sizes its default compaction budget from it. Default: `None`.
    fn context_window(&self, model: &str) -> Option<u64> {
        let _ = model;
        None
    }
}

impl<P: StreamProvider + ?Sized> StreamProvider for std::sync::Arc<P> {
    fn provider_id(&self) -> &str {
        (**self).provider_id()
    }

    fn provider_id_for(&self, model: &str) -> &str {
        (**self).provider_id_for(model)
    }

    fn retries_requests(&self, model: &str) -> bool {
        (**self).retries_requests(model)
    }

    fn context_window(&self, model: &str) -> Option<u64> {
        (**self).context_window(model)
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        (**self).stream(request, cancel)
    }
}
