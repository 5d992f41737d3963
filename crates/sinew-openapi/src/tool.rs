//! Operations as agent tools: configuration, authentication, the call, the response.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult};
use sinew_http::{HttpClient, HttpRequest};

use crate::document::OpenApiDocument;
use crate::error::OpenApiError;
use crate::operation::{Operation, OperationFilter, operations};
use crate::request::build;

/// Default size limit of a response shown to the model.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// Default time a call may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A secret for one of the document's security schemes. `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub enum Credential {
    /// An API key (`apiKey` schemes) or a bearer token (`http` bearer, `oauth2`, `openIdConnect`).
    Secret(String),
    /// `http` basic.
    Basic {
        /// The user name; sent as `Authorization: Basic base64(username:password)`.
        username: String,
        /// The password; never shown by `Debug`.
        password: String,
    },
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::Secret(_) => f.write_str("Secret(****)"),
            Credential::Basic { username, .. } => write!(f, "Basic {{ username: {username:?}, password: **** }}"),
        }
    }
}

/// Where a credential goes on a request.
#[derive(Clone, PartialEq, Eq)]
enum Placement {
    Header(String, String),
    Query(String, String),
    Cookie(String, String),
}

/// Builds the tools of a document.
///
/// ```
/// use sinew_openapi::{Credential, OpenApiDocument, OpenApiToolset};
///
/// let document = OpenApiDocument::parse(r#"
/// openapi: 3.0.3
/// servers: [{url: "https://api.example.com/v1"}]
/// components:
///   securitySchemes:
///     key: {type: apiKey, in: header, name: X-Api-Key}
/// security: [{key: []}]
/// paths:
///   /pets/{id}:
///     get:
///       operationId: getPet
///       parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
/// "#).unwrap();
/// let tools = OpenApiToolset::new(document).credential("key", Credential::Secret("s3cret".into())).build().unwrap();
/// assert_eq!(tools[0].name(), "getPet");
/// assert!(!format!("{:?}", tools[0]).contains("s3cret"));
/// # use sinew_core::AgentTool;
/// ```
#[derive(Debug)]
pub struct OpenApiToolset {
    document: OpenApiDocument,
    base_url: Option<String>,
    credentials: HashMap<String, Credential>,
    client: Option<HttpClient>,
    max_response_bytes: usize,
    timeout: Duration,
    filter: OperationFilter,
    name_prefix: Option<String>,
}

impl OpenApiToolset {
    /// Tools for every operation of `document`, with the defaults: the document's first server URL,
    /// no credentials, 64 KiB responses, a 30 s timeout.
    pub fn new(document: OpenApiDocument) -> Self {
        OpenApiToolset {
            document,
            base_url: None,
            credentials: HashMap::new(),
            client: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            timeout: DEFAULT_TIMEOUT,
            filter: OperationFilter::All,
            name_prefix: None,
        }
    }

    /// Only the operations `filter` passes become tools (default: all).
    #[must_use]
    pub fn filter(mut self, filter: OperationFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Tool names become `{prefix}__{name}` (REQ-156), so that two documents with the same
    /// `operationId`s can serve one agent. Characters other than letters, digits, `_` and `-`
    /// become `_`; names stay within 64 characters.
    #[must_use]
    pub fn name_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.name_prefix = Some(prefix.into());
        self
    }

    /// Where requests go, replacing the document's first server URL (path included).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// The secret for the security scheme `scheme` of `components.securitySchemes`.
    #[must_use]
    pub fn credential(mut self, scheme: impl Into<String>, credential: Credential) -> Self {
        self.credentials.insert(scheme.into(), credential);
        self
    }

    /// The HTTP client (default: a new one).
    #[must_use]
    pub fn http_client(mut self, client: HttpClient) -> Self {
        self.client = Some(client);
        self
    }

    /// How much of a response the model sees (default 64 KiB, cut on a character boundary).
    #[must_use]
    pub fn max_response_bytes(mut self, max: usize) -> Self {
        self.max_response_bytes = max;
        self
    }

