//! The builders: [`Agent`], [`Pipeline`], [`FanOut`], [`Loop`], and the operators that combine
//! them (`>>` a sequence, `|` a fan-out, `* n` a loop). Each builder consumes `self`; `build()`
//! gives the IR. The setters of ADK's plain configuration fields are generated from adk-python's
//! models (`generated.rs`); the setters below take what ADK holds as code.

use std::collections::HashSet;
use std::ops::{BitOr, Mul, Shr};
use std::sync::Arc;

use serde_json::Value;
use sinew_adk::callbacks::{
    AfterAgentCallback, AfterModelCallback, AfterToolCallback, BeforeAgentCallback, BeforeModelCallback,
    BeforeToolCallback, OnModelErrorCallback, OnToolErrorCallback,
};
use sinew_adk::{AgentNames, Llm, Tool, check_agent_name};

use crate::config::{LlmAgentConfig, LoopAgentConfig, ParallelAgentConfig, SequentialAgentConfig};
use crate::error::{Error, Result};
use crate::ir::{AgentNode, Callbacks, Contract, LoopNode, Node, ParallelNode, SequenceNode};

/// What names an agent's model: a model name the backend resolves (`"gemini-2.5-flash"`,
/// `"anthropic/claude-sonnet-4-5"`), or a model object.
pub trait IntoModel {
    /// The model's name, and the object when there is one.
    fn into_model(self) -> (String, Option<Arc<dyn Llm>>);
}

impl IntoModel for &str {
    fn into_model(self) -> (String, Option<Arc<dyn Llm>>) {
        (self.to_owned(), None)
    }
}

impl IntoModel for String {
    fn into_model(self) -> (String, Option<Arc<dyn Llm>>) {
        (self, None)
    }
}

impl IntoModel for Arc<dyn Llm> {
    fn into_model(self) -> (String, Option<Arc<dyn Llm>>) {
        (self.name().to_owned(), Some(self))
    }
}

impl<L: Llm + 'static> IntoModel for Arc<L> {
    fn into_model(self) -> (String, Option<Arc<dyn Llm>>) {
        (self.name().to_owned(), Some(self))
    }
}

/// A model-backed agent (ADK's `LlmAgent`).
///
/// ```
/// use sinew_fluent::Agent;
///
/// let node = Agent::new("classifier", "gemini-2.5-flash")
///     .instruct("Classify the intent of: {user_query}")
///     .outputs("intent")
///     .build()
///     .unwrap();
/// assert_eq!(node.reads_keys().into_iter().collect::<Vec<_>>(), ["user_query"]);
/// assert_eq!(node.writes_keys().into_iter().collect::<Vec<_>>(), ["intent"]);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Agent {
    pub(crate) node: AgentNode,
}

impl Agent {
    /// An agent named `name` answering with `model`.
    pub fn new(name: impl Into<String>, model: impl IntoModel) -> Self {
        let (model_name, model) = model.into_model();
        let mut agent = Agent::named(name);
        agent.node.config.model = Some(model_name);
        agent.node.model = model;
        agent
    }

    /// An agent named `name` with no model of its own: it uses its ancestor's.
    pub fn named(name: impl Into<String>) -> Self {
        Agent {
            node: AgentNode {
                config: LlmAgentConfig::new(name),
                model: None,
                tools: Vec::new(),
                resource_tools: Vec::new(),
                delegates: Vec::new(),
                callbacks: Callbacks::default(),
                output_schema: None,
                produces: None,
                consumes: None,
            },
        }
    }

    /// The agent around an ADK configuration (read from YAML, say).
    pub fn from_config(config: LlmAgentConfig) -> Self {
        let mut agent = Agent::named(String::new());
        agent.node.config = config;
        agent
    }

    /// The instruction (ADK's `instruction`; `{key}` templates read state).
    pub fn instruct(self, instruction: impl Into<String>) -> Self {
        self.instruction(instruction)
    }

    /// Stores the answer in state `key` (ADK's `output_key`).
    pub fn outputs(self, key: impl Into<String>) -> Self {
        self.output_key(key)
    }

