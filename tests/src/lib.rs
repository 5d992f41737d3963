//! End-to-end tests of sinew through its facade; see `e2e.rs`.
