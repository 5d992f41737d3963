//! The visualisation backend (spec 003 §4.5): a pipeline as a Mermaid flowchart or a Graphviz
//! DOT graph. Groups are boxes around their children, control flow is solid arrows, and data flow
//! is dashed arrows from the step that writes a state key to each later step that reads it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::{Backend, ExecutionConfig};
use crate::error::Result;
use crate::ir::Node;

/// The picture's language.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// A Mermaid `flowchart`.
    #[default]
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
}

/// Draws a pipeline.
#[derive(Clone, Copy, Debug, Default)]
pub struct VizBackend {
    format: Format,
}

impl VizBackend {
    /// A backend drawing in `format`.
    pub fn new(format: Format) -> Self {
        VizBackend { format }
    }
}

impl Backend for VizBackend {
    type Compiled = String;

    fn compile(&self, node: &Node, _config: &ExecutionConfig) -> Result<String> {
        let root = crate::builder::finish(node.clone())?;
        Ok(match self.format {
            Format::Mermaid => mermaid(&root),
            Format::Dot => dot(&root),
        })
    }
}

/// A control-flow edge: from, to, label.
type Edge = (String, String, Option<String>);

fn id(node: &Node) -> String {
    let name = node.name();
    if name.eq_ignore_ascii_case("end") || name.eq_ignore_ascii_case("subgraph") {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}

fn label(node: &Node) -> String {
    let mut lines = vec![format!("{} ({})", node.name(), node.kind())];
    let reads = node.own_reads();
    if !reads.is_empty() {
        lines.push(format!("reads: {}", reads.into_iter().collect::<Vec<_>>().join(", ")));
    }
    let writes = node.own_writes();
    if !writes.is_empty() {
        lines.push(format!("writes: {}", writes.into_iter().collect::<Vec<_>>().join(", ")));
    }
    lines.join("\n")
}

fn is_group(node: &Node) -> bool {
    matches!(
        node,
        Node::Sequence(_)
            | Node::Parallel(_)
            | Node::Loop(_)
            | Node::Fallback(_)
            | Node::Race(_)
            | Node::MapOver(_)
            | Node::Timeout(_)
    )
}

/// The control-flow edges inside `node` (not its descendants').
fn control_edges(node: &Node) -> Vec<Edge> {
    let children = node.children();
    let pairs = || children.windows(2).map(|w| (id(w[0]), id(w[1])));
    match node {
        Node::Sequence(_) => pairs().map(|(a, b)| (a, b, None)).collect(),
        Node::Loop(_) => {
            let mut edges: Vec<Edge> = pairs().map(|(a, b)| (a, b, None)).collect();
            if let (Some(first), Some(last)) = (children.first(), children.last()) {
                edges.push((id(last), id(first), Some("again".into())));
            }
            edges
        }
        Node::Fallback(_) => pairs().map(|(a, b)| (a, b, Some("on error".into()))).collect(),
        Node::Agent(_) => children.iter().map(|c| (id(node), id(c), Some("transfer".into()))).collect(),
        Node::Route(route) => {
            let mut edges: Vec<Edge> =
                route.rules.iter().map(|r| (id(node), id(&r.node), Some(r.label.clone()))).collect();
            if let Some(default) = &route.default {
                edges.push((id(node), id(default), Some("otherwise".into())));
            }
            edges
        }
        Node::Transfer(transfer) => vec![(id(node), transfer.target.clone(), Some("transfer".into()))],
        _ => Vec::new(),
    }
}

/// Data-flow edges: from the last step before a reader that writes the key it reads.
fn data_edges(root: &Node) -> Vec<(String, String, String)> {
    let mut writer: BTreeMap<String, String> = BTreeMap::new();
    let mut edges = BTreeSet::new();
    for node in root.walk() {
        for key in node.own_reads() {
            if let Some(from) = writer.get(&key)
                && *from != id(node)
            {
                edges.insert((from.clone(), id(node), key));
            }
        }
        for key in node.own_writes() {
            writer.insert(key, id(node));
        }
    }
    edges.into_iter().collect()
}

fn mermaid_text(text: &str) -> String {
    text.replace('"', "#quot;").replace('\n', "<br/>")
}

fn mermaid(root: &Node) -> String {
    fn draw(node: &Node, depth: usize, out: &mut String, edges: &mut Vec<Edge>) {
        let pad = "  ".repeat(depth);
        let text = mermaid_text(&label(node));
        if is_group(node) {
            let _ = writeln!(out, "{pad}subgraph {}[\"{text}\"]", id(node));
            for child in node.children() {
                draw(child, depth + 1, out, edges);
            }
            let _ = writeln!(out, "{pad}end");
        } else {
            let shape = match node {
                Node::Route(_) | Node::Gate(_) => ("{", "}"),
                Node::Transform(_) | Node::Tap(_) => ("{{", "}}"),
                Node::Transfer(_) => ("[/", "/]"),
                _ => ("[", "]"),
            };
            let _ = writeln!(out, "{pad}{}{}\"{text}\"{}", id(node), shape.0, shape.1);
            for child in node.children() {
                draw(child, depth, out, edges);
            }
        }
        edges.extend(control_edges(node));
    }
    let mut out = String::from("flowchart TD\n");
    let mut edges = Vec::new();
    draw(root, 1, &mut out, &mut edges);
    for (from, to, label) in edges {
        match label {
            Some(label) => writeln!(out, "  {from} -->|\"{}\"| {to}", mermaid_text(&label)),
            None => writeln!(out, "  {from} --> {to}"),
        }
        .unwrap_or_default();
    }
    for (from, to, key) in data_edges(root) {
        let _ = writeln!(out, "  {from} -.->|\"{}\"| {to}", mermaid_text(&key));
    }
    out
}

fn dot_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn dot(root: &Node) -> String {
    /// The node standing for a group's edges: its first leaf.
    fn anchor(node: &Node) -> String {
        match node.children().first() {
            Some(first) if is_group(node) => anchor(first),
            _ => id(node),
        }
    }
    fn draw(node: &Node, depth: usize, out: &mut String, edges: &mut Vec<String>) {
        let pad = "  ".repeat(depth);
        if is_group(node) {
            let _ = writeln!(out, "{pad}subgraph \"cluster_{}\" {{", id(node));
            let _ = writeln!(out, "{pad}  label=\"{}\";", dot_text(&label(node)));
            for child in node.children() {
                draw(child, depth + 1, out, edges);
            }
            if node.children().is_empty() {
                let _ = writeln!(out, "{pad}  \"{}\" [shape=point];", id(node));
            }
            let _ = writeln!(out, "{pad}}}");
        } else {
            let shape = match node {
                Node::Route(_) | Node::Gate(_) => "diamond",
                Node::Transform(_) | Node::Tap(_) => "hexagon",
                Node::Transfer(_) => "parallelogram",
                _ => "box",
            };
            let _ = writeln!(out, "{pad}\"{}\" [shape={shape}, label=\"{}\"];", id(node), dot_text(&label(node)));
            for child in node.children() {
                draw(child, depth, out, edges);
            }
        }
        let children = node.children();
        for (from, to, label) in control_edges(node) {
            let find = |name: &str| children.iter().copied().chain([node]).find(|n| id(n) == name);
            let mut attrs = Vec::new();
            let from_id = match find(&from) {
                Some(n) if is_group(n) => {
                    attrs.push(format!("ltail=\"cluster_{from}\""));
                    anchor(n)
                }
                _ => from,
            };
            let to_id = match find(&to) {
                Some(n) if is_group(n) => {
                    attrs.push(format!("lhead=\"cluster_{to}\""));
                    anchor(n)
                }
                _ => to,
            };
            if let Some(label) = label {
                attrs.push(format!("label=\"{}\"", dot_text(&label)));
            }
            let attrs = if attrs.is_empty() { String::new() } else { format!(" [{}]", attrs.join(", ")) };
            edges.push(format!("\"{from_id}\" -> \"{to_id}\"{attrs};"));
        }
    }
    let mut out = String::from("digraph pipeline {\n  compound=true;\n  rankdir=TB;\n");
    let mut edges = Vec::new();
    draw(root, 1, &mut out, &mut edges);
    for edge in edges {
        let _ = writeln!(out, "  {edge}");
    }
    for (from, to, key) in data_edges(root) {
        let _ = writeln!(out, "  \"{from}\" -> \"{to}\" [style=dashed, label=\"{}\"];", dot_text(&key));
    }
    out.push_str("}\n");
    out
}
