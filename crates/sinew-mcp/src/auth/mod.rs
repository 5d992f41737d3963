//! MCP authorization (2025-03-26 through 2026-07-28): an OAuth 2.1 client for servers that answer
//! 401.
//!
//! [`OAuth`] is a [`HeaderProvider`]: give it to [`McpClientBuilder::headers`](crate::McpClientBuilder::headers) and a refused
//! request starts the flow the specification describes, then is sent again with the token.
//!
//! 1. **Protected resource metadata** (RFC 9728): the `resource_metadata` of the
//!    `WWW-Authenticate` challenge, else the well-known URL with the server's path inserted, else
//!    the origin's. Its `resource` must be the server's (a mismatch is refused).
//! 2. **Authorization server metadata** (RFC 8414, OpenID Connect discovery), tried in the order
//!    the specification gives; the `issuer` it names must be the one asked about. Servers of the
//!    2025-03-26 revision without resource metadata: the server's origin is the authorization
//!    server, with `/authorize`, `/token`, `/register` when it has no metadata either.
//! 3. **The client's identity**: a pre-registered client, a client ID metadata document (its URL
//!    is the `client_id`, when the server supports them), or dynamic client registration
//!    (RFC 7591).
//! 4. **Authorization code with PKCE** (S256; refused when the server does not offer it), the
//!    `resource` parameter (RFC 8707), `state`, and the `iss` parameter (RFC 9207) checked. An
//!    [`AuthorizationHandler`] plays the user's browser: [`LoopbackRedirect`] waits for the
//!    redirect on 127.0.0.1 after showing the URL; [`FollowRedirect`] follows it itself (servers
//!    that approve without a person, tests).
//! 5. **Tokens**: kept in a [`TokenStore`] the host chooses ([`MemoryTokenStore`],
//!    [`FileTokenStore`] with mode `0600`), refreshed before they expire and when the server
//!    refuses them, and a 403 `insufficient_scope` asks again with the scopes it names
//!    (step-up), a bounded number of times.
//!
//! Secrets (tokens, client secrets, codes, verifiers) never reach logs or `Debug` output.

mod discovery;
mod redirect;
mod store;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sinew_http::{HttpClient, HttpRequest};
use tokio::sync::Mutex;

pub use discovery::{AuthorizationServerMetadata, ProtectedResourceMetadata};
pub use redirect::{AuthorizationHandler, FollowRedirect, LoopbackRedirect};
pub use store::{FileTokenStore, MemoryTokenStore, StoredAuthorization, TokenStore, Tokens};

use crate::error::McpError;
use crate::transport::http::{HeaderProvider, Refusal};

/// The most of an authorization or token response read.
const RESPONSE_LIMIT: usize = 256 * 1024;
/// A token this close to its expiry is refreshed before it is used.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How many times the scopes are stepped up for one server before a 403 is let stand.
const MAX_STEP_UPS: u32 = 3;

/// A client registered with the authorization server ahead of time.
#[derive(Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct ClientCredentials {
    /// The `client_id`.
    pub client_id: String,
    /// The `client_secret` of a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// How the client authenticates at the token endpoint: `client_secret_basic`,
    /// `client_secret_post` or `none` (default: what the server registered, else basic when
    /// there is a secret and the server takes it, else post, else none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "****"))
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .finish()
    }
}

/// What an [`OAuth`] client says about itself and asks for.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The `client_name` registered (default `sinew`).
    pub client_name: String,
    /// Where the authorization server sends the user back; must match the handler's (default
    /// `http://127.0.0.1:8976/callback`, [`LoopbackRedirect`]'s default).
    pub redirect_uri: String,
    /// A pre-registered client; without one the client registers itself.
    pub client: Option<ClientCredentials>,
    /// The HTTPS URL of this client's ID metadata document, used as its `client_id` where the
    /// server supports them (`client_id_metadata_document_supported`).
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for, overriding what the server suggests.
    pub scopes: Option<String>,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_name: "sinew".into(),
            redirect_uri: redirect::DEFAULT_REDIRECT_URI.into(),
            client: None,
            client_metadata_url: None,
            scopes: None,
        }
    }
}

