//! An OpenAPI document: loading (JSON or YAML, 3.0 or 3.1) and local `$ref` resolution.

use std::path::Path;

use serde_json::{Map, Value};

use crate::error::OpenApiError;

/// How deep schemas are inlined before the rest is left as "any value".
const MAX_SCHEMA_DEPTH: usize = 32;

/// A parsed OpenAPI 3.0 or 3.1 document.
#[derive(Clone, Debug)]
pub struct OpenApiDocument {
    root: Value,
    version: String,
}

/// The most a document fetched over HTTP may weigh: 16 MiB.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

impl OpenApiDocument {
    /// Parses a document in JSON or YAML (JSON is tried first when the text starts with `{`).
    pub fn parse(text: &str) -> Result<Self, OpenApiError> {
        let root: Value = if text.trim_start().starts_with('{') {
            serde_json::from_str(text).map_err(|e| OpenApiError::Parse(format!("invalid JSON: {e}")))?
        } else {
            serde_yaml_ng::from_str(text).map_err(|e| OpenApiError::Parse(format!("invalid YAML: {e}")))?
        };
        OpenApiDocument::from_value(root)
    }

    /// Reads and parses a file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<Self, OpenApiError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| OpenApiError::Parse(format!("cannot read {}: {e}", path.display())))?;
        OpenApiDocument::parse(&text)
    }

    /// Reads and parses a file without blocking the runtime (REQ-157).
    pub async fn from_file(path: impl AsRef<Path>) -> Result<Self, OpenApiError> {
        let path = path.as_ref();
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|e| OpenApiError::Fetch(format!("cannot read {}: {e}", path.display())))?;
        OpenApiDocument::parse(&text)
    }

    /// Fetches a document with `client` (its timeouts and proxies) and parses it (REQ-157). A
    /// status other than 2xx and a body over [`MAX_DOCUMENT_BYTES`] are errors; the URL's
    /// credentials never appear in them.
    pub async fn from_url(url: &str, client: &sinew_http::HttpClient) -> Result<Self, OpenApiError> {
        let request = sinew_http::HttpRequest {
            method: http::Method::GET,
            url: url.to_owned(),
            headers: vec![("accept".into(), "application/json, application/yaml;q=0.9, */*;q=0.5".into())],
            body: bytes::Bytes::new(),
        };
        let fetch = |e: sinew_core::ProviderError| OpenApiError::Fetch(e.to_string());
        let mut response = client.send_once(&request).await.map_err(fetch)?;
        if !response.status.is_success() {
            return Err(OpenApiError::Fetch(format!("the server answered {}", response.status)));
        }
        let body = response.bytes(MAX_DOCUMENT_BYTES + 1).await.map_err(fetch)?;
        if body.len() > MAX_DOCUMENT_BYTES {
            return Err(OpenApiError::Fetch(format!("the document is larger than {MAX_DOCUMENT_BYTES} bytes")));
        }
        let text = std::str::from_utf8(&body).map_err(|e| OpenApiError::Parse(format!("not UTF-8: {e}")))?;
        OpenApiDocument::parse(text)
    }

    /// A document already parsed into JSON.
    pub fn from_value(root: Value) -> Result<Self, OpenApiError> {
        let version = match root.get("openapi") {
            Some(Value::String(version)) => version.clone(),
            Some(_) => return Err(OpenApiError::Invalid("`openapi` is not a string".into())),
            None if root.get("swagger").is_some() => {
                return Err(OpenApiError::Invalid("Swagger 2.0 is not supported: convert it to OpenAPI 3".into()));
            }
            None => return Err(OpenApiError::Invalid("no `openapi` version field: not an OpenAPI document".into())),
        };
        if !(version.starts_with("3.0") || version.starts_with("3.1")) {
            return Err(OpenApiError::Invalid(format!("OpenAPI {version} is not supported (3.0 and 3.1 are)")));
        }
        if !root.get("paths").is_none_or(Value::is_object) {
            return Err(OpenApiError::Invalid("`paths` is not an object".into()));
        }
        Ok(OpenApiDocument { root, version })
    }

    /// The `openapi` field (`3.0.3`, `3.1.0`...).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The document as JSON.
    pub fn root(&self) -> &Value {
        &self.root
    }

    /// `info.title`.
    pub fn title(&self) -> Option<&str> {
        self.root.pointer("/info/title").and_then(Value::as_str)
    }

    /// The first server's URL with its variables at their defaults.
    pub fn server_url(&self) -> Option<String> {
        let server = self.root.pointer("/servers/0")?;
        let mut url = server.get("url")?.as_str()?.to_owned();
        if let Some(variables) = server.get("variables").and_then(Value::as_object) {
            for (name, variable) in variables {
                if let Some(default) = variable.get("default").and_then(Value::as_str) {
                    url = url.replace(&format!("{{{name}}}"), default);
                }
            }
        }
        Some(url)
    }

    /// What a local reference (`#/components/...`) points at. External references are refused.
    pub fn resolve(&self, reference: &str) -> Result<&Value, OpenApiError> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(OpenApiError::Ref {
                reference: reference.to_owned(),
                why: "only local references (#/...) are supported".into(),
            });
        };
        self.root
            .pointer(pointer)
            .ok_or_else(|| OpenApiError::Ref { reference: reference.to_owned(), why: "it points at nothing".into() })
    }

    /// `value`, or what it refers to, following chains of `$ref`s (a cycle is an error).
    pub fn deref<'a>(&'a self, value: &'a Value) -> Result<&'a Value, OpenApiError> {
        let mut current = value;
        let mut seen: Vec<&str> = Vec::new();
        while let Some(reference) = current.get("$ref").and_then(Value::as_str) {
            if seen.contains(&reference) {
                return Err(OpenApiError::Ref { reference: reference.to_owned(), why: "it refers to itself".into() });
            }
            seen.push(reference);
            current = self.resolve(reference)?;
        }
        Ok(current)
    }

    /// `schema` with every local `$ref` replaced by what it refers to. A reference met again
    /// inside itself (a recursive schema) becomes a schema accepting anything, with a
    /// description saying so; so do unresolvable references, with a warning.
    pub fn inline_schema(&self, schema: &Value) -> Value {
        let mut stack = Vec::new();
        self.inline(schema, &mut stack)
    }

    fn inline(&self, value: &Value, stack: &mut Vec<String>) -> Value {
        if stack.len() > MAX_SCHEMA_DEPTH {
            return serde_json::json!({"description": "(nested too deeply to describe)"});
        }
        match value {
            Value::Object(object) => {
                if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
                    let name = reference.rsplit('/').next().unwrap_or(reference).to_owned();
                    if stack.iter().any(|r| r == reference) {
                        return serde_json::json!({"description": format!("(recursive: another {name})")});
                    }
                    let target = match self.resolve(reference) {
                        Ok(target) => target,
                        Err(error) => {
                            tracing::warn!(%error, "leaving a schema reference unresolved");
                            return serde_json::json!({"description": format!("(unresolved reference {reference})")});
                        }
                    };
                    stack.push(reference.to_owned());
                    let mut inlined = self.inline(target, stack);
                    stack.pop();
                    // Siblings of `$ref` (3.1 allows them: description, nullable...) win.
                    if let Value::Object(inlined) = &mut inlined {
                        for (key, sibling) in object.iter().filter(|(k, _)| k.as_str() != "$ref") {
                            inlined.insert(key.clone(), self.inline(sibling, stack));
                        }
                    }
                    return inlined;
                }
                let mut out = Map::with_capacity(object.len());
                for (key, item) in object {
                    // `properties` maps names to schemas; `example(s)` are data, not schemas.
                    let inlined = if matches!(key.as_str(), "example" | "examples" | "default" | "enum" | "const") {
                        item.clone()
                    } else {
                        self.inline(item, stack)
                    };
                    out.insert(key.clone(), inlined);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|item| self.inline(item, stack)).collect()),
            other => other.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn yaml_and_json_documents_load_and_others_are_refused() {
        let yaml = "openapi: 3.1.0\ninfo: {title: T, version: '1'}\npaths: {}\n";
        assert_eq!(OpenApiDocument::parse(yaml).unwrap().version(), "3.1.0");
        let json = r#"{"openapi": "3.0.3", "info": {"title": "T"}, "paths": {}}"#;
        assert_eq!(OpenApiDocument::parse(json).unwrap().title(), Some("T"));
        for (text, expected) in [
            ("swagger: '2.0'\n", "Swagger 2.0"),
            ("openapi: 4.0.0\n", "not supported"),
            ("info: {}\n", "not an OpenAPI document"),
            ("openapi: 3.0.0\npaths: [1]\n", "`paths` is not an object"),
            ("{\"openapi\": ", "invalid JSON"),
            ("openapi: [unclosed\n", "invalid YAML"),
        ] {
            let error = OpenApiDocument::parse(text).unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
    }

    #[test]
    fn server_variables_take_their_defaults() {
        let doc = OpenApiDocument::from_value(json!({"openapi": "3.0.0", "paths": {},
            "servers": [{"url": "https://{region}.api.test/{v}", "variables": {"region": {"default": "eu"}, "v": {"default": "v2"}}}]}))
        .unwrap();
        assert_eq!(doc.server_url().as_deref(), Some("https://eu.api.test/v2"));
    }

    #[test]
    fn references_are_inlined_and_cycles_stop() {
        let doc = OpenApiDocument::from_value(json!({"openapi": "3.0.0", "paths": {}, "components": {"schemas": {
            "Node": {"type": "object", "properties": {"value": {"type": "string"}, "next": {"$ref": "#/components/schemas/Node"}}},
            "Alias": {"$ref": "#/components/schemas/Node"},
            "Loop1": {"$ref": "#/components/schemas/Loop2"},
            "Loop2": {"$ref": "#/components/schemas/Loop1"}
        }}}))
        .unwrap();
        let inlined = doc.inline_schema(&json!({"$ref": "#/components/schemas/Alias", "description": "the head"}));
        assert_eq!(inlined["description"], "the head");
        assert_eq!(inlined["properties"]["value"]["type"], "string");
        assert_eq!(inlined["properties"]["next"]["description"], "(recursive: another Node)");
        assert_eq!(
            doc.inline_schema(&json!({"$ref": "#/components/schemas/Loop1"}))["description"],
            "(recursive: another Loop1)"
        );
        assert!(doc.deref(&json!({"$ref": "#/components/schemas/Loop1"})).unwrap_err().to_string().contains("itself"));
        let missing = doc.inline_schema(&json!({"$ref": "#/components/schemas/Nope"}));
        assert_eq!(missing["description"], "(unresolved reference #/components/schemas/Nope)");
        assert!(doc.resolve("other.yaml#/x").unwrap_err().to_string().contains("only local"));
    }
}
