//! Finding the authorization server: protected resource metadata (RFC 9728) and authorization
//! server metadata (RFC 8414, OpenID Connect discovery), as the MCP specification orders them.

use serde::Deserialize;
use serde_json::Value;
use sinew_http::{HttpClient, HttpRequest};

use crate::error::McpError;

/// The most of a metadata document read.
const METADATA_LIMIT: usize = 256 * 1024;

/// A protected resource's metadata (RFC 9728 §2): the fields MCP uses.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource's identifier: the MCP server's canonical URI.
    pub resource: String,
    /// The authorization servers that issue tokens for it.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata (RFC 8414 §2): the fields MCP uses.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier; it must be the URL the metadata was asked for.
    pub issuer: String,
    /// Where the user approves.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are traded for tokens.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591).
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// PKCE methods; MCP requires `S256`.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How clients may authenticate at the token endpoint.
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Whether client ID metadata documents may serve as client ids.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
}

/// What discovery found.
#[derive(Debug)]
pub(super) struct Discovered {
    /// The resource metadata, absent for servers of the 2025-03-26 revision.
    pub(super) resource: Option<ProtectedResourceMetadata>,
    pub(super) server: AuthorizationServerMetadata,
}

impl Discovered {
    /// The `resource` parameter (RFC 8707): the identifier exactly as the resource metadata
    /// publishes it, else the server's URL without its fragment.
    pub(super) fn resource_indicator(&self, server_url: &str) -> String {
        match &self.resource {
            Some(resource) => resource.resource.clone(),
            None => server_url.split('#').next().unwrap_or(server_url).to_owned(),
        }
    }
}

/// Finds the authorization server of the MCP server at `server_url`.
pub(super) async fn discover(
    http: &HttpClient,
    server_url: &str,
    resource_metadata: Option<&str>,
) -> Result<Discovered, McpError> {
    let server = Url::parse(server_url)?;
    let resource = protected_resource(http, &server, resource_metadata).await?;
    let Some(resource) = resource else {
        // 2025-03-26: the MCP server's origin is the authorization server.
        let issuer = server.origin();
        let metadata = match fetch::<AuthorizationServerMetadata>(
            http,
            &format!("{issuer}/.well-known/oauth-authorization-server"),
        )
        .await?
        {
            Some(metadata) => metadata,
            None => AuthorizationServerMetadata {
                issuer: issuer.clone(),
                authorization_endpoint: format!("{issuer}/authorize"),
                token_endpoint: format!("{issuer}/token"),
                registration_endpoint: Some(format!("{issuer}/register")),
                scopes_supported: None,
                code_challenge_methods_supported: Some(vec!["S256".into()]),
                token_endpoint_auth_methods_supported: None,
                client_id_metadata_document_supported: None,
                authorization_response_iss_parameter_supported: None,
            },
        };
        // 2025-03-26 names no issuer to compare with (servers of that revision put theirs at
        // a path of the origin): only PKCE is required.
        check_pkce(&metadata)?;
        return Ok(Discovered { resource: None, server: metadata });
    };
    if !same_resource(&resource.resource, &server) {
        return Err(McpError::Authorization(format!(
            "the protected resource metadata is for {}, not this server ({}): refusing to send it tokens",
            resource.resource,
            server.without_fragment()
        )));
    }
    let Some(issuer) = resource.authorization_servers.first() else {
        return Err(McpError::Authorization("the protected resource metadata names no authorization server".into()));
    };
    let issuer_url = Url::parse(issuer)?;
    let mut metadata = None;
    for url in issuer_url.metadata_urls() {
        if let Some(found) = fetch::<AuthorizationServerMetadata>(http, &url).await? {
            metadata = Some(found);
            break;
        }
    }
    let Some(metadata) = metadata else {
        return Err(McpError::Authorization(format!("the authorization server {issuer} publishes no metadata")));
    };
    check_server(&metadata, issuer)?;
    Ok(Discovered { resource: Some(resource), server: metadata })
}