    /// How long a call may take (default 30 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// One tool per operation. Fails when requests would have nowhere to go: no base URL and
    /// no absolute server URL.
    pub fn build(self) -> Result<Vec<OpenApiTool>, OpenApiError> {
        let base_url = match self.base_url.clone().or_else(|| self.document.server_url()) {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => url,
            Some(url) => {
                return Err(OpenApiError::Invalid(format!(
                    "the server URL `{url}` is relative: give a base URL (OpenApiToolset::base_url)"
                )));
            }
            None => return Err(OpenApiError::Invalid("the document names no server: give a base URL".into())),
        };
        let client = self.client.clone().unwrap_or_default();
        let shared =
            Arc::new(Shared { base_url, client, max_response_bytes: self.max_response_bytes, timeout: self.timeout });
        let mut taken = std::collections::HashSet::new();
        Ok(operations(&self.document)
            .into_iter()
            .filter(|operation| self.filter.matches(operation))
            .map(|mut operation| {
                if let Some(prefix) = &self.name_prefix {
                    let prefixed = format!("{}__{}", crate::operation::sanitize(prefix), operation.tool_name);
                    operation.tool_name = crate::operation::unique(prefixed, &mut taken);
                }
                let auth = self.placements(&operation);
                OpenApiTool { operation, auth, shared: Arc::clone(&shared) }
            })
            .collect())
    }

    /// The tools as `Arc<dyn AgentTool>`s, for `Agent::with_tools`.
    pub fn build_agent_tools(self) -> Result<Vec<Arc<dyn AgentTool>>, OpenApiError> {
        Ok(self.build()?.into_iter().map(|tool| Arc::new(tool) as Arc<dyn AgentTool>).collect())
    }

    /// The credentials of the first security alternative we can satisfy.
    fn placements(&self, operation: &Operation) -> Vec<Placement> {
        for alternative in &operation.security {
            let placed: Option<Vec<Placement>> = alternative.iter().map(|scheme| self.place(scheme)).collect();
            if let Some(placed) = placed {
                return placed;
            }
        }
        if !operation.security.is_empty() {
            tracing::debug!(tool = operation.tool_name, "no credential for any of the operation's security schemes");
        }
        Vec::new()
    }

    fn place(&self, scheme_name: &str) -> Option<Placement> {
        let credential = self.credentials.get(scheme_name)?;
        let scheme = self.document.root().pointer(&format!("/components/securitySchemes/{scheme_name}"))?;
        let scheme = self.document.deref(scheme).ok()?;
        let kind = scheme.get("type").and_then(Value::as_str)?;
        match (kind, credential) {
            ("apiKey", Credential::Secret(key)) => {
                let name = scheme.get("name").and_then(Value::as_str)?.to_owned();
                match scheme.get("in").and_then(Value::as_str)? {
                    "header" => Some(Placement::Header(name, key.clone())),
                    "query" => Some(Placement::Query(name, key.clone())),
                    "cookie" => Some(Placement::Cookie(name, key.clone())),
                    _ => None,
                }
            }
            ("http", Credential::Basic { username, password }) => {
                let pair = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
                Some(Placement::Header("authorization".into(), format!("Basic {pair}")))
            }
            ("http" | "oauth2" | "openIdConnect", Credential::Secret(token)) => {
                Some(Placement::Header("authorization".into(), format!("Bearer {token}")))
            }
            _ => None,
        }
    }
}

#[derive(Debug)]
struct Shared {
    base_url: String,
    client: HttpClient,
    max_response_bytes: usize,
    timeout: Duration,
}

/// One operation as an [`AgentTool`].
///
/// A 4xx or 5xx answer is an error result with the status and the body (and a validating
/// server's `sl-violations` header, as Prism sends). Arguments that do not fit the operation
/// (a required one missing) are refused before any request is made.
#[derive(Clone)]
pub struct OpenApiTool {
    operation: Operation,
    auth: Vec<Placement>,
    shared: Arc<Shared>,
}

