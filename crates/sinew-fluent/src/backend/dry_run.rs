//! The dry-run backend: compiles nothing, checks the contracts between steps.

use super::{Backend, ExecutionConfig};
use crate::contracts::check_contracts_with;
use crate::error::{Error, Result};
use crate::ir::Node;

/// Checks a pipeline's contracts (see [`check_contracts`](crate::check_contracts)): compiling
/// succeeds with the number of steps checked, or fails with every issue.
#[derive(Clone, Debug, Default)]
pub struct DryRunBackend {
    initial: Vec<String>,
}

impl DryRunBackend {
    /// A dry run where the state starts empty.
    pub fn new() -> Self {
        DryRunBackend::default()
    }

    /// A dry run where the state starts with `keys`.
    pub fn with_initial_state<K: Into<String>>(keys: impl IntoIterator<Item = K>) -> Self {
        DryRunBackend { initial: keys.into_iter().map(Into::into).collect() }
    }
}

impl Backend for DryRunBackend {
    type Compiled = usize;

    fn compile(&self, node: &Node, _config: &ExecutionConfig) -> Result<usize> {
        let root = crate::builder::finish(node.clone())?;
        let issues = check_contracts_with(&root, self.initial.iter().map(String::as_str));
        if issues.is_empty() { Ok(root.walk().len()) } else { Err(Error::Contracts(issues)) }
    }
}
