//! sinew-fluent's tests: no model is called (scripted models and the mock backend stand in).

mod adk;
mod builders;
mod contracts;
mod harness;
mod middleware;
mod nodes;
mod resources;
mod viz;
mod yaml;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};
use sinew_adk::{Content, InvocationContext};
use sinew_fluent::{AdkApp, AdkBackend, Node};

/// A hand-written agent: waits `delay`, then fails or says it is done.
pub(crate) struct Probe {
    pub(crate) name: String,
    pub(crate) delay: Duration,
    pub(crate) fail: bool,
    pub(crate) finished: Arc<AtomicBool>,
}

impl Probe {
    pub(crate) fn node(name: &str, delay: Duration, fail: bool) -> (Node, Arc<AtomicBool>) {
        let finished = Arc::new(AtomicBool::new(false));
        let probe = Probe { name: name.into(), delay, fail, finished: finished.clone() };
        (Node::from(Arc::new(probe) as Arc<dyn sinew_adk::Agent>), finished)
    }
}

#[async_trait]
impl sinew_adk::Agent for Probe {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run_impl(&self, ctx: &InvocationContext) -> sinew_adk::Result<()> {
        tokio::time::sleep(self.delay).await;
        if self.fail {
            return Err(sinew_adk::Error::InvalidRequest(format!("{} failed", self.name)));
        }
        self.finished.store(true, Ordering::SeqCst);
        let mut event = ctx.new_event();
        event.content = Some(Content::model_text(format!("{} done", self.name)));
        ctx.emit(event).await.map(drop)
    }
}

/// The state of the default session after a run.
pub(crate) async fn state(backend: &AdkBackend, app: &AdkApp) -> Map<String, Value> {
    backend
        .sessions()
        .get_session(app.app.name(), "default_user", "default_session", Default::default())
        .await
        .unwrap()
        .expect("the run made the session")
        .state
}

/// The error of a failed model call: `fatal: ...` as a refused key, anything else as a service
/// that is down for now.
pub(crate) fn failure(message: String) -> sinew_adk::Error {
    sinew_adk::Error::Model(match message.strip_prefix("fatal: ") {
        Some(message) => sinew_core::ProviderError::Auth(message.to_owned()),
        None => sinew_core::ProviderError::Unavailable { status: 503, message },
    })
}

/// A model answering from a script (text, or an error), each answer reporting `usage` tokens
/// (prompt, answer); counts its calls.
pub(crate) struct FakeLlm {
    pub(crate) name: String,
    pub(crate) script: std::sync::Mutex<std::collections::VecDeque<Result<String, String>>>,
    pub(crate) calls: std::sync::atomic::AtomicUsize,
    pub(crate) usage: (u64, u64),
    pub(crate) requests: std::sync::Mutex<Vec<sinew_adk::LlmRequest>>,
}

impl FakeLlm {
    pub(crate) fn new<S: Into<String>>(
        name: &str,
        usage: (u64, u64),
        script: impl IntoIterator<Item = Result<S, &'static str>>,
    ) -> Arc<Self> {
        Arc::new(FakeLlm {
            name: name.into(),
            script: std::sync::Mutex::new(
                script.into_iter().map(|r| r.map(Into::into).map_err(str::to_owned)).collect(),
            ),
            calls: Default::default(),
            usage,
            requests: Default::default(),
        })
    }

    pub(crate) fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl sinew_adk::Llm for FakeLlm {
    fn name(&self) -> &str {
        &self.name
    }

    fn generate_content(
        &self,
        request: sinew_adk::LlmRequest,
        _stream: bool,
    ) -> futures::stream::BoxStream<'static, sinew_adk::Result<sinew_adk::LlmResponse>> {
        use futures::StreamExt as _;
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.requests.lock().unwrap().push(request);
        let next = self.script.lock().unwrap().pop_front().unwrap_or_else(|| Err("the script ran out".into()));
        let usage = self.usage;
        // `fatal: ...` fails as a bad key does (not worth retrying); anything else as an
        // unavailable service.
        let item = next.map_err(failure).map(|text| {
            let mut response = sinew_adk::LlmResponse::new(Content::model_text(text));
            let mut metadata = sinew_adk::UsageMetadata::default();
            metadata.prompt_token_count = Some(usage.0);
            metadata.candidates_token_count = Some(usage.1);
            response.usage_metadata = Some(Box::new(metadata));
            response
        });
        futures::stream::once(async move { item }).boxed()
    }
}
