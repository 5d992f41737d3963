//! sinew-adk's integration tests.

mod artifacts;
mod compaction;
mod conformance;
mod flows;
mod message_stores;
mod model;
#[cfg(feature = "postgres")]
mod pg;
mod record;
mod runner;
mod session_services;
mod spec000;
#[cfg(feature = "sqlite")]
mod sql_sessions;
mod wire;

use std::path::PathBuf;

/// A file under `tests/data/`, copied from running google-adk 2.13.0 (see `tests/data/PROVENANCE.md`).
pub(crate) fn data(path: &str) -> String {
    let full = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}
