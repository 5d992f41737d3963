//! The intermediate representation: what a builder's `build()` returns and every backend reads.
//! Nothing in it runs; it is a tree of nodes.
//!
//! The four ADK agent classes carry their configuration as the structs generated from adk-python's
//! own models ([`LlmAgentConfig`], [`SequentialAgentConfig`], [`ParallelAgentConfig`],
//! [`LoopAgentConfig`]); what ADK holds as code (the model object, tools, callbacks, sub-agents)
//! sits beside it. The other nodes are sinew-fluent's own (spec 003 §3.2).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use sinew_adk::callbacks::{
    AfterAgentCallback, AfterModelCallback, AfterToolCallback, BeforeAgentCallback, BeforeModelCallback,
    BeforeToolCallback, OnModelErrorCallback, OnToolErrorCallback,
};
use sinew_adk::{Llm, Tool};

use crate::config::{LlmAgentConfig, LoopAgentConfig, ParallelAgentConfig, SequentialAgentConfig};

/// A node of the IR.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Node {
    /// A model-backed agent (ADK's `LlmAgent`).
    Agent(Box<AgentNode>),
    /// Children in order (ADK's `SequentialAgent`).
    Sequence(SequenceNode),
    /// Children at once, each on its own branch (ADK's `ParallelAgent`).
    Parallel(ParallelNode),
    /// Children in order, again and again (ADK's `LoopAgent`).
    Loop(LoopNode),
    /// A function of the state, written back with scope-aware semantics.
    Transform(TransformNode),
    /// One child chosen by a state value.
    Route(RouteNode),
    /// Children in order until one succeeds.
    Fallback(GroupNode),
    /// Children at once; the first to finish wins and the others are cancelled.
    Race(GroupNode),
    /// A pause for a human's approval when a predicate on the state holds.
    Gate(GateNode),
    /// A read-only look at the state.
    Tap(TapNode),
    /// A body run once per item of a state list, results collected in order.
    MapOver(MapOverNode),
    /// A body cancelled after a time.
    Timeout(TimeoutNode),
    /// A hard hand-over to another agent of the tree.
    Transfer(TransferNode),
    /// An agent written directly against sinew-adk, passed through unchanged.
    Custom(CustomAgent),
}

/// An agent written directly against sinew-adk.
#[derive(Clone)]
pub struct CustomAgent(pub Arc<dyn sinew_adk::Agent>);

impl std::fmt::Debug for CustomAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CustomAgent").field(&self.0.name()).finish()
    }
}

/// What a callback list of an [`AgentNode`] holds.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Callbacks {
    /// Before the agent runs.
    pub before_agent: Vec<Arc<dyn BeforeAgentCallback>>,
    /// After the agent ran.
    pub after_agent: Vec<Arc<dyn AfterAgentCallback>>,
    /// Before each model call.
    pub before_model: Vec<Arc<dyn BeforeModelCallback>>,
    /// After each model response.
    pub after_model: Vec<Arc<dyn AfterModelCallback>>,
    /// When a model call fails.
    pub on_model_error: Vec<Arc<dyn OnModelErrorCallback>>,
    /// Before each tool call.
    pub before_tool: Vec<Arc<dyn BeforeToolCallback>>,
    /// After each tool call.
    pub after_tool: Vec<Arc<dyn AfterToolCallback>>,
    /// When a tool call fails.
    pub on_tool_error: Vec<Arc<dyn OnToolErrorCallback>>,
}

impl std::fmt::Debug for Callbacks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callbacks")
            .field("before_agent", &self.before_agent.len())
            .field("after_agent", &self.after_agent.len())
            .field("before_model", &self.before_model.len())
            .field("after_model", &self.after_model.len())
            .field("on_model_error", &self.on_model_error.len())
            .field("before_tool", &self.before_tool.len())
            .field("after_tool", &self.after_tool.len())
            .field("on_tool_error", &self.on_tool_error.len())
            .finish()
    }
}

/// A typed contract of an agent: a serde type's JSON schema and its top-level fields, the state
/// keys it stands for (spec 003 §7).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Contract {
    /// The Rust type's name.
    pub type_name: String,
    /// Its JSON schema.
    pub schema: Value,
    /// Its top-level fields, in schema order.
    pub fields: Vec<String>,
}

impl Contract {
    /// The contract of `T`.
    pub fn of<T: schemars::JsonSchema>() -> Self {
        let schema = schemars::schema_for!(T).to_value();
        let fields = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        let type_name = std::any::type_name::<T>().rsplit("::").next().unwrap_or_default().to_owned();
        Contract { type_name, schema, fields }
    }
}

