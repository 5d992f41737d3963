//! Contracts between steps (spec 003 §7): every state key a step reads must be written by an
//! earlier step (or be in the initial state). Untyped steps interoperate: an agent reads what its
//! instruction's `{key}` templates name and what its `consumes::<T>()` type declares, and writes
//! its output key and its `produces::<T>()` fields.

use std::collections::BTreeSet;

use crate::ir::Node;

/// A step that reads a key no earlier step writes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContractIssue {
    /// The step's path in the pipeline (`support_pipeline/resolver`).
    pub path: String,
    /// The key it reads.
    pub key: String,
}

impl std::fmt::Display for ContractIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` reads `{}`, which no earlier step writes", self.path, self.key)
    }
}

/// Every step of `root` whose reads are not written by an earlier step. `app:` and `user:` keys
/// outlive a session, so they are not checked.
pub fn check_contracts(root: &Node) -> Vec<ContractIssue> {
    check_contracts_with(root, std::iter::empty::<&str>())
}

/// [`check_contracts`], with keys the session's state holds before the run.
pub fn check_contracts_with<'a>(root: &Node, initial: impl IntoIterator<Item = &'a str>) -> Vec<ContractIssue> {
    let mut available: BTreeSet<String> = initial.into_iter().map(str::to_owned).collect();
    let mut issues = Vec::new();
    check(root, "", &mut available, &mut issues);
    issues
}

fn check(node: &Node, parent: &str, available: &mut BTreeSet<String>, issues: &mut Vec<ContractIssue>) {
    let path = if parent.is_empty() { node.name().to_owned() } else { format!("{parent}/{}", node.name()) };
    for key in node.own_reads() {
        if !available.contains(&key) && !key.starts_with("app:") && !key.starts_with("user:") {
            issues.push(ContractIssue { path: path.clone(), key });
        }
    }
    match node {
        Node::Sequence(_) | Node::Loop(_) => {
            for child in node.children() {
                check(child, &path, available, issues);
            }
        }
        Node::MapOver(map) => {
            let mut inner = available.clone();
            inner.insert(map.item_key.clone());
            check(&map.body, &path, &mut inner, issues);
        }
        Node::Agent(_) => {
            // Delegates run after the agent hands them the conversation: they see its writes.
            available.extend(node.own_writes());
            for child in node.children() {
                check(child, &path, &mut available.clone(), issues);
            }
        }
        _ => {
            // Branches (parallel, race, fallback, route) each start from what was there before.
            for child in node.children() {
                check(child, &path, &mut available.clone(), issues);
            }
        }
    }
    available.extend(node.writes_keys());
}