/// The protected resource metadata: from the challenge's URL, else the path-aware well-known
/// URL, else the origin's. `None` when the server has none (404s).
async fn protected_resource(
    http: &HttpClient,
    server: &Url,
    from_challenge: Option<&str>,
) -> Result<Option<ProtectedResourceMetadata>, McpError> {
    // The challenge's URL is followed only to a safe place or the server's own origin.
    if let Some(url) = from_challenge.filter(|url| is_safe_endpoint(url) || same_origin(url, server))
        && let Some(found) = fetch(http, url).await?
    {
        return Ok(Some(found));
    }
    let mut candidates = Vec::new();
    if !server.path_trimmed().is_empty() {
        candidates.push(format!("{}/.well-known/oauth-protected-resource{}", server.origin(), server.path_trimmed()));
    }
    candidates.push(format!("{}/.well-known/oauth-protected-resource", server.origin()));
    for url in candidates {
        if let Some(found) = fetch(http, &url).await? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// Whether `url` may carry OAuth traffic: `https`, or `http` to this machine only (OAuth 2.1
/// §1.5; loopback clients and tests).
pub(super) fn is_safe_endpoint(url: &str) -> bool {
    let Ok(url) = Url::parse(url) else { return false };
    if url.scheme == "https" {
        return true;
    }
    let host = url.authority.rsplit('@').next().unwrap_or_default().to_ascii_lowercase();
    let host = if host.starts_with('[') {
        host.split_once(']').map_or(host.clone(), |(h, _)| format!("{h}]"))
    } else {
        host.split(':').next().unwrap_or_default().to_owned()
    };
    matches!(host.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

/// The endpoints of `metadata` must be safe to send users, codes and secrets to.
fn check_endpoints(metadata: &AuthorizationServerMetadata) -> Result<(), McpError> {
    let endpoints = [
        Some(&metadata.authorization_endpoint),
        Some(&metadata.token_endpoint),
        metadata.registration_endpoint.as_ref(),
    ];
    for endpoint in endpoints.into_iter().flatten() {
        if !is_safe_endpoint(endpoint) {
            return Err(McpError::Authorization(format!(
                "the authorization server {} names the endpoint {}, which is neither https nor on this machine: refusing it",
                metadata.issuer,
                sinew_http::redact_url(endpoint)
            )));
        }
    }
    Ok(())
}

/// The metadata must be the issuer's own and offer PKCE with S256.
fn check_server(metadata: &AuthorizationServerMetadata, issuer: &str) -> Result<(), McpError> {
    if metadata.issuer != issuer {
        return Err(McpError::Authorization(format!(
            "the authorization server metadata fetched for {issuer} names issuer {}: refusing it (RFC 8414 §3.3)",
            metadata.issuer
        )));
    }
    check_pkce(metadata)
}

fn check_pkce(metadata: &AuthorizationServerMetadata) -> Result<(), McpError> {
    check_endpoints(metadata)?;
    let s256 = metadata.code_challenge_methods_supported.as_deref().unwrap_or_default().iter().any(|m| m == "S256");
    if !s256 {
        return Err(McpError::Authorization(format!(
            "the authorization server {} does not offer PKCE with S256, which MCP requires",
            metadata.issuer
        )));
    }
    Ok(())
}

/// Whether the resource metadata's identifier names `server`: the same origin, and a path that
/// is the server's or one of its parents (RFC 9728 §3.3; MCP's canonical server URI).
fn same_resource(resource: &str, server: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else { return false };
    if !resource.scheme.eq_ignore_ascii_case(&server.scheme)
        || !resource.authority.eq_ignore_ascii_case(&server.authority)
    {
        return false;
    }
    let parent = resource.path_trimmed();
    let path = server.path_trimmed();
    parent.is_empty() || path == parent || path.strip_prefix(parent).is_some_and(|rest| rest.starts_with('/'))
}

/// Whether `url` is on the MCP server's own origin.
fn same_origin(url: &str, server: &Url) -> bool {
    Url::parse(url).is_ok_and(|url| url.origin().eq_ignore_ascii_case(&server.origin()))
}

/// GETs `url` as JSON: `None` for a 4xx (nothing published there); an error for anything else
/// that is not a document of the expected shape.
async fn fetch<T: serde::de::DeserializeOwned>(http: &HttpClient, url: &str) -> Result<Option<T>, McpError> {
    let request = HttpRequest {
        method: http::Method::GET,
        url: url.to_owned(),
        headers: vec![("accept".into(), "application/json".into())],
        body: bytes::Bytes::new(),
    };
    let wait = std::time::Duration::from_secs(30);
    let late = || McpError::Authorization(format!("{} did not answer within {wait:?}", sinew_http::redact_url(url)));
    let mut response = tokio::time::timeout(wait, http.send_once(&request))
        .await
        .map_err(|_| late())?
        .map_err(|e| McpError::Authorization(format!("cannot fetch {}: {e}", sinew_http::redact_url(url))))?;
    if response.status.is_client_error() {
        return Ok(None);
    }
    if !response.status.is_success() {
        return Err(McpError::Authorization(format!(
            "{} answered HTTP {}",
            sinew_http::redact_url(url),
            response.status.as_u16()
        )));
    }
    let body = tokio::time::timeout(wait, response.bytes(METADATA_LIMIT + 1))
        .await
        .map_err(|_| late())?
        .map_err(|e| McpError::Authorization(format!("cannot read {}: {e}", sinew_http::redact_url(url))))?;
    if body.len() > METADATA_LIMIT {
        return Err(McpError::Authorization(format!(
            "{} is larger than the {METADATA_LIMIT} bytes a metadata document may take",
            sinew_http::redact_url(url)
        )));
    }
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| McpError::Authorization(format!("{} is not JSON: {e}", sinew_http::redact_url(url))))?;
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| McpError::Authorization(format!("{} is not valid metadata: {e}", sinew_http::redact_url(url))))
}

/// The parts of an absolute URL discovery needs.
#[derive(Debug)]
struct Url {
    scheme: String,
    authority: String,
    /// The path, without query or fragment ("" or "/..." ).
    path: String,
    query: Option<String>,
}

impl Url {
    fn parse(url: &str) -> Result<Self, McpError> {
        let invalid =
            || McpError::Authorization(format!("{} is not an absolute http(s) URL", sinew_http::redact_url(url)));
        let (scheme, rest) = url.split_once("://").ok_or_else(invalid)?;
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Err(invalid());
        }
        let rest = rest.split('#').next().unwrap_or_default();
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query.to_owned())),
            None => (rest, None),
        };
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash..]),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(invalid());
        }
        Ok(Url { scheme: scheme.to_ascii_lowercase(), authority: authority.to_owned(), path: path.to_owned(), query })
    }

    fn origin(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    /// The path without a trailing slash ("" for the root).
    fn path_trimmed(&self) -> &str {
        self.path.trim_end_matches('/')
    }

    fn without_fragment(&self) -> String {
        match &self.query {
            Some(query) => format!("{}{}?{query}", self.origin(), self.path),
            None => format!("{}{}", self.origin(), self.path),
        }
    }

    /// Where an issuer's metadata may be, in the order MCP (2025-11-25) tries them: RFC 8414
    /// with the path inserted, OpenID Connect discovery with the path inserted, then appended;
    /// an issuer without a path has two.
    fn metadata_urls(&self) -> Vec<String> {
        let origin = self.origin();
        let path = self.path_trimmed();
        if path.is_empty() {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server"),
                format!("{origin}/.well-known/openid-configuration"),
            ]
        } else {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server{path}"),
                format!("{origin}/.well-known/openid-configuration{path}"),
                format!("{origin}{path}/.well-known/openid-configuration"),
            ]
        }
    }
}

#[cfg(test)]
pub(super) fn metadata_urls(issuer: &str) -> Vec<String> {
    Url::parse(issuer).map(|u| u.metadata_urls()).unwrap_or_default()
}

#[cfg(test)]
pub(super) fn is_same_resource(resource: &str, server: &str) -> bool {
    Url::parse(server).is_ok_and(|server| same_resource(resource, &server))
}
