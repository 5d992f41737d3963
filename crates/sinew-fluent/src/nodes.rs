//! The nodes ADK has no class for (spec 003 §3.2): state transforms ([`S`]), routes, fallbacks,
//! races, gates, taps, map-over, timeouts and transfers.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::ir::{
    GateNode, GroupNode, MapOverNode, Node, RouteNode, RouteRule, Semantics, StatePredicate, TapNode, TimeoutNode,
    TransferNode, TransformNode,
};

/// Whether `key` is session-scoped: not `app:`, `user:` nor `temp:` state, which transforms never
/// remove.
pub fn is_session_scoped(key: &str) -> bool {
    !["app:", "user:", "temp:"].iter().any(|p| key.starts_with(p))
}

/// State transforms (spec 003 §6): each is a node that writes the state deltas of its semantics.
/// ADK's state has no delete, so a removed key is written as `null`, and only session-scoped keys
/// are removed.
///
/// ```
/// use serde_json::json;
/// use sinew_fluent::{Agent, S};
///
/// let pipeline = (S::set([("tone", json!("formal"))]) >> Agent::named("writer").instruct("Write in a {tone} tone."))
///     .build()
///     .unwrap();
/// assert!(sinew_fluent::check_contracts(&pipeline).is_empty());
/// ```
#[derive(Debug)]
pub struct S;

fn keys<K: Into<String>>(keys: impl IntoIterator<Item = K>) -> Vec<String> {
    keys.into_iter().map(Into::into).collect()
}

/// `text` as part of a node name: characters ADK's name rule refuses become `_` (state keys may
/// hold `:` and others), and a leading digit gets a `_` before it.
fn name_part(text: &str) -> String {
    let mut name: String = text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}

fn transform(
    name: String,
    semantics: Semantics,
    affected: &[String],
    reads: &[String],
    function: impl Fn(&Map<String, Value>) -> Map<String, Value> + Send + Sync + 'static,
) -> Node {
    Node::Transform(TransformNode {
        name: name_part(&name),
        function: Arc::new(function),
        semantics,
        affected_keys: affected.iter().cloned().collect(),
        reads: reads.iter().cloned().collect(),
        removes: if semantics == Semantics::DeleteKeys {
            affected.iter().filter(|k| is_session_scoped(k)).cloned().collect()
        } else {
            BTreeSet::new()
        },
        generated_name: true,
    })
}

impl S {
    /// Writes each value under its key.
    pub fn set<K: Into<String>>(values: impl IntoIterator<Item = (K, Value)>) -> Node {
        let values: Map<String, Value> = values.into_iter().map(|(k, v)| (k.into(), v)).collect();
        let affected: Vec<String> = values.keys().cloned().collect();
        let name = format!("set_{}", affected.first().map_or("state", |k| k.as_str()));
        transform(name, Semantics::Merge, &affected, &[], move |_| values.clone())
    }

