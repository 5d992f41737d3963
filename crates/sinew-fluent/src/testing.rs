//! The testing kit (spec 003 §9): a harness that holds a conversation with a pipeline, and
//! assertions over event streams. With the [`MockBackend`](crate::MockBackend) and
//! [`check_contracts`](crate::check_contracts), a pipeline is tested without any model.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! use serde_json::json;
//! use sinew_fluent::testing::{EventsExt as _, Harness};
//! use sinew_fluent::{Agent, MockBackend};
//!
//! let pipeline = Agent::named("classifier").outputs("intent") >> Agent::named("resolver");
//! let backend = MockBackend::new([("classifier", json!("billing")), ("resolver", json!("Ticket #1234 created."))]);
//! let mut harness = Harness::new(pipeline, backend).unwrap();
//! let response = harness.send("My bill is wrong").await.unwrap();
//! assert_eq!(response.final_text, "Ticket #1234 created.");
//! assert!(response.errors.is_empty());
//! assert_eq!(response.events.authors(), ["classifier", "resolver"]);
//! assert_eq!(response.events.state_written("intent"), Some(&json!("billing")));
//! # });
//! ```

use serde_json::Value;

use crate::backend::{AgentEvent, Execute, ExecutionConfig, RunOptions, final_text};
use crate::error::Result;
use crate::ir::Node;

/// What one message got back.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Response {
    /// Every event of the run.
    pub events: Vec<AgentEvent>,
    /// The last answer's text.
    pub final_text: String,
    /// The error events' codes and messages (`CODE: message`).
    pub errors: Vec<String>,
}

/// A conversation with a compiled pipeline: every message goes to the same session.
pub struct Harness<B: Execute> {
    backend: B,
    compiled: B::Compiled,
    options: RunOptions,
}

impl<B: Execute> std::fmt::Debug for Harness<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness").field("options", &self.options).finish_non_exhaustive()
    }
}

impl<B: Execute> Harness<B> {
    /// Compiles `node` on `backend` with the default execution configuration.
    pub fn new(node: impl Into<Node>, backend: B) -> Result<Self> {
        Harness::with_config(node, backend, &ExecutionConfig::default())
    }

    /// Compiles `node` on `backend` with `config`.
    pub fn with_config(node: impl Into<Node>, backend: B, config: &ExecutionConfig) -> Result<Self> {
        let compiled = backend.compile(&node.into(), config)?;
        Ok(Harness { backend, compiled, options: RunOptions::default() })
    }

    /// Messages go to the session `session_id` of `user_id`.
    #[must_use]
    pub fn in_session(mut self, user_id: impl Into<String>, session_id: impl Into<String>) -> Self {
        self.options = RunOptions::session(user_id, session_id);
        self
    }

    /// Sends `message`; a failed run is an error.
    pub async fn send(&mut self, message: &str) -> Result<Response> {
        let events = self.backend.run(&self.compiled, message, self.options.clone()).await?;
        let errors = events.errors();
        Ok(Response { final_text: final_text(&events), errors, events })
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }
}

/// Questions about an event stream.
pub trait EventsExt {
    /// The authors of the events, in order (`user` left out).
    fn authors(&self) -> Vec<&str>;

    /// The events written by `author`.
    fn by(&self, author: &str) -> Vec<&AgentEvent>;

    /// The last value the events wrote to state `key`.
    fn state_written(&self, key: &str) -> Option<&Value>;

    /// The error events, as `CODE: message`.
    fn errors(&self) -> Vec<String>;

    /// The names of the tools called, in order.
    fn tools_called(&self) -> Vec<&str>;
}

impl EventsExt for [AgentEvent] {
    fn authors(&self) -> Vec<&str> {
        self.iter().map(|e| e.author.as_str()).filter(|a| *a != "user").collect()
    }

    fn by(&self, author: &str) -> Vec<&AgentEvent> {
        self.iter().filter(|e| e.author == author).collect()
    }

    fn state_written(&self, key: &str) -> Option<&Value> {
        self.iter().rev().find_map(|e| e.state_delta.get(key))
    }

    fn errors(&self) -> Vec<String> {
        self.iter()
            .filter_map(|e| {
                e.error_code.as_ref().map(|code| format!("{code}: {}", e.error_message.as_deref().unwrap_or_default()))
            })
            .collect()
    }

    fn tools_called(&self) -> Vec<&str> {
        self.iter().flat_map(|e| &e.tool_calls).map(|c| c.tool_name.as_str()).collect()
    }
}

impl EventsExt for Vec<AgentEvent> {
    fn authors(&self) -> Vec<&str> {
        self.as_slice().authors()
    }

    fn by(&self, author: &str) -> Vec<&AgentEvent> {
        self.as_slice().by(author)
    }

    fn state_written(&self, key: &str) -> Option<&Value> {
        self.as_slice().state_written(key)
    }

    fn errors(&self) -> Vec<String> {
        self.as_slice().errors()
    }

    fn tools_called(&self) -> Vec<&str> {
        self.as_slice().tools_called()
    }
}
