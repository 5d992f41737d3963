//! The OpenAI Responses protocol for sinew, and Azure OpenAI (the same protocol at another URL,
//! with an `api-key` header).
//!
//! Sans-IO at its heart: [`build_request`] turns a [`sinew_core::StreamRequest`] into a
//! stateless (`store: false`) streaming `/responses` call that carries the provider's own
//! reasoning items (encrypted) and item ids back; [`decoder`] turns the response bytes into
//! [`sinew_core::StreamEvent`]s: text, reasoning summaries or raw reasoning text, function-call
//! arguments checked against `.done`, usage, and `response.failed` / `error` /
//! `response.incomplete`. [`ResponsesProvider`] joins them over `sinew-http`.
//!
//! ```
//! use sinew_core::StreamEvent;
//! use sinew_provider_openai_responses::decoder;
//!
//! let stream = concat!(
//!     "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\"}}\n\n",
//!     "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"delta\":\"Hi\"}\n\n",
//!     "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"model\":\"gpt-x\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1,\"total_tokens\":6}}}\n\n",
//! );
//! let mut decoder = decoder("openai_responses", "gpt-x");
//! let mut events = Vec::new();
//! decoder.feed(stream.as_bytes(), &mut events);
//! decoder.finish(&mut events);
//! let Some(StreamEvent::Done(message)) = events.last() else { panic!("no final message") };
//! assert_eq!(message.text(), "Hi");
//! assert_eq!(message.usage.total_tokens, 6);
//! ```
//!
//! ## Feature flags
//! - `entra`: [`ResponsesConfig::azure_from_env`] falls back to Entra ID tokens
//!   (`sinew_http::EntraCredential`) when `AZURE_OPENAI_API_KEY` is unset. Any configuration
//!   takes them as `auth = Auth::Token(...)`.

mod decode;
mod provider;
mod request;

pub use decode::{ResponsesDecoder, ResponsesEvents, decoder};
pub use provider::{OpenAiResponses, ResponsesProvider};
pub use request::{ResponsesConfig, SUPPORTED_OPTIONS, body, build_request, check_inputs, check_options};
pub use sinew_http::Auth;