impl OAuthConfig {
    /// The defaults with `redirect_uri`.
    #[must_use]
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        OAuthConfig { redirect_uri: redirect_uri.into(), ..OAuthConfig::default() }
    }

    /// The `client_name` to register.
    #[must_use]
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// A pre-registered client.
    #[must_use]
    pub fn client(mut self, client: ClientCredentials) -> Self {
        self.client = Some(client);
        self
    }

    /// This client's ID metadata document URL.
    #[must_use]
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The scopes to ask for (space-separated).
    #[must_use]
    pub fn scopes(mut self, scopes: impl Into<String>) -> Self {
        self.scopes = Some(scopes.into());
        self
    }
}

/// An OAuth 2.1 client for one MCP server: a [`HeaderProvider`] that authorizes when the server
/// refuses a request. Cheap to clone (clones share the tokens).
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

struct Inner {
    http: HttpClient,
    server_url: String,
    config: OAuthConfig,
    handler: Arc<dyn AuthorizationHandler>,
    store: Arc<dyn TokenStore>,
    state: Mutex<FlowState>,
}

#[derive(Default)]
struct FlowState {
    loaded: bool,
    saved: Option<StoredAuthorization>,
    /// The scopes the last authorization asked for.
    requested: Option<String>,
    step_ups: u32,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth").field("server", &sinew_http::redact_url(&self.inner.server_url)).finish_non_exhaustive()
    }
}

impl OAuth {
    /// A client for the MCP server at `server_url` (the URL the MCP client connects to), asking
    /// `handler` to get the user's approval and keeping tokens in a [`MemoryTokenStore`].
    pub fn new(
        server_url: impl Into<String>,
        config: OAuthConfig,
        handler: impl AuthorizationHandler + 'static,
    ) -> Self {
        OAuth {
            inner: Arc::new(Inner {
                http: HttpClient::new(),
                server_url: server_url.into(),
                config,
                handler: Arc::new(handler),
                store: Arc::new(MemoryTokenStore::default()),
                state: Mutex::default(),
            }),
        }
    }

    /// Keeps tokens and the client's registration in `store` (read before the first request).
    #[must_use]
    pub fn with_store(self, store: impl TokenStore + 'static) -> Self {
        self.rebuild(|inner| inner.store = Arc::new(store))
    }

    /// Talks to the authorization server through `client` (default: a new one).
    #[must_use]
    pub fn with_http_client(self, client: HttpClient) -> Self {
        self.rebuild(|inner| inner.http = client)
    }

