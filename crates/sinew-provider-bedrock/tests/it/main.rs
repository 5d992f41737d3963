//! The Bedrock decoder on the AWS eventstream codec vectors and on ConverseStream responses
//! recorded from the real service (`sinew-testing/fixtures`), and the provider against a real HTTP
//! server.

#[cfg(feature = "credential-chain")]
mod chain;
mod fixtures;
mod transport;
