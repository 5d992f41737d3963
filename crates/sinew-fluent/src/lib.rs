//! Fluent agent composition over sinew-adk (spec 003, adk-fluent's ideas in Rust).
//!
//! Builders consume `self` and give an IR; nothing runs until a backend runs it.
//!
//! - [`Agent`], [`Pipeline`], [`FanOut`], [`Loop`]: ADK's `LlmAgent`, `SequentialAgent`,
//!   `ParallelAgent` and `LoopAgent`, and the operators `>>` (in order), `|` (at once) and `* n`
//!   (n rounds). Their configuration is the structs generated from adk-python's own models
//!   ([`config`]), so the IR follows ADK's fields; `cargo xtask codegen` regenerates them.
//! - Nodes ADK has no class for: [`S`] state transforms with scope-aware semantics, [`Route`],
//!   [`fallback`], [`race`], [`gate`], [`tap`], [`map_over`], [`timeout`], [`transfer`].
//! - Backends: [`AdkBackend`] (an ADK [`App`] run by sinew-adk's runner),
//!   [`MockBackend`] (fixed answers, no model), [`VizBackend`] (Mermaid, Graphviz) and
//!   [`DryRunBackend`] (contracts).
//! - [`resources`]: values injected into tools by type, hidden from the model, per app, session
//!   or invocation.
//! - [`yaml`]: the IR as ADK AgentConfig YAML, both ways (`sinew serve` serves what it writes).
//! - [`testing`]: a harness holding a conversation with a pipeline, and event-stream
//!   assertions.
//! - Contracts: [`check_contracts`] reports every step that reads state no earlier step writes.
//! - [`middleware`]: ADK's 13 plugin callbacks as a [`Middleware`](middleware::Middleware) trait,
//!   compiled into one plugin that runs before the agents' callbacks, and the built-ins (token
//!   budget, cost tracker, response cache, rate limiter, retry, circuit breaker, tool approval,
//!   structured log, PII redaction).
//!
//! A hello world, as an ADK app:
//!
//! ```
//! # use std::sync::Arc;
//! # let model = Arc::new(sinew_adk::testing::ScriptedLlm::texts(["Hello!"]));
//! use sinew_fluent::Agent;
//!
//! let app = Agent::new("helper", model).instruct("Help the user.").to_app().unwrap();
//! assert_eq!(app.root_agent().name(), "helper");
//! ```
//!
//! See `docs/concepts/fluent.md` for the construct map, beside plain sinew-adk code.

mod backend;
mod bounded;
mod builder;
pub mod config;
mod contracts;
mod error;
#[allow(clippy::all, missing_docs)]
mod generated;
pub mod ir;
pub mod middleware;
mod nodes;
pub mod resources;
pub mod testing;
pub mod yaml;

use std::sync::Arc;

pub use sinew_adk::EventsCompactionConfig;
use sinew_adk::{App, Runner, SessionService};

pub use backend::{
    AdkApp, AdkBackend, AgentEvent, Backend, DryRunBackend, Execute, ExecutionConfig, Format, MockBackend, Registry,
    RunOptions, ToolCallInfo, ToolResponseInfo, VizBackend, final_text,
};
pub use builder::{Agent, FanOut, IntoModel, Loop, Pipeline};
pub use contracts::{ContractIssue, check_contracts, check_contracts_with};
pub use error::{Error, Result};
pub use ir::Node;
pub use nodes::{
    MapOver, Route, S, fallback, gate, gate_approving, is_session_scoped, map_over, race, tap, timeout, transfer,
    transfer_if,
};

macro_rules! conveniences {
    ($($ty:ty),*) => {$(
        impl $ty {
            /// ADK's app for this pipeline, compiled by a default [`AdkBackend`] (models must be
            /// given as objects: a default backend resolves no names).
            pub fn to_app(self) -> Result<App> {
                self.to_app_with(&AdkBackend::new(), &ExecutionConfig::default())
            }

            /// ADK's app for this pipeline, compiled by `backend` with `config`.
            pub fn to_app_with(self, backend: &AdkBackend, config: &ExecutionConfig) -> Result<App> {
                let node: Node = self.into();
                Ok(backend.compile(&node, config)?.app)
            }

            /// ADK's runner of this pipeline over `sessions`.
            pub fn to_runner(self, sessions: Arc<dyn SessionService>) -> Result<Runner> {
                let backend = AdkBackend::new().with_sessions(sessions);
                let node: Node = self.into();
                backend.runner(&backend.compile(&node, &ExecutionConfig::default())?)
            }

            /// The pipeline as a Mermaid flowchart, with data-flow edges.
            pub fn visualize(self) -> Result<String> {
                let node: Node = self.into();
                VizBackend::new(Format::Mermaid).compile(&node, &ExecutionConfig::default())
            }
        }
    )*};
}

conveniences!(Agent, Pipeline, FanOut, Loop, Route, MapOver, Node);

/// The guide's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/concepts/fluent.md")]
struct FluentGuideDoctests;
