//! sinew: a Rust framework for LLM agents.
//!
//! This facade re-exports the vocabulary ([`sinew_core`]) and the agent loop ([`sinew_agent`]) at
//! its root, and each further crate behind a feature. It holds no logic of its own: depend on the
//! satellite crates directly if you want fewer dependencies.
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
//! - `testing`: [`testing`] (`sinew-testing`): `MockProvider`, test tools and assertions.
//! - `full`: every feature above.

pub use sinew_agent::*;
pub use sinew_core::*;

/// The agent loop crate, also re-exported at the root.
pub use sinew_agent as agent;
/// The vocabulary crate, also re-exported at the root.
pub use sinew_core as core;
/// The test kit.
#[cfg(feature = "testing")]
pub use sinew_testing as testing;

/// The README's examples, compiled and run as doctests.
#[cfg(all(doctest, feature = "testing"))]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
