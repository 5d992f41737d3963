//! sinew's HTTP layer, shared by every crate that talks HTTP.
//!
//! Today it holds the incremental server-sent events decoder ([`sse::SseDecoder`]) the provider
//! crates build their stream decoders on. The hyper + rustls client (pooling, timeouts, proxies,
//! retries honouring `retry-after`, status → `ProviderError`) joins it with the provider crates.
//!
//! ```
//! use sinew_http::sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! let mut events = Vec::new();
//! decoder.feed(b"event: ping\ndata: {\"a\":", &mut events);
//! decoder.feed(b"1}\n\n", &mut events);
//! assert_eq!(events[0].event, "ping");
//! assert_eq!(events[0].data, "{\"a\":1}");
//! ```
//!
//! ## Feature flags
//! None.

pub mod sse;
