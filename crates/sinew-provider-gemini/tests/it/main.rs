//! The Gemini decoder on streams recorded from the Gemini API and Vertex AI
//! (`sinew-testing/fixtures`), and the provider against a real HTTP server.

#[cfg(feature = "adc")]
mod adc;
mod fixtures;
mod transport;
