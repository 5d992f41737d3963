//! The vocabulary's wire shapes and history checks, from outside the crate.

mod history;
mod serde_shapes;
