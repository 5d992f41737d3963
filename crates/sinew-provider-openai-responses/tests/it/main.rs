//! The Responses decoder on streams recorded from OpenAI, Azure, OpenRouter and DeepSeek
//! (`sinew-testing/fixtures`), and the provider against a real HTTP server.

mod fixtures;
mod transport;
