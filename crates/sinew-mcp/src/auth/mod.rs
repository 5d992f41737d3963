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
//! 6. **Without a person** ([`OAuth::unattended`]): [`Grant::ClientCredentials`] (a secret or a
//!    signed client assertion, RFC 7523), [`Grant::JwtBearer`] (a workload's JWT) and
//!    [`Grant::IdentityAssertion`] (enterprise-managed: an RFC 8693 exchange at the identity
//!    provider, then a JWT bearer grant). **DPoP** (RFC 9449) binds tokens to a key of the
//!    client's, with server nonces.
//!
//! Secrets (tokens, client secrets, codes, verifiers, keys) never reach logs or `Debug` output.

mod discovery;
mod jwt;
mod redirect;
mod store;

use std::fmt;
use std::path::PathBuf;
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
pub use jwt::SigningKey;
pub use redirect::{AuthorizationHandler, FollowRedirect, LoopbackRedirect};
pub use store::{FileTokenStore, MemoryTokenStore, StoredAuthorization, TokenStore, Tokens};

use crate::error::McpError;
use crate::transport::http::{HeaderProvider, Refusal};

/// The most of an authorization or token response read.
const RESPONSE_LIMIT: usize = 256 * 1024;
/// How long one exchange with an authorization server may take, answer read.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
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
    /// How tokens are obtained (default: the user's approval, [`Grant::AuthorizationCode`]).
    pub grant: Grant,
    /// Signs a client assertion (`private_key_jwt`, RFC 7523) instead of sending a secret.
    pub client_assertion_key: Option<SigningKey>,
    /// Binds tokens to a key of this client's with DPoP (RFC 9449). Also turned on when the
    /// server's challenge uses the `DPoP` scheme.
    pub dpop: bool,
}

/// How an [`OAuth`] client obtains tokens.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub enum Grant {
    /// A person approves in a browser: authorization code with PKCE.
    #[default]
    AuthorizationCode,
    /// The client acts for itself (OAuth client credentials, MCP's SEP-1046): it needs
    /// [`OAuthConfig::client`], with a secret or a [`OAuthConfig::client_assertion_key`].
    ClientCredentials,
    /// A workload presents a JWT its platform issued (RFC 7523 JWT bearer grant; workload
    /// identity federation).
    JwtBearer(Assertion),
    /// Enterprise-managed authorization (SEP-990): the user's identity provider trades an ID
    /// token for an identity assertion (RFC 8693), which the MCP server's authorization server
    /// takes as a JWT bearer grant. The client authenticates with [`OAuthConfig::client`].
    IdentityAssertion(IdentityAssertion),
}

/// A JWT the client presents: a value, or a file read at each use (platforms rotate them, as
/// Kubernetes' projected service account tokens).
#[derive(Clone)]
pub enum Assertion {
    /// The JWT itself.
    Value(String),
    /// A file holding the JWT.
    File(PathBuf),
}

impl fmt::Debug for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assertion::Value(_) => f.write_str("Assertion::Value(****)"),
            Assertion::File(path) => f.debug_tuple("Assertion::File").field(path).finish(),
        }
    }
}

impl Assertion {
    /// The JWT, trimmed; a file over 64 KiB is refused.
    async fn read(&self) -> Result<String, McpError> {
        match self {
            Assertion::Value(value) => Ok(value.trim().to_owned()),
            Assertion::File(path) => {
                use tokio::io::AsyncReadExt as _;
                let cannot = |e: std::io::Error| {
                    McpError::Authorization(format!("cannot read the assertion {}: {e}", path.display()))
                };
                let file = tokio::fs::File::open(path).await.map_err(cannot)?;
                if !file.metadata().await.map_err(cannot)?.is_file() {
                    return Err(McpError::Authorization(format!(
                        "the assertion {} is not a regular file",
                        path.display()
                    )));
                }
                let mut bytes = Vec::new();
                file.take(64 * 1024 + 1).read_to_end(&mut bytes).await.map_err(cannot)?;
                if bytes.len() > 64 * 1024 {
                    return Err(McpError::Authorization(format!("the assertion {} is over 64 KiB", path.display())));
                }
                Ok(String::from_utf8_lossy(&bytes).trim().to_owned())
            }
        }
    }
}

