//! Microsoft Entra ID tokens for Azure OpenAI (feature `entra`): the sources Azure's
//! `DefaultAzureCredential` tries, as a [`TokenSource`].

use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde_json::Value;
use sinew_core::{Failure, ProviderError};
use tokio::io::AsyncReadExt;

use crate::auth::form_urlencoded;
use crate::client::HttpClient;
use crate::credentials::{AccessToken, CredentialCache, Expiring, TokenSource};
use crate::request::HttpRequest;

/// The scope of Azure OpenAI (and the other Azure AI services) tokens.
pub const COGNITIVE_SERVICES_SCOPE: &str = "https://cognitiveservices.azure.com/.default";

/// Entra ID's public cloud.
const DEFAULT_AUTHORITY: &str = "https://login.microsoftonline.com";
/// Azure's instance metadata service.
const DEFAULT_IMDS: &str = "http://169.254.169.254";
/// How long the instance metadata service has to answer the first time, in the chain (Azure's
/// SDKs probe it so: off Azure nothing listens there).
const IMDS_PROBE: Duration = Duration::from_secs(1);
/// The largest answer read from a token endpoint or the Azure CLI.
const MAX_ANSWER: usize = 64 * 1024;
/// How long the Azure CLI may take.
const CLI_TIMEOUT: Duration = Duration::from_secs(20);
/// The lifetime assumed for a CLI token that does not say its expiry in UTC.
const CLI_ASSUMED_LIFETIME: Duration = Duration::from_secs(10 * 60);
/// The variables the Azure CLI is given (and nothing else: no other secret reaches it).
const CLI_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "USERPROFILE",
    "SYSTEMROOT",
    "AZURE_CONFIG_DIR",
    "AZURE_EXTENSION_DIR",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
    "REQUESTS_CA_BUNDLE",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// Entra ID (Azure AD) access tokens, from the first of these sources that is set up, in the
/// order of Azure's `DefaultAzureCredential`:
///
/// 1. a service principal's secret: `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`, `AZURE_CLIENT_SECRET`;
/// 2. workload identity (AKS): `AZURE_FEDERATED_TOKEN_FILE` with `AZURE_TENANT_ID` and
///    `AZURE_CLIENT_ID`, the file read at each fetch (it is rotated);
/// 3. managed identity: App Service and Container Apps (`IDENTITY_ENDPOINT`,
///    `IDENTITY_HEADER`), else the instance metadata service (VMs, probed for a second;
///    `AZURE_POD_IDENTITY_AUTHORITY_HOST` overrides its address), user-assigned with
///    `AZURE_CLIENT_ID`;
/// 4. the Azure CLI (`az account get-access-token`), signed in with `az login`.
///
/// `AZURE_AUTHORITY_HOST` names another cloud's authority (default
/// `https://login.microsoftonline.com`). A source that is not set up passes to the next; one
/// that is set up and fails ends the search with its error (as Azure's SDKs do), and the source
/// that gave a token is the one asked from then on. Tokens are cached and refreshed five
/// minutes before they expire, in the background while they are still good
/// ([`CredentialCache`]). `Debug` shows which sources, never a secret.
///
/// ```no_run
/// use std::sync::Arc;
/// use sinew_http::{Auth, EntraCredential};
///
/// let auth = Auth::Token(Arc::new(EntraCredential::from_env()));
/// ```
#[derive(Clone)]
pub struct EntraCredential {
    chain: Arc<Chain>,
    cache: CredentialCache<String>,
}

struct Chain {
    sources: Vec<Source>,
    scope: String,
    client: HttpClient,
    /// The source that gave a token, asked from then on (`usize::MAX`: none yet).
    chosen: AtomicUsize,
    /// Whether the instance metadata service answered once (it is probed until then).
    imds_answered: AtomicBool,
}

#[derive(Clone)]
enum Source {
    ClientSecret { authority: String, tenant: String, client_id: String, secret: String },
    WorkloadIdentity { authority: String, tenant: String, client_id: String, token_file: PathBuf },
    AppService { endpoint: String, header: String, client_id: Option<String> },
    Imds { endpoint: String, client_id: Option<String>, probe: bool },
    AzureCli { tenant: Option<String>, variables: Vec<(String, String)> },
}

/// Why a source gave no token.
enum Miss {
    /// It is not set up here: the next source is asked.
    Unavailable(String),
    /// It is set up and failed: the search ends.
    Failed(ProviderError),
}

