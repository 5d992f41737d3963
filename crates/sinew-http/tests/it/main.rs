//! The SSE decoder on streams recorded from the real services (`../shared/fixtures`).

mod fixtures;