/// A model-backed agent: ADK's configuration fields, and what ADK holds as code.
#[derive(Clone)]
#[non_exhaustive]
pub struct AgentNode {
    /// The fields adk-python's `LlmAgentConfig` has (name, instruction, output key ...).
    pub config: LlmAgentConfig,
    /// The model object; without it the backend resolves `config.model` by name, and without a
    /// name the agent inherits its ancestor's model.
    pub model: Option<Arc<dyn Llm>>,
    /// The tools, passed to the agent unchanged.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Tools taking a resource, made by the backend when it compiles.
    pub resource_tools: Vec<Arc<dyn crate::resources::BindTool>>,
    /// The agents this one may hand the conversation to (ADK's `sub_agents`).
    pub delegates: Vec<Node>,
    /// The callbacks.
    pub callbacks: Callbacks,
    /// The JSON schema of the agent's answer (ADK's `output_schema`).
    pub output_schema: Option<Value>,
    /// What the agent promises to write (its fields become state keys).
    pub produces: Option<Contract>,
    /// What the agent needs to have been written before it runs.
    pub consumes: Option<Contract>,
}

impl std::fmt::Debug for AgentNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentNode")
            .field("config", &self.config)
            .field("model", &self.model.as_ref().map(|m| m.name().to_owned()))
            .field("tools", &self.tools.iter().map(|t| t.name().to_owned()).collect::<Vec<_>>())
            .field("resource_tools", &self.resource_tools.iter().map(|t| t.name().to_owned()).collect::<Vec<_>>())
            .field("delegates", &self.delegates)
            .field("callbacks", &self.callbacks)
            .field("produces", &self.produces.as_ref().map(|c| &c.type_name))
            .field("consumes", &self.consumes.as_ref().map(|c| &c.type_name))
            .finish_non_exhaustive()
    }
}

impl AgentNode {
    /// The state keys the agent reads: its instruction's `{key}` templates (optional `{key?}`
    /// ones are not required) and its consumed contract's fields.
    pub fn reads_keys(&self) -> BTreeSet<String> {
        let mut keys = template_keys(&self.config.instruction);
        if let Some(contract) = &self.consumes {
            keys.extend(contract.fields.iter().cloned());
        }
        keys
    }

    /// The state keys the agent writes: its output key and its produced contract's fields.
    pub fn writes_keys(&self) -> BTreeSet<String> {
        let mut keys: BTreeSet<String> = self.config.output_key.iter().cloned().collect();
        if let Some(contract) = &self.produces {
            keys.extend(contract.fields.iter().cloned());
        }
        keys
    }
}

/// The state keys an instruction template requires: its placeholders that name a state key, as
/// ADK's `inject_session_state` reads them, but not the optional ones (`{key?}`).
pub fn template_keys(template: &str) -> BTreeSet<String> {
    sinew_adk::template_state_keys(template).into_iter().filter(|(_, optional)| !optional).map(|(k, _)| k).collect()
}

/// Children in order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SequenceNode {
    /// adk-python's `SequentialAgentConfig` fields.
    pub config: SequentialAgentConfig,
    /// The children.
    pub children: Vec<Node>,
    /// Whether the name was made up by an operator (a `build()` makes it unique).
    pub generated_name: bool,
}

/// Children at once.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ParallelNode {
    /// adk-python's `ParallelAgentConfig` fields.
    pub config: ParallelAgentConfig,
    /// The children.
    pub children: Vec<Node>,
    /// Whether the name was made up by an operator.
    pub generated_name: bool,
}

/// Children in order, again and again, until one escalates or `max_iterations` rounds ran.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LoopNode {
    /// adk-python's `LoopAgentConfig` fields.
    pub config: LoopAgentConfig,
    /// The children.
    pub children: Vec<Node>,
    /// Whether the name was made up by an operator.
    pub generated_name: bool,
}

/// How a transform's result is written (spec 003 §6.2). ADK state has no delete: a removed key is
/// written as `null`, and only session-scoped keys (no `app:`, `user:`, `temp:` prefix) are removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Semantics {
    /// The result's keys are written; nothing else changes.
    Merge,
    /// The result's keys are written; every other session-scoped key becomes `null`.
    ReplaceSession,
    /// The affected keys (session-scoped ones) become `null`.
    DeleteKeys,
}

/// A function of the state, as a transform runs it.
pub type StateFn = Arc<dyn Fn(&Map<String, Value>) -> Map<String, Value> + Send + Sync>;

/// A read-only function of the state.
pub type StateObserver = Arc<dyn Fn(&Map<String, Value>) + Send + Sync>;

/// A predicate on the state.
pub type StatePredicate = Arc<dyn Fn(&Map<String, Value>) -> bool + Send + Sync>;

