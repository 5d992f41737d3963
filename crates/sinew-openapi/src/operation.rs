//! Operations of a document, as tools: names, parameters, request bodies, schemas.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::document::OpenApiDocument;

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];
/// Longest tool name most providers accept.
const MAX_NAME: usize = 64;

/// Where a parameter goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// In the URL path, filling `{name}` in the path template (`in: path`).
    Path,
    /// In the query string (`in: query`).
    Query,
    /// A request header (`in: header`).
    Header,
    /// A cookie, sent in the `Cookie` header (`in: cookie`).
    Cookie,
}

impl Location {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "path" => Some(Location::Path),
            "query" => Some(Location::Query),
            "header" => Some(Location::Header),
            "cookie" => Some(Location::Cookie),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

/// How a parameter is serialized (OpenAPI's `style` and `explode`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parameter {
    /// The name on the wire.
    pub name: String,
    /// The name in the tool's arguments (the wire name, or `{location}_{name}` on a clash).
    pub argument: String,
    /// Where the parameter goes (`in`).
    pub location: Location,
    /// Whether the tool's arguments must include it (`required`); always `true` for path parameters.
    pub required: bool,
    /// How the value is serialized (`style`); default `form` for query and cookie, `simple` otherwise.
    pub style: String,
    /// Whether arrays and objects become separate values (`explode`); default `true` for `form` style.
    pub explode: bool,
    /// The JSON Schema of its argument, `$ref`s inlined, with the parameter's `description`;
    /// `{"type": "string"}` when the document gives none.
    pub schema: Value,
}

/// The request body of an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestBody {
    /// The media type sent: a JSON type first, then a URL-encoded form, else the first one listed.
    pub content_type: String,
    /// Whether the tool's arguments must include the body (`required`; default `false`).
    pub required: bool,
    /// The JSON Schema of the body, `$ref`s inlined; `{}` when the document gives none.
    pub schema: Value,
    /// The argument holding it (`body`, or `request_body` if a parameter is called `body`).
    pub argument: String,
}

/// One operation, ready to be a tool.
#[derive(Clone, Debug, PartialEq)]
pub struct Operation {
    /// The tool's name: the sanitized `operationId`, else built from method and path
    /// (`get_pet_by_petId`); unique in the toolset and at most 64 characters.
    pub tool_name: String,
    /// The document's `operationId`, when it has one.
    pub operation_id: Option<String>,
    /// The document's `tags`.
    pub tags: Vec<String>,
    /// The HTTP method.
    pub method: http::Method,
    /// The path template as the document writes it (`/pets/{petId}`).
    pub path: String,
    /// The tool's description: the operation's `summary` and `description`, else `"GET /path"`.
    pub description: String,
    /// The operation's parameters and its path's (the operation's own win on a clash), in document order.
    pub parameters: Vec<Parameter>,
    /// The request body; `None` when the operation takes none or it has no `content`.
    pub body: Option<RequestBody>,
    /// Security requirements in force (the operation's, else the document's): alternatives, each
    /// a list of scheme names.
    pub security: Vec<Vec<String>>,
    /// The JSON Schema of the tool's arguments.
    pub input_schema: Value,
}

/// Which operations become tools ([`OpenApiToolset::filter`](crate::OpenApiToolset::filter)).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub enum OperationFilter {
    /// Every operation.
    #[default]
    All,
    /// The operations with one of these `operationId`s.
    ByOperationId(Vec<String>),
    /// The operations tagged with any of these tags.
    ByTag(Vec<String>),
    /// The operations of these methods.
    ByMethod(Vec<http::Method>),
    /// The operations whose path starts with this.
    ByPathPrefix(String),
}

impl OperationFilter {
    /// Whether `operation` passes.
    pub fn matches(&self, operation: &Operation) -> bool {
        match self {
            OperationFilter::All => true,
            OperationFilter::ByOperationId(ids) => operation.operation_id.as_ref().is_some_and(|id| ids.contains(id)),
            OperationFilter::ByTag(tags) => operation.tags.iter().any(|tag| tags.contains(tag)),
            OperationFilter::ByMethod(methods) => methods.contains(&operation.method),
            OperationFilter::ByPathPrefix(prefix) => operation.path.starts_with(prefix.as_str()),
        }
    }
}