    /// The model, by name (a backend's registry resolves it); a model object given before is
    /// dropped.
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.node.config.model = Some(name.into());
        self.node.model = None;
        self
    }

    /// The model object (its name replaces the configured one).
    pub fn llm(mut self, model: Arc<dyn Llm>) -> Self {
        self.node.config.model = Some(model.name().to_owned());
        self.node.model = Some(model);
        self
    }

    /// Adds a tool, passed to the agent unchanged.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.node.tools.push(tool);
        self
    }

    /// Adds a tool taking a resource of the backend's (see [`crate::resources`]).
    pub fn resource_tool<R: Send + Sync + 'static>(mut self, tool: crate::resources::ResourceTool<R>) -> Self {
        self.node.resource_tools.push(Arc::new(tool));
        self
    }

    /// Adds tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.node.tools.extend(tools);
        self
    }

    /// Adds agents this one may hand the conversation to (ADK's `sub_agents`).
    pub fn delegate<N: Into<Node>>(mut self, agents: impl IntoIterator<Item = N>) -> Self {
        self.node.delegates.extend(agents.into_iter().map(Into::into));
        self
    }

    /// The JSON schema the answer must follow (ADK's `output_schema`).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.node.output_schema = Some(schema);
        self
    }

    /// The agent answers with a `T`, whose fields it writes to state (spec 003 §7): its schema is
    /// the output schema.
    pub fn produces<T: schemars::JsonSchema>(mut self) -> Self {
        let contract = Contract::of::<T>();
        self.node.output_schema = Some(contract.schema.clone());
        self.node.produces = Some(contract);
        self
    }

    /// The agent needs the fields of a `T` in state before it runs.
    pub fn consumes<T: schemars::JsonSchema>(mut self) -> Self {
        self.node.consumes = Some(Contract::of::<T>());
        self
    }

    /// Adds a before-agent callback (content answers for the agent, which then does not run).
    pub fn before_agent(mut self, callback: impl BeforeAgentCallback + 'static) -> Self {
        self.node.callbacks.before_agent.push(Arc::new(callback));
        self
    }

    /// Adds an after-agent callback.
    pub fn after_agent(mut self, callback: impl AfterAgentCallback + 'static) -> Self {
        self.node.callbacks.after_agent.push(Arc::new(callback));
        self
    }

    /// Adds a before-model callback (a response stands in for the call).
    pub fn before_model(mut self, callback: impl BeforeModelCallback + 'static) -> Self {
        self.node.callbacks.before_model.push(Arc::new(callback));
        self
    }

    /// Adds an after-model callback (a response replaces the model's).
    pub fn after_model(mut self, callback: impl AfterModelCallback + 'static) -> Self {
        self.node.callbacks.after_model.push(Arc::new(callback));
        self
    }

    /// Adds a model-error callback (a response stands in for the failure).
    pub fn on_model_error(mut self, callback: impl OnModelErrorCallback + 'static) -> Self {
        self.node.callbacks.on_model_error.push(Arc::new(callback));
        self
    }

    /// Adds a before-tool callback (a response stands in for the call).
    pub fn before_tool(mut self, callback: impl BeforeToolCallback + 'static) -> Self {
        self.node.callbacks.before_tool.push(Arc::new(callback));
        self
    }

    /// Adds an after-tool callback (a response replaces the tool's).
    pub fn after_tool(mut self, callback: impl AfterToolCallback + 'static) -> Self {
        self.node.callbacks.after_tool.push(Arc::new(callback));
        self
    }

    /// Adds a tool-error callback (a response stands in for the failure).
    pub fn on_tool_error(mut self, callback: impl OnToolErrorCallback + 'static) -> Self {
        self.node.callbacks.on_tool_error.push(Arc::new(callback));
        self
    }

    /// The IR, once every name is checked.
    pub fn build(self) -> Result<Node> {
        finish(self.into())
    }
}

/// Children in order (ADK's `SequentialAgent`); `a >> b` makes one.
#[derive(Clone, Debug)]
#[must_use]
pub struct Pipeline {
    pub(crate) node: SequenceNode,
}

/// Children at once, each on its own branch (ADK's `ParallelAgent`); `a | b` makes one.
#[derive(Clone, Debug)]
#[must_use]
pub struct FanOut {
    pub(crate) node: ParallelNode,
}

/// Children in order, again and again (ADK's `LoopAgent`); `a * 3` makes one.
#[derive(Clone, Debug)]
#[must_use]
pub struct Loop {
    pub(crate) node: LoopNode,
}

impl Pipeline {
    /// An empty pipeline named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Pipeline {
            node: SequenceNode {
                config: SequentialAgentConfig::new(name),
                children: Vec::new(),
                generated_name: false,
            },
        }
    }

    /// Adds a step.
    pub fn step(mut self, node: impl Into<Node>) -> Self {
        self.node.children.push(node.into());
        self
    }

    /// `lhs >> rhs`: pipelines made by operators are flattened, named ones are kept whole.
    fn join(lhs: Node, rhs: Node) -> Self {
        let mut pipeline = match lhs {
            Node::Sequence(node) if node.generated_name => Pipeline { node },
            other => Pipeline {
                node: SequenceNode {
                    config: SequentialAgentConfig::new(String::new()),
                    children: vec![other],
                    generated_name: true,
                },
            },
        };
        match rhs {
            Node::Sequence(node) if node.generated_name => pipeline.node.children.extend(node.children),
            other => pipeline.node.children.push(other),
        }
        pipeline
    }

    /// The IR, once every name is checked.
    pub fn build(self) -> Result<Node> {
        finish(self.into())
    }
}

