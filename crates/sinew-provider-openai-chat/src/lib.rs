//! OpenAI Chat Completions for sinew, and every compatible server.
//!
//! Sans-IO at its heart: [`build_request`] turns a [`sinew_core::StreamRequest`] into a
//! streaming `/chat/completions` call, with the knobs compatible servers differ on
//! ([`OpenAiChatConfig`]: base URL, auth header, `max_tokens` field name, system or developer
//! role, how reasoning is asked for, `stream_options`), and presets for OpenAI, Ollama, vLLM,
//! llama.cpp, DeepSeek, Groq, OpenRouter, xAI and Mistral. Thinking levels ask for
//! `reasoning_effort` `low` (`Minimal` and `Low`: many servers take only low, medium and high),
//! `medium` or `high`. [`decoder`] turns the
//! response bytes into [`sinew_core::StreamEvent`]s: tool calls assembled by `index` (ids and
//! names late or missing, arguments fragmented), `reasoning_content`/`reasoning`, refusals, usage
//! from the final chunk, and errors sent mid-stream. [`OpenAiChatProvider`] joins them over
//! `sinew-http`.
//!
//! ```
//! use sinew_core::StreamEvent;
//! use sinew_provider_openai_chat::decoder;
//!
//! let stream = concat!(
//!     "data: {\"model\":\"gpt-x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
//!     "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
//!     "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"total_tokens\":6}}\n\n",
//!     "data: [DONE]\n\n",
//! );
//! let mut decoder = decoder("openai", "gpt-x");
//! let mut events = Vec::new();
//! decoder.feed(stream.as_bytes(), &mut events);
//! decoder.finish(&mut events);
//! let Some(StreamEvent::Done(message)) = events.last() else { panic!("no final message") };
//! assert_eq!(message.text(), "Hi");
//! assert_eq!(message.usage.input, 5);
//! ```
//!
//! ## Feature flags
//! None.

mod decode;
mod provider;
mod request;

pub use decode::{ChatEvents, OpenAiChatDecoder, decoder};
pub use provider::{OpenAiChat, OpenAiChatProvider};
pub use request::{
    MaxTokensField, OpenAiChatConfig, ReasoningParam, SUPPORTED_OPTIONS, SeedField, SystemRole, body, build_request,
    check_inputs, check_options,
};
pub use sinew_http::Auth;
