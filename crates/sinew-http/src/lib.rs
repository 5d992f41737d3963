//! sinew's HTTP layer, shared by every crate that talks HTTP.
//!
//! - [`HttpClient`]: one pooled hyper client over rustls (ring provider; Mozilla's roots by
//!   default, the platform's with `native-roots`), with connect and read timeouts and optional
//!   proxies ([`HttpClient::from_env`] reads `HTTPS_PROXY`/`NO_PROXY`; nothing is read implicitly).
//! - [`HttpClient::send`]: retries with [`sinew_core::RetryConfig`], honouring `retry-after`,
//!   `retry-after-ms` and `x-should-retry`, and maps failed statuses to
//!   [`sinew_core::ProviderError`] ([`error_for_status`]).
//! - [`sse::SseDecoder`]: incremental server-sent events decoding.
//! - [`SseMessageDecoder`]: what every SSE protocol's decoder shares; a protocol supplies an
//!   [`SseHandler`].
//! - [`stream_response`]: the thin transport of every provider: send, then feed the body to a
//!   pure [`StreamDecoder`], with cancellation at every await, within [`StreamLimits`] (response
//!   size, silence, an optional deadline).
//! - [`HttpProvider`]: a provider crate's [`Protocol`] (configuration, builder, decoder) as a
//!   `StreamProvider`.
//! - [`HttpRequest`]: what the pure request builders produce; its `Debug` hides secrets.
//! - [`Authorizer`], [`TokenSource`], [`CredentialCache`]: credentials fetched when a request is
//!   sent (cloud credential chains), cached until shortly before they expire and refreshed in
//!   the background.
//! - [`json::MaybeStr`]: for decoders that read events into typed, borrowed structs.
//!
//! ```
//! use sinew_http::sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! let mut events = Vec::new();
//! decoder.feed(b"event: ping\ndata: {\"a\":", &mut events)?;
//! decoder.feed(b"1}\n\n", &mut events)?;
//! assert_eq!(events[0].event, "ping");
//! assert_eq!(events[0].data, "{\"a\":1}");
//! # Ok::<(), sinew_http::sse::EventTooLarge>(())
//! ```
//!
//! ## Feature flags
//! - `webpki-roots` (default): trust Mozilla's root certificates, compiled in.
//! - `native-roots`: trust the operating system's store (falls back to Mozilla's roots when both
//!   features are on and the store is empty).
//! - `entra`: [`EntraCredential`], Microsoft Entra ID tokens for Azure OpenAI from the sources
//!   Azure's `DefaultAzureCredential` tries (a service principal's secret, workload identity,
//!   managed identity, the Azure CLI).

mod auth;
mod client;
mod credentials;
#[cfg(feature = "entra")]
mod entra;
pub mod json;
mod message;
mod provider;
mod request;
mod retry;
pub mod sse;
mod stream;

pub use auth::{Auth, form_urlencoded, url_with_query};
pub use client::{HttpClient, HttpClientBuilder, HttpResponse, error_chain};
pub use credentials::{AccessToken, Authorizer, BearerAuthorizer, CachePolicy, CredentialCache, Expiring, TokenSource};
#[cfg(feature = "entra")]
pub use entra::{COGNITIVE_SERVICES_SCOPE, EntraCredential};
pub use message::{SseHandler, SseMessageDecoder, TextBlocks, excerpt};
pub use provider::{HttpProvider, Protocol, env_var};
pub use request::{
    HttpRequest, PUBLIC_HEADERS, PUBLIC_QUERY, Redacted, SENSITIVE_HEADERS, is_public_header, is_sensitive_header,
    json_f32, redact_url,
};
pub use retry::{default_retry, error_for_status, error_message, retry_after};
pub use stream::{StreamDecoder, StreamLimits, stream_authorized_response, stream_response, stream_response_with};