impl FanOut {
    /// An empty fan-out named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        FanOut {
            node: ParallelNode { config: ParallelAgentConfig::new(name), children: Vec::new(), generated_name: false },
        }
    }

    /// Adds a branch.
    pub fn branch(mut self, node: impl Into<Node>) -> Self {
        self.node.children.push(node.into());
        self
    }

    fn join(lhs: Node, rhs: Node) -> Self {
        let mut fan_out = match lhs {
            Node::Parallel(node) if node.generated_name => FanOut { node },
            other => FanOut {
                node: ParallelNode {
                    config: ParallelAgentConfig::new(String::new()),
                    children: vec![other],
                    generated_name: true,
                },
            },
        };
        match rhs {
            Node::Parallel(node) if node.generated_name => fan_out.node.children.extend(node.children),
            other => fan_out.node.children.push(other),
        }
        fan_out
    }

    /// The IR, once every name is checked.
    pub fn build(self) -> Result<Node> {
        finish(self.into())
    }
}

impl Loop {
    /// An empty loop named `name`, without a bound (it ends when a step escalates).
    pub fn new(name: impl Into<String>) -> Self {
        Loop { node: LoopNode { config: LoopAgentConfig::new(name), children: Vec::new(), generated_name: false } }
    }

    /// Adds a step.
    pub fn step(mut self, node: impl Into<Node>) -> Self {
        self.node.children.push(node.into());
        self
    }

    /// `body * rounds`: an operator's pipeline loops over its steps.
    fn repeat(body: Node, rounds: usize) -> Self {
        let children = match body {
            Node::Sequence(node) if node.generated_name => node.children,
            other => vec![other],
        };
        let mut config = LoopAgentConfig::new(String::new());
        config.max_iterations = Some(i64::try_from(rounds).unwrap_or(i64::MAX));
        Loop { node: LoopNode { config, children, generated_name: true } }
    }

    /// The IR, once every name is checked.
    pub fn build(self) -> Result<Node> {
        finish(self.into())
    }
}

impl From<Agent> for Node {
    fn from(agent: Agent) -> Node {
        Node::Agent(Box::new(agent.node))
    }
}

impl From<Pipeline> for Node {
    fn from(pipeline: Pipeline) -> Node {
        Node::Sequence(pipeline.node)
    }
}

impl From<FanOut> for Node {
    fn from(fan_out: FanOut) -> Node {
        Node::Parallel(fan_out.node)
    }
}

impl From<Loop> for Node {
    fn from(looped: Loop) -> Node {
        Node::Loop(looped.node)
    }
}

impl From<Arc<dyn sinew_adk::Agent>> for Node {
    fn from(agent: Arc<dyn sinew_adk::Agent>) -> Node {
        Node::Custom(crate::ir::CustomAgent(agent))
    }
}

macro_rules! operators {
    ($($ty:ty),*) => {$(
        impl<R: Into<Node>> Shr<R> for $ty {
            type Output = Pipeline;

            /// `self` then `rhs`.
            fn shr(self, rhs: R) -> Pipeline {
                Pipeline::join(self.into(), rhs.into())
            }
        }

        impl<R: Into<Node>> BitOr<R> for $ty {
            type Output = FanOut;

            /// `self` and `rhs` at once.
            fn bitor(self, rhs: R) -> FanOut {
                FanOut::join(self.into(), rhs.into())
            }
        }

        impl Mul<usize> for $ty {
            type Output = Loop;

            /// `self`, `rounds` times (fewer when a step escalates).
            fn mul(self, rounds: usize) -> Loop {
                Loop::repeat(self.into(), rounds)
            }
        }
    )*};
}

operators!(Agent, Pipeline, FanOut, Loop, Node);

impl Node {
    /// The IR, once every name is checked (nodes made by hand).
    pub fn build(self) -> Result<Node> {
        finish(self)
    }
}

/// Names the nodes operators made (after their first child: `classifier_pipeline`, made unique)
/// and checks every name: ADK's identifier rule, and no name twice.
pub(crate) fn finish(mut root: Node) -> Result<Node> {
    let mut taken: HashSet<String> = HashSet::new();
    collect_names(&mut root, &mut taken);
    name_generated(&mut root, &mut taken);
    let mut seen = HashSet::new();
    for node in root.walk() {
        check_agent_name(node.name(), AgentNames::Identifiers).map_err(|e| Error::InvalidName(e.to_string()))?;
        if !seen.insert(node.name()) {
            return Err(Error::DuplicateName(node.name().to_owned()));
        }
    }
    check_transfer_cycles(&root)?;
    Ok(root)
}