/// A state transform.
#[derive(Clone)]
#[non_exhaustive]
pub struct TransformNode {
    /// Its name.
    pub name: String,
    /// The function: the state in, the keys to write out.
    pub function: StateFn,
    /// How the result is written.
    pub semantics: Semantics,
    /// The keys it removes (for [`Semantics::DeleteKeys`]) or writes, when known.
    pub affected_keys: BTreeSet<String>,
    /// The keys it reads, when known.
    pub reads: BTreeSet<String>,
    /// The keys it removes (writes as `null`), when known.
    pub removes: BTreeSet<String>,
    /// Whether the name was made up (a `build()` makes it unique).
    pub generated_name: bool,
}

impl std::fmt::Debug for TransformNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransformNode")
            .field("name", &self.name)
            .field("semantics", &self.semantics)
            .field("affected_keys", &self.affected_keys)
            .finish_non_exhaustive()
    }
}

/// A rule of a route: a test of the routed value, and the child it picks.
#[derive(Clone)]
pub struct RouteRule {
    /// What the rule says, for pictures (`== "billing"`).
    pub label: String,
    /// The test.
    pub test: Arc<dyn Fn(&Value) -> bool + Send + Sync>,
    /// The child run when the test passes.
    pub node: Node,
}

impl std::fmt::Debug for RouteRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RouteRule").field("label", &self.label).field("node", &self.node).finish_non_exhaustive()
    }
}

/// One child chosen by the value of a state key: the first rule that passes, else the default.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RouteNode {
    /// Its name.
    pub name: String,
    /// The state key routed on.
    pub key: String,
    /// The rules, in order.
    pub rules: Vec<RouteRule>,
    /// The child when no rule passes; without one, nothing runs.
    pub default: Option<Box<Node>>,
}

/// A named group of children (fallback, race).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct GroupNode {
    /// Its name.
    pub name: String,
    /// The children.
    pub children: Vec<Node>,
    /// Whether the name was made up (a `build()` makes it unique).
    pub generated_name: bool,
}

/// A gate: when the predicate holds, the invocation stops with `message`; the user's next message
/// is the answer: one that `approves` lets the pipeline through, any other stops it.
#[derive(Clone)]
#[non_exhaustive]
pub struct GateNode {
    /// Its name.
    pub name: String,
    /// When approval is needed.
    pub predicate: StatePredicate,
    /// What the user is asked.
    pub message: String,
    /// Whether the user's answer (its text) approves.
    pub approves: Arc<dyn Fn(&str) -> bool + Send + Sync>,
}

impl std::fmt::Debug for GateNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateNode").field("name", &self.name).field("message", &self.message).finish_non_exhaustive()
    }
}

/// A read-only look at the state (logging, metrics).
#[derive(Clone)]
#[non_exhaustive]
pub struct TapNode {
    /// Its name.
    pub name: String,
    /// The function.
    pub function: StateObserver,
    /// Whether the name was made up (a `build()` makes it unique).
    pub generated_name: bool,
}

impl std::fmt::Debug for TapNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapNode").field("name", &self.name).finish_non_exhaustive()
    }
}

/// A body run once per item of the list in state `list_key`: each item is written to
/// `item_key`, and the value the body leaves in `result_key` is collected, in order, into
/// `output_key`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct MapOverNode {
    /// Its name.
    pub name: String,
    /// The list's state key.
    pub list_key: String,
    /// The body.
    pub body: Box<Node>,
    /// Where each item is written for the body.
    pub item_key: String,
    /// Where the body leaves its result.
    pub result_key: String,
    /// Where the results are collected.
    pub output_key: String,
}

/// A body cancelled after `duration`; what it stored stays, and a note says it timed out.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TimeoutNode {
    /// Its name.
    pub name: String,
    /// The body.
    pub body: Box<Node>,
    /// How long it may run.
    pub duration: Duration,
}

/// A hand-over to the agent named `target` (ADK's `transfer_to_agent`), when the condition holds
/// (always without one).
#[derive(Clone)]
#[non_exhaustive]
pub struct TransferNode {
    /// Its name.
    pub name: String,
    /// The agent taking over.
    pub target: String,
    /// When to hand over.
    pub condition: Option<StatePredicate>,
}

impl std::fmt::Debug for TransferNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TransferNode").field("name", &self.name).field("target", &self.target).finish_non_exhaustive()
    }
}

impl Node {
    /// The node's name (unique in a built tree).
    pub fn name(&self) -> &str {
        match self {
            Node::Agent(n) => &n.config.name,
            Node::Sequence(n) => &n.config.name,
            Node::Parallel(n) => &n.config.name,
            Node::Loop(n) => &n.config.name,
            Node::Transform(n) => &n.name,
            Node::Route(n) => &n.name,
            Node::Fallback(n) | Node::Race(n) => &n.name,
            Node::Gate(n) => &n.name,
            Node::Tap(n) => &n.name,
            Node::MapOver(n) => &n.name,
            Node::Timeout(n) => &n.name,
            Node::Transfer(n) => &n.name,
            Node::Custom(agent) => agent.0.name(),
        }
    }

