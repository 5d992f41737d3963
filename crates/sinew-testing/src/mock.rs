//! [`MockProvider`]: a scripted model.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use sinew_core::{
    AssistantMessage, CancellationToken, Content, Message, ProviderError, RequestOptions, StopReason, StreamDelta,
    StreamEvent, StreamProvider, StreamRequest, ThinkingLevel, ToolDefinition, Usage,
};

/// One scripted step of a response.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum MockStep {
    /// A text delta (consecutive ones extend the same text block).
    Text(String),
    /// A thinking delta (consecutive ones extend the same thinking block).
    Thinking(String),
    /// Sets the signature of the current thinking block.
    ThinkingSignature(String),
    /// A complete tool call, streamed as one argument fragment.
    ToolCall {
        /// The call's id, as a model gives it (`call_1`).
        id: String,
        /// The called tool's name.
        name: String,
        /// The call's JSON arguments.
        arguments: Value,
    },
    /// A pause (cancellable).
    Delay(Duration),
}

#[derive(Clone, Debug)]
enum Ending {
    Done,
    Fail(ProviderError),
    FailBeforeStart(ProviderError),
    /// Wait until the call is cancelled.
    Hang,
}

/// A scripted response: steps streamed in order, then an ending.
#[derive(Clone, Debug)]
pub struct MockResponse {
    steps: Vec<MockStep>,
    ending: Ending,
    stop_reason: Option<StopReason>,
    usage: Usage,
    model: Option<String>,
}

impl Default for MockResponse {
    fn default() -> Self {
        MockResponse::new()
    }
}

impl MockResponse {
    /// An empty response that ends with stop reason `Stop`.
    pub fn new() -> Self {
        MockResponse {
            steps: Vec::new(),
            ending: Ending::Done,
            stop_reason: None,
            usage: Usage::default(),
            model: None,
        }
    }

    /// A response with one text delta.
    pub fn text(text: impl Into<String>) -> Self {
        MockResponse::new().text_delta(text)
    }

    /// A response that fails before anything is streamed.
    pub fn error(error: ProviderError) -> Self {
        MockResponse { ending: Ending::FailBeforeStart(error), ..MockResponse::new() }
    }

    /// Appends a step.
    #[must_use]
    pub fn step(mut self, step: MockStep) -> Self {
        self.steps.push(step);
        self
    }

    /// Appends a text delta; consecutive ones extend one text block.
    #[must_use]
    pub fn text_delta(self, delta: impl Into<String>) -> Self {
        self.step(MockStep::Text(delta.into()))
    }

    /// `text` streamed as one delta per word (spaces kept).
    #[must_use]
    pub fn text_words(mut self, text: &str) -> Self {
        for word in text.split_inclusive(' ') {
            self = self.text_delta(word);
        }
        self
    }

    /// Appends a thinking delta; consecutive ones extend one thinking block.
    #[must_use]
    pub fn thinking_delta(self, delta: impl Into<String>) -> Self {
        self.step(MockStep::Thinking(delta.into()))
    }

    /// Sets the signature of the current thinking block.
    #[must_use]
    pub fn thinking_signature(self, signature: impl Into<String>) -> Self {
        self.step(MockStep::ThinkingSignature(signature.into()))
    }

    /// Appends a complete tool call; the stop reason then defaults to `ToolUse`.
    #[must_use]
    pub fn tool_call(self, id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        self.step(MockStep::ToolCall { id: id.into(), name: name.into(), arguments })
    }

    /// Appends a pause of `delay`; cancelling the call ends it early.
    #[must_use]
    pub fn delay(self, delay: Duration) -> Self {
        self.step(MockStep::Delay(delay))
    }

    /// Usage reported with the final message (`total_tokens = input + output`).
    #[must_use]
    pub fn usage(mut self, input: u64, output: u64) -> Self {
        self.usage = Usage::new(input, output);
        self
    }

    /// Overrides the stop reason (default: `ToolUse` when there are tool calls, else `Stop`).
    #[must_use]
    pub fn stop_reason(mut self, reason: StopReason) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    /// Overrides the model reported in the message (default: the requested model).
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Fails with `error` after the steps, keeping what was streamed as the partial message.
    #[must_use]
    pub fn then_error(mut self, error: ProviderError) -> Self {
        self.ending = Ending::Fail(error);
        self
    }

