//! sinew: a Rust framework for LLM agents.
//!
//! This facade re-exports the vocabulary ([`sinew_core`]) and the agent loop ([`sinew_agent`]) at
//! its root, and each further crate behind a feature. Its own additions are the
//! [`ProviderRegistry`], which routes each model to the provider that serves it, and the model
//! [`catalog`] (limits and prices). Depend on the satellite crates directly for fewer
//! dependencies.
//!
//! ```
//! # #[cfg(feature = "testing")]
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use sinew::testing::{MockProvider, MockResponse};
//! use sinew::{Agent, EndReason};
//!
//! let mut agent = Agent::new(MockProvider::new([MockResponse::text("4")]), "mock-model");
//! let outcome = agent.prompt("What is 2 + 2?").finish().await;
//! assert_eq!(outcome.reason, EndReason::Completed);
//! assert_eq!(outcome.final_text().as_deref(), Some("4"));
//! # });
//! ```
//!
//! ## Feature flags
//! - `providers` (default): all five below.
//! - `anthropic`: [`anthropic`] (`sinew-provider-anthropic`).
//! - `openai`: [`openai`] (`sinew-provider-openai-chat`): OpenAI Chat and compatible servers.
//! - `openai-responses`: [`openai_responses`] (`sinew-provider-openai-responses`), with Azure.
//! - `gemini`: [`gemini`] (`sinew-provider-gemini`), with Vertex AI.
//! - `bedrock`: [`bedrock`] (`sinew-provider-bedrock`).
//! - `aws-credentials`: `bedrock::AwsCredentialChain`, AWS's default credential chain
//!   (environment, profiles, SSO, web identity, ECS and EC2 metadata; adds `aws-config`).
//! - `google-credentials`: `gemini::GoogleCredentials`, Application Default Credentials for
//!   Vertex AI (adds `google-cloud-auth`).
//! - `azure-credentials`: `http::EntraCredential`, Entra ID tokens for Azure OpenAI.
//! - `cloud-credentials`: the three above. Each is fetched when a request is sent, cached and
//!   refreshed before it expires.
//! - `http`: [`http`] (`sinew-http`), the HTTP layer; on with any provider.
//! - `mcp` (default): [`mcp`] (`sinew-mcp`): the MCP client, and `mcp::AgentMcpExt` to put
//!   MCP servers' tools on an agent.
//! - `openapi`: [`openapi`] (`sinew-openapi`): OpenAPI 3.0 and 3.1 documents as tools, and
//!   `openapi::AgentOpenApiExt` to put them on an agent.
//! - `tools` (default): [`tools`] (`sinew-tools`): bash, read, write, edit, list and search.
//! - `sessions` (default): [`session`] (`sinew-session`): the session recorder, and session stores
//!   in JSON files and SQLite.
//! - `postgres`: `session::PostgresStore`, sessions in PostgreSQL.
//! - `tiktoken`: `compaction::TiktokenCounter`, OpenAI's tokenizer for exact token counts.
//! - `adk`: [`adk`] (`sinew-adk`): Google ADK's data model, with JSON byte-compatible with
//!   adk-python.
//! - `fluent`: [`fluent`] (`sinew-fluent`): fluent composition over ADK — builders, operators
//!   (`>>`, `|`, `*`), backends (ADK, mock, pictures), state transforms and contracts.
//! - `schema` (default): `typed` (tools from typed async functions) and `extract` (answers as
//!   Rust values, checked against their schema); adds `schemars` and `jsonschema`.
//! - `testing`: [`testing`] (`sinew-testing`): `MockProvider`, test tools and assertions.
//! - `otel`: `telemetry`: the GenAI spans and metrics to an OpenTelemetry collector over
//!   OTLP/HTTP (adds `opentelemetry` and `tracing-opentelemetry`).
//! - `full`: every feature above.
//!
//! [`compaction`] (`sinew-compaction`: token counting, context tracking, compaction strategies)
//! is always there: the agent compacts with it.

pub mod catalog;
mod registry;

pub use registry::{ProviderRegistry, providers_for_model};
pub use sinew_agent::*;
pub use sinew_core::*;

/// Google ADK's data model, agents and runner.
#[cfg(feature = "adk")]
pub use sinew_adk as adk;
/// Fluent agent composition over ADK.
#[cfg(feature = "fluent")]
pub use sinew_fluent as fluent;
/// The HTTP layer the providers share.
#[cfg(feature = "http")]
pub use sinew_http as http;
/// Anthropic Messages.
#[cfg(feature = "anthropic")]
pub use sinew_provider_anthropic as anthropic;
/// AWS Bedrock ConverseStream.
#[cfg(feature = "bedrock")]
pub use sinew_provider_bedrock as bedrock;
/// Gemini and Vertex AI.
#[cfg(feature = "gemini")]
pub use sinew_provider_gemini as gemini;
/// OpenAI Chat Completions and compatible servers.
#[cfg(feature = "openai")]
pub use sinew_provider_openai_chat as openai;
/// OpenAI Responses and Azure OpenAI.
#[cfg(feature = "openai-responses")]
pub use sinew_provider_openai_responses as openai_responses;

/// The agent loop crate, also re-exported at the root.
pub use sinew_agent as agent;
/// Token counting, context tracking and compaction strategies.
pub use sinew_compaction as compaction;
/// The vocabulary crate, also re-exported at the root.
pub use sinew_core as core;
#[cfg(feature = "mcp")]
pub mod mcp;

#[cfg(feature = "openapi")]
pub mod openapi;

#[cfg(feature = "otel")]
pub mod telemetry;

/// Sessions: the recorder and the stores.
#[cfg(feature = "sessions")]
pub use sinew_session as session;
/// The test kit.
#[cfg(feature = "testing")]
pub use sinew_testing as testing;
/// The built-in coding tools.
#[cfg(feature = "tools")]
pub use sinew_tools as tools;

/// The README's examples, compiled and run as doctests.
#[cfg(all(doctest, feature = "testing"))]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The telemetry guide's example, compiled as a doctest.
#[cfg(all(doctest, feature = "otel"))]
#[doc = include_str!("../../../docs/concepts/telemetry.md")]
struct TelemetryGuideDoctests;

/// The MCP guide's examples, compiled as doctests.
#[cfg(all(doctest, feature = "mcp"))]
#[doc = include_str!("../../../docs/concepts/mcp.md")]
struct McpGuideDoctests;

/// The Agent Skills guide's example, compiled and run as a doctest.
#[cfg(all(doctest, feature = "testing", feature = "tools"))]
#[doc = include_str!("../../../docs/concepts/skills.md")]
struct SkillsGuideDoctests;

/// The sessions guide's example, compiled as a doctest.
#[cfg(all(doctest, feature = "sessions"))]
#[doc = include_str!("../../../docs/concepts/sessions.md")]
struct SessionsGuideDoctests;

/// The OpenAPI guide's examples, compiled as doctests.
#[cfg(all(doctest, feature = "openapi"))]
#[doc = include_str!("../../../docs/concepts/openapi.md")]
struct OpenApiGuideDoctests;
