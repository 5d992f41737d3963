//! JSON Schema rewrites shared by the providers: a walk over every subschema, and the shape strict
//! structured output asks for.
//!
//! Services accept dialects of JSON Schema: strict structured output wants closed objects whose
//! properties are all required, others keep only a subset of the keywords. A provider rewrites the
//! schemas it sends into its service's dialect; the schema a caller gave stays what answers are
//! validated against.
//!
//! ```
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {"city": {"type": "string"}, "zip": {"type": "string", "default": ""}},
//!     "required": ["city"],
//! });
//! assert_eq!(
//!     sinew_core::schema::strict(&schema),
//!     json!({
//!         "type": "object",
//!         "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
//!         "required": ["city", "zip"],
//!         "additionalProperties": false,
//!     })
//! );
//! ```

use serde_json::{Map, Value};

/// How deep [`walk_mut`] descends; deeper subschemas are left as they are (parsed JSON is at
/// most 128 levels deep, but schemas built in code, such as inlined references, can be deeper).
pub const MAX_DEPTH: usize = 128;

/// Keywords whose value is one subschema.
const ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "additionalItems",
    "not",
    "contains",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords whose value is a list of subschemas (`items` too, in drafts before 2020-12).
const LIST: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
const MAP: &[&str] = &["properties", "$defs", "definitions", "patternProperties", "dependentSchemas"];

/// Calls `visit` on every subschema of `schema` that is an object, parents before children, and
/// then descends into what `visit` left.
pub fn walk_mut(schema: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>)) {
    walk(schema, visit, 0);
}

fn walk(schema: &mut Value, visit: &mut dyn FnMut(&mut Map<String, Value>), depth: usize) {
    let Value::Object(node) = schema else { return };
    if depth >= MAX_DEPTH {
        return;
    }
    visit(node);
    for (keyword, value) in node.iter_mut() {
        let keyword = keyword.as_str();
        match value {
            Value::Object(children) if MAP.contains(&keyword) => {
                for child in children.values_mut() {
                    walk(child, visit, depth + 1);
                }
            }
            Value::Array(children) if LIST.contains(&keyword) => {
                for child in children {
                    walk(child, visit, depth + 1);
                }
            }
            Value::Object(_) if ONE.contains(&keyword) => walk(value, visit, depth + 1),
            _ => {}
        }
    }
}

/// The string formats strict structured output takes.
const STRICT_FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// `schema` in the shape strict structured output requires (OpenAI's strict mode): every object
/// closed (`additionalProperties: false`) with all its properties required, and what strict mode
/// refuses removed: `default`, formats outside its list, `oneOf` (made `anyOf`), keywords next to
/// a `$ref` (the reference moved into an `anyOf` of its own).
///
/// An answer that fits the result fits `schema`, except where `oneOf` became `anyOf` or a `$ref`
/// beside an `anyOf` became one of its branches: an optional property the model must now give is
/// one `schema` allows (an `Option` is already nullable).
/// Strict mode still refuses what cannot be closed: a map (`additionalProperties` holding a
/// schema) stays as it is, and a root that is not an object is the caller's to wrap.
pub fn strict(schema: &Value) -> Value {
    let mut schema = schema.clone();
    walk_mut(&mut schema, &mut |node| {
        node.remove("default");
        if let Some(Value::String(format)) = node.get("format")
            && !STRICT_FORMATS.contains(&format.as_str())
        {
            node.remove("format");
        }
        if let Some(branches) = node.remove("oneOf") {
            node.insert("anyOf".into(), branches);
        }
        isolate_ref(node);
        if let Some(Value::Object(properties)) = node.get("properties") {
            let all: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
            node.insert("required".into(), Value::Array(all));
            node.insert("additionalProperties".into(), Value::Bool(false));
        } else if is_object(node) && !node.contains_key("additionalProperties") {
            node.insert("additionalProperties".into(), Value::Bool(false));
        }
    });
    schema
}

/// Constraints structured outputs refuse; they move into the description instead.
const CLOSED_REFUSED: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
];
/// The string formats structured outputs take.
const CLOSED_FORMATS: &[&str] =
    &["date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"];