/// The transfers of the tree under `root`, each with the node it targets when that node is in
/// the tree.
fn transfers(root: &Node) -> Vec<(&crate::ir::TransferNode, Option<&Node>)> {
    let nodes = root.walk();
    nodes
        .iter()
        .filter_map(|n| match n {
            Node::Transfer(t) => Some((t, nodes.iter().copied().find(|m| m.name() == t.target))),
            _ => None,
        })
        .collect()
}

/// No transfer leads back to itself: a transfer runs its target, and a target holding a transfer
/// that leads back (to itself, to a group holding the first transfer...) would run without end.
fn check_transfer_cycles(root: &Node) -> Result<()> {
    let transfers = transfers(root);
    // Which transfers each transfer's target holds (by index).
    let leads_to: Vec<Vec<usize>> = transfers
        .iter()
        .map(|(_, target)| {
            let held: Vec<&str> = target.map(|t| t.walk().iter().map(|n| n.name()).collect()).unwrap_or_default();
            transfers.iter().enumerate().filter(|(_, (u, _))| held.contains(&u.name.as_str())).map(|(i, _)| i).collect()
        })
        .collect();
    for start in 0..transfers.len() {
        let mut seen = vec![false; transfers.len()];
        let mut stack = leads_to[start].clone();
        while let Some(next) = stack.pop() {
            if next == start {
                let (transfer, _) = transfers[start];
                return Err(Error::Compile(format!(
                    "`{}` transfers to `{}`, which leads back to it: it would run itself again, without end",
                    transfer.name, transfer.target
                )));
            }
            if !std::mem::replace(&mut seen[next], true) {
                stack.extend(&leads_to[next]);
            }
        }
    }
    Ok(())
}

/// Every transfer targets an agent of the tree: its own nodes, or an agent under a custom agent
/// (checked when the whole tree is compiled: a fragment may transfer to what it is put beside).
pub(crate) fn check_transfer_targets(root: &Node) -> Result<()> {
    let mut names: HashSet<&str> = root.walk().iter().map(|n| n.name()).collect();
    for node in root.walk() {
        if let Node::Custom(agent) = node {
            custom_names(agent.0.as_ref(), &mut names);
        }
    }
    for (transfer, _) in transfers(root) {
        if !names.contains(transfer.target.as_str()) {
            return Err(Error::Compile(format!(
                "`{}` transfers to `{}`, which is not in the pipeline",
                transfer.name, transfer.target
            )));
        }
    }
    Ok(())
}

/// The names under a custom agent (its own sub-agents), which transfers may target.
fn custom_names<'a>(agent: &'a dyn sinew_adk::Agent, names: &mut HashSet<&'a str>) {
    for sub in agent.sub_agents() {
        names.insert(sub.name());
        custom_names(sub.as_ref(), names);
    }
}

/// A made-up name of `node`, and the name it is made from: the node's kind after its first
/// child's name for groups, the suggestion it carries for transforms and taps.
fn generated_name(node: &mut Node) -> Option<(&mut String, Option<&'static str>)> {
    match node {
        Node::Sequence(n) if n.generated_name => Some((&mut n.config.name, Some("pipeline"))),
        Node::Parallel(n) if n.generated_name => Some((&mut n.config.name, Some("fanout"))),
        Node::Loop(n) if n.generated_name => Some((&mut n.config.name, Some("loop"))),
        Node::Fallback(n) if n.generated_name => Some((&mut n.name, Some("fallback"))),
        Node::Race(n) if n.generated_name => Some((&mut n.name, Some("race"))),
        Node::Transform(n) if n.generated_name => Some((&mut n.name, None)),
        Node::Tap(n) if n.generated_name => Some((&mut n.name, None)),
        _ => None,
    }
}

fn collect_names(node: &mut Node, taken: &mut HashSet<String>) {
    if generated_name(node).is_none() {
        taken.insert(node.name().to_owned());
    }
    for child in node.children_mut() {
        collect_names(child, taken);
    }
}

fn name_generated(node: &mut Node, taken: &mut HashSet<String>) {
    for child in node.children_mut() {
        name_generated(child, taken);
    }
    let first = node.children().first().map(|c| c.name().to_owned());
    if let Some((name, kind)) = generated_name(node) {
        let base = match (kind, first) {
            (Some(kind), Some(first)) => format!("{first}_{kind}"),
            (Some(kind), None) => kind.to_owned(),
            (None, _) => name.clone(),
        };
        let mut candidate = base.clone();
        let mut n = 2;
        while taken.contains(&candidate) {
            candidate = format!("{base}_{n}");
            n += 1;
        }
        taken.insert(candidate.clone());
        *name = candidate;
    }
}
