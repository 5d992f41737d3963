//! The SSE decoder on streams recorded from the real services (`sinew-testing/fixtures`), and the
//! client against a real server on loopback.

mod client;
mod credentials;
#[cfg(feature = "entra")]
mod entra;
mod fixtures;
mod limits;
