//! The Anthropic decoder on streams recorded from the real service (`sinew-testing/fixtures`), and
//! the provider against a real HTTP server.

mod fixtures;
mod transport;