impl EntraCredential {
    /// The chain above, its settings read from the process's environment.
    pub fn from_env() -> Self {
        EntraCredential::from_vars(crate::provider::env_var)
    }

    /// The chain above, its settings read through `var` (a map in tests, a configuration
    /// file...). `PATH` and the other variables the Azure CLI is given come from it too.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let authority = authority(&var);
        let tenant = var("AZURE_TENANT_ID");
        let client_id = var("AZURE_CLIENT_ID");
        let mut sources = Vec::new();
        if let (Some(tenant), Some(client_id), Some(secret)) = (&tenant, &client_id, var("AZURE_CLIENT_SECRET")) {
            sources.push(Source::ClientSecret {
                authority: authority.clone(),
                tenant: tenant.clone(),
                client_id: client_id.clone(),
                secret,
            });
        }
        if let (Some(tenant), Some(client_id), Some(file)) = (&tenant, &client_id, var("AZURE_FEDERATED_TOKEN_FILE")) {
            sources.push(Source::WorkloadIdentity {
                authority,
                tenant: tenant.clone(),
                client_id: client_id.clone(),
                token_file: file.into(),
            });
        }
        sources.push(managed_identity(&var, client_id.clone(), true));
        let variables = CLI_VARIABLES.iter().filter_map(|name| var(name).map(|v| ((*name).to_owned(), v))).collect();
        sources.push(Source::AzureCli { tenant, variables });
        EntraCredential::new(sources)
    }

    /// A service principal's client secret.
    pub fn client_secret(tenant: &str, client_id: &str, secret: impl Into<String>) -> Self {
        EntraCredential::new(vec![Source::ClientSecret {
            authority: DEFAULT_AUTHORITY.into(),
            tenant: tenant.into(),
            client_id: client_id.into(),
            secret: secret.into(),
        }])
    }

    /// Workload identity federation: the service account token in `token_file` (read at each
    /// fetch) exchanged for an Entra ID token of `client_id`.
    pub fn workload_identity(tenant: &str, client_id: &str, token_file: impl Into<PathBuf>) -> Self {
        EntraCredential::new(vec![Source::WorkloadIdentity {
            authority: DEFAULT_AUTHORITY.into(),
            tenant: tenant.into(),
            client_id: client_id.into(),
            token_file: token_file.into(),
        }])
    }

    /// The machine's managed identity (App Service's endpoint when its variables are set, else
    /// the instance metadata service); user-assigned when `client_id` is given.
    pub fn managed_identity(client_id: Option<&str>) -> Self {
        let var = crate::provider::env_var;
        EntraCredential::new(vec![managed_identity(&var, client_id.map(str::to_owned), false)])
    }

    /// The Azure CLI's signed-in account.
    pub fn azure_cli() -> Self {
        let variables = CLI_VARIABLES
            .iter()
            .filter_map(|name| crate::provider::env_var(name).map(|v| ((*name).to_owned(), v)))
            .collect();
        EntraCredential::new(vec![Source::AzureCli { tenant: None, variables }])
    }

    fn new(sources: Vec<Source>) -> Self {
        EntraCredential::assemble(sources, COGNITIVE_SERVICES_SCOPE.into(), HttpClient::new())
    }

    fn assemble(sources: Vec<Source>, scope: String, client: HttpClient) -> Self {
        let chain = Arc::new(Chain {
            sources,
            scope,
            client,
            chosen: AtomicUsize::new(usize::MAX),
            imds_answered: AtomicBool::new(false),
        });
        let fetching = Arc::clone(&chain);
        let cache = CredentialCache::new(move || {
            let chain = Arc::clone(&fetching);
            async move { chain.fetch().await }
        });
        EntraCredential { chain, cache }
    }

    /// Tokens for `scope` instead of Azure AI services'.
    #[must_use]
    pub fn with_scope(self, scope: impl Into<String>) -> Self {
        EntraCredential::assemble(self.chain.sources.clone(), scope.into(), self.chain.client.clone())
    }

    /// Sends the token requests with `client` (its proxies, its timeouts).
    #[must_use]
    pub fn with_client(self, client: HttpClient) -> Self {
        EntraCredential::assemble(self.chain.sources.clone(), self.chain.scope.clone(), client)
    }

    /// Asks Entra ID at `authority` (another cloud's, such as
    /// `https://login.microsoftonline.us`) instead of the one set.
    #[must_use]
    pub fn with_authority_host(self, authority: &str) -> Self {
        let authority = authority.trim_end_matches('/').to_owned();
        let sources = self
            .chain
            .sources
            .iter()
            .cloned()
            .map(|source| match source {
                Source::ClientSecret { tenant, client_id, secret, .. } => {
                    Source::ClientSecret { authority: authority.clone(), tenant, client_id, secret }
                }
                Source::WorkloadIdentity { tenant, client_id, token_file, .. } => {
                    Source::WorkloadIdentity { authority: authority.clone(), tenant, client_id, token_file }
                }
                other => other,
            })
            .collect();
        EntraCredential::assemble(sources, self.chain.scope.clone(), self.chain.client.clone())
    }
}