/// Every operation of `document`, in path order.
///
/// Tool names: the `operationId` with characters other than letters, digits, `_` and `-`
/// replaced by `_`. An operation without one is named from its method and path:
/// `GET /pet/{petId}/uploadImage` → `get_pet_by_petId_uploadImage`. Names are cut to 64
/// characters (with a short hash of the whole name to keep them apart); a name taken twice gets
/// `_2`, `_3`... Operations whose parameters cannot be read are skipped with a warning.
pub fn operations(document: &OpenApiDocument) -> Vec<Operation> {
    let mut out = Vec::new();
    let mut taken = HashSet::new();
    let Some(paths) = document.root().get("paths").and_then(Value::as_object) else { return out };
    let global_security = security_of(document.root().get("security"));
    for (path, item) in paths {
        let item = match document.deref(item) {
            Ok(item) => item,
            Err(error) => {
                tracing::warn!(path, %error, "skipping a path item");
                continue;
            }
        };
        let shared = item.get("parameters").and_then(Value::as_array).cloned().unwrap_or_default();
        for method in METHODS {
            let Some(operation) = item.get(*method) else { continue };
            match operation_of(document, path, method, operation, &shared, &global_security, &mut taken) {
                Ok(operation) => out.push(operation),
                Err(why) => tracing::warn!(path, method, why, "skipping an operation"),
            }
        }
    }
    out
}