    /// After the steps, waits until the call is cancelled, then ends `Aborted`.
    #[must_use]
    pub fn hang(mut self) -> Self {
        self.ending = Ending::Hang;
        self
    }
}

/// A model request as the mock saw it (owned copy of [`StreamRequest`]).
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// The model the request asked for.
    pub model: String,
    /// The system prompt sent; empty when there is none.
    pub system_prompt: String,
    /// The messages sent, oldest first, as the provider received them.
    pub messages: Vec<Message>,
    /// The tool definitions offered to the model.
    pub tools: Vec<ToolDefinition>,
    /// The thinking level requested.
    pub thinking_level: ThinkingLevel,
    /// The cap on the answer's tokens; `None`: not set.
    pub max_tokens: Option<u32>,
    /// The sampling temperature; `None`: not set.
    pub temperature: Option<f32>,
    /// Tool choice, stop sequences, sampling and the other request options.
    pub options: RequestOptions,
    /// The cache key the request carried.
    pub cache_key: Option<String>,
    /// How many of `messages` the request said are those of the previous request made with its
    /// history's wire cache ([`StreamRequest::history`]); `None`: it carried no cache.
    pub history_unchanged: Option<usize>,
    /// When the call was made (follows tokio's paused clock in tests).
    pub at: tokio::time::Instant,
}

