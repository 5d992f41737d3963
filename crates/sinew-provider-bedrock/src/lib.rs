//! AWS Bedrock ConverseStream for sinew, as the service speaks it: a binary
//! `application/vnd.amazon.eventstream` response (prelude, headers, payload, two CRC32s), signed
//! with SigV4 (the `aws-sigv4` crate) or authenticated with a Bedrock API key.
//!
//! Sans-IO at its heart: [`build_request`] turns a [`sinew_core::StreamRequest`] into a
//! `/model/{id}/converse-stream` call, and [`sign_request`] signs it (the time and credentials
//! are inputs, so it is testable; the provider signs each attempt when it is sent);
//! [`decoder`] turns the response bytes into [`sinew_core::StreamEvent`]s (frames validated
//! incrementally, events dispatched on `:event-type`, `exception` frames as errors, the `p`
//! padding ignored). [`BedrockProvider`] joins them over `sinew-http`.
//!
//! ```
//! use sinew_core::StreamEvent;
//! use sinew_http::StreamDecoder;
//! use sinew_provider_bedrock::{decoder, eventstream::event_frame};
//! use serde_json::json;
//!
//! let mut bytes = event_frame("messageStart", &json!({"role": "assistant"}));
//! bytes.extend(event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}, "p": "abc"})));
//! bytes.extend(event_frame("messageStop", &json!({"stopReason": "end_turn"})));
//! bytes.extend(event_frame("metadata", &json!({"usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}})));
//! let mut decoder = decoder("amazon.nova-micro-v1:0");
//! let mut events = Vec::new();
//! decoder.feed(&bytes, &mut events);
//! decoder.finish(&mut events);
//! let Some(StreamEvent::Done(message)) = events.last() else { panic!("no final message") };
//! assert_eq!(message.text(), "Hi");
//! assert_eq!(message.usage.total_tokens, 4);
//! ```
//!
//! ## Feature flags
//! - `credential-chain`: [`AwsCredentialChain`], AWS's default credential chain from
//!   `aws-config` (environment, profiles, SSO, web identity, ECS and EC2 instance metadata,
//!   `credential_process`), cached and refreshed before expiry; [`BedrockConfig::from_env`] uses
//!   it when no API key is set.

#[cfg(feature = "credential-chain")]
mod chain;
mod decode;
pub mod eventstream;
mod provider;
mod request;

#[cfg(feature = "credential-chain")]
pub use chain::AwsCredentialChain;
pub use decode::{BedrockDecoder, PROVIDER_ID, decoder};
pub use provider::{Bedrock, BedrockProvider};
pub use request::{
    AwsCredentials, BedrockAuth, BedrockConfig, CredentialsProvider, EnvCredentials, SUPPORTED_OPTIONS, Secret,
    SigV4Authorizer, body, build_request, check_inputs, check_options, sign_request,
};
