//! The Chat Completions decoder on streams recorded from OpenAI, compatible servers and Azure
//! (`sinew-testing/fixtures`), and the provider against a real HTTP server.

mod fixtures;
mod transport;
