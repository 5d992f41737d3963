//! sinew-fluent's tests: no model is called (scripted models and the mock backend stand in).

mod adk;
mod builders;
mod contracts;
mod nodes;
mod viz;

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