    /// What kind of node it is, for messages and pictures.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Agent(_) => "agent",
            Node::Sequence(_) => "sequence",
            Node::Parallel(_) => "parallel",
            Node::Loop(_) => "loop",
            Node::Transform(_) => "transform",
            Node::Route(_) => "route",
            Node::Fallback(_) => "fallback",
            Node::Race(_) => "race",
            Node::Gate(_) => "gate",
            Node::Tap(_) => "tap",
            Node::MapOver(_) => "map_over",
            Node::Timeout(_) => "timeout",
            Node::Transfer(_) => "transfer",
            Node::Custom(_) => "custom",
        }
    }

    /// The node's children, in order (an agent's delegates, a route's rules then its default).
    pub fn children(&self) -> Vec<&Node> {
        match self {
            Node::Agent(n) => n.delegates.iter().collect(),
            Node::Sequence(n) => n.children.iter().collect(),
            Node::Parallel(n) => n.children.iter().collect(),
            Node::Loop(n) => n.children.iter().collect(),
            Node::Fallback(n) | Node::Race(n) => n.children.iter().collect(),
            Node::Route(n) => n.rules.iter().map(|r| &r.node).chain(n.default.as_deref()).collect(),
            Node::MapOver(n) => vec![&n.body],
            Node::Timeout(n) => vec![&n.body],
            Node::Transform(_) | Node::Gate(_) | Node::Tap(_) | Node::Transfer(_) | Node::Custom(_) => Vec::new(),
        }
    }

    pub(crate) fn children_mut(&mut self) -> Vec<&mut Node> {
        match self {
            Node::Agent(n) => n.delegates.iter_mut().collect(),
            Node::Sequence(n) => n.children.iter_mut().collect(),
            Node::Parallel(n) => n.children.iter_mut().collect(),
            Node::Loop(n) => n.children.iter_mut().collect(),
            Node::Fallback(n) | Node::Race(n) => n.children.iter_mut().collect(),
            Node::Route(n) => n.rules.iter_mut().map(|r| &mut r.node).chain(n.default.as_deref_mut()).collect(),
            Node::MapOver(n) => vec![&mut n.body],
            Node::Timeout(n) => vec![&mut n.body],
            Node::Transform(_) | Node::Gate(_) | Node::Tap(_) | Node::Transfer(_) | Node::Custom(_) => Vec::new(),
        }
    }

    /// The state keys this node itself reads (not its children's).
    pub fn own_reads(&self) -> BTreeSet<String> {
        match self {
            Node::Agent(n) => n.reads_keys(),
            Node::Transform(n) => n.reads.clone(),
            Node::Route(n) => BTreeSet::from([n.key.clone()]),
            Node::MapOver(n) => BTreeSet::from([n.list_key.clone()]),
            _ => BTreeSet::new(),
        }
    }

    /// The state keys this node itself writes (not its children's).
    pub fn own_writes(&self) -> BTreeSet<String> {
        match self {
            Node::Agent(n) => n.writes_keys(),
            Node::Transform(n) if n.semantics == Semantics::Merge => n.affected_keys.clone(),
            // The item key is written only when the list has items; the results always.
            Node::MapOver(n) => BTreeSet::from([n.output_key.clone()]),
            _ => BTreeSet::new(),
        }
    }

    /// Every key this node and its subtree write.
    pub fn writes_keys(&self) -> BTreeSet<String> {
        let mut keys = self.own_writes();
        for child in self.children() {
            keys.extend(child.writes_keys());
        }
        keys
    }

    /// The keys this subtree reads before writing them itself: what must come from earlier
    /// steps (a sequence's later children may read what its earlier ones wrote).
    pub fn reads_keys(&self) -> BTreeSet<String> {
        let mut reads = self.own_reads();
        let mut written = self.own_writes();
        if let Node::Sequence(_) | Node::Loop(_) = self {
            for child in self.children() {
                reads.extend(child.reads_keys().into_iter().filter(|k| !written.contains(k)));
                written.extend(child.writes_keys());
            }
        } else if let Node::MapOver(n) = self {
            reads.extend(n.body.reads_keys().into_iter().filter(|k| *k != n.item_key));
        } else {
            for child in self.children() {
                reads.extend(child.reads_keys());
            }
        }
        reads
    }

    /// Every node of the tree, this one first, depth first.
    pub fn walk(&self) -> Vec<&Node> {
        fn visit<'a>(node: &'a Node, out: &mut Vec<&'a Node>) {
            out.push(node);
            for child in node.children() {
                visit(child, out);
            }
        }
        let mut out = Vec::new();
        visit(self, &mut out);
        out
    }
}