type Responder = Arc<dyn Fn(&StreamRequest<'_>) -> MockResponse + Send + Sync>;

struct State {
    script: VecDeque<MockResponse>,
    requests: Vec<RecordedRequest>,
    calls: usize,
}

/// A [`StreamProvider`] that plays scripted [`MockResponse`]s in order, streaming them like a
/// real provider (start, deltas, one terminal event) and honouring cancellation.
///
/// When the script is exhausted it answers with an empty message (stop reason `Stop`).
/// Requests are recorded for inspection unless [`MockProvider::without_recording`] is used.
pub struct MockProvider {
    state: Mutex<State>,
    responder: Option<Responder>,
    record: bool,
    provider_id: String,
}

impl MockProvider {
    /// A provider that plays `responses` in order, with provider id `"mock"`, recording requests.
    pub fn new(responses: impl IntoIterator<Item = MockResponse>) -> Self {
        MockProvider {
            state: Mutex::new(State { script: responses.into_iter().collect(), requests: Vec::new(), calls: 0 }),
            responder: None,
            record: true,
            provider_id: "mock".to_owned(),
        }
    }

    /// A provider that computes each response from the request (scripted responses go first).
    pub fn from_fn(responder: impl Fn(&StreamRequest<'_>) -> MockResponse + Send + Sync + 'static) -> Self {
        MockProvider { responder: Some(Arc::new(responder)), ..MockProvider::new([]) }
    }

    /// Stops recording requests (for benchmarks: recording copies the history on every call).
    #[must_use]
    pub fn without_recording(mut self) -> Self {
        self.record = false;
        self
    }

    /// Reports another provider id (default `"mock"`).
    #[must_use]
    pub fn with_provider_id(mut self, id: impl Into<String>) -> Self {
        self.provider_id = id.into();
        self
    }

    /// Appends a response to the script.
    pub fn push(&self, response: MockResponse) {
        self.lock().script.push_back(response);
    }

    /// The requests seen so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// How many calls were made.
    pub fn calls(&self) -> usize {
        self.lock().calls
    }

    /// Scripted responses not played yet.
    pub fn remaining(&self) -> usize {
        self.lock().script.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for MockProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("MockProvider")
            .field("provider_id", &self.provider_id)
            .field("remaining", &state.script.len())
            .field("calls", &state.calls)
            .finish_non_exhaustive()
    }
}

impl StreamProvider for MockProvider {
    fn provider_id(&self) -> &str {
        &self.provider_id
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        let response = {
            let mut state = self.lock();
            state.calls += 1;
            if self.record {
                state.requests.push(RecordedRequest {
                    model: request.model.to_owned(),
                    system_prompt: request.system_prompt.to_owned(),
                    messages: request.messages.iter().map(|m| (*m).clone()).collect(),
                    tools: request.tools.to_vec(),
                    thinking_level: request.thinking_level,
                    max_tokens: request.max_tokens,
                    temperature: request.temperature,
                    options: request.options.clone(),
                    cache_key: request.cache_key.map(str::to_owned),
                    history_unchanged: request.history.map(|h| h.unchanged),
                    at: tokio::time::Instant::now(),
                });
            }
            state.script.pop_front()
        };
        let response = response.or_else(|| self.responder.as_ref().map(|f| f(request))).unwrap_or_default();
        let mut message = AssistantMessage::new(self.provider_id.clone(), request.model);
        if let Some(model) = &response.model {
            message.model.clone_from(model);
        }
        let playback = Playback {
            steps: response.steps.into(),
            ending: response.ending,
            stop_reason: response.stop_reason,
            usage: response.usage,
            message,
            cancel,
            started: false,
            finished: false,
        };
        stream::unfold(playback, |mut p| async move { p.next_event().await.map(|e| (e, p)) }).boxed()
    }
}

struct Playback {
    steps: VecDeque<MockStep>,
    ending: Ending,
    stop_reason: Option<StopReason>,
    usage: Usage,
    message: AssistantMessage,
    cancel: CancellationToken,
    started: bool,
    finished: bool,
}

impl Playback {
    fn end(&mut self, error: ProviderError) -> StreamEvent {
        self.finished = true;
        let mut partial = self.message.clone();
        partial.stop_reason = if error == ProviderError::Cancelled { StopReason::Aborted } else { StopReason::Error };
        partial.error_message = Some(error.to_string());
        partial.usage = self.usage;
        StreamEvent::error(error, partial)
    }

    async fn next_event(&mut self) -> Option<StreamEvent> {
        if self.finished {
            return None;
        }
        if self.cancel.is_cancelled() {
            return Some(self.end(ProviderError::Cancelled));
        }
        if let Ending::FailBeforeStart(error) = &self.ending {
            let error = error.clone();
            return Some(self.end(error));
        }
        if !std::mem::replace(&mut self.started, true) {
            return Some(StreamEvent::Start);
        }
        loop {
            let content = &mut self.message.content;
            let delta = match self.steps.pop_front() {
                Some(MockStep::Text(delta)) => {
                    if !matches!(content.last(), Some(Content::Text { .. })) {
                        content.push(Content::text(""));
                    }
                    if let Some(Content::Text { text, .. }) = content.last_mut() {
                        text.push_str(&delta);
                    }
                    StreamDelta::Text { index: content.len() - 1, delta }
                }
                Some(MockStep::Thinking(delta)) => {
                    if !matches!(content.last(), Some(Content::Thinking { .. })) {
                        content.push(Content::thinking(""));
                    }
                    if let Some(Content::Thinking { thinking, .. }) = content.last_mut() {
                        thinking.push_str(&delta);
                    }
                    StreamDelta::Thinking { index: content.len() - 1, delta }
                }
                Some(MockStep::ThinkingSignature(sig)) => {
                    if let Some(Content::Thinking { signature, .. }) = content.last_mut() {
                        *signature = Some(sig);
                    }
                    continue;
                }
                Some(MockStep::ToolCall { id, name, arguments }) => {
                    let delta = arguments.to_string();
                    content.push(Content::tool_call(id.clone(), name.clone(), arguments));
                    StreamDelta::ToolCall { index: content.len() - 1, id: Some(id), name: Some(name), delta }
                }
                Some(MockStep::Delay(delay)) => {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => continue,
                        () = self.cancel.cancelled() => return Some(self.end(ProviderError::Cancelled)),
                    }
                }
                None => {
                    return Some(match std::mem::replace(&mut self.ending, Ending::Done) {
                        Ending::Done | Ending::FailBeforeStart(_) => {
                            self.finished = true;
                            let has_calls = self.message.tool_calls().next().is_some();
                            let mut message = self.message.clone();
                            message.stop_reason = self.stop_reason.unwrap_or(if has_calls {
                                StopReason::ToolUse
                            } else {
                                StopReason::Stop
                            });
                            message.usage = self.usage;
                            StreamEvent::done(message)
                        }
                        Ending::Fail(error) => self.end(error),
                        Ending::Hang => {
                            self.cancel.cancelled().await;
                            self.end(ProviderError::Cancelled)
                        }
                    });
                }
            };
            return Some(StreamEvent::Delta(delta));
        }
    }
}
