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
//!         "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
//!         "required": ["city", "zip"],
//!         "additionalProperties": false,
//!     })
//! );
//! ```

use serde_json::{Map, Value, json};

/// How deep [`walk_mut`] descends; deeper subschemas are left as they are. (Parsed JSON is at
/// most 128 levels deep, so this only bounds schemas built in code.)
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

/// `schema` in the shape strict structured output requires (OpenAI's strict mode, strict tools):
/// every object closed (`additionalProperties: false`) with all its properties required, the
/// ones that were optional made nullable instead; what strict mode refuses removed or loosened:
/// `default`, formats outside its list, `oneOf` (made `anyOf`), keywords next to a `$ref` (the
/// reference moved into an `anyOf` of its own). The result may accept what `schema` does not
/// (`null` for an absent optional property, which serde reads as `None` for an `Option`), so
/// answers are still validated against `schema`.
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
        if !matches!(node.get("properties"), Some(Value::Object(_))) {
            if is_object(node) && !node.contains_key("additionalProperties") {
                node.insert("additionalProperties".into(), Value::Bool(false));
            }
            return;
        }
        let required = match node.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            _ => Vec::new(),
        };
        let Some(Value::Object(properties)) = node.get_mut("properties") else { return };
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                make_nullable(property);
            }
        }
        let all: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
        node.insert("required".into(), Value::Array(all));
        node.insert("additionalProperties".into(), Value::Bool(false));
    });
    schema
}

/// Moves a `$ref` that has sibling keywords into an `anyOf` of its own, as services that refuse
/// siblings next to a reference want it (`$defs` stays where it is).
pub fn isolate_ref(node: &mut Map<String, Value>) {
    if !node.contains_key("$ref") || node.keys().all(|k| k.starts_with('$')) {
        return;
    }
    let reference: Map<String, Value> =
        node.iter().filter(|(k, _)| k.starts_with('$') && *k != "$defs").map(|(k, v)| (k.clone(), v.clone())).collect();
    node.retain(|k, _| !k.starts_with('$') || k == "$defs");
    match node.get_mut("anyOf") {
        Some(Value::Array(branches)) => branches.push(Value::Object(reference)),
        _ => {
            node.insert("anyOf".into(), Value::Array(vec![Value::Object(reference)]));
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

/// Lets `schema` also accept `null`.
fn make_nullable(schema: &mut Value) {
    let null = Value::String("null".into());
    if let Value::Object(node) = schema {
        match node.get_mut("type") {
            Some(Value::String(kind)) if kind != "null" => {
                let kind = Value::String(std::mem::take(kind));
                node.insert("type".into(), Value::Array(vec![kind, null]));
                if let Some(Value::Array(values)) = node.get_mut("enum")
                    && !values.contains(&Value::Null)
                {
                    values.push(Value::Null);
                }
                return;
            }
            Some(Value::String(_)) => return,
            Some(Value::Array(kinds)) => {
                if !kinds.contains(&null) {
                    kinds.push(null);
                }
                return;
            }
            _ => {}
        }
        if let Some(Value::Array(branches)) = node.get_mut("anyOf") {
            if !branches.iter().any(|b| b.get("type") == Some(&null)) {
                branches.push(json!({"type": "null"}));
            }
            return;
        }
    }
    let inner = std::mem::take(schema);
    *schema = json!({"anyOf": [inner, {"type": "null"}]});
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_closes_nested_objects_and_makes_optional_properties_nullable() {
        let schema = json!({
            "$defs": {"Tag": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "type": "object",
            "properties": {
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "when": {"type": ["string", "null"]},
                "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "any": {},
                "map": {"type": "object"},
                "kind": {"oneOf": [{"const": "a"}, {"const": "b"}], "format": "uint8"},
                "at": {"type": "string", "format": "date-time"},
                "tag": {"$ref": "#/$defs/Tag", "description": "The tag."},
            },
            "required": ["tags", "kind", "at", "tag"],
        });
        assert_eq!(
            strict(&schema),
            json!({
                "$defs": {"Tag": {
                    "type": "object",
                    "properties": {"name": {"type": ["string", "null"]}},
                    "required": ["name"],
                    "additionalProperties": false,
                }},
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                    "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                    "when": {"type": ["string", "null"]},
                    "either": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
                    "any": {"anyOf": [{}, {"type": "null"}]},
                    "map": {"type": ["object", "null"], "additionalProperties": false},
                    "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]},
                    "at": {"type": "string", "format": "date-time"},
                    "tag": {"description": "The tag.", "anyOf": [{"$ref": "#/$defs/Tag"}]},
                },
                // serde_json keeps keys sorted (no `preserve_order`).
                "required": ["any", "at", "either", "kind", "map", "mode", "tag", "tags", "when"],
                "additionalProperties": false,
            })
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
