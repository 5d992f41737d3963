//! Test kit for sinew agents.
//!
//! - [`MockProvider`]: a scripted model that streams like a real provider (text and thinking
//!   deltas, tool calls, errors before or during the stream, delays, hanging until cancelled)
//!   and records the requests it got.
//! - [`EchoTool`] and [`FnTool`]: tools for tests.
//! - [`assert_history_valid`], [`assert_subsequence`], [`shape`], [`streamed_text`]: assertions.
//! - [`MockServer`]: a real HTTP server on loopback answering from a script or a function, with
//!   bodies in timed chunks, dropped connections and hanging responses, for transport tests.
//! - [`stream_outcome`], [`text_deltas`], [`terminal_count`], [`assert_chunking_changes_nothing`],
//!   [`assert_byte_by_byte_changes_nothing`]: what every decoder test checks.
//! - [`memory_kb`]: process memory figures for benchmarks.
//! - [`round_trip_history`], [`round_trip_tools`], [`with_round_trip_request`]: what request
//!   builders are snapshot-tested on.
//! - [`mockllm`]: the reference benchmark's mock model (OpenAI Chat and Anthropic), served by
//!   the `sinew-mockllm` binary for `cargo xtask bench e2e`.
//! - [`peers`]: the real servers of `peers/` for interop tests: where they are installed,
//!   free ports, server processes that are listening before a test goes on.
//! - [`transport`]: the HTTP transport checks every provider crate runs against [`MockServer`].
//! - [`mcp_script`]: a tiny stdio MCP server in Python, for tests that need a real server process.
//! - [`hostile`]: recorded streams with hostile values in their events, for decoder property tests.
//! - [`wire`]: what Anthropic Messages and OpenAI Chat Completions stream for a scripted turn, for
//!   tests that drive a whole program over HTTP.
//! - [`fixtures_dir`], [`expected_results`], [`fixture_bytes`], [`recorded_streams`], [`split_at_points`]: the recorded
//!   provider streams of `fixtures/`, for decoder tests.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use futures::StreamExt;
//! use sinew_core::{Message, StreamEvent, StreamProvider, StreamRequest};
//! use sinew_testing::{MockProvider, MockResponse};
//!
//! let mock = MockProvider::new([MockResponse::new().text_delta("Hel").text_delta("lo")]);
//! let prompt = Message::user("hi");
//! let messages = [&prompt];
//! let events: Vec<StreamEvent> =
//!     mock.stream(&StreamRequest::new("m", "", &messages), Default::default()).collect().await;
//! assert!(matches!(events.last(), Some(StreamEvent::Done(m)) if m.text() == "Hello"));
//! assert_eq!(mock.requests()[0].messages, vec![prompt]);
//! # });
//! ```
//!
//! ## Feature flags
//! - `postgres`: [`postgres::TestSchema`], a PostgreSQL schema of one test.

mod assert;
mod decoding;
mod fixtures;
mod history;
pub mod hostile;
mod logs;
pub mod mcp_script;
mod mock;
pub mod mockllm;
mod options;
pub mod peers;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod resume;
pub mod schema;
mod server;
mod tools;
pub mod transport;
mod vars;
pub mod wire;

pub use assert::{assert_history_valid, assert_subsequence, kinds, shape, streamed_text};
pub use decoding::{
    assert_byte_by_byte_changes_nothing, assert_chunking_changes_nothing, assert_structured_answer, assert_text,
    stream_outcome, terminal_count, text_deltas, thinking_text, tool_calls_json,
};
pub use fixtures::{expected_results, fixture_bytes, fixtures_dir, recorded_streams, split_at_points};
pub use history::{
    attachments, input_refusal, round_trip_history, round_trip_tools, tool_round, with_messages,
    with_round_trip_request,
};
pub use logs::{logs_during, warnings_during};
pub use mock::{MockProvider, MockResponse, MockStep, RecordedRequest};
pub use options::{assert_option_support, cached_as, each_option, leak_options};
pub use server::{BodyEnd, MockServer, ReceivedRequest, ServedResponse};
pub use tools::{EchoTool, FnTool};
pub use vars::env_vars;

/// A memory figure of this process in KiB, from `/proc/self/status` (`"VmRSS"` now, `"VmHWM"`
/// the peak); `None` where there is no such file (not Linux). For benchmarks.
pub fn memory_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.strip_prefix(field).is_some_and(|rest| rest.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn memory_figures_come_from_proc() {
        let (now, peak) = (super::memory_kb("VmRSS").unwrap(), super::memory_kb("VmHWM").unwrap());
        assert!(now > 0 && peak >= now, "{now} {peak}");
        assert_eq!(super::memory_kb("VmNothing"), None);
    }
}