/// The identity provider's side of [`Grant::IdentityAssertion`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct IdentityAssertion {
    /// The identity provider's token endpoint.
    pub token_endpoint: String,
    /// The user's ID token from the identity provider.
    pub id_token: Assertion,
    /// This client at the identity provider.
    pub client: Option<ClientCredentials>,
}

impl IdentityAssertion {
    /// Trades `id_token` at `token_endpoint`.
    pub fn new(token_endpoint: impl Into<String>, id_token: Assertion) -> Self {
        IdentityAssertion { token_endpoint: token_endpoint.into(), id_token, client: None }
    }

    /// How the client authenticates at the identity provider.
    #[must_use]
    pub fn client(mut self, client: ClientCredentials) -> Self {
        self.client = Some(client);
        self
    }
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_name: "sinew".into(),
            redirect_uri: redirect::DEFAULT_REDIRECT_URI.into(),
            client: None,
            client_metadata_url: None,
            scopes: None,
            grant: Grant::AuthorizationCode,
            client_assertion_key: None,
            dpop: false,
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

    /// How tokens are obtained.
    #[must_use]
    pub fn grant(mut self, grant: Grant) -> Self {
        self.grant = grant;
        self
    }

    /// Authenticates the client with a signed assertion (`private_key_jwt`).
    #[must_use]
    pub fn client_assertion_key(mut self, key: SigningKey) -> Self {
        self.client_assertion_key = Some(key);
        self
    }