impl fmt::Debug for OpenApiTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth: Vec<&str> = self
            .auth
            .iter()
            .map(|p| match p {
                Placement::Header(name, _) | Placement::Query(name, _) | Placement::Cookie(name, _) => name.as_str(),
            })
            .collect();
        f.debug_struct("OpenApiTool")
            .field("name", &self.operation.tool_name)
            .field("method", &self.operation.method)
            .field("path", &self.operation.path)
            .field("base_url", &self.shared.base_url)
            .field("credentials_in", &auth)
            .finish()
    }
}

impl OpenApiTool {
    /// The operation behind the tool.
    pub fn operation(&self) -> &Operation {
        &self.operation
    }

    /// The request a call with `arguments` would send (credentials included).
    pub fn request(&self, arguments: &Value) -> Result<HttpRequest, ToolError> {
        let mut request = build(&self.operation, &self.shared.base_url, arguments).map_err(ToolError::InvalidArgs)?;
        let mut cookies = Vec::new();
        for placement in &self.auth {
            match placement {
                Placement::Header(name, value) => request.headers.push((name.clone(), value.clone())),
                Placement::Query(name, value) => {
                    let pair = format!(
                        "{}={}",
                        percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC),
                        percent_encoding::utf8_percent_encode(value, percent_encoding::NON_ALPHANUMERIC)
                    );
                    request.url.push(if request.url.contains('?') { '&' } else { '?' });
                    request.url.push_str(&pair);
                }
                Placement::Cookie(name, value) => cookies.push(format!("{name}={value}")),
            }
        }
        if !cookies.is_empty() {
            match request.headers.iter_mut().find(|(k, _)| k == "cookie") {
                Some((_, existing)) => {
                    existing.push_str("; ");
                    existing.push_str(&cookies.join("; "));
                }
                None => request.headers.push(("cookie".into(), cookies.join("; "))),
            }
        }
        Ok(request)
    }
}

#[async_trait]
impl AgentTool for OpenApiTool {
    fn name(&self) -> &str {
        &self.operation.tool_name
    }

    fn description(&self) -> &str {
        &self.operation.description
    }

