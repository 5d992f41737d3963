//! sinew-fluent's IR, generated from google-adk's own agent configuration models (spec 003 §3.1,
//! "the Tide principle").
//!
//! `xtask/scripts/adk_agent_configs.py` exports the fields of adk-python's `LlmAgentConfig`,
//! `SequentialAgentConfig`, `ParallelAgentConfig` and `LoopAgentConfig` as a snapshot
//! (`crates/sinew-fluent/schema/adk-<version>.json`, committed). From the snapshot,
//! `cargo xtask codegen` writes `crates/sinew-fluent/src/generated.rs`: one configuration struct
//! per agent class (the IR nodes' data, read and written as AgentConfig YAML), its literal enums,
//! and a builder setter for every plain field. `cargo xtask codegen --diff OLD NEW` reports what
//! changed between two snapshots: added optional fields are safe; added required fields, removed
//! or changed ones are breaking.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The snapshot the IR is generated from.
pub(crate) const SNAPSHOT: &str = "crates/sinew-fluent/schema/adk-2.13.0.json";
pub(crate) const GENERATED: &str = "crates/sinew-fluent/src/generated.rs";
const EXPORT_SCRIPT: &str = "xtask/scripts/adk_agent_configs.py";

/// The builder each agent class's setters go on, and where its configuration lives in it.
const BUILDERS: &[(&str, &str)] =
    &[("LlmAgent", "Agent"), ("SequentialAgent", "Pipeline"), ("ParallelAgent", "FanOut"), ("LoopAgent", "Loop")];

/// Fields the builders set by hand: the name (given to `new`), the class (the builder's kind),
/// and the model (whose setter also drops a model object given before). Fields that hold code,
/// agents or tools get no generated setter either: a Rust builder takes them as values.
const HAND_WRITTEN: &[&str] = &["name", "agent_class", "model"];

/// The configuration types sinew-fluent writes by hand (`crate::config`), with their fields: the
/// snapshot's must be these, or the hand-written types need changing.
const CONFIG_TYPES: &[(&str, &[&str])] =
    &[("AgentRefConfig", &["config_path", "code"]), ("CodeConfig", &["name"]), ("ToolConfig", &["name", "args"])];

/// Rust's keywords, which a field cannot be named.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
    "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract", "become",
    "box", "do", "final", "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield", "_",
];

/// The generated source for the snapshot `text`, formatted.
pub(crate) fn generate(root: &Path, text: &str) -> Result<String> {
    crate::codegen::rustfmt(root, &render(text)?)
}