#[async_trait]
impl TokenSource for EntraCredential {
    async fn token(&self) -> Result<AccessToken, ProviderError> {
        // The cache's expiry is the token's; the token source does not repeat it.
        self.cache.get().await.map(|token| AccessToken::new(token, None))
    }

    fn invalidate(&self) -> bool {
        self.cache.invalidate()
    }
}

impl fmt::Debug for EntraCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sources: Vec<&str> = self.chain.sources.iter().map(Source::name).collect();
        f.debug_struct("EntraCredential")
            .field("sources", &sources)
            .field("scope", &self.chain.scope)
            .field("cache", &self.cache)
            .finish()
    }
}

impl Chain {
    async fn fetch(&self) -> Result<Expiring<String>, ProviderError> {
        let chosen = self.chosen.load(Ordering::Acquire);
        if let Some(source) = self.sources.get(chosen) {
            return match self.ask(source).await {
                Ok(token) => Ok(token),
                Err(Miss::Unavailable(why)) => Err(ProviderError::Auth(format!("{}: {why}", source.name()))),
                Err(Miss::Failed(error)) => Err(error),
            };
        }
        let mut tried = Vec::new();
        for (index, source) in self.sources.iter().enumerate() {
            match self.ask(source).await {
                Ok(token) => {
                    self.chosen.store(index, Ordering::Release);
                    return Ok(token);
                }
                Err(Miss::Unavailable(why)) => tried.push(format!("{}: {why}", source.name())),
                Err(Miss::Failed(error)) => return Err(error),
            }
        }
        Err(ProviderError::Auth(format!("no Entra ID credentials found ({})", tried.join("; "))))
    }

    async fn ask(&self, source: &Source) -> Result<Expiring<String>, Miss> {
        let resource = self.scope.trim_end_matches("/.default");
        match source {
            Source::ClientSecret { authority, tenant, client_id, secret } => {
                let form = [
                    ("client_id", client_id.as_str()),
                    ("scope", self.scope.as_str()),
                    ("grant_type", "client_credentials"),
                    ("client_secret", secret.as_str()),
                ];
                self.token_endpoint(authority, tenant, &form, "the client secret").await
            }
            Source::WorkloadIdentity { authority, tenant, client_id, token_file } => {
                let assertion = read_token_file(token_file).await.map_err(Miss::Failed)?;
                let form = [
                    ("client_id", client_id.as_str()),
                    ("scope", self.scope.as_str()),
                    ("grant_type", "client_credentials"),
                    ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                    ("client_assertion", assertion.trim()),
                ];
                self.token_endpoint(authority, tenant, &form, "the workload identity").await
            }
            Source::AppService { endpoint, header, client_id } => {
                let mut query = vec![("api-version", "2019-08-01"), ("resource", resource)];
                query.extend(client_id.as_deref().map(|id| ("client_id", id)));
                let request =
                    get(format!("{endpoint}?{}", form_urlencoded(&query))).header("x-identity-header", header);
                let answer = self.send(request, None).await.map_err(Miss::Failed)?;
                managed_token(answer, "App Service's managed identity").map_err(Miss::Failed)
            }
            Source::Imds { endpoint, client_id, probe } => {
                let mut query = vec![("api-version", "2018-02-01"), ("resource", resource)];
                query.extend(client_id.as_deref().map(|id| ("client_id", id)));
                let url = format!("{endpoint}/metadata/identity/oauth2/token?{}", form_urlencoded(&query));
                let request = get(url).header("metadata", "true");
                let probing = *probe && !self.imds_answered.load(Ordering::Acquire);
                let answer = match self.send(request, probing.then_some(IMDS_PROBE)).await {
                    Ok(answer) => answer,
                    Err(error) if probing => {
                        return Err(Miss::Unavailable(format!("no instance metadata service answered ({error})")));
                    }
                    Err(error) => return Err(Miss::Failed(error)),
                };
                if *probe && answer.status == 400 {
                    // The service answers, but this machine has no identity assigned.
                    return Err(Miss::Unavailable(format!("no managed identity: {}", describe(&answer))));
                }
                self.imds_answered.store(answer.status == 200, Ordering::Release);
                managed_token(answer, "the managed identity").map_err(Miss::Failed)
            }
            Source::AzureCli { tenant, variables } => azure_cli(&self.scope, tenant.as_deref(), variables).await,
        }
    }

