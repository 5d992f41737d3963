//! Contracts between steps (spec 003 §7): every state key a step reads must be written by an
//! earlier step (or be in the initial state). Untyped steps interoperate: an agent reads what its
//! instruction's `{key}` templates name and what its `consumes::<T>()` type declares, and writes
//! its output key and its `produces::<T>()` fields.

use std::collections::BTreeSet;

use crate::ir::{Node, Semantics};
use crate::nodes::is_session_scoped;

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
///
/// A key counts as written only where every way through the pipeline wrote it: after a route,
/// fallback or race, the keys all their branches write (a route without a default adds none);
/// after a parallel group, what any branch writes; an agent's delegates, a timeout's body and a
/// map-over's body may not run, so what they write does not count after them. Transforms that
/// remove keys (`S::drop`, `S::pick`, `S::rename`) take them away.
pub fn check_contracts(root: &Node) -> Vec<ContractIssue> {
    check_contracts_with(root, std::iter::empty::<&str>())
}

/// [`check_contracts`], with keys the session's state holds before the run.
pub fn check_contracts_with<'a>(root: &Node, initial: impl IntoIterator<Item = &'a str>) -> Vec<ContractIssue> {
    let available: BTreeSet<String> = initial.into_iter().map(str::to_owned).collect();
    let mut issues = Vec::new();
    check(root, "", available, &mut issues);
    issues
}

/// Checks `node` given the keys `available` before it; gives the keys available after it.
fn check(
    node: &Node,
    parent: &str,
    mut available: BTreeSet<String>,
    issues: &mut Vec<ContractIssue>,
) -> BTreeSet<String> {
    let path = if parent.is_empty() { node.name().to_owned() } else { format!("{parent}/{}", node.name()) };
    for key in node.own_reads() {
        if !available.contains(&key) && !key.starts_with("app:") && !key.starts_with("user:") {
            issues.push(ContractIssue { path: path.clone(), key });
        }
    }
    let children = node.children();
    match node {
        Node::Sequence(_) | Node::Loop(_) => {
            for child in children {
                available = check(child, &path, available, issues);
            }
        }
        Node::Parallel(_) => {
            // What every branch left of what was there, and what any branch wrote anew.
            let before = available.clone();
            let outcomes: Vec<BTreeSet<String>> =
                children.into_iter().map(|c| check(c, &path, before.clone(), issues)).collect();
            let written: BTreeSet<String> = outcomes.iter().flat_map(|o| o.difference(&before).cloned()).collect();
            available = intersection(outcomes).unwrap_or(before);
            available.extend(written);
        }
        Node::Route(route) => {
            let outcomes: Vec<BTreeSet<String>> =
                children.into_iter().map(|c| check(c, &path, available.clone(), issues)).collect();
            if route.default.is_some() {
                available = intersection(outcomes).unwrap_or(available);
            }
        }
        Node::Fallback(_) | Node::Race(_) => {
            let outcomes: Vec<BTreeSet<String>> =
                children.into_iter().map(|c| check(c, &path, available.clone(), issues)).collect();
            available = intersection(outcomes).unwrap_or(available);
        }
        Node::MapOver(map) => {
            let mut inner = available.clone();
            inner.insert(map.item_key.clone());
            check(&map.body, &path, inner, issues);
        }
        Node::Agent(_) => {
            // Delegates run after the agent hands them the conversation: they see its writes.
            let after_agent: BTreeSet<String> = available.iter().cloned().chain(node.own_writes()).collect();
            for child in children {
                check(child, &path, after_agent.clone(), issues);
            }
        }
        Node::Transform(transform) => {
            for key in &transform.removes {
                available.remove(key);
            }
            if transform.semantics == Semantics::ReplaceSession {
                available.retain(|k| !is_session_scoped(k) || transform.affected_keys.contains(k));
            }
        }
        _ => {
            for child in children {
                check(child, &path, available.clone(), issues);
            }
        }
    }
    available.extend(node.own_writes());
    available
}

/// The keys every outcome has; `None` without outcomes.
fn intersection(outcomes: Vec<BTreeSet<String>>) -> Option<BTreeSet<String>> {
    outcomes.into_iter().reduce(|a, b| a.intersection(&b).cloned().collect())
}