    /// Binds tokens to a key of this client's (DPoP).
    #[must_use]
    pub fn dpop(mut self, enabled: bool) -> Self {
        self.dpop = enabled;
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
    /// The DPoP key, made when DPoP is first needed.
    dpop: Option<SigningKey>,
    /// The nonces the authorization server and the resource server asked proofs to carry.
    as_nonce: Option<String>,
    rs_nonce: Option<String>,
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

    /// A client for a grant no person takes part in ([`Grant::ClientCredentials`],
    /// [`Grant::JwtBearer`], [`Grant::IdentityAssertion`]); an authorization code flow fails.
    pub fn unattended(server_url: impl Into<String>, config: OAuthConfig) -> Self {
        OAuth::new(server_url, config, redirect::NoUser)
    }

    /// Keeps tokens and the client's registration in `store` (read before the first request).
    /// Like every `with_` method, it is for building: called on a clone, it makes a client of its
    /// own that shares nothing with the others.
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

    /// Whether an authorization is at hand (made earlier, or kept in the store): `false` means
    /// the first refused request would send the user to approve. A host can call
    /// [`authorize`](Self::authorize) first, so the approval is not raced by a request's timeout.
    pub async fn is_authorized(&self) -> bool {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        state.saved.is_some()
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
        let configured = if challenge.step_up { None } else { inner.config.scopes.clone() };
        let scope = configured
            .or_else(|| challenge.scope.clone())
            .or_else(|| discovered.resource.as_ref().and_then(|r| r.scopes_supported.as_ref()).map(|s| s.join(" ")))
            .map(|scope| with_offline_access(&scope, &discovered.server));
        state.requested.clone_from(&scope);
        if !challenge.step_up {
            // A new authorization starts the count of step-ups again.
            state.step_ups = 0;
        }
        if (inner.config.dpop || challenge.dpop) && state.dpop.is_none() {
            state.dpop = Some(SigningKey::generate_es256()?);
        }
        let resource = discovered.resource_indicator(&inner.server_url);
        let server = &discovered.server;
        let (client, tokens) = match &inner.config.grant {
            Grant::AuthorizationCode => {
                let client = self.client_identity(state, &discovered).await?;
                let code = self.user_approval(&discovered, &client, scope.as_deref(), &resource).await?;
                let mut form = vec![
                    ("grant_type", "authorization_code".to_owned()),
                    ("code", code.code),
                    ("redirect_uri", inner.config.redirect_uri.clone()),
                    ("code_verifier", code.verifier),
                    ("resource", resource.clone()),
                ];
                let tokens = self.post_token(state, server, Some(&client), &mut form).await?;
                (Some(client), tokens)
            }
            Grant::ClientCredentials => {
                let Some(client) = inner.config.client.clone() else {
                    return Err(McpError::Authorization(
                        "the client credentials grant needs a client (OAuthConfig::client)".into(),
                    ));
                };
                let mut form = vec![("grant_type", "client_credentials".to_owned()), ("resource", resource.clone())];
                form.extend(scope.clone().map(|scope| ("scope", scope)));
                let tokens = self.post_token(state, server, Some(&client), &mut form).await?;
                (Some(client), tokens)
            }
            Grant::JwtBearer(assertion) => {
                let client = inner.config.client.clone();
                let mut form = vec![
                    ("grant_type", JWT_BEARER.to_owned()),
                    ("assertion", assertion.read().await?),
                    ("resource", resource.clone()),
                ];
                form.extend(scope.clone().map(|scope| ("scope", scope)));
                let tokens = self.post_token(state, server, client.as_ref(), &mut form).await?;
                (client, tokens)
            }
            Grant::IdentityAssertion(idp) => {
                let Some(client) = inner.config.client.clone() else {
                    return Err(McpError::Authorization(
                        "enterprise-managed authorization needs a client (OAuthConfig::client)".into(),
                    ));
                };
                let id_jag = self.identity_assertion(idp, &server.issuer, &resource).await?;
                let mut form = vec![("grant_type", JWT_BEARER.to_owned()), ("assertion", id_jag)];
                form.extend(scope.clone().map(|scope| ("scope", scope)));
                let tokens = self.post_token(state, server, Some(&client), &mut form).await?;
                (Some(client), tokens)
            }
        };
        // Refreshes authenticate as the first token request did.
        let client = client.map(|mut client| {
            if client.token_endpoint_auth_method.is_none() && inner.config.client_assertion_key.is_none() {
                client.token_endpoint_auth_method = Some(auth_method(&client, server).name().to_owned());
            }
            client
        });
        state.saved = Some(StoredAuthorization {
            client,
            token_endpoint: server.token_endpoint.clone(),
            issuer: server.issuer.clone(),
            resource,
            tokens,
        });
        self.save(state).await;
        Ok(())
    }

    /// Sends the user to the authorization endpoint and reads the code the server sends back.
    async fn user_approval(
        &self,
        discovered: &discovery::Discovered,
        client: &ClientCredentials,
        scope: Option<&str>,
        resource: &str,
    ) -> Result<Approval, McpError> {
        let pkce = Pkce::new()?;
        let request_state = random_token(16)?;
        let mut query = vec![
            ("response_type", "code".to_owned()),
            ("client_id", client.client_id.clone()),
            ("redirect_uri", self.inner.config.redirect_uri.clone()),
            ("code_challenge", pkce.challenge.clone()),
            ("code_challenge_method", "S256".to_owned()),
            ("state", request_state.clone()),
        ];
        query.extend(scope.map(|scope| ("scope", scope.to_owned())));
        query.push(("resource", resource.to_owned()));
        let endpoint = &discovered.server.authorization_endpoint;
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{separator}{}", form_encode(&query));
        let callback = self.inner.handler.authorize(&url).await?;
        let code = read_callback(&callback, &request_state, &discovered.server)?;
        Ok(Approval { code, verifier: pkce.verifier })
    }

    /// The identity assertion (ID-JAG) the identity provider trades the user's ID token for
    /// (RFC 8693), for the authorization server `audience` and the MCP server `resource`.
    async fn identity_assertion(
        &self,
        idp: &IdentityAssertion,
        audience: &str,
        resource: &str,
    ) -> Result<String, McpError> {
        let mut form = vec![
            ("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange".to_owned()),
            ("requested_token_type", "urn:ietf:params:oauth:token-type:id-jag".to_owned()),
            ("audience", audience.to_owned()),
            ("resource", resource.to_owned()),
            ("subject_token", idp.id_token.read().await?),
            ("subject_token_type", "urn:ietf:params:oauth:token-type:id_token".to_owned()),
        ];
        let mut headers = form_headers();
        if let Some(client) = &idp.client {
            client_authentication(auth_method_without_metadata(client), client, &mut headers, &mut form);
        }
        let request = HttpRequest {
            method: http::Method::POST,
            url: idp.token_endpoint.clone(),
            headers,
            body: form_encode(&form).into(),
        };
        let answer =
            self.exchange(&request, "the identity provider's token exchange").await.map_err(|r| r.error)?.value;
        match answer.get("access_token").and_then(Value::as_str) {
            Some(assertion) if !assertion.is_empty() => Ok(assertion.to_owned()),
            _ => Err(McpError::Authorization("the identity provider's token exchange returned no assertion".into())),
        }
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
            && let Some(client) = &saved.client
        {
            return Ok(client.clone());
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
        let registered = self.exchange(&request, "client registration").await.map_err(|r| r.error)?.value;
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

    /// Posts `form` to the server's token endpoint with the client's authentication.
    async fn post_token(
        &self,
        state: &mut FlowState,
        server: &AuthorizationServerMetadata,
        client: Option<&ClientCredentials>,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<Tokens, McpError> {
        let method = match (client, &self.inner.config.client_assertion_key) {
            (Some(_), Some(_)) => AuthMethod::PrivateKeyJwt,
            (Some(client), None) => auth_method(client, server),
            (None, _) => AuthMethod::None,
        };
        self.post_to(state, &server.token_endpoint, &server.issuer, method, client, form).await
    }

    /// Posts `form` to `token_endpoint`; with DPoP, with a proof, sent again once with the
    /// nonce the server asks for.
    async fn post_to(
        &self,
        state: &mut FlowState,
        token_endpoint: &str,
        issuer: &str,
        method: AuthMethod,
        client: Option<&ClientCredentials>,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<Tokens, McpError> {
        let mut headers = form_headers();
        if let Some(client) = client {
            if method == AuthMethod::PrivateKeyJwt
                && let Some(key) = &self.inner.config.client_assertion_key
            {
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", jwt::client_assertion(key, &client.client_id, issuer, now())?));
            } else {
                client_authentication(method, client, &mut headers, form);
            }
        }
        let body: bytes::Bytes = form_encode(form).into();
        for attempt in 0..2 {
            let mut request = HttpRequest {
                method: http::Method::POST,
                url: token_endpoint.to_owned(),
                headers: headers.clone(),
                body: body.clone(),
            };
            if let Some(key) = &state.dpop {
                let proof = jwt::dpop_proof(key, "POST", token_endpoint, state.as_nonce.as_deref(), None, now())?;
                request.headers.push(("dpop".to_owned(), proof));
            }
            let answer = self.exchange(&request, "token request").await;
            match answer {
                Ok(answer) => return Tokens::from_response(&answer.value, now(), state.dpop.is_some()),
                Err(Refused { nonce: Some(nonce), .. }) if attempt == 0 && state.dpop.is_some() => {
                    state.as_nonce = Some(nonce);
                }
                Err(refused) => return Err(refused.error),
            }
        }
        Err(McpError::Authorization("the token endpoint keeps asking for another DPoP nonce".into()))
    }

    /// Sends `request` and reads a JSON object back; an OAuth error answer is refused.
    async fn exchange(&self, request: &HttpRequest, what: &str) -> Result<Answer, Refused> {
        let refused = |message: String| Refused { error: McpError::Authorization(message), nonce: None };
        let exchanged = tokio::time::timeout(EXCHANGE_TIMEOUT, async {
            let mut response = self.inner.http.send_once(request).await.map_err(|e| format!("{what} failed: {e}"))?;
            let body =
                response.bytes(RESPONSE_LIMIT).await.map_err(|e| format!("{what}: reading the answer failed: {e}"))?;
            Ok::<_, String>((response, body))
        })
        .await;
        let (response, body) = match exchanged {
            Ok(Ok(answer)) => answer,
            Ok(Err(message)) => return Err(refused(message)),
            Err(_) => return Err(refused(format!("{what}: no whole answer within {EXCHANGE_TIMEOUT:?}"))),
        };
        let value: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        if !response.status.is_success() {
            let error = value.get("error").and_then(Value::as_str).unwrap_or("no error code");
            let description = value.get("error_description").and_then(Value::as_str).unwrap_or_default();
            let nonce = (error == "use_dpop_nonce")
                .then(|| response.headers.get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned))
                .flatten();
            return Err(Refused {
                error: McpError::Authorization(format!(
                    "{what} refused with HTTP {}: {error} {description}",
                    response.status.as_u16()
                )),
                nonce,
            });
        }
        if !value.is_object() {
            return Err(refused(format!("{what} answered with something other than a JSON object")));
        }
        Ok(Answer { value })
    }

    /// Trades the refresh token for new tokens; `false` when there is none or it was refused.
    async fn refresh(&self, state: &mut FlowState) -> bool {
        let Some(saved) = &state.saved else { return false };
        let Some(refresh_token) = saved.tokens.refresh_token.clone() else { return false };
        let client = saved.client.clone();
        let (token_endpoint, issuer) = (saved.token_endpoint.clone(), saved.issuer.clone());
        let method = match (&client, &self.inner.config.client_assertion_key) {
            (Some(_), Some(_)) => AuthMethod::PrivateKeyJwt,
            (Some(client), None) => auth_method_without_metadata(client),
            (None, _) => AuthMethod::None,
        };
        let mut form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.clone()),
            ("resource", saved.resource.clone()),
        ];
        match self.post_to(state, &token_endpoint, &issuer, method, client.as_ref(), &mut form).await {
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

    /// The `Authorization` value and, with DPoP, the proof for a request of `method` to `url`.
    fn credentials(state: &FlowState, method: &http::Method, url: &str) -> Result<Vec<(String, String)>, McpError> {
        let Some(saved) = &state.saved else { return Ok(Vec::new()) };
        let token = &saved.tokens.access_token;
        match (&state.dpop, saved.tokens.is_dpop()) {
            (Some(key), true) => {
                let proof = jwt::dpop_proof(key, method.as_str(), url, state.rs_nonce.as_deref(), Some(token), now())?;
                Ok(vec![("authorization".to_owned(), format!("DPoP {token}")), ("dpop".to_owned(), proof)])
            }
            // A DPoP-bound token kept by an earlier process whose key is gone: nothing is sent,
            // and the server's refusal starts a new authorization.
            (None, true) => Ok(Vec::new()),
            _ => Ok(vec![("authorization".to_owned(), format!("Bearer {token}"))]),
        }
    }
}

/// A successful JSON answer.
struct Answer {
    value: Value,
}

/// A refused exchange, with the DPoP nonce the server asked for, if it did.
struct Refused {
    error: McpError,
    nonce: Option<String>,
}

/// The user's approval: the code and the PKCE verifier it was asked with.
struct Approval {
    code: String,
    verifier: String,
}

/// The JWT bearer grant type (RFC 7523).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

fn form_headers() -> Vec<(String, String)> {
    vec![
        ("content-type".to_owned(), "application/x-www-form-urlencoded".to_owned()),
        ("accept".to_owned(), "application/json".to_owned()),
    ]
}

/// Adds the client's authentication by `method` to a token request.
fn client_authentication(
    method: AuthMethod,
    client: &ClientCredentials,
    headers: &mut Vec<(String, String)>,
    form: &mut Vec<(&'static str, String)>,
) {
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
        AuthMethod::None | AuthMethod::PrivateKeyJwt => form.push(("client_id", client.client_id.clone())),
    }
}

#[async_trait]
impl HeaderProvider for OAuth {
    async fn headers(&self) -> Result<Vec<(String, String)>, McpError> {
        self.request_headers(&http::Method::POST, &self.inner.server_url).await
    }

    async fn request_headers(&self, method: &http::Method, url: &str) -> Result<Vec<(String, String)>, McpError> {
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        let expiring = state.saved.as_ref().is_some_and(|s| s.tokens.expires_within(REFRESH_MARGIN, now()));
        if expiring && !self.refresh(&mut state).await && !matches!(self.inner.config.grant, Grant::AuthorizationCode) {
            // A grant without a person runs again; the old token is sent if that fails.
            if let Err(error) = self.authorize_locked(&mut state, &Challenge::default()).await {
                tracing::warn!(%error, "renewing the MCP server's token failed");
            }
        }
        Self::credentials(&state, method, url)
    }

    async fn challenged(&self, refusal: &Refusal) -> Result<bool, McpError> {
        let challenge = Challenge::parse(&refusal.www_authenticate);
        let mut state = self.inner.state.lock().await;
        self.load(&mut state).await;
        if challenge.error.as_deref() == Some("use_dpop_nonce")
            && let Some(nonce) = &refusal.dpop_nonce
        {
            // RFC 9449 §9: the same request again, its proof carrying the server's nonce.
            let fresh = state.rs_nonce.as_ref() != Some(nonce);
            state.rs_nonce = Some(nonce.clone());
            return Ok(fresh);
        }
        let current = state.saved.as_ref().map(|s| s.tokens.access_token.clone());
        let sent = refusal.authorization.as_deref().and_then(|a| a.split_once(' ')).map(|(_, token)| token);
        if current.is_some() && current.as_deref() != sent {
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
            let challenge = Challenge { scope: union_scopes(had.as_deref(), Some(wanted)), step_up: true, ..challenge };
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

/// A `Bearer` or `DPoP` challenge's parameters (RFC 6750 §3, RFC 9728 §5.1, RFC 9449 §7.1).
#[derive(Clone, Debug, Default)]
struct Challenge {
    resource_metadata: Option<String>,
    scope: Option<String>,
    error: Option<String>,
    /// The server asked with the `DPoP` scheme.
    dpop: bool,
    /// A step-up: `scope` already unites what was asked for before with what the server wants.
    step_up: bool,
}

impl Challenge {
    fn parse(headers: &[String]) -> Self {
        let mut challenge = Challenge::default();
        for header in headers {
            for scheme in ["bearer", "dpop"] {
                let Some(params) = scheme_params(header, scheme) else { continue };
                challenge.dpop |= scheme == "dpop";
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
        }
        challenge
    }
}

/// The auth-params of the `scheme` challenge (lower case) in a `WWW-Authenticate` value, if it
/// has one.
fn scheme_params(header: &str, scheme: &str) -> Option<Vec<(String, String)>> {
    let lower = header.to_ascii_lowercase();
    let start = lower.match_indices(scheme).map(|(i, _)| i).find(|&i| {
        let before = header[..i].trim_end();
        let after = header[i + scheme.len()..].chars().next();
        (before.is_empty() || before.ends_with(',')) && after.is_none_or(|c| c == ' ' || c == ',')
    })?;
    let mut rest = &header[start + scheme.len()..];
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
    /// A client assertion signed with [`OAuthConfig::client_assertion_key`].
    PrivateKeyJwt,
}

impl AuthMethod {
    /// Its name in metadata (`token_endpoint_auth_method`).
    fn name(self) -> &'static str {
        match self {
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::None => "none",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }
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
    // Only an answer that passed both checks is believed, errors included (RFC 9207 §2.4).
    if let Some(error) = get("error") {
        let description = get("error_description").unwrap_or_default();
        return Err(McpError::Authorization(format!("the authorization was refused: {error} {description}")));
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
    fn new() -> Result<Self, McpError> {
        let verifier = random_token(32)?;
        let digest = ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes());
        Ok(Pkce { challenge: URL_SAFE_NO_PAD.encode(digest.as_ref()), verifier })
    }
}

/// `bytes` random bytes from the system's generator, base64url. A system without one fails the
/// flow: a predictable verifier, state or `jti` would defeat them.
fn random_token(bytes: usize) -> Result<String, McpError> {
    use ring::rand::SecureRandom as _;
    let mut buffer = vec![0u8; bytes];
    ring::rand::SystemRandom::new()
        .fill(&mut buffer)
        .map_err(|_| McpError::Authorization("the system has no source of randomness for OAuth".into()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
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
