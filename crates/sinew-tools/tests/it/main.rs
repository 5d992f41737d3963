//! The built-in tools on real files.

mod bash;
mod edit;
mod read;
mod write;

use sinew_core::{CancellationToken, ToolContext};

pub(crate) fn ctx() -> ToolContext {
    ToolContext::new("call-1", "tool", CancellationToken::new())
}