/// Has adk-python export its agent configuration models, and fails when the committed snapshot
/// differs: the IR must be generated from the google-adk release CI runs.
pub(crate) fn check_snapshot(root: &Path, python: &Path) -> Result<()> {
    let output = Command::new(python)
        .arg(root.join(EXPORT_SCRIPT))
        .output()
        .with_context(|| format!("cannot run {EXPORT_SCRIPT}"))?;
    if !output.status.success() {
        bail!("{EXPORT_SCRIPT} failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let exported = String::from_utf8(output.stdout)?;
    let committed = std::fs::read_to_string(root.join(SNAPSHOT)).with_context(|| format!("cannot read {SNAPSHOT}"))?;
    if exported != committed {
        let report = diff(&committed, &exported)?;
        bail!("{SNAPSHOT} differs from what google-adk exports:\n{report}");
    }
    println!("codegen: {SNAPSHOT} is what google-adk exports");
    Ok(())
}

#[derive(Debug, PartialEq)]
struct Field {
    name: String,
    ty: Value,
    required: bool,
    default: Option<Value>,
    /// A default made by a function (the type's empty value).
    default_factory: bool,
    description: String,
}

struct Class {
    class: String,
    config: String,
    fields: Vec<Field>,
}

/// The agent classes of a snapshot, and the configuration types they refer to (as classes).
struct Snapshot {
    version: String,
    classes: Vec<Class>,
    types: Vec<Class>,
}

fn parse(text: &str) -> Result<Snapshot> {
    let snapshot: Value = serde_json::from_str(text).context("the snapshot is not JSON")?;
    let version = snapshot["adk_version"].as_str().context("the snapshot has no `adk_version`")?.to_owned();
    let classes = parse_classes(snapshot["classes"].as_array().context("the snapshot has no `classes`")?, "class")?;
    let types = parse_classes(snapshot["types"].as_array().context("the snapshot has no `types`")?, "name")?;
    Ok(Snapshot { version, classes, types })
}

fn parse_classes(classes: &[Value], name_key: &str) -> Result<Vec<Class>> {
    let mut out = Vec::new();
    for class in classes {
        let name =
            |key: &str| class[key].as_str().map(str::to_owned).with_context(|| format!("a class has no `{key}`"));
        let class_name = name(name_key)?;
        let config = if name_key == "class" { name("config")? } else { class_name.clone() };
        let fields = class["fields"].as_array().with_context(|| format!("{config} has no `fields`"))?;
        let fields = fields
            .iter()
            .map(|f| {
                Ok(Field {
                    name: f["name"].as_str().with_context(|| format!("a field of {config} has no name"))?.to_owned(),
                    ty: f["type"].clone(),
                    required: f["required"].as_bool().unwrap_or(false),
                    default: f.get("default").cloned(),
                    default_factory: f["default_factory"].as_bool().unwrap_or(false),
                    description: f["description"].as_str().unwrap_or_default().to_owned(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        out.push(Class { class: class_name, config, fields });
    }
    Ok(out)
}

/// A field's Rust type, and how its setter takes a value.
struct RustType {
    ty: String,
    /// The setter's parameter type and the expression storing `value`; `None`: no setter.
    setter: Option<(String, String)>,
    /// The expression of the field's default.
    default: String,
    /// How YAML leaves the default out: `skip_serializing_if`'s path, or a comparison with the
    /// default (`Config::is_default_<field>` is generated for it).
    skip: Skip,
}

enum Skip {
    Never,
    Path(String),
    EqualsDefault,
}

/// Literal enums by name: their values, and the variant that is ADK's default.
type Enums = BTreeMap<String, (Vec<String>, Option<String>)>;

fn pascal(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w[..1].to_ascii_uppercase() + &w[1..])
        .collect()
}

fn kind(ty: &Value) -> &str {
    ty["kind"].as_str().unwrap_or_default()
}

/// The Rust type of a snapshot type (inside an `Option` or a `Vec`, without setter).
fn inner_type(ty: &Value, field: &str, enums: &mut Enums) -> Result<String> {
    Ok(match kind(ty) {
        "str" => "String".into(),
        "bool" => "bool".into(),
        "int" => "i64".into(),
        "float" => "f64".into(),
        "list" => format!("Vec<{}>", inner_type(&ty["of"], field, enums)?),
        "named" => {
            let name = ty["name"].as_str().unwrap_or_default();
            if CONFIG_TYPES.iter().any(|(t, _)| *t == name) {
                format!("crate::config::{name}")
            } else {
                "serde_json::Value".into()
            }
        }
        "literal" => {
            let values: Vec<String> = ty["values"]
                .as_array()
                .context("a literal without values")?
                .iter()
                .map(|v| v.as_str().map(str::to_owned).context("a literal value that is not a string"))
                .collect::<Result<_>>()?;
            let name = pascal(field);
            match enums.get(&name) {
                Some((known, _)) if *known != values => {
                    bail!("field `{field}`: two literals would be the enum `{name}` with other values")
                }
                Some(_) => {}
                None => {
                    enums.insert(name.clone(), (values, None));
                }
            }
            name
        }
        "union" | "any" => "serde_json::Value".into(),
        other => bail!("field `{field}`: unknown type kind `{other}`"),
    })
}

fn rust_type(field: &Field, enums: &mut Enums) -> Result<RustType> {
    let name = &field.name;
    let set = |param: &str, store: &str| Some((param.to_owned(), store.to_owned()));
    if kind(&field.ty) == "optional" {
        let of = &field.ty["of"];
        let inner = inner_type(of, name, enums)?;
        let setter = match kind(of) {
            "str" => set("impl Into<String>", "Some(value.into())"),
            "bool" | "int" | "float" | "literal" => set(&inner, "Some(value)"),
            "union" | "any" => set("impl Into<serde_json::Value>", "Some(value.into())"),
            "named" if inner == "serde_json::Value" => set("serde_json::Value", "Some(value)"),
            _ => None,
        };
        if field.default.as_ref().is_some_and(|d| !d.is_null()) {
            bail!("field `{name}`: an optional field whose default is not None is not supported");
        }
        return Ok(RustType {
            ty: format!("Option<{inner}>"),
            setter,
            default: "None".into(),
            skip: Skip::Path("Option::is_none".into()),
        });
    }
    let ty = inner_type(&field.ty, name, enums)?;
    let default_value = field.default.as_ref().filter(|_| !field.required && !field.default_factory);
    let (default, skip) = match (kind(&field.ty), default_value) {
        ("str", Some(Value::String(s))) if s.is_empty() => {
            ("String::new()".into(), Skip::Path("String::is_empty".into()))
        }
        ("str", Some(Value::String(s))) => (format!("{s:?}.to_owned()"), Skip::Never),
        ("bool", Some(Value::Bool(b))) => (b.to_string(), Skip::EqualsDefault),
        ("int", Some(Value::Number(n))) if n.is_i64() => (n.to_string(), Skip::EqualsDefault),
        ("float", Some(Value::Number(n))) => (format!("{:?}", n.as_f64().unwrap_or_default()), Skip::EqualsDefault),
        ("literal", Some(Value::String(s))) => {
            if let Some(entry) = enums.get_mut(&ty) {
                entry.1 = Some(pascal(s));
            }
            (format!("{ty}::{}", pascal(s)), Skip::EqualsDefault)
        }
        ("list", _) => ("Vec::new()".into(), Skip::Path("Vec::is_empty".into())),
        ("str", None) => ("String::new()".into(), Skip::Never),
        ("bool", None) => ("false".into(), Skip::Never),
        ("int", None) => ("0".into(), Skip::Never),
        ("float", None) => ("0.0".into(), Skip::Never),
        ("union" | "any", _) => ("serde_json::Value::Null".into(), Skip::Never),
        (k, d) => bail!(
            "field `{name}`: a {k} field {} is not supported",
            match d {
                Some(d) => format!("defaulting to {d}"),
                None if field.required => "that is required".to_owned(),
                None => "without a default".to_owned(),
            }
        ),
    };
    let setter = match kind(&field.ty) {
        "str" => set("impl Into<String>", "value.into()"),
        "bool" | "int" | "float" | "literal" => set(&ty, "value"),
        "union" | "any" => set("impl Into<serde_json::Value>", "value.into()"),
        _ => None,
    };
    Ok(RustType { ty, setter, default, skip })
}

/// Writes `text` (ADK's description, plain text) as a doc comment: characters Markdown would
/// read as links or HTML are escaped.
fn doc(out: &mut String, text: &str) {
    for line in text.lines() {
        let mut escaped = String::with_capacity(line.len());
        for c in line.trim_end().chars() {
            if matches!(c, '[' | ']' | '<' | '>') {
                escaped.push('\\');
            }
            escaped.push(c);
        }
        let _ = writeln!(out, "/// {escaped}");
    }
}

/// The generated source for the snapshot `text` (unformatted).
fn render(text: &str) -> Result<String> {
    let Snapshot { version, classes, types } = parse(text)?;
    for (name, fields) in CONFIG_TYPES {
        let Some(snapshot) = types.iter().find(|t| t.class == *name) else {
            bail!("the snapshot has no `{name}`, which sinew-fluent writes by hand");
        };
        let theirs: Vec<&str> = snapshot.fields.iter().map(|f| f.name.as_str()).collect();
        if theirs != *fields {
            bail!("ADK's `{name}` has the fields {theirs:?}, the hand-written one {fields:?}: update crate::config");
        }
    }
    let mut out = format!(
        "// @generated by `cargo xtask codegen` from {SNAPSHOT}: edit the exporter or the generator \
         (xtask/src/fluent.rs), not this file.\n\n\
         /// The google-adk release these types were generated from.\n\
         pub const ADK_VERSION: &str = {version:?};\n\n"
    );
    let mut enums = Enums::new();
    let mut setters = String::new();
    for class in &classes {
        let mut body = String::new();
        let mut helpers = String::new();
        let mut set_fields = String::new();
        let mut names = Vec::new();
        let mut inits = Vec::new();
        let builder = BUILDERS.iter().find(|(c, _)| *c == class.class).map(|(_, b)| *b);
        if let Some(builder) = builder {
            let _ = writeln!(setters, "impl crate::builder::{builder} {{");
        }
        for field in &class.fields {
            let name = &field.name;
            if !is_identifier(name) || KEYWORDS.contains(&name.as_str()) {
                bail!("{}: `{name}` is not a Rust field name", class.config);
            }
            let rust = rust_type(field, &mut enums)?;
            names.push(format!("{name:?}"));
            inits.push(if name == "name" {
                "name: name.into()".to_owned()
            } else {
                format!("{name}: {}", rust.default)
            });
            let description = if field.description.is_empty() { "(undocumented in ADK)" } else { &field.description };
            doc(&mut body, description);
            let mut serde = Vec::new();
            if !field.required {
                if rust.default == "None" || rust.default.ends_with("::new()") {
                    serde.push("default".to_owned());
                } else {
                    serde.push(format!("default = \"{}::default_{name}\"", class.config));
                    let _ = writeln!(helpers, "fn default_{name}() -> {} {{ {} }}", rust.ty, rust.default);
                }
            }
            match &rust.skip {
                Skip::Never => {}
                Skip::Path(path) => serde.push(format!("skip_serializing_if = \"{path}\"")),
                Skip::EqualsDefault => {
                    serde.push(format!("skip_serializing_if = \"{}::is_default_{name}\"", class.config));
                    let test = match rust.default.as_str() {
                        "true" => "*value".to_owned(),
                        "false" => "!*value".to_owned(),
                        default => format!("*value == {default}"),
                    };
                    let _ = writeln!(
                        helpers,
                        "#[allow(clippy::trivially_copy_pass_by_ref)]\nfn is_default_{name}(value: &{}) -> bool {{ {test} }}",
                        rust.ty
                    );
                }
            }
            if !serde.is_empty() {
                let _ = writeln!(body, "#[serde({})]", serde.join(", "));
            }
            let _ = writeln!(body, "pub {name}: {},", rust.ty);
            let _ = writeln!(set_fields, "if self.{name} != defaults.{name} {{ set.push({name:?}); }}");
            if let (Some(_), Some((param, store))) = (builder, &rust.setter)
                && !HAND_WRITTEN.contains(&name.as_str())
            {
                doc(&mut setters, description);
                let _ = writeln!(
                    setters,
                    "#[must_use]\npub fn {name}(mut self, value: {param}) -> Self {{ self.node.config.{name} = {store}; self }}"
                );
            }
        }
        if builder.is_some() {
            setters.push_str("}\n\n");
        }
        let _ = write!(
            out,
            "/// adk-python's `{config}`: the fields of a `{class}` in AgentConfig YAML (google-adk {version}).\n\
             #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]\n\
             #[serde(deny_unknown_fields)]\n\
             #[non_exhaustive]\n\
             pub struct {config} {{\n{body}}}\n\n\
             impl {config} {{\n\
             /// The configuration of an agent named `name`, every other field at ADK's default.\n\
             pub fn new(name: impl Into<String>) -> Self {{ {config} {{ {inits} }} }}\n\n\
             /// Every field's name, in ADK's order.\n\
             pub const FIELDS: &'static [&'static str] = &[{names}];\n\n\
             /// The fields whose value is not ADK's default (the name always is): what a backend \
             must honour or refuse.\n\
             pub fn set_fields(&self) -> Vec<&'static str> {{\n\
             let defaults = {config}::new(String::new());\n\
             let mut set = Vec::new();\n{set_fields}set\n}}\n\n{helpers}}}\n\n",
            config = class.config,
            class = class.class,
            inits = inits.join(", "),
            names = names.join(", "),
        );
    }
    for (name, (values, default)) in &enums {
        // An enum derives `Default` only when ADK gives its field a default.
        let derive_default = if default.is_some() { "Default, " } else { "" };
        let _ = writeln!(
            out,
            "/// A literal of ADK's configuration.\n\
             #[derive(Clone, Copy, Debug, {derive_default}PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]\n\
             pub enum {name} {{"
        );
        for value in values {
            let variant = pascal(value);
            if default.as_deref() == Some(variant.as_str()) {
                out.push_str("#[default]\n");
            }
            let _ = writeln!(out, "#[serde(rename = {value:?})]\n{variant},");
        }
        out.push_str("}\n\n");
    }
    out.push_str(&setters);
    Ok(out)
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// What changed from snapshot `old` to snapshot `new`, per agent class and per configuration type:
/// added optional fields (safe to regenerate); added required fields, removed and changed ones
/// (breaking: the backend, the hand-written types and users' YAML need review).
pub(crate) fn diff(old: &str, new: &str) -> Result<String> {
    let old = parse(old)?;
    let new = parse(new)?;
    let mut added = Vec::new();
    let mut breaking = Vec::new();
    let pairs = [(&old.classes, &new.classes), (&old.types, &new.types)];
    for (old_classes, new_classes) in pairs {
        for new_class in new_classes {
            let Some(old_class) = old_classes.iter().find(|c| c.class == new_class.class) else {
                added.push(format!("{}: the whole class", new_class.class));
                continue;
            };
            for field in &new_class.fields {
                match old_class.fields.iter().find(|f| f.name == field.name) {
                    None if field.required => {
                        breaking.push(format!(
                            "added {}.{}, required: YAML without it no longer reads",
                            new_class.class, field.name
                        ));
                    }
                    None => added.push(format!("{}.{}", new_class.class, field.name)),
                    Some(before) if before.ty != field.ty => breaking.push(format!(
                        "changed {}.{}: type {} -> {}",
                        new_class.class, field.name, before.ty, field.ty
                    )),
                    Some(before)
                        if before.required != field.required
                            || before.default != field.default
                            || before.default_factory != field.default_factory =>
                    {
                        breaking.push(format!(
                            "changed {}.{}: {} -> {}",
                            new_class.class,
                            field.name,
                            requirement(before),
                            requirement(field)
                        ));
                    }
                    Some(_) => {}
                }
            }
            for field in &old_class.fields {
                if !new_class.fields.iter().any(|f| f.name == field.name) {
                    breaking.push(format!("removed {}.{}", old_class.class, field.name));
                }
            }
        }
        for old_class in old_classes {
            if !new_classes.iter().any(|c| c.class == old_class.class) {
                breaking.push(format!("removed {}: the whole class", old_class.class));
            }
        }
    }
    let mut report = format!("ADK {} -> {}\n", old.version, new.version);
    let _ = writeln!(report, "added (safe, regenerate): {}", if added.is_empty() { "none" } else { "" });
    for line in &added {
        let _ = writeln!(report, "  + {line}");
    }
    let _ = writeln!(report, "breaking (review the backend): {}", if breaking.is_empty() { "none" } else { "" });
    for line in &breaking {
        let _ = writeln!(report, "  ! {line}");
    }
    Ok(report)
}

fn requirement(field: &Field) -> String {
    if field.default_factory {
        return "default made by a function".into();
    }
    match (&field.required, &field.default) {
        (true, _) => "required".into(),
        (false, Some(d)) => format!("default {d}"),
        (false, None) => "optional".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::{Value, json};

    fn root() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
    }

    fn snapshot() -> String {
        std::fs::read_to_string(root().join(super::SNAPSHOT)).unwrap()
    }

    fn edited(change: impl FnOnce(&mut Value)) -> String {
        let mut value: Value = serde_json::from_str(&snapshot()).unwrap();
        change(&mut value);
        serde_json::to_string_pretty(&value).unwrap()
    }

    fn llm_fields(value: &mut Value) -> &mut Vec<Value> {
        value["classes"][0]["fields"].as_array_mut().unwrap()
    }

    #[test]
    fn the_generated_ir_is_up_to_date() {
        let current = std::fs::read_to_string(root().join(super::GENERATED)).unwrap();
        assert!(
            current == super::generate(&root(), &snapshot()).unwrap(),
            "{} is stale: run `cargo xtask codegen` and commit the result",
            super::GENERATED
        );
    }

    #[test]
    fn an_added_field_is_generated_with_a_setter_and_reported_safe() {
        let grown = edited(|v| {
            llm_fields(v).push(json!({
                "name": "thinking_budget", "type": {"kind": "optional", "of": {"kind": "int"}},
                "required": false, "default": null, "description": "Optional. A new knob."
            }));
        });
        let generated = super::generate(&root(), &grown).unwrap();
        let current = std::fs::read_to_string(root().join(super::GENERATED)).unwrap();
        // `codegen --check` fails: the committed file no longer matches the snapshot.
        assert_ne!(generated, current);
        assert!(generated.contains("pub thinking_budget: Option<i64>,"), "{generated}");
        assert!(generated.contains("pub fn thinking_budget(mut self, value: i64) -> Self"), "{generated}");
        let report = super::diff(&snapshot(), &grown).unwrap();
        assert!(report.contains("+ LlmAgent.thinking_budget"), "{report}");
        assert!(report.contains("breaking (review the backend): none"), "{report}");
    }

    #[test]
    fn a_removed_or_changed_field_is_reported_breaking() {
        let shrunk = edited(|v| {
            let fields = llm_fields(v);
            fields.retain(|f| f["name"] != "output_key");
            let include = fields.iter_mut().find(|f| f["name"] == "include_contents").unwrap();
            include["default"] = json!("none");
            v["classes"][3]["fields"].as_array_mut().unwrap().iter_mut().for_each(|f| {
                if f["name"] == "max_iterations" {
                    f["type"] = json!({"kind": "optional", "of": {"kind": "str"}});
                }
            });
        });
        let generated = super::generate(&root(), &shrunk).unwrap();
        assert!(!generated.contains("output_key"), "the removed field is gone from the IR");
        let report = super::diff(&snapshot(), &shrunk).unwrap();
        assert!(report.contains("! removed LlmAgent.output_key"), "{report}");
        assert!(
            report.contains("! changed LlmAgent.include_contents: default \"default\" -> default \"none\""),
            "{report}"
        );
        assert!(report.contains("! changed LoopAgent.max_iterations: type"), "{report}");
        assert!(report.contains("added (safe, regenerate): none"), "{report}");
    }

    #[test]
    fn a_non_zero_default_is_left_out_of_yaml_only_when_it_is_that_default() {
        let grown = edited(|v| {
            llm_fields(v).push(json!({
                "name": "stream_by_default", "type": {"kind": "bool"},
                "required": false, "default": true, "description": "Optional. On unless said otherwise."
            }));
        });
        let generated = super::generate(&root(), &grown).unwrap();
        assert!(
            generated.contains("fn is_default_stream_by_default(value: &bool) -> bool {\n        *value\n    }"),
            "{generated}"
        );
        assert!(generated.contains("fn default_stream_by_default() -> bool {\n        true\n    }"), "{generated}");
    }

    #[test]
    fn a_change_to_a_hand_written_type_or_a_new_required_field_is_caught() {
        let changed = edited(|v| {
            v["types"][1]["fields"].as_array_mut().unwrap().push(json!({
                "name": "args", "type": {"kind": "any"}, "required": false, "default": null, "description": ""
            }));
        });
        let error = format!("{:#}", super::render(&changed).unwrap_err());
        assert!(error.contains("ADK's `CodeConfig` has the fields [\"name\", \"args\"]"), "{error}");
        let report = super::diff(&snapshot(), &changed).unwrap();
        assert!(report.contains("+ CodeConfig.args"), "{report}");

        let required = edited(|v| {
            llm_fields(v).push(json!({"name": "region", "type": {"kind": "str"}, "required": true, "description": ""}));
        });
        let report = super::diff(&snapshot(), &required).unwrap();
        assert!(report.contains("! added LlmAgent.region, required"), "{report}");
    }

    #[test]
    fn a_broken_snapshot_is_an_error_naming_what_is_wrong() {
        let with_field = |field: Value| {
            edited(|v| {
                v["classes"] = json!([{"class": "LlmAgent", "config": "C", "fields": [field]}]);
            })
        };
        let cases = [
            ("{".to_owned(), "not JSON"),
            ("{\"classes\": []}".to_owned(), "no `adk_version`"),
            (edited(|v| v.as_object_mut().unwrap().remove("types").map(drop).unwrap_or_default()), "no `types`"),
            (with_field(json!({"name": "x", "type": {"kind": "tuple"}})), "unknown type kind `tuple`"),
            (with_field(json!({"name": "Bad-Name", "type": {"kind": "str"}})), "not a Rust field name"),
            (with_field(json!({"name": "type", "type": {"kind": "str"}})), "not a Rust field name"),
            (
                with_field(json!({"name": "sub", "type": {"kind": "named", "name": "CodeConfig"}, "required": true})),
                "a named field that is required is not supported",
            ),
            (
                with_field(json!({"name": "n", "type": {"kind": "optional", "of": {"kind": "int"}}, "default": 3})),
                "whose default is not None is not supported",
            ),
        ];
        for (text, want) in cases {
            let error = format!("{:#}", super::render(&text).unwrap_err());
            assert!(error.contains(want), "{want}: {error}");
        }
    }
}
