//! The configuration's MCP servers, connected at start; their tools join the agent's.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sinew::AgentTool;
use sinew::mcp::{
    AuthorizationHandler, ClientCredentials, FileTokenStore, HeaderProvider, LoopbackRedirect, McpClient, McpError,
    OAuth, OAuthConfig, Refusal, StdioCommand,
};

use crate::config::{McpOAuthSettings, McpServerConfig};

/// How long one server may take to start and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the user has to approve a server that asks for authorization.
const APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);
/// Where the browser comes back to, unless a server's `redirect_port` says otherwise.
const DEFAULT_REDIRECT_PORT: u16 = 8976;

/// A connected server and its tools (named `{prefix}__{tool}`).
pub(crate) struct Connected {
    pub(crate) name: String,
    pub(crate) client: McpClient,
    pub(crate) tools: Vec<Arc<dyn AgentTool>>,
    pub(crate) require_approval: bool,
}

/// Connects every server at once. A server that fails is reported by name and left out; the
/// others are used.
pub(crate) async fn connect_all<'a>(
    servers: impl IntoIterator<Item = (&'a String, &'a McpServerConfig)>,
) -> (Vec<Connected>, Vec<String>) {
    // One approval at a time: the browser comes back to one loopback port, and the user reads
    // one request at a time.
    let approvals = Arc::new(tokio::sync::Mutex::new(()));
    let attempts = servers.into_iter().map(|(name, server)| {
        let approvals = approvals.clone();
        async move {
            let oauth = server.oauth.as_ref().and_then(crate::config::McpOAuth::settings);
            let limit = if oauth.is_some() { CONNECT_TIMEOUT + APPROVAL_TIMEOUT } else { CONNECT_TIMEOUT };
            let connected = tokio::time::timeout(limit, connect(name, server, oauth, approvals)).await;
            match connected {
                Ok(Ok(connected)) => Ok(connected),
                Ok(Err(error)) => Err(format!("MCP server `{name}` is not available: {error}")),
                Err(_) => Err(format!("MCP server `{name}` did not answer within {}s", limit.as_secs())),
            }
        }
    });
    let mut connected = Vec::new();
    let mut failures = Vec::new();
    for result in futures::future::join_all(attempts).await {
        match result {
            Ok(server) => connected.push(server),
            Err(failure) => failures.push(failure),
        }
    }
    (connected, failures)
}

async fn connect(
    name: &str,
    server: &McpServerConfig,
    oauth: Option<McpOAuthSettings>,
    approvals: Arc<tokio::sync::Mutex<()>>,
) -> Result<Connected, String> {
    let builder = McpClient::builder().name(name);
    let client = match (&server.command, &server.url) {
        (Some(command), None) => {
            let mut stdio = StdioCommand::new(command).args(&server.args);
            for (key, value) in &server.env {
                stdio = stdio.env(key, value);
            }
            for name in &server.inherit_env {
                stdio = stdio.inherit(name);
            }
            if let Some(dir) = &server.cwd {
                stdio = stdio.cwd(dir);
            }
            builder.connect_stdio(stdio).await.map_err(|e| e.to_string())?
        }
        (None, Some(url)) => {
            let headers: Vec<(String, String)> = server.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            let builder = match oauth {
                Some(settings) => {
                    let oauth = authorization(name, url, &settings, approvals)?;
                    // Signing in takes a person's time: it happens before connecting, not inside
                    // a request and its timeout.
                    if !oauth.is_authorized().await {
                        oauth.authorize().await.map_err(|e| e.to_string())?;
                    }
                    builder.headers(WithOAuth { headers, oauth })
                }
                None => builder.headers(headers),
            };
            builder.connect_http(url).await.map_err(|e| e.to_string())?
        }
        _ => return Err("give it either `command` (stdio) or `url` (HTTP)".into()),
    };
    let prefix = server.prefix.as_deref().unwrap_or(name);
    match client.agent_tools(Some(prefix)).await {
        Ok(tools) => Ok(Connected { name: name.to_owned(), client, tools, require_approval: server.require_approval }),
        Err(error) => {
            client.close().await;
            Err(format!("listing its tools failed: {error}"))
        }
    }
}