    fn parameters_schema(&self) -> Value {
        self.operation.input_schema.clone()
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        ctx.check_cancelled()?;
        let request = self.request(&params)?;
        let shared = &self.shared;
        let exchange = async {
            let mut response = shared.client.send_once(&request).await.map_err(|e| e.to_string())?;
            let body = response.bytes(shared.max_response_bytes.saturating_add(4)).await.map_err(|e| e.to_string())?;
            Ok::<_, String>((response, body))
        };
        let (response, body) = tokio::select! {
            outcome = tokio::time::timeout(shared.timeout, exchange) => match outcome {
                Ok(Ok(done)) => done,
                Ok(Err(error)) => return Err(ToolError::Failed(format!("{} {}: {error}", self.operation.method, self.operation.path).into())),
                Err(_) => return Err(ToolError::Failed(format!("{} {}: no answer within {:?}", self.operation.method, self.operation.path, shared.timeout).into())),
            },
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let (text, truncated) = truncate_utf8(&body, shared.max_response_bytes);
        let text = if truncated {
            format!("{text}\n[response truncated at {} bytes]", shared.max_response_bytes)
        } else {
            text
        };
        let status = response.status;
        if status.is_client_error() || status.is_server_error() {
            let violations = response.headers.get("sl-violations").and_then(|v| v.to_str().ok());
            let violations = violations.map(|v| format!("\nvalidation: {v}")).unwrap_or_default();
            return Err(ToolError::Failed(format!("HTTP {status}: {text}{violations}").into()));
        }
        let content_type = response.headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
        let details = json!({"status": status.as_u16(), "contentType": content_type, "truncated": truncated});
        let text = if text.is_empty() { format!("HTTP {status} (no content)") } else { text };
        Ok(ToolResult::text(text).with_details(details))
    }
}

/// At most `max` bytes of `bytes` as text, cut on a character boundary; whether it was cut.
pub fn truncate_utf8(bytes: &[u8], max: usize) -> (String, bool) {
    let truncated = bytes.len() > max;
    let cut = &bytes[..bytes.len().min(max)];
    let text = match std::str::from_utf8(cut) {
        Ok(text) => text.to_owned(),
        // The cut fell inside a character: drop its first bytes.
        Err(error) if error.error_len().is_none() => String::from_utf8_lossy(&cut[..error.valid_up_to()]).into_owned(),
        Err(_) => {
            let lossy = String::from_utf8_lossy(cut).into_owned();
            lossy.trim_end_matches('\u{FFFD}').to_owned()
        }
    };
    (text, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_never_splits_a_character() {
        let text = "añb€c".as_bytes(); // a, ñ (2 bytes), b, € (3 bytes), c
        assert_eq!(truncate_utf8(text, 100), ("añb€c".to_owned(), false));
        assert_eq!(truncate_utf8(text, 2), ("a".to_owned(), true));
        assert_eq!(truncate_utf8(text, 3), ("añ".to_owned(), true));
        assert_eq!(truncate_utf8(text, 5), ("añb".to_owned(), true));
        assert_eq!(truncate_utf8(text, 7), ("añb€".to_owned(), true));
    }

    #[test]
    fn credentials_go_where_the_schemes_say_and_never_show() {
        let document =
            OpenApiDocument::from_value(json!({"openapi": "3.0.0", "servers": [{"url": "https://api.test"}],
            "components": {"securitySchemes": {
                "header": {"type": "apiKey", "in": "header", "name": "api_key"},
                "query": {"type": "apiKey", "in": "query", "name": "key"},
                "cookie": {"type": "apiKey", "in": "cookie", "name": "sid"},
                "bearer": {"type": "http", "scheme": "bearer"},
                "basic": {"type": "http", "scheme": "basic"},
                "oauth": {"type": "oauth2", "flows": {}}}},
            "paths": {
                "/a": {"get": {"operationId": "a", "security": [{"missing": []}, {"header": [], "query": []}]}},
                "/b": {"get": {"operationId": "b", "security": [{"basic": []}]}},
                "/c": {"get": {"operationId": "c", "security": [{"oauth": []}, {"cookie": []}],
                    "parameters": [{"name": "pref", "in": "cookie", "schema": {"type": "string"}}]}},
                "/d": {"get": {"operationId": "d", "security": [{"bearer": []}]}}
            }}))
            .unwrap();
        let tools = OpenApiToolset::new(document)
            .credential("header", Credential::Secret("K1".into()))
            .credential("query", Credential::Secret("K 2".into()))
            .credential("cookie", Credential::Secret("K3".into()))
            .credential("basic", Credential::Basic { username: "u".into(), password: "K4".into() })
            .build()
            .unwrap();
        let request =
            |name: &str, args: Value| tools.iter().find(|t| t.name() == name).unwrap().request(&args).unwrap();
        let a = request("a", json!({}));
        assert_eq!(a.header_value("api_key"), Some("K1"));
        assert_eq!(a.url, "https://api.test/a?key=K%202");
        assert_eq!(request("b", json!({})).header_value("authorization"), Some("Basic dTpLNA=="));
        let c = request("c", json!({"pref": "dark"}));
        assert_eq!(c.header_value("cookie"), Some("pref=dark; sid=K3"), "no oauth token: the cookie alternative");
        assert_eq!(request("d", json!({})).header_value("authorization"), None, "no bearer token given");
        let shown = format!("{tools:?}");
        assert!(!shown.contains("K1") && !shown.contains("K3") && !shown.contains("K4"), "{shown}");
        assert!(!format!("{:?}", Credential::Basic { username: "u".into(), password: "K4".into() }).contains("K4"));
    }

    #[test]
    fn a_document_without_an_absolute_server_needs_a_base_url() {
        let relative =
            OpenApiDocument::from_value(json!({"openapi": "3.1.0", "servers": [{"url": "/api/v3"}], "paths": {}}))
                .unwrap();
        let error = OpenApiToolset::new(relative.clone()).build().unwrap_err().to_string();
        assert!(error.contains("relative"), "{error}");
        assert!(OpenApiToolset::new(relative).base_url("http://127.0.0.1:4010").build().is_ok());
    }
}
