//! The Anthropic decoder on streams recorded from the real service (`../shared/fixtures`), and
//! the provider against a real HTTP server.

mod fixtures;
mod transport;
