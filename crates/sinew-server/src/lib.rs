//! sinew's HTTP server: Google ADK's `api_server` dialect over sinew-adk agents, so that ADK's
//! clients (ADK Web, the conformance harness, anything written against `adk api_server`) talk to
//! agents built with sinew.
//!
//! ```no_run
//! use std::sync::Arc;
//! use sinew_adk::testing::ScriptedLlm;
//! use sinew_adk::{InMemorySessionService, LlmAgent};
//! use sinew_server::{AdkApi, ServerConfig, serve};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = LlmAgent::builder("helper").model(Arc::new(ScriptedLlm::texts(["Hello."]))).build()?;
//! let api = AdkApi::new(Arc::new(InMemorySessionService::new())).app("helper", Arc::new(agent))?;
//! let listener = tokio::net::TcpListener::bind(sinew_server::DEFAULT_ADDRESS).await?;
//! serve(listener, api, ServerConfig::default(), std::future::pending()).await?;
//! # Ok(()) }
//! ```
//!
//! See `docs/server.md` for the routes.
//!
//! ## Feature flags
//! - `postgres` (default): `postgresql://` session storage.

mod adk_api;
mod agents;
pub mod chat;
pub mod conformance;
mod http;
mod page;
mod serve;
mod storage;

pub use adk_api::{ADK_VERSION, AdkApi, is_app_name};
pub use agents::AgentRegistry;
#[cfg(feature = "postgres")]
pub use chat::PostgresChatStore;
pub use chat::{ChatApi, SqliteChatStore};
pub use http::Body;
pub use serve::{
    DEFAULT_ADDRESS, DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS,
    Routes, ServerConfig, is_loopback_host, serve,
};
pub use storage::{chat_store_from_uri, session_service_from_uri};

/// The server guide's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/server.md")]
struct ServerGuideDoctests;
