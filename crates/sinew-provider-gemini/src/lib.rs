//! Gemini's `streamGenerateContent` for sinew, and Vertex AI (the same protocol at a regional
//! URL with an OAuth bearer token).
//!
//! Sans-IO at its heart: [`build_request`] turns a [`sinew_core::StreamRequest`] into a
//! streaming call (tools as `parametersJsonSchema`, thinking as a level for Gemini 3 and a budget
//! for 2.5, `thoughtSignature`s sent back to the service that made them); [`decoder`] turns the
//! response bytes into [`sinew_core::StreamEvent`]s: `thought` parts, signatures on the part they
//! came with, function calls with and without ids, Vertex's streamed function-call arguments,
//! usage and finish reasons. [`GeminiProvider`] joins them over `sinew-http`.
//!
//! ```
//! use sinew_core::StreamEvent;
//! use sinew_provider_gemini::decoder;
//!
//! let stream = concat!(
//!     "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]}}],\"modelVersion\":\"gemini-x\"}\r\n\r\n",
//!     "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"!\"}]},\"finishReason\":\"STOP\"}],",
//!     "\"usageMetadata\":{\"promptTokenCount\":5,\"candidatesTokenCount\":2,\"totalTokenCount\":7}}\r\n\r\n",
//! );
//! let mut decoder = decoder("google", "gemini-x");
//! let mut events = Vec::new();
//! decoder.feed(stream.as_bytes(), &mut events);
//! decoder.finish(&mut events);
//! let Some(StreamEvent::Done(message)) = events.last() else { panic!("no final message") };
//! assert_eq!(message.text(), "Hi!");
//! assert_eq!(message.usage.total_tokens, 7);
//! ```
//!
//! ## Feature flags
//! - `adc`: [`GoogleCredentials`], Google's Application Default Credentials (from
//!   `google-cloud-auth`) for Vertex AI, whose tokens are refreshed before they expire;
//!   [`GeminiConfig::vertex_from_env`] uses them when no token is set.

#[cfg(feature = "adc")]
mod adc;
mod decode;
mod provider;
mod request;

#[cfg(feature = "adc")]
pub use adc::{CLOUD_PLATFORM_SCOPE, GoogleCredentials};
pub use decode::{GeminiDecoder, GeminiEvents, decoder};
pub use provider::{Gemini, GeminiProvider};
pub use request::{GeminiConfig, SKIP_SIGNATURE, SUPPORTED_OPTIONS, body, build_request, check_inputs, check_options};
pub use sinew_http::Auth;