/// The OAuth client of server `name`: tokens kept in the data directory's `mcp-tokens.json`
/// (mode `0600`), the user sent to the browser (or shown the URL) when the server asks.
fn authorization(
    name: &str,
    url: &str,
    settings: &McpOAuthSettings,
    approvals: Arc<tokio::sync::Mutex<()>>,
) -> Result<OAuth, String> {
    let port = settings.redirect_port.unwrap_or(DEFAULT_REDIRECT_PORT);
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut config = OAuthConfig::new(&redirect).client_name("sinew");
    if let Some(client_id) = &settings.client_id {
        let client_secret = match &settings.client_secret_env {
            Some(variable) => Some(
                std::env::var(variable)
                    .map_err(|_| format!("its OAuth client secret variable {variable} is not set"))?,
            ),
            None => None,
        };
        config = config.client(ClientCredentials {
            client_id: client_id.clone(),
            client_secret,
            token_endpoint_auth_method: None,
        });
    }
    if let Some(scopes) = &settings.scopes {
        config = config.scopes(scopes);
    }
    if let Some(document) = &settings.client_metadata_url {
        config = config.client_metadata_url(document);
    }
    let label = name.to_owned();
    let browser = LoopbackRedirect::new(redirect, move |authorize_url: &str| {
        eprintln!("MCP server `{label}` asks you to sign in; open:\n  {authorize_url}");
        open_browser(authorize_url);
    })
    .timeout(APPROVAL_TIMEOUT);
    let store = crate::config::data_dir()
        .ok_or("cannot tell where to keep its OAuth tokens: set HOME or XDG_DATA_HOME")?
        .join("mcp-tokens.json");
    Ok(OAuth::new(url, config, OneAtATime { approvals, browser }).with_store(FileTokenStore::new(store)))
}

/// Opens `url` in the desktop's browser, if there is one; the URL is printed either way. Only
/// an `https` URL, or `http` on this machine, is handed to the opener: a server's metadata must
/// not launch other programs or schemes.
fn open_browser(url: &str) {
    let lower = url.to_ascii_lowercase();
    let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"].iter().any(|prefix| {
        lower.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/', '?']))
    });
    if !(lower.starts_with("https://") || loopback) {
        return;
    }
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let spawned = std::process::Command::new(opener)
        .arg(url)
        .env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| {
            matches!(
                k.to_str(),
                Some(
                    "PATH"
                        | "HOME"
                        | "DISPLAY"
                        | "WAYLAND_DISPLAY"
                        | "XDG_RUNTIME_DIR"
                        | "XDG_CURRENT_DESKTOP"
                        | "XDG_DATA_DIRS"
                        | "DBUS_SESSION_BUS_ADDRESS"
                        | "BROWSER"
                )
            )
        }))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Ok(mut child) = spawned {
        // Reaped in the background so no zombie is left.
        std::thread::spawn(move || child.wait());
    }
}

/// A loopback redirect that waits for other servers' approvals to finish first.
struct OneAtATime {
    approvals: Arc<tokio::sync::Mutex<()>>,
    browser: LoopbackRedirect,
}

#[async_trait]
impl AuthorizationHandler for OneAtATime {
    async fn authorize(&self, url: &str) -> Result<String, McpError> {
        let _turn = self.approvals.lock().await;
        self.browser.authorize(url).await
    }
}

/// The configuration's fixed headers, and OAuth's.
struct WithOAuth {
    headers: Vec<(String, String)>,
    oauth: OAuth,
}

#[async_trait]
impl HeaderProvider for WithOAuth {
    async fn headers(&self) -> Result<Vec<(String, String)>, McpError> {
        let mut headers = self.headers.clone();
        headers.extend(self.oauth.headers().await?);
        Ok(headers)
    }

    async fn request_headers(&self, method: &http::Method, url: &str) -> Result<Vec<(String, String)>, McpError> {
        let mut headers = self.headers.clone();
        headers.extend(self.oauth.request_headers(method, url).await?);
        Ok(headers)
    }

    async fn challenged(&self, refusal: &Refusal) -> Result<bool, McpError> {
        self.oauth.challenged(refusal).await
    }
}
