//! What the protocol revisions say: versions, tool descriptions, tool results, `x-mcp-header`.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The stateless revision: no handshake, `_meta` on every request.
pub const STATELESS_VERSIONS: &[&str] = &["2026-07-28"];
/// The handshake revisions, newest first.
pub const HANDSHAKE_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The newest revision.
pub const LATEST_VERSION: &str = "2026-07-28";
/// The newest revision with the `initialize` handshake.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";
/// The revision of the legacy HTTP+SSE transport.
pub const LEGACY_SSE_VERSION: &str = "2024-11-05";

/// `_meta` keys of the stateless revision.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Whether `version` is a revision this client speaks.
pub fn is_known_version(version: &str) -> bool {
    STATELESS_VERSIONS.contains(&version) || HANDSHAKE_VERSIONS.contains(&version)
}

/// Whether `version` is a stateless revision.
pub fn is_stateless_version(version: &str) -> bool {
    STATELESS_VERSIONS.contains(&version)
}

/// Which lifecycle to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProtocolEra {
    /// Try the stateless revision (`server/discover`) first, fall back to the handshake.
    #[default]
    Auto,
    /// Only the stateless revision.
    Stateless,
    /// Only the `initialize` handshake.
    Handshake,
}

/// `name` and `version` of a client or server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementation {
    /// The program's name (`name`).
    pub name: String,
    /// The program's version (`version`), free-form.
    pub version: String,
}

impl Implementation {
    /// An implementation called `name` at `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation { name: name.into(), version: version.into() }
    }
}

/// What the connection settled on.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerDescription {
    /// The negotiated protocol revision.
    pub protocol_version: String,
    /// Whether the stateless revision is in use.
    pub stateless: bool,
    /// The server's name and version (`serverInfo`); `None` when it sent none.
    pub server_info: Option<Implementation>,
    /// The server's capabilities, as it sent them.
    pub capabilities: Value,
    /// Usage hints for the model, if the server gave any.
    pub instructions: Option<String>,
}

/// A tool the server offers, with its schemas verbatim (no `$ref` is resolved or fetched).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpToolInfo {
    /// The tool's name (`name`), unique on its server; `tools/call` requests name it.
    pub name: String,
    /// A display name (`title`, since 2025-06-18); `None`: `name` serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model (`description`); `None` when the server gave none.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema of the arguments (`inputSchema`); `{"type": "object"}` when missing.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// The JSON Schema of the result's `structuredContent` (`outputSchema`), if the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behavior hints (`annotations`: `readOnlyHint`, `destructiveHint`...), as the server sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// What `tools/call` returned.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// The result's content blocks (`content`: text, image, audio, resources...), as sent; empty when missing.
    #[serde(default)]
    pub content: Vec<Value>,
    /// The structured result (`structuredContent`), matching the tool's output schema; `None` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed (`isError`); `false` when missing.
    #[serde(default)]
    pub is_error: bool,
}

/// A root the client exposes to servers that ask (`roots/list`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// The root's URI (`uri`), a `file://` URI.
    pub uri: String,
    /// A display name for the root (`name`); `None`: left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root for a local directory (`file://` + its absolute path).
    pub fn directory(path: &std::path::Path) -> Self {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Root {
            uri: format!("file://{}", absolute.display()),
            name: absolute.file_name().map(|n| n.to_string_lossy().into_owned()),
        }
    }
}

/// The `x-mcp-header` annotations of a tool's parameters (2026-07-28, SEP-2243): parameter name →
/// header suffix, so that `{"region": "eu"}` travels as `Mcp-Param-Region: eu`.
///
/// Errors name what makes the tool invalid; a client must not call such a tool.
pub(crate) fn param_headers(schema: &Value) -> Result<Vec<(String, String)>, String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Ok(Vec::new()) };
    let mut headers: Vec<(String, String)> = Vec::new();
    for (param, property) in properties {
        let Some(header) = property.get("x-mcp-header") else { continue };
        let Some(header) = header.as_str() else { return Err(format!("`{param}`: x-mcp-header is not a string")) };
        if header.is_empty() {
            return Err(format!("`{param}`: x-mcp-header is empty"));
        }
        if !header.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
            return Err(format!("`{param}`: x-mcp-header `{header}` has characters a header name cannot have"));
        }
        match property.get("type").and_then(Value::as_str) {
            Some("string" | "integer" | "boolean") => {}
            other => return Err(format!("`{param}`: x-mcp-header on a parameter of type {other:?}")),
        }
        if headers.iter().any(|(_, h)| h.eq_ignore_ascii_case(header)) {
            return Err(format!("`{param}`: x-mcp-header `{header}` is used twice"));
        }
        headers.push((param.clone(), header.to_owned()));
    }
    Ok(headers)
}