fn operation_of(
    document: &OpenApiDocument,
    path: &str,
    method: &str,
    operation: &Value,
    shared: &[Value],
    global_security: &[Vec<String>],
    taken: &mut HashSet<String>,
) -> Result<Operation, String> {
    // Path-level parameters, overridden by the operation's own with the same name and location.
    let mut raw: Vec<&Value> = Vec::new();
    for parameter in operation.get("parameters").and_then(Value::as_array).into_iter().flatten().chain(shared) {
        let parameter = document.deref(parameter).map_err(|e| e.to_string())?;
        let key = (parameter.get("name"), parameter.get("in"));
        if !raw.iter().any(|p| (p.get("name"), p.get("in")) == key) {
            raw.push(parameter);
        }
    }
    let mut parameters = Vec::with_capacity(raw.len());
    for parameter in raw {
        let name = parameter.get("name").and_then(Value::as_str).ok_or("a parameter without a name")?;
        let location_text = parameter.get("in").and_then(Value::as_str).unwrap_or_default();
        let location =
            Location::parse(location_text).ok_or_else(|| format!("parameter `{name}` is in `{location_text}`"))?;
        let style = parameter.get("style").and_then(Value::as_str).map_or_else(
            || if matches!(location, Location::Query | Location::Cookie) { "form" } else { "simple" }.to_owned(),
            str::to_owned,
        );
        let explode = parameter.get("explode").and_then(Value::as_bool).unwrap_or(style == "form");
        let schema = parameter
            .get("schema")
            .or_else(|| {
                parameter.get("content").and_then(Value::as_object).and_then(|c| c.values().next()?.get("schema"))
            })
            .map_or_else(|| json!({"type": "string"}), |s| document.inline_schema(s));
        let mut schema = schema;
        if let (Some(description), Value::Object(object)) = (parameter.get("description"), &mut schema) {
            object.entry("description").or_insert_with(|| description.clone());
        }
        parameters.push(Parameter {
            name: name.to_owned(),
            argument: name.to_owned(),
            location,
            required: location == Location::Path || parameter.get("required").and_then(Value::as_bool).unwrap_or(false),
            style,
            explode,
            schema,
        });
    }
    // Two parameters with one name in different places: both are qualified by their location.
    let names: Vec<String> = parameters.iter().map(|p| p.name.clone()).collect();
    for parameter in &mut parameters {
        if names.iter().filter(|n| **n == parameter.name).count() > 1 {
            parameter.argument = format!("{}_{}", parameter.location.as_str(), parameter.name);
        }
    }
    let body = match operation.get("requestBody") {
        Some(body) => request_body(document, body, &parameters)?,
        None => None,
    };
    let security = match operation.get("security") {
        Some(security) => security_of(Some(security)),
        None => global_security.to_vec(),
    };
    let operation_id = operation.get("operationId").and_then(Value::as_str).filter(|id| !id.trim().is_empty());
    let name = match operation_id {
        Some(id) => sanitize(id),
        None => name_from_path(method, path),
    };
    let tags = operation
        .get("tags")
        .and_then(Value::as_array)
        .map(|tags| tags.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let tool_name = unique(name, taken);
    let summary = operation.get("summary").and_then(Value::as_str).unwrap_or_default();
    let details = operation.get("description").and_then(Value::as_str).unwrap_or_default();
    let description = match (summary.is_empty(), details.is_empty()) {
        (false, false) if details.starts_with(summary) => details.to_owned(),
        (false, false) => format!("{summary}\n\n{details}"),
        (false, true) => summary.to_owned(),
        (true, false) => details.to_owned(),
        (true, true) => format!("{} {path}", method.to_uppercase()),
    };
    let input_schema = input_schema(&parameters, body.as_ref());
    Ok(Operation {
        tool_name,
        operation_id: operation_id.map(str::to_owned),
        tags,
        method: method.to_uppercase().parse().map_err(|_| format!("method {method}"))?,
        path: path.to_owned(),
        description,
        parameters,
        body,
        security,
        input_schema,
    })
}

fn request_body(
    document: &OpenApiDocument,
    body: &Value,
    parameters: &[Parameter],
) -> Result<Option<RequestBody>, String> {
    let body = document.deref(body).map_err(|e| e.to_string())?;
    let Some(content) = body.get("content").and_then(Value::as_object) else { return Ok(None) };
    // JSON first, then forms, then whatever comes first.
    let pick = content
        .keys()
        .find(|t| t.starts_with("application/json") || t.ends_with("+json"))
        .or_else(|| content.keys().find(|t| t.starts_with("application/x-www-form-urlencoded")))
        .or_else(|| content.keys().next());
    let Some(content_type) = pick else { return Ok(None) };
    let schema = content[content_type].get("schema").map_or_else(|| json!({}), |s| document.inline_schema(s));
    let argument = if parameters.iter().any(|p| p.argument == "body") { "request_body" } else { "body" };
    Ok(Some(RequestBody {
        content_type: content_type.clone(),
        required: body.get("required").and_then(Value::as_bool).unwrap_or(false),
        schema,
        argument: argument.to_owned(),
    }))
}

fn input_schema(parameters: &[Parameter], body: Option<&RequestBody>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for parameter in parameters {
        properties.insert(parameter.argument.clone(), parameter.schema.clone());
        if parameter.required {
            required.push(Value::from(parameter.argument.clone()));
        }
    }
    if let Some(body) = body {
        let mut schema = body.schema.clone();
        if let Value::Object(object) = &mut schema {
            object
                .entry("description")
                .or_insert_with(|| Value::from(format!("The request body ({}).", body.content_type)));
        }
        properties.insert(body.argument.clone(), schema);
        if body.required {
            required.push(Value::from(body.argument.clone()));
        }
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

fn security_of(security: Option<&Value>) -> Vec<Vec<String>> {
    security
        .and_then(Value::as_array)
        .map(|alternatives| {
            alternatives
                .iter()
                .filter_map(Value::as_object)
                .map(|alternative| alternative.keys().cloned().collect())
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    let out = out.trim_matches('_').to_owned();
    if out.is_empty() { "operation".to_owned() } else { out }
}

/// `get /pet/{petId}/uploadImage` → `get_pet_by_petId_uploadImage`.
fn name_from_path(method: &str, path: &str) -> String {
    let mut parts = vec![method.to_lowercase()];
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        // `{id}` → `by_id`, also inside a segment (`{id}.json`).
        parts.push(segment.replace('{', "_by_").replace('}', "_"));
    }
    sanitize(&parts.join("_"))
}

pub(crate) fn unique(name: String, taken: &mut HashSet<String>) -> String {
    let name = if name.len() > MAX_NAME {
        let hash =
            name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        format!("{}_{:08x}", &name[..MAX_NAME - 9], hash as u32)
    } else {
        name
    };
    let mut candidate = name.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        let suffix = format!("_{n}");
        candidate = format!("{}{suffix}", &name[..name.len().min(MAX_NAME - suffix.len())]);
        n += 1;
    }
    candidate
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(value: Value) -> OpenApiDocument {
        OpenApiDocument::from_value(value).unwrap()
    }

    #[test]
    fn names_come_from_operation_ids_or_from_method_and_path() {
        assert_eq!(name_from_path("GET", "/pet/{petId}/uploadImage"), "get_pet_by_petId_uploadImage");
        assert_eq!(name_from_path("delete", "/v1/users/{user-id}.json"), "delete_v1_users_by_user-id_json");
        assert_eq!(sanitize("findPets By.Status"), "findPets_By_Status");
        let mut taken = HashSet::new();
        assert_eq!(unique("a".into(), &mut taken), "a");
        assert_eq!(unique("a".into(), &mut taken), "a_2");
        let long = unique("x".repeat(100), &mut taken);
        assert_eq!(long.len(), 64);
        assert_ne!(unique("x".repeat(99), &mut taken), long, "long names stay apart");
    }

    #[test]
    fn parameters_merge_path_level_ones_and_clashing_names_are_qualified() {
        let doc = doc(json!({"openapi": "3.0.0", "components": {"parameters": {
            "Id": {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}, "description": "The id"}}},
        "paths": {"/things/{id}": {
            "parameters": [{"$ref": "#/components/parameters/Id"}, {"name": "trace", "in": "header", "schema": {"type": "string"}}],
            "get": {"parameters": [
                {"name": "trace", "in": "header", "required": true, "schema": {"type": "string", "enum": ["on", "off"]}},
                {"name": "id", "in": "query", "schema": {"type": "array", "items": {"type": "string"}}, "explode": false}
            ]}}}}));
        let ops = operations(&doc);
        let op = &ops[0];
        assert_eq!(op.tool_name, "get_things_by_id");
        assert_eq!(op.description, "GET /things/{id}");
        let arguments: Vec<&str> = op.parameters.iter().map(|p| p.argument.as_str()).collect();
        assert_eq!(arguments, ["trace", "query_id", "path_id"]);
        let trace = &op.parameters[0];
        assert!(trace.required, "the operation's own definition wins");
        assert_eq!((trace.style.as_str(), trace.explode), ("simple", false));
        let query_id = &op.parameters[1];
        assert_eq!((query_id.style.as_str(), query_id.explode), ("form", false));
        assert_eq!(op.input_schema["properties"]["path_id"], json!({"type": "integer", "description": "The id"}));
        assert_eq!(op.input_schema["properties"]["trace"]["enum"], json!(["on", "off"]));
        assert_eq!(op.input_schema["required"], json!(["trace", "path_id"]));
    }

    #[test]
    fn broken_operations_are_skipped_and_the_rest_kept() {
        let doc = doc(json!({"openapi": "3.0.0", "paths": {
            "/swagger2": {"post": {"operationId": "old", "parameters": [{"name": "b", "in": "body"}]}},
            "/dangling": {"get": {"operationId": "dangling", "parameters": [{"$ref": "#/components/parameters/Nope"}]}},
            "/loop": {"$ref": "#/paths/~1loop"},
            "/fine": {"get": {"operationId": "fine"}}
        }}));
        let names: Vec<String> = operations(&doc).into_iter().map(|o| o.tool_name).collect();
        assert_eq!(names, ["fine"]);
    }

    #[test]
    fn request_bodies_and_security_are_read() {
        let doc = doc(json!({"openapi": "3.1.0", "security": [{"key": []}],
            "components": {"requestBodies": {"Pet": {"required": true, "content": {
                "application/xml": {"schema": {"type": "string"}},
                "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}},
                "schemas": {"Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}},
            "paths": {"/pets": {
                "post": {"operationId": "addPet", "summary": "Add a pet", "requestBody": {"$ref": "#/components/requestBodies/Pet"}},
                "get": {"operationId": "listPets", "security": []}}}}));
        let ops = operations(&doc);
        let add = ops.iter().find(|o| o.tool_name == "addPet").unwrap();
        let body = add.body.as_ref().unwrap();
        assert_eq!((body.content_type.as_str(), body.required), ("application/json", true));
        assert_eq!(add.input_schema["properties"]["body"]["required"], json!(["name"]));
        assert_eq!(add.input_schema["required"], json!(["body"]));
        assert_eq!(add.security, [vec!["key".to_owned()]]);
        assert_eq!(add.description, "Add a pet");
        let list = ops.iter().find(|o| o.tool_name == "listPets").unwrap();
        assert!(list.security.is_empty(), "an empty list turns the global requirement off");
    }
}