/// `schema` in the subset constrained decoding of closed objects takes (Anthropic's structured
/// outputs, and Claude's on Bedrock, as Anthropic's SDKs rewrite it): every object closed
/// (`additionalProperties: false` is mandatory, so a map can only come back empty), `oneOf` made
/// `anyOf`, `title` and `$schema` removed, and the constraints it refuses (numeric bounds,
/// lengths, `maxItems`, `minItems` above 1, other formats) moved into the description, where the
/// model still reads them. Answers are still checked against the original schema.
pub fn closed(schema: &Value) -> Value {
    let mut schema = schema.clone();
    walk_mut(&mut schema, &mut |node| {
        node.remove("title");
        node.remove("$schema");
        if let Some(branches) = node.remove("oneOf") {
            node.insert("anyOf".into(), branches);
        }
        let mut moved = Vec::new();
        for keyword in CLOSED_REFUSED {
            if let Some(value) = node.remove(*keyword) {
                moved.push(format!("{keyword}: {value}"));
            }
        }
        if node.get("minItems").and_then(Value::as_u64).is_some_and(|n| n > 1) {
            moved.push(format!("minItems: {}", node.remove("minItems").unwrap_or_default()));
        }
        if let Some(Value::String(format)) = node.get("format")
            && !CLOSED_FORMATS.contains(&format.as_str())
        {
            moved.push(format!("format: {format}"));
            node.remove("format");
        }
        if !moved.is_empty() {
            let note = format!("({})", moved.join(", "));
            let description = match node.get("description").and_then(Value::as_str) {
                Some(text) if !text.is_empty() => format!("{text} {note}"),
                _ => note,
            };
            node.insert("description".into(), description.into());
        }
        if node.contains_key("properties") || is_object(node) {
            node.insert("additionalProperties".into(), Value::Bool(false));
        }
    });
    schema
}

/// Moves a `$ref` that has sibling keywords into an `anyOf` of its own, as services that refuse
/// siblings next to a reference want it. Only `$ref` moves; `$defs`, `definitions` and the other
/// `$` keywords stay on the node. A node that already has an `anyOf` gets the reference as one
/// more branch, which loosens it (a reference and one of the branches becomes either).
pub fn isolate_ref(node: &mut Map<String, Value>) {
    let has_siblings = node.keys().any(|k| !k.starts_with('$') && k != "definitions");
    if !has_siblings {
        return;
    }
    let Some(reference) = node.remove("$ref") else { return };
    let branch = Value::Object(Map::from_iter([("$ref".to_owned(), reference)]));
    match node.get_mut("anyOf") {
        Some(Value::Array(branches)) => branches.push(branch),
        _ => {
            node.insert("anyOf".into(), Value::Array(vec![branch]));
        }
    }
}

/// Whether `node` is typed as an object (maybe among other types).
fn is_object(node: &Map<String, Value>) -> bool {
    match node.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `strict(input) == expected`.
    fn check(input: Value, expected: Value) {
        assert_eq!(strict(&input), expected, "{input}");
    }

    #[test]
    fn strict_closes_objects_and_requires_every_property() {
        check(
            json!({
                "$defs": {"Tag": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                    "when": {"type": ["string", "null"]},
                    "flag": true,
                    "empty": {"type": "object"},
                },
                "required": ["tags"],
            }),
            json!({
                "$defs": {"Tag": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": false,
                }},
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                    "when": {"type": ["string", "null"]},
                    "flag": true,
                    "empty": {"type": "object", "additionalProperties": false},
                },
                // serde_json keeps keys sorted (no `preserve_order`).
                "required": ["empty", "flag", "tags", "when"],
                "additionalProperties": false,
            }),
        );
    }

    #[test]
    fn strict_removes_what_strict_mode_refuses() {
        // `oneOf` becomes `anyOf`; defaults and unknown formats go; known formats stay.
        check(
            json!({"oneOf": [{"const": "a"}, {"const": "b"}], "format": "uint8", "default": "a"}),
            json!({"anyOf": [{"const": "a"}, {"const": "b"}]}),
        );
        check(json!({"type": "string", "format": "date-time"}), json!({"type": "string", "format": "date-time"}));
        // A map cannot be closed: it stays, for the service to refuse.
        check(
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        );
    }

    #[test]
    fn references_with_siblings_move_into_an_any_of() {
        check(
            json!({"$ref": "#/$defs/Tag", "description": "The tag."}),
            json!({"description": "The tag.", "anyOf": [{"$ref": "#/$defs/Tag"}]}),
        );
        // Only `$` keywords and `definitions` beside it: nothing moves.
        let root = json!({"$schema": "x", "$ref": "#/definitions/A", "definitions": {"A": {"type": "string"}}});
        check(root.clone(), root);
        // Beside an `anyOf`, the reference becomes one more branch.
        check(
            json!({"$ref": "#/$defs/A", "anyOf": [{"type": "null"}]}),
            json!({"anyOf": [{"type": "null"}, {"$ref": "#/$defs/A"}]}),
        );
    }

    #[test]
    fn walk_visits_every_kind_of_subschema_and_stops_at_its_depth_bound() {
        let mut schema = json!({
            "properties": {"a": {}}, "items": [{}], "anyOf": [{}], "additionalProperties": {},
            "$defs": {"d": {}}, "not": {}, "enum": [{"looks": "like a schema, is a value"}],
        });
        let mut visited = 0;
        walk_mut(&mut schema, &mut |_| visited += 1);
        assert_eq!(visited, 7, "the root, six subschemas, and not the enum's value");

        let mut deep = json!({});
        for _ in 0..(MAX_DEPTH + 10) {
            deep = json!({"items": deep});
        }
        let mut visited = 0;
        walk_mut(&mut deep, &mut |_| visited += 1);
        assert_eq!(visited, MAX_DEPTH);
    }
}