/// `Mcp-Param-*` headers for a call's arguments. Null and missing values send no header; strings
/// that are not plain visible ASCII, or have surrounding whitespace, are sent as `=?base64?…?=`.
pub(crate) fn param_header_values(annotations: &[(String, String)], arguments: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (param, header) in annotations {
        let value = match arguments.get(param) {
            None | Some(Value::Null) => continue,
            Some(Value::String(text)) => encode_header_text(text),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            Some(_) => continue,
        };
        out.push((format!("Mcp-Param-{header}"), value));
    }
    out
}

fn encode_header_text(text: &str) -> String {
    let plain = text.bytes().all(|b| (0x20..=0x7e).contains(&b)) && text.trim() == text;
    if plain {
        text.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(text))
    }
}

/// `params` with the stateless revision's `_meta` members added (what `params._meta` already
/// holds, such as a progress token, is kept).
pub(crate) fn with_meta(params: &Value, version: &str, capabilities: &Value, client: &Implementation) -> Value {
    let mut object = match params {
        Value::Object(object) => object.clone(),
        _ => Map::new(),
    };
    let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert(META_PROTOCOL_VERSION.into(), Value::from(version));
        meta.insert(META_CLIENT_CAPABILITIES.into(), capabilities.clone());
        meta.insert(META_CLIENT_INFO.into(), serde_json::json!({"name": client.name, "version": client.version}));
    }
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn param_headers_accept_primitives_and_refuse_the_rest() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "query": {"type": "string"}
        }});
        let mut headers = param_headers(&schema).unwrap();
        headers.sort();
        assert_eq!(headers, [("priority".into(), "Priority".into()), ("region".into(), "Region".into())]);
        for (property, expected) in [
            (json!({"type": "string", "x-mcp-header": ""}), "empty"),
            (json!({"type": "object", "x-mcp-header": "Data"}), "type"),
            (json!({"type": "number", "x-mcp-header": "Score"}), "type"),
            (json!({"type": "null", "x-mcp-header": "Nil"}), "type"),
            (json!({"type": "string", "x-mcp-header": "My Region"}), "characters"),
            (json!({"type": "string", "x-mcp-header": "Region:Primary"}), "characters"),
            (json!({"type": "string", "x-mcp-header": "Région"}), "characters"),
            (json!({"type": "string", "x-mcp-header": "Region\t1"}), "characters"),
        ] {
            let error = param_headers(&json!({"properties": {"p": property}})).unwrap_err();
            assert!(error.contains(expected), "{error}");
        }
        let twice = json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"}
        }});
        assert!(param_headers(&twice).unwrap_err().contains("twice"));
    }

    #[test]
    fn header_values_are_encoded_when_they_must_be() {
        let annotations: Vec<(String, String)> = ["s", "n", "b", "u", "w", "c", "e", "missing"]
            .iter()
            .map(|p| ((*p).to_owned(), p.to_uppercase()))
            .collect();
        let arguments = json!({"s": "us west 1", "n": 42, "b": false, "u": "Hello, 世界", "w": " padded ",
            "c": "line1\nline2", "e": "", "missing": null});
        let values = param_header_values(&annotations, &arguments);
        let get = |name: &str| values.iter().find(|(h, _)| h == name).map(|(_, v)| v.as_str());
        assert_eq!(get("Mcp-Param-S"), Some("us west 1"));
        assert_eq!(get("Mcp-Param-N"), Some("42"));
        assert_eq!(get("Mcp-Param-B"), Some("false"));
        assert_eq!(get("Mcp-Param-U"), Some("=?base64?SGVsbG8sIOS4lueVjA==?="));
        assert_eq!(get("Mcp-Param-W"), Some("=?base64?IHBhZGRlZCA=?="));
        assert_eq!(get("Mcp-Param-C"), Some("=?base64?bGluZTEKbGluZTI=?="));
        assert_eq!(get("Mcp-Param-E"), Some(""));
        assert_eq!(get("Mcp-Param-MISSING"), None);
    }

    #[test]
    fn meta_is_added_without_losing_what_params_had() {
        let params = json!({"name": "add", "_meta": {"progressToken": 5}});
        let with = with_meta(&params, "2026-07-28", &json!({}), &Implementation::new("c", "1"));
        assert_eq!(with["name"], "add");
        assert_eq!(with["_meta"]["progressToken"], 5);
        assert_eq!(with["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(with["_meta"][META_CLIENT_INFO], json!({"name": "c", "version": "1"}));
    }
}

/// The `default` of each property of an elicitation's `requestedSchema` (SEP-1034), as the
/// `content` of an answer that accepts every default.
pub fn schema_defaults(schema: &Value) -> Value {
    let mut content = Map::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    Value::Object(content)
}

#[cfg(test)]
mod default_tests {
    use serde_json::json;

    #[test]
    fn defaults_are_collected_per_property() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}
        }});
        assert_eq!(super::schema_defaults(&schema), json!({"name": "John Doe", "age": 30}));
    }
}