    fn rebuild(self, change: impl FnOnce(&mut Inner)) -> Self {
        let inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            http: shared.http.clone(),
            server_url: shared.server_url.clone(),
            config: shared.config.clone(),
            handler: shared.handler.clone(),
            store: shared.store.clone(),
            state: Mutex::default(),
        });
        let mut inner = inner;
        change(&mut inner);
        OAuth { inner: Arc::new(inner) }
    }

    /// Runs the whole flow now, without waiting for a refusal (the first request then carries
    /// a token). Discovery starts from the server's well-known metadata.
    pub async fn authorize(&self) -> Result<(), McpError> {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        self.authorize_locked(&mut state, &Challenge::default()).await
    }

    async fn load(&self, state: &mut FlowState) {
        if !state.loaded {
            state.loaded = true;
            state.saved = self.inner.store.load(&self.inner.server_url).await;
        }
    }

    async fn save(&self, state: &FlowState) {
        if let Some(saved) = &state.saved
            && let Err(error) = self.inner.store.save(&self.inner.server_url, saved).await
        {
            tracing::warn!(%error, "cannot keep the MCP server's OAuth tokens");
        }
    }

    async fn authorize_locked(&self, state: &mut FlowState, challenge: &Challenge) -> Result<(), McpError> {
        let inner = &self.inner;
        let discovered =
            discovery::discover(&inner.http, &inner.server_url, challenge.resource_metadata.as_deref()).await?;
        let client = self.client_identity(state, &discovered).await?;
        let scope = inner
            .config
            .scopes
            .clone()
            .or_else(|| challenge.scope.clone())
            .or_else(|| discovered.resource.as_ref().and_then(|r| r.scopes_supported.as_ref()).map(|s| s.join(" ")))
            .map(|scope| with_offline_access(&scope, &discovered.server));
        state.requested.clone_from(&scope);
        let pkce = Pkce::new();
        let request_state = random_token(16);
        let resource = discovered.resource_indicator(&inner.server_url);
        let mut query = vec![
            ("response_type", "code".to_owned()),
            ("client_id", client.client_id.clone()),
            ("redirect_uri", inner.config.redirect_uri.clone()),
            ("code_challenge", pkce.challenge.clone()),
            ("code_challenge_method", "S256".to_owned()),
            ("state", request_state.clone()),
        ];
        if let Some(scope) = &scope {
            query.push(("scope", scope.clone()));
        }
        query.push(("resource", resource.clone()));
        let endpoint = &discovered.server.authorization_endpoint;
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{separator}{}", form_encode(&query));
        let callback = inner.handler.authorize(&url).await?;
        let code = read_callback(&callback, &request_state, &discovered.server)?;

        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", inner.config.redirect_uri.clone()),
            ("code_verifier", pkce.verifier),
            ("resource", resource.clone()),
        ];
        let tokens = self.token_request(&discovered.server, &client, &mut form).await?;
        state.saved = Some(StoredAuthorization {
            client,
            token_endpoint: discovered.server.token_endpoint.clone(),
            issuer: discovered.server.issuer.clone(),
            resource,
            tokens,
        });
        self.save(state).await;
        Ok(())
    }

    /// The client's identity: the configured one, the one registered before (same server),
    /// its metadata document's URL, or a new registration.
    async fn client_identity(
        &self,
        state: &FlowState,
        discovered: &discovery::Discovered,
    ) -> Result<ClientCredentials, McpError> {
        let config = &self.inner.config;
        if let Some(client) = &config.client {
            return Ok(client.clone());
        }
        if let Some(saved) = &state.saved
            && saved.issuer == discovered.server.issuer
        {
            return Ok(saved.client.clone());
        }
        if let Some(url) = &config.client_metadata_url
            && discovered.server.client_id_metadata_document_supported == Some(true)
        {
            return Ok(ClientCredentials {
                client_id: url.clone(),
                client_secret: None,
                token_endpoint_auth_method: Some("none".into()),
            });
        }
        let Some(endpoint) = &discovered.server.registration_endpoint else {
            return Err(McpError::Authorization(format!(
                "the authorization server {} offers no dynamic client registration: configure a pre-registered client",
                discovered.server.issuer
            )));
        };
        let body = json!({
            "client_name": config.client_name,
            "redirect_uris": [config.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        });
        let request = HttpRequest {
            method: http::Method::POST,
            url: endpoint.clone(),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("accept".into(), "application/json".into()),
            ],
            body: body.to_string().into(),
        };
        let registered = self.exchange(&request, "client registration").await?;
        let client_id = registered.get("client_id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let Some(client_id) = client_id else {
            return Err(McpError::Authorization("the client registration answered without a client_id".into()));
        };
        Ok(ClientCredentials {
            client_id: client_id.to_owned(),
            client_secret: registered.get("client_secret").and_then(Value::as_str).map(str::to_owned),
            token_endpoint_auth_method: registered
                .get("token_endpoint_auth_method")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// Posts `form` to the token endpoint with the client's authentication; the tokens.
    async fn token_request(
        &self,
        server: &AuthorizationServerMetadata,
        client: &ClientCredentials,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<Tokens, McpError> {
        self.post_token(&server.token_endpoint, auth_method(client, server), client, form).await
    }

    async fn post_token(
        &self,
        token_endpoint: &str,
        method: AuthMethod,
        client: &ClientCredentials,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<Tokens, McpError> {
        let mut headers = vec![
            ("content-type".to_owned(), "application/x-www-form-urlencoded".to_owned()),
            ("accept".to_owned(), "application/json".to_owned()),
        ];
        match method {
            AuthMethod::Basic => {
                // RFC 6749 §2.3.1: each part form-encoded, then Basic.
                let secret = client.client_secret.as_deref().unwrap_or_default();
                let pair = format!("{}:{}", form_component(&client.client_id), form_component(secret));
                let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
                headers.push(("authorization".to_owned(), format!("Basic {encoded}")));
            }
            AuthMethod::Post => {
                form.push(("client_id", client.client_id.clone()));
                form.push(("client_secret", client.client_secret.clone().unwrap_or_default()));
            }
            AuthMethod::None => form.push(("client_id", client.client_id.clone())),
        }
        let request = HttpRequest {
            method: http::Method::POST,
            url: token_endpoint.to_owned(),
            headers,
            body: form_encode(form).into(),
        };
        let answer = self.exchange(&request, "token request").await?;
        Tokens::from_response(&answer, now())
    }

    /// Sends `request` and reads a JSON object back; an OAuth error answer is an error.
    async fn exchange(&self, request: &HttpRequest, what: &str) -> Result<Value, McpError> {
        let mut response = self
            .inner
            .http
            .send_once(request)
            .await
            .map_err(|e| McpError::Authorization(format!("{what} failed: {e}")))?;
        let body = response
            .bytes(RESPONSE_LIMIT)
            .await
            .map_err(|e| McpError::Authorization(format!("{what}: reading the answer failed: {e}")))?;
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !response.status.is_success() {
            let error = value.get("error").and_then(Value::as_str).unwrap_or("no error code");
            let description = value.get("error_description").and_then(Value::as_str).unwrap_or_default();
            return Err(McpError::Authorization(format!(
                "{what} refused with HTTP {}: {error} {description}",
                response.status.as_u16()
            )));
        }
        if !value.is_object() {
            return Err(McpError::Authorization(format!("{what} answered with something other than a JSON object")));
        }
        Ok(value)
    }

    /// Trades the refresh token for new tokens; `false` when there is none or it was refused.
    async fn refresh(&self, state: &mut FlowState) -> bool {
        let Some(saved) = &state.saved else { return false };
        let Some(refresh_token) = saved.tokens.refresh_token.clone() else { return false };
        let client = saved.client.clone();
        let method = auth_method_without_metadata(&client);
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", saved.resource.clone()),
        ];
        match self.post_token(&saved.token_endpoint.clone(), method, &client, &mut form).await {
            Ok(mut tokens) => {
                // A server that does not rotate refresh tokens sends none back: keep the old one.
                tokens.refresh_token.get_or_insert(refresh_token);
                if let Some(saved) = &mut state.saved {
                    saved.tokens = tokens;
                }
                self.save(state).await;
                true
            }
            Err(error) => {
                tracing::info!(%error, "refreshing the MCP server's token failed: authorizing again");
                if let Some(saved) = &mut state.saved {
                    saved.tokens.refresh_token = None;
                }
                false
            }
        }
    }
}

#[async_trait]
impl HeaderProvider for OAuth {
    async fn headers(&self) -> Result<Vec<(String, String)>, McpError> {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        let expiring = state.saved.as_ref().is_some_and(|s| s.tokens.expires_within(REFRESH_MARGIN, now()));
        if expiring {
            self.refresh(&mut state).await;
        }
        Ok(match &state.saved {
            Some(saved) => vec![("authorization".to_owned(), format!("Bearer {}", saved.tokens.access_token))],
            None => Vec::new(),
        })
    }

    async fn challenged(&self, refusal: &Refusal) -> Result<bool, McpError> {
        let challenge = Challenge::parse(&refusal.www_authenticate);
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        let current = state.saved.as_ref().map(|s| format!("Bearer {}", s.tokens.access_token));
        if refusal.status == 401 && current.is_some() && current != refusal.authorization {
            // Another request was refused first and got a new token: use it.
            return Ok(true);
        }
        if refusal.status == 403 {
            if challenge.error.as_deref() != Some("insufficient_scope") {
                return Ok(false);
            }
            if state.step_ups >= MAX_STEP_UPS {
                tracing::warn!("the MCP server keeps asking for more scope: giving up");
                return Ok(false);
            }
            let had =
                union_scopes(state.requested.as_deref(), state.saved.as_ref().and_then(|s| s.tokens.scope.as_deref()));
            let wanted = challenge.scope.as_deref().unwrap_or_default();
            let has = |scope: &str| had.as_deref().unwrap_or_default().split(' ').any(|s| s == scope);
            if wanted.split(' ').filter(|s| !s.is_empty()).all(has) {
                // Asking again for what was already asked for would loop.
                tracing::warn!(
                    scope = wanted,
                    "the MCP server refuses a token that has the scopes it asks for: giving up"
                );
                return Ok(false);
            }
            state.step_ups += 1;
            let challenge = Challenge { scope: union_scopes(had.as_deref(), Some(wanted)), ..challenge };
            self.authorize_locked(&mut state, &challenge).await?;
            return Ok(true);
        }
        if current.is_some() && self.refresh(&mut state).await {
            return Ok(true);
        }
        self.authorize_locked(&mut state, &challenge).await?;
        Ok(true)
    }
}

/// A `Bearer` challenge's parameters (RFC 6750 §3, RFC 9728 §5.1).
#[derive(Clone, Debug, Default)]
struct Challenge {
    resource_metadata: Option<String>,
    scope: Option<String>,
    error: Option<String>,
}

impl Challenge {
    fn parse(headers: &[String]) -> Self {
        let mut challenge = Challenge::default();
        for header in headers {
            let Some(params) = bearer_params(header) else { continue };
            for (name, value) in params {
                let slot = match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut challenge.resource_metadata,
                    "scope" => &mut challenge.scope,
                    "error" => &mut challenge.error,
                    _ => continue,
                };
                slot.get_or_insert(value);
            }
        }
        challenge
    }
}

/// The auth-params of the `Bearer` challenge in a `WWW-Authenticate` value, if it has one.
fn bearer_params(header: &str) -> Option<Vec<(String, String)>> {
    let lower = header.to_ascii_lowercase();
    let start = lower.match_indices("bearer").map(|(i, _)| i).find(|&i| {
        let before = header[..i].trim_end();
        let after = header[i + 6..].chars().next();
        (before.is_empty() || before.ends_with(',')) && after.is_none_or(|c| c == ' ' || c == ',')
    })?;
    let mut rest = &header[start + 6..];
    let mut params = Vec::new();
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = rest.find('=') else { break };
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains(' ') {
            // The next scheme begins.
            break;
        }
        rest = rest[eq + 1..].trim_start();
        let value = if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut end = quoted.len();
            let mut chars = quoted.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, escaped)| escaped)),
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => value.push(c),
                }
            }
            rest = &quoted[end..];
            value
        } else {
            let end = rest.find([',', ' ']).unwrap_or(rest.len());
            let value = rest[..end].to_owned();
            rest = &rest[end..];
            value
        };
        params.push((name.to_owned(), value));
    }
    Some(params)
}

