//! The Anthropic Messages protocol for sinew.
//!
//! Sans-IO at its heart: [`build_request`] turns a [`sinew_core::StreamRequest`] into the headers
//! and JSON body of a streaming `/v1/messages` call (API key or OAuth, prompt-cache breakpoints,
//! thinking budgets, tool results grouped per turn, signatures sent back only to Anthropic), and
//! [`decoder`] turns the response bytes into [`sinew_core::StreamEvent`]s and the final
//! [`sinew_core::AssistantMessage`]. [`AnthropicProvider`] joins them over `sinew-http`'s client
//! as a [`sinew_core::StreamProvider`].
//!
//! ```
//! use sinew_core::StreamEvent;
//! use sinew_provider_anthropic::decoder;
//!
//! let stream = concat!(
//!     "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
//!     "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
//!     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
//!     "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
//!     "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
//!     "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
//! );
//! let mut decoder = decoder("claude-x");
//! let mut events = Vec::new();
//! decoder.feed(stream.as_bytes(), &mut events);
//! decoder.finish(&mut events);
//! let Some(StreamEvent::Done(message)) = events.last() else { panic!("no final message") };
//! assert_eq!(message.text(), "Hi");
//! assert_eq!(message.usage.output, 2);
//! ```
//!
//! ## Feature flags
//! None.

mod decode;
mod provider;
mod request;

pub use decode::{AnthropicDecoder, AnthropicEvents, PROVIDER_ID, decoder};
pub use provider::{Anthropic, AnthropicProvider};
pub use request::{
    AnthropicAuth, AnthropicConfig, SUPPORTED_OPTIONS, body, build_request, check_inputs, check_options,
    thinking_budget,
};
pub use sinew_http::HttpRequest;