    /// A client credentials grant at `{authority}/{tenant}/oauth2/v2.0/token`.
    async fn token_endpoint(
        &self,
        authority: &str,
        tenant: &str,
        form: &[(&str, &str)],
        what: &str,
    ) -> Result<Expiring<String>, Miss> {
        let url = format!("{authority}/{tenant}/oauth2/v2.0/token");
        let mut request = HttpRequest::post_json(url, form_urlencoded(form));
        request.headers = vec![("content-type".into(), "application/x-www-form-urlencoded".into())];
        let answer = self.send(request, None).await.map_err(Miss::Failed)?;
        if answer.status != 200 {
            return Err(Miss::Failed(refusal(&format!("Entra ID refused {what}"), &answer)));
        }
        let token = answer.json.get("access_token").and_then(Value::as_str);
        let lifetime = seconds(answer.json.get("expires_in"));
        match (token, lifetime) {
            (Some(token), Some(lifetime)) => Ok(Expiring {
                value: token.to_owned(),
                expires_at: SystemTime::now().checked_add(Duration::from_secs(lifetime)),
            }),
            _ => Err(Miss::Failed(ProviderError::Auth(format!(
                "Entra ID's answer for {what} has no access_token and expires_in"
            )))),
        }
    }

    /// Sends `request` once (the transport retries the model call), its answer read up to
    /// [`MAX_ANSWER`] bytes, within `within` when given.
    async fn send(&self, request: HttpRequest, within: Option<Duration>) -> Result<Answer, ProviderError> {
        let exchange = async {
            let mut response = self.client.send_once(&request).await?;
            let body = response.bytes(MAX_ANSWER).await?;
            let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
            Ok(Answer { status: response.status.as_u16(), json })
        };
        match within {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .unwrap_or_else(|_| Err(ProviderError::Network(Failure::from(format!("no answer within {limit:?}"))))),
            None => exchange.await,
        }
    }
}

impl Source {
    fn name(&self) -> &'static str {
        match self {
            Source::ClientSecret { .. } => "client secret",
            Source::WorkloadIdentity { .. } => "workload identity",
            Source::AppService { .. } => "App Service managed identity",
            Source::Imds { .. } => "managed identity",
            Source::AzureCli { .. } => "Azure CLI",
        }
    }
}

fn authority(var: &impl Fn(&str) -> Option<String>) -> String {
    var("AZURE_AUTHORITY_HOST").map_or_else(|| DEFAULT_AUTHORITY.into(), |host| host.trim_end_matches('/').to_owned())
}

fn managed_identity(var: &impl Fn(&str) -> Option<String>, client_id: Option<String>, probe: bool) -> Source {
    match (var("IDENTITY_ENDPOINT"), var("IDENTITY_HEADER")) {
        (Some(endpoint), Some(header)) => Source::AppService { endpoint, header, client_id },
        _ => {
            let endpoint = var("AZURE_POD_IDENTITY_AUTHORITY_HOST").unwrap_or_else(|| DEFAULT_IMDS.into());
            Source::Imds { endpoint: endpoint.trim_end_matches('/').to_owned(), client_id, probe }
        }
    }
}

fn get(url: String) -> HttpRequest {
    HttpRequest { method: http::Method::GET, url, headers: Vec::new(), body: bytes::Bytes::new() }
}

/// A status and the JSON it came with (`null` when it was not JSON).
struct Answer {
    status: u16,
    json: Value,
}

/// The service's own words: OAuth's `error` and `error_description` (which name no secret).
fn describe(answer: &Answer) -> String {
    let field = |name: &str| answer.json.get(name).and_then(Value::as_str);
    match (field("error"), field("error_description")) {
        (Some(error), Some(description)) => format!("{error}: {description}"),
        (Some(error), None) => error.to_owned(),
        _ => format!("status {}", answer.status),
    }
}

fn refusal(what: &str, answer: &Answer) -> ProviderError {
    let message = format!("{what} (status {}): {}", answer.status, describe(answer));
    if answer.status >= 500 || answer.status == 429 {
        ProviderError::Network(Failure::from(message))
    } else {
        ProviderError::Auth(message)
    }
}