/// How the client authenticates at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AuthMethod {
    Basic,
    Post,
    None,
}

fn auth_method(client: &ClientCredentials, server: &AuthorizationServerMetadata) -> AuthMethod {
    if client.token_endpoint_auth_method.is_some() || client.client_secret.is_none() {
        return auth_method_without_metadata(client);
    }
    let supported = server.token_endpoint_auth_methods_supported.as_deref().unwrap_or_default();
    // RFC 8414: absent means client_secret_basic.
    if supported.is_empty() || supported.iter().any(|m| m == "client_secret_basic") {
        AuthMethod::Basic
    } else if supported.iter().any(|m| m == "client_secret_post") {
        AuthMethod::Post
    } else if supported.iter().any(|m| m == "none") {
        AuthMethod::None
    } else {
        AuthMethod::Basic
    }
}

fn auth_method_without_metadata(client: &ClientCredentials) -> AuthMethod {
    match client.token_endpoint_auth_method.as_deref() {
        Some("client_secret_post") => AuthMethod::Post,
        Some("client_secret_basic") => AuthMethod::Basic,
        Some(_) => AuthMethod::None,
        None if client.client_secret.is_some() => AuthMethod::Basic,
        None => AuthMethod::None,
    }
}

/// `scope` with `offline_access` added when the authorization server offers it (a refresh
/// token then comes with the access token).
fn with_offline_access(scope: &str, server: &AuthorizationServerMetadata) -> String {
    let offered = server.scopes_supported.as_deref().unwrap_or_default().iter().any(|s| s == "offline_access");
    if offered && !scope.split(' ').any(|s| s == "offline_access") {
        if scope.is_empty() { "offline_access".to_owned() } else { format!("{scope} offline_access") }
    } else {
        scope.to_owned()
    }
}

