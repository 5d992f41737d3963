//! The Anthropic decoder on streams recorded from the real service (`../shared/fixtures`).

mod fixtures;
