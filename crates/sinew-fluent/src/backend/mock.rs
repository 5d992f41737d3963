//! The mock backend (spec 003 §4.4): the ADK backend with every model-backed agent replaced by a
//! fixed answer — deterministic, no model. Everything else (sequences, loops, transforms, routes)
//! runs as it does on the ADK backend.

use futures::stream::BoxStream;
use serde_json::Value;

use super::adk::{AdkApp, AdkBackend};
use super::{AgentEvent, Backend, Execute, ExecutionConfig, RunOptions};
use crate::error::Result;
use crate::ir::Node;

/// Answers by agent name: a string is the agent's answer (saved under its output key), an object
/// is written to state. An agent without an answer is a compile error.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// use serde_json::json;
/// use sinew_fluent::{Agent, Backend as _, Execute as _, ExecutionConfig, MockBackend, RunOptions, final_text};
///
/// let pipeline = (Agent::named("classifier").outputs("intent") >> Agent::named("resolver").instruct("Resolve {intent}."))
///     .build()
///     .unwrap();
/// let backend = MockBackend::new([("classifier", json!("billing")), ("resolver", json!("Ticket #1234 created."))]);
/// let app = backend.compile(&pipeline, &ExecutionConfig::default()).unwrap();
/// let events = backend.run(&app, "My bill is wrong", RunOptions::default()).await.unwrap();
/// assert_eq!(events[0].state_delta["intent"], "billing");
/// assert_eq!(final_text(&events), "Ticket #1234 created.");
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct MockBackend {
    inner: AdkBackend,
}

impl MockBackend {
    /// A mock backend answering with `answers`.
    pub fn new<K: Into<String>>(answers: impl IntoIterator<Item = (K, Value)>) -> Self {
        MockBackend::over(AdkBackend::new(), answers)
    }

    /// A mock backend on `backend`'s services (sessions, plugins, registry).
    pub fn over<K: Into<String>>(mut backend: AdkBackend, answers: impl IntoIterator<Item = (K, Value)>) -> Self {
        backend.mock = Some(std::sync::Arc::new(answers.into_iter().map(|(k, v)| (k.into(), v)).collect()));
        MockBackend { inner: backend }
    }

    /// The ADK backend underneath (its sessions hold what runs wrote).
    pub fn adk(&self) -> &AdkBackend {
        &self.inner
    }
}

impl Backend for MockBackend {
    type Compiled = AdkApp;

    fn compile(&self, node: &Node, config: &ExecutionConfig) -> Result<AdkApp> {
        self.inner.compile(node, config)
    }
}

impl Execute for MockBackend {
    fn stream(&self, compiled: &AdkApp, prompt: &str, options: RunOptions) -> BoxStream<'static, Result<AgentEvent>> {
        self.inner.stream(compiled, prompt, options)
    }
}