    /// Writes each value whose key is absent (or `null`).
    pub fn default<K: Into<String>>(values: impl IntoIterator<Item = (K, Value)>) -> Node {
        let values: Map<String, Value> = values.into_iter().map(|(k, v)| (k.into(), v)).collect();
        let affected: Vec<String> = values.keys().cloned().collect();
        let name = format!("default_{}", affected.first().map_or("state", |k| k.as_str()));
        transform(name, Semantics::Merge, &affected, &[], move |state| {
            values
                .iter()
                .filter(|(k, _)| state.get(*k).is_none_or(Value::is_null))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
    }

    /// Writes the values of `keys` into `into`: their texts joined by a new line when every one is
    /// a string, else an object of them (absent keys are left out).
    pub fn merge<K: Into<String>>(keys_: impl IntoIterator<Item = K>, into: impl Into<String>) -> Node {
        let (sources, into) = (keys(keys_), into.into());
        let name = format!("merge_{into}");
        let (reads, affected) = (sources.clone(), [into.clone()]);
        transform(name, Semantics::Merge, &affected, &reads, move |state| {
            let present: Vec<(&String, &Value)> = sources.iter().filter_map(|k| state.get(k).map(|v| (k, v))).collect();
            let merged = if present.iter().all(|(_, v)| v.is_string()) {
                Value::String(present.iter().filter_map(|(_, v)| v.as_str()).collect::<Vec<_>>().join("\n"))
            } else {
                Value::Object(present.into_iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            };
            Map::from_iter([(into.clone(), merged)])
        })
    }

    /// Keeps `keys` among the session-scoped keys: every other one becomes `null`.
    pub fn pick<K: Into<String>>(keys_: impl IntoIterator<Item = K>) -> Node {
        let kept = keys(keys_);
        let name = format!("pick_{}", kept.first().map_or("none", |k| k.as_str()));
        let wanted = kept.clone();
        transform(name, Semantics::ReplaceSession, &kept, &[], move |state| {
            wanted.iter().filter_map(|k| state.get(k).map(|v| (k.clone(), v.clone()))).collect()
        })
    }

    /// Sets the session-scoped `keys` to `null`.
    pub fn drop<K: Into<String>>(keys_: impl IntoIterator<Item = K>) -> Node {
        let dropped = keys(keys_);
        let name = format!("drop_{}", dropped.first().map_or("none", |k| k.as_str()));
        transform(name, Semantics::DeleteKeys, &dropped, &[], |_| Map::new())
    }

    /// Moves each `old` key's value to `new`; a session-scoped `old` becomes `null`.
    pub fn rename<K: Into<String>, N: Into<String>>(pairs: impl IntoIterator<Item = (K, N)>) -> Node {
        let pairs: Vec<(String, String)> = pairs.into_iter().map(|(k, n)| (k.into(), n.into())).collect();
        let name = format!("rename_{}", pairs.first().map_or("none", |(k, _)| k.as_str()));
        let news: Vec<String> = pairs.iter().map(|(_, n)| n.clone()).collect();
        let olds: Vec<String> = pairs.iter().map(|(o, _)| o.clone()).collect();
        let mut node = transform(name, Semantics::Merge, &news, &olds, move |state| {
            // Every old key is cleared first and every new value read from the state before the
            // transform, so chained renames and swaps keep each value (`a -> b, b -> a` swaps).
            let mut out = Map::new();
            for (old, _) in &pairs {
                if state.contains_key(old) && is_session_scoped(old) {
                    out.insert(old.clone(), Value::Null);
                }
            }
            for (old, new) in &pairs {
                if let Some(value) = state.get(old) {
                    out.insert(new.clone(), value.clone());
                }
            }
            out
        });
        if let Node::Transform(t) = &mut node {
            t.removes = olds.iter().filter(|k| is_session_scoped(k) && !news.contains(k)).cloned().collect();
        }
        node
    }

    /// A transform of your own named `name`: the keys `function` returns are written.
    pub fn compute(
        name: impl Into<String>,
        function: impl Fn(&Map<String, Value>) -> Map<String, Value> + Send + Sync + 'static,
    ) -> Node {
        let name = name.into();
        let mut node = transform(name.clone(), Semantics::Merge, &[], &[], function);
        if let Node::Transform(t) = &mut node {
            // A name the user chose is theirs: `build()` checks it as it stands.
            t.name = name;
            t.generated_name = false;
        }
        node
    }
}

/// A route on state `key`, named `name`: the first rule whose test passes picks the child.
///
/// ```
/// use serde_json::json;
/// use sinew_fluent::{Agent, Route};
///
/// let route = Route::new("by_intent", "intent")
///     .when_eq(json!("billing"), Agent::named("billing"))
///     .otherwise(Agent::named("general"));
/// assert_eq!(route.build().unwrap().children().len(), 2);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Route {
    node: RouteNode,
}

impl Route {
    /// A route on `key` without rules.
    pub fn new(name: impl Into<String>, key: impl Into<String>) -> Self {
        Route { node: RouteNode { name: name.into(), key: key.into(), rules: Vec::new(), default: None } }
    }

    /// Runs `node` when the value equals `value`.
    pub fn when_eq(mut self, value: Value, node: impl Into<Node>) -> Self {
        let label = format!("== {value}");
        self.node.rules.push(RouteRule { label, test: Arc::new(move |v| *v == value), node: node.into() });
        self
    }

    /// Runs `node` when `test` passes; `label` says what it tests.
    pub fn when(
        mut self,
        label: impl Into<String>,
        test: impl Fn(&Value) -> bool + Send + Sync + 'static,
        node: impl Into<Node>,
    ) -> Self {
        self.node.rules.push(RouteRule { label: label.into(), test: Arc::new(test), node: node.into() });
        self
    }

    /// Runs `node` when no rule passes.
    pub fn otherwise(mut self, node: impl Into<Node>) -> Self {
        self.node.default = Some(Box::new(node.into()));
        self
    }

    /// The IR, once every name is checked.
    pub fn build(self) -> crate::Result<Node> {
        crate::builder::finish(self.into())
    }
}

impl From<Route> for Node {
    fn from(route: Route) -> Node {
        Node::Route(route.node)
    }
}

/// `children` in order until one succeeds; the last one's error when all fail.
pub fn fallback<N: Into<Node>>(name: impl Into<String>, children: impl IntoIterator<Item = N>) -> Node {
    Node::Fallback(GroupNode {
        name: name.into(),
        children: children.into_iter().map(Into::into).collect(),
        generated_name: false,
    })
}

/// `children` at once: the first to finish wins, the others are cancelled.
pub fn race<N: Into<Node>>(name: impl Into<String>, children: impl IntoIterator<Item = N>) -> Node {
    Node::Race(GroupNode {
        name: name.into(),
        children: children.into_iter().map(Into::into).collect(),
        generated_name: false,
    })
}

/// A gate named `name`: when `predicate` holds on the state, the invocation stops with `message`
/// for the user, and the user's next message answers it: `yes`, `y`, `ok`, `approve(d)`,
/// `confirm(ed)`, `proceed` or `go ahead` (any case, trailing punctuation aside) lets the pipeline
/// through; anything else stops it with "Not approved.". See [`gate_approving`] for another rule.
/// The answer resumes the pipeline at the gate: the sequences and loops holding it start at the
/// child holding it, so the steps before it do not run again.
pub fn gate(
    name: impl Into<String>,
    predicate: impl Fn(&Map<String, Value>) -> bool + Send + Sync + 'static,
    message: impl Into<String>,
) -> Node {
    gate_approving(name, predicate, message, is_affirmative)
}

/// A [`gate`] whose answer approves when `approves` says so.
pub fn gate_approving(
    name: impl Into<String>,
    predicate: impl Fn(&Map<String, Value>) -> bool + Send + Sync + 'static,
    message: impl Into<String>,
    approves: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> Node {
    Node::Gate(GateNode {
        name: name.into(),
        predicate: Arc::new(predicate),
        message: message.into(),
        approves: Arc::new(approves),
    })
}

/// Whether `reply` is a plain yes.
fn is_affirmative(reply: &str) -> bool {
    let reply = reply.trim().trim_end_matches(['.', '!']).to_ascii_lowercase();
    ["yes", "y", "ok", "okay", "approve", "approved", "confirm", "confirmed", "proceed", "go ahead"]
        .contains(&reply.as_str())
}

/// A read-only look at the state.
pub fn tap(function: impl Fn(&Map<String, Value>) + Send + Sync + 'static) -> Node {
    Node::Tap(TapNode { name: "tap".into(), function: Arc::new(function), generated_name: true })
}

/// Runs `body` once per item of the list in state `list_key` (see [`MapOver`]).
pub fn map_over(name: impl Into<String>, list_key: impl Into<String>, body: impl Into<Node>) -> MapOver {
    let body = body.into();
    let writes = body.writes_keys();
    let result_key = if writes.len() == 1 { writes.into_iter().next().unwrap_or_default() } else { "result".into() };
    MapOver {
        node: MapOverNode {
            name: name.into(),
            list_key: list_key.into(),
            body: Box::new(body),
            item_key: "_item".into(),
            result_key,
            output_key: "results".into(),
        },
    }
}

/// A body run once per item of a state list: each item goes to `item_key` (`_item`), the value
/// the body leaves in `result_key` (the one key the body writes, else `result`) is collected, in
/// order, into `output_key` (`results`).
#[derive(Clone, Debug)]
#[must_use]
pub struct MapOver {
    node: MapOverNode,
}

impl MapOver {
    /// Where each item is written.
    pub fn item_key(mut self, key: impl Into<String>) -> Self {
        self.node.item_key = key.into();
        self
    }

    /// Where the body leaves its result.
    pub fn result_key(mut self, key: impl Into<String>) -> Self {
        self.node.result_key = key.into();
        self
    }

    /// Where the results are collected.
    pub fn output_key(mut self, key: impl Into<String>) -> Self {
        self.node.output_key = key.into();
        self
    }

    /// The IR, once every name is checked.
    pub fn build(self) -> crate::Result<Node> {
        crate::builder::finish(self.into())
    }
}

impl From<MapOver> for Node {
    fn from(map: MapOver) -> Node {
        Node::MapOver(map.node)
    }
}

/// `body`, cancelled after `duration`.
pub fn timeout(name: impl Into<String>, body: impl Into<Node>, duration: Duration) -> Node {
    Node::Timeout(TimeoutNode { name: name.into(), body: Box::new(body.into()), duration })
}

/// Hands the conversation to the agent named `target`.
pub fn transfer(name: impl Into<String>, target: impl Into<String>) -> Node {
    Node::Transfer(TransferNode { name: name.into(), target: target.into(), condition: None })
}

/// Hands the conversation to the agent named `target` when `condition` holds on the state.
pub fn transfer_if(
    name: impl Into<String>,
    target: impl Into<String>,
    condition: impl Fn(&Map<String, Value>) -> bool + Send + Sync + 'static,
) -> Node {
    let condition: StatePredicate = Arc::new(condition);
    Node::Transfer(TransferNode { name: name.into(), target: target.into(), condition: Some(condition) })
}

impl crate::builder::Agent {
    /// `self`, and `other` when `self` fails (ADK has no operator for it; adk-fluent's `//`).
    pub fn or_else(self, other: impl Into<Node>) -> Node {
        Node::Fallback(GroupNode {
            name: String::new(),
            children: vec![self.into(), other.into()],
            generated_name: true,
        })
    }
}

/// How long a timed-out body had (for its note).
pub(crate) fn seconds(duration: Duration) -> String {
    let s = duration.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0}") } else { format!("{s}") }
}