/// The scopes of both, each once, in order.
fn union_scopes(granted: Option<&str>, wanted: Option<&str>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for scope in granted.into_iter().chain(wanted).flat_map(|s| s.split(' ')).filter(|s| !s.is_empty()) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// The code of the authorization response `callback` (the URL the server redirected to), after
/// checking its `state` and `iss`.
fn read_callback(callback: &str, state: &str, server: &AuthorizationServerMetadata) -> Result<String, McpError> {
    let query = callback.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    let params = form_decode(query);
    let get = |name: &str| params.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    if let Some(error) = get("error") {
        let description = get("error_description").unwrap_or_default();
        return Err(McpError::Authorization(format!("the authorization was refused: {error} {description}")));
    }
    if get("state") != Some(state) {
        return Err(McpError::Authorization(
            "the authorization response's state is not the one sent: refusing it (a forged redirect?)".into(),
        ));
    }
    // RFC 9207: where the server promises `iss`, it must be there; where present, it must name
    // the server (compared as strings, §2.4).
    match get("iss") {
        Some(iss) if iss != server.issuer => {
            return Err(McpError::Authorization(format!(
                "the authorization response comes from issuer {iss}, not {}: refusing it (mix-up attack?)",
                server.issuer
            )));
        }
        None if server.authorization_response_iss_parameter_supported == Some(true) => {
            return Err(McpError::Authorization(format!(
                "the authorization server {} promised an `iss` in its response and sent none: refusing it",
                server.issuer
            )));
        }
        _ => {}
    }
    match get("code") {
        Some(code) if !code.is_empty() => Ok(code.to_owned()),
        _ => Err(McpError::Authorization("the authorization response has no code".into())),
    }
}

/// A PKCE verifier and its S256 challenge (RFC 7636).
struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    fn new() -> Self {
        let verifier = random_token(32);
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        Pkce { challenge: URL_SAFE_NO_PAD.encode(digest.as_ref()), verifier }
    }
}

/// `bytes` random bytes from the system's generator, base64url.
fn random_token(bytes: usize) -> String {
    use ring::rand::SecureRandom as _;
    let mut buffer = vec![0u8; bytes];
    // The system generator fails only where the OS has none; fall back to the clock and the
    // process id mixed by SHA-256 rather than fail the flow.
    if ring::rand::SystemRandom::new().fill(&mut buffer).is_err() {
        let seed = format!("{:?}{}", SystemTime::now(), std::process::id());
        let digest = ring::digest::digest(&ring::digest::SHA256, seed.as_bytes());
        buffer = digest.as_ref()[..bytes.min(32)].to_vec();
    }
    URL_SAFE_NO_PAD.encode(buffer)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// What `application/x-www-form-urlencoded` leaves as is.
const FORM: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn form_component(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, FORM).to_string()
}

fn form_encode(pairs: &[(&str, String)]) -> String {
    let mut out = String::new();
    for (name, value) in pairs {
        if !out.is_empty() {
            out.push('&');
        }
        out.push_str(&form_component(name));
        out.push('=');
        out.push_str(&form_component(value));
    }
    out
}

fn form_decode(query: &str) -> Vec<(String, String)> {
    let decode = |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

#[cfg(test)]
mod tests;