/// A managed identity's token: `access_token` and `expires_on` (seconds since the epoch, as a
/// number or a string).
fn managed_token(answer: Answer, what: &str) -> Result<Expiring<String>, ProviderError> {
    if answer.status != 200 {
        return Err(refusal(&format!("{what} gave no token"), &answer));
    }
    let token = answer.json.get("access_token").and_then(Value::as_str);
    match (token, seconds(answer.json.get("expires_on"))) {
        (Some(token), Some(expires_on)) => Ok(Expiring {
            value: token.to_owned(),
            expires_at: SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(expires_on)),
        }),
        _ => Err(ProviderError::Auth(format!("{what}'s answer has no access_token and expires_on"))),
    }
}

/// Seconds as JSON writes them here: a number or a string of digits.
fn seconds(value: Option<&Value>) -> Option<u64> {
    match value? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

async fn read_token_file(path: &PathBuf) -> Result<String, ProviderError> {
    let file = tokio::fs::File::open(path)
        .await
        .map_err(|e| ProviderError::Auth(format!("cannot read the federated token file {}: {e}", path.display())))?;
    let mut text = String::new();
    file.take(MAX_ANSWER as u64)
        .read_to_string(&mut text)
        .await
        .map_err(|e| ProviderError::Auth(format!("cannot read the federated token file {}: {e}", path.display())))?;
    Ok(text)
}

/// `az account get-access-token`, run with only [`CLI_VARIABLES`], bounded in time and output.
async fn azure_cli(
    scope: &str,
    tenant: Option<&str>,
    variables: &[(String, String)],
) -> Result<Expiring<String>, Miss> {
    let mut command = tokio::process::Command::new("az");
    command.args(["account", "get-access-token", "--output", "json", "--scope", scope]);
    if let Some(tenant) = tenant {
        command.args(["--tenant", tenant]);
    }
    command.env_clear().envs(variables.iter().map(|(k, v)| (k, v)));
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(Miss::Unavailable("the Azure CLI (`az`) is not installed".into()));
        }
        Err(error) => return Err(Miss::Failed(ProviderError::Auth(format!("cannot run the Azure CLI: {error}")))),
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let out = child.stdout.take().map(|s| s.take(MAX_ANSWER as u64));
    let err = child.stderr.take().map(|s| s.take(MAX_ANSWER as u64));
    let run = async {
        // Both pipes at once: a CLI that fills one while sinew reads the other would stall.
        let read_out = async {
            match out {
                Some(mut out) => out.read_to_end(&mut stdout).await.map(drop),
                None => Ok(()),
            }
        };
        let read_err = async {
            match err {
                Some(mut err) => err.read_to_end(&mut stderr).await.map(drop),
                None => Ok(()),
            }
        };
        let (read_out, read_err) = tokio::join!(read_out, read_err);
        read_out?;
        read_err?;
        child.wait().await
    };
    let status = match tokio::time::timeout(CLI_TIMEOUT, run).await {
        Ok(Ok(status)) => status,
        Ok(Err(error)) => return Err(Miss::Failed(ProviderError::Auth(format!("the Azure CLI failed: {error}")))),
        Err(_) => {
            return Err(Miss::Failed(ProviderError::Auth(format!("the Azure CLI took longer than {CLI_TIMEOUT:?}"))));
        }
    };
    let said = String::from_utf8_lossy(&stderr).trim().to_owned();
    if !status.success() {
        if said.contains("az login") || said.contains("not logged in") {
            return Err(Miss::Unavailable("the Azure CLI is not signed in (run `az login`)".into()));
        }
        return Err(Miss::Failed(ProviderError::Auth(format!("the Azure CLI gave no token ({status}): {said}"))));
    }
    let json: Value = serde_json::from_slice(&stdout)
        .map_err(|e| Miss::Failed(ProviderError::Auth(format!("the Azure CLI's answer is not JSON: {e}"))))?;
    let Some(token) = json.get("accessToken").and_then(Value::as_str) else {
        return Err(Miss::Failed(ProviderError::Auth("the Azure CLI's answer has no accessToken".into())));
    };
    // `expires_on` (seconds, UTC) is in CLI 2.54 and later; `expiresOn` is local time.
    let expires_at = match seconds(json.get("expires_on")) {
        Some(secs) => SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs)),
        None => SystemTime::now().checked_add(CLI_ASSUMED_LIFETIME),
    };
    Ok(Expiring { value: token.to_owned(), expires_at })
}
