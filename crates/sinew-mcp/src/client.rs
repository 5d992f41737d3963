//! The MCP client: connection, version negotiation, requests, and what the server asks of us.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use tokio::time::Instant;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use sinew_http::HttpClient;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::error::{McpError, codes};
use crate::jsonrpc::{self, Message, RequestId, RpcError};
use crate::protocol::{
    self, CallToolResult, HANDSHAKE_VERSIONS, Implementation, LATEST_HANDSHAKE_VERSION, LATEST_VERSION,
    META_SERVER_INFO, McpToolInfo, ProtocolEra, Root, STATELESS_VERSIONS, ServerDescription,
};
use crate::transport::http::{HeaderProvider, LegacySse, Shared, StreamableHttp};
use crate::transport::stdio::{StdioCommand, StdioTransport};
use crate::transport::{INBOX_CAPACITY, Inbound, Outgoing, Transport};

/// Default time a request may take without an answer or a progress notification.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Default time a request may take at all, however often progress restarts its timeout.
pub const DEFAULT_MAX_REQUEST_TIME: Duration = Duration::from_secs(30 * 60);
/// The server's requests answered at once (`sampling/createMessage`, `elicitation/create`...);
/// past it, a request is answered with an error at once rather than queued.
const MAX_CONCURRENT_SERVER_REQUESTS: usize = 16;
/// Default size limit of one message from the server.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// The most `input_required` rounds one request may take (2026-07-28 multi-round-trip requests).
const MAX_INPUT_ROUNDS: usize = 8;
/// The longest wait for `server/discover` before falling back to the handshake.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Answers a request the server sends us (`sampling/createMessage`, `elicitation/create`).
///
/// Closures `Fn(Value) -> impl Future<Output = Result<Value, RpcError>>` implement it.
#[async_trait]
pub trait ServerRequestHandler: Send + Sync {
    /// Answers one server request given its JSON-RPC `params`; the `Ok` value is sent back as the
    /// `result`, an `Err` as the error.
    async fn handle(&self, params: Value) -> Result<Value, RpcError>;
}

#[async_trait]
impl<F, Fut> ServerRequestHandler for F
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Value, RpcError>> + Send,
{
    async fn handle(&self, params: Value) -> Result<Value, RpcError> {
        self(params).await
    }
}

/// A progress notification for a request.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Progress so far (`progress`); it grows with each notification. 0 when the server sent none.
    pub progress: f64,
    /// The value `progress` will reach (`total`); `None` when the server does not know it.
    pub total: Option<f64>,
    /// A human-readable status (`message`), when the server sends one.
    pub message: Option<String>,
}

/// Receives a request's progress notifications.
pub type ProgressCallback = Arc<dyn Fn(Progress) + Send + Sync>;

/// Per-request options.
#[derive(Clone, Default)]
pub struct RequestOptions {
    /// Overrides the client's request timeout. Each progress notification restarts it, up to the
    /// client's maximum request time.
    pub timeout: Option<Duration>,
    /// Cancels the request: the server gets `notifications/cancelled`.
    pub cancel: Option<CancellationToken>,
    /// Asks the server for progress notifications (a `progressToken` is sent).
    pub on_progress: Option<ProgressCallback>,
}

impl fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel)
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}

/// How to connect: client identity, protocol era, timeouts, and what we answer the server.
#[derive(Clone)]
pub struct McpClientBuilder {
    name: Option<String>,
    client_info: Implementation,
    era: ProtocolEra,
    handshake_version: String,
    request_timeout: Duration,
    max_request_time: Duration,
    max_message_bytes: usize,
    roots: Option<Vec<Root>>,
    sampling: Option<Arc<dyn ServerRequestHandler>>,
    elicitation: Option<Arc<dyn ServerRequestHandler>>,
    http: Option<HttpClient>,
    headers: Option<Arc<dyn HeaderProvider>>,
    legacy_fallback: bool,
}

impl fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("name", &self.name)
            .field("client_info", &self.client_info)
            .field("era", &self.era)
            .field("handshake_version", &self.handshake_version)
            .field("request_timeout", &self.request_timeout)
            .field("max_request_time", &self.max_request_time)
            .field("roots", &self.roots)
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for McpClientBuilder {
    fn default() -> Self {
        McpClientBuilder {
            name: None,
            client_info: Implementation::new("sinew", env!("CARGO_PKG_VERSION")),
            era: ProtocolEra::Auto,
            handshake_version: LATEST_HANDSHAKE_VERSION.to_owned(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_request_time: DEFAULT_MAX_REQUEST_TIME,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            roots: None,
            sampling: None,
            elicitation: None,
            http: None,
            headers: None,
            legacy_fallback: true,
        }
    }
}

impl McpClientBuilder {
    /// The server's name in errors and logs (default: its `serverInfo.name`, else the command
    /// or URL).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The `clientInfo` sent to servers (default `sinew` and this crate's version).
    #[must_use]
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_info = Implementation::new(name, version);
        self
    }

    /// Which lifecycle to use (default [`ProtocolEra::Auto`]).
    #[must_use]
    pub fn era(mut self, era: ProtocolEra) -> Self {
        self.era = era;
        self
    }

    /// The revision offered in `initialize` (default 2025-11-25). The server may answer with an
    /// older one; any revision in [`HANDSHAKE_VERSIONS`] is accepted.
    #[must_use]
    pub fn handshake_version(mut self, version: impl Into<String>) -> Self {
        self.handshake_version = version.into();
        self
    }

    /// How long a request may go without an answer or progress (default 60 s).
    #[must_use]
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The longest a request may take, however often the server's progress restarts its
    /// timeout (default 30 minutes).
    #[must_use]
    pub fn max_request_time(mut self, max: Duration) -> Self {
        self.max_request_time = max;
        self
    }

    /// The size limit of one message from the server (default 16 MiB). A bigger one closes the
    /// connection with [`McpError::Protocol`].
    #[must_use]
    pub fn max_message_bytes(mut self, max: usize) -> Self {
        self.max_message_bytes = max;
        self
    }

    /// Answers the server's `roots/list` with these roots (and declares the `roots` capability).
    #[must_use]
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// Answers `sampling/createMessage` (and declares the `sampling` capability).
    #[must_use]
    pub fn sampling(mut self, handler: impl ServerRequestHandler + 'static) -> Self {
        self.sampling = Some(Arc::new(handler));
        self
    }

    /// Answers `elicitation/create` (and declares the `elicitation` capability).
    #[must_use]
    pub fn elicitation(mut self, handler: impl ServerRequestHandler + 'static) -> Self {
        self.elicitation = Some(Arc::new(handler));
        self
    }

    /// The HTTP client to use (default: a new one; share yours to share its connection pool).
    #[must_use]
    pub fn http_client(mut self, client: HttpClient) -> Self {
        self.http = Some(client);
        self
    }

    /// Headers added to every HTTP request: the hook for authentication.
    #[must_use]
    pub fn headers(mut self, provider: impl HeaderProvider + 'static) -> Self {
        self.headers = Some(Arc::new(provider));
        self
    }

    /// Whether an HTTP server that refuses Streamable HTTP with a 4xx is retried with the
    /// legacy HTTP+SSE transport (default true; never when the era is pinned to stateless).
    #[must_use]
    pub fn legacy_sse_fallback(mut self, enabled: bool) -> Self {
        self.legacy_fallback = enabled;
        self
    }

    /// What an HTTP transport needs for `url`, the server's label, and the inbox to read.
    fn http_endpoint(&self, url: &str) -> (Shared, String, mpsc::Receiver<Inbound>) {
        let label = self.name.clone().unwrap_or_else(|| sinew_http::redact_url(url));
        let (tx, rx) = mpsc::channel(INBOX_CAPACITY);
        let http = self.http.clone().unwrap_or_default();
        (Shared::new(http, url.to_owned(), self.headers.clone(), self.max_message_bytes, tx), label, rx)
    }

    /// Spawns a stdio server and connects to it.
    pub async fn connect_stdio(self, command: StdioCommand) -> Result<McpClient, McpError> {
        let label = self.name.clone().unwrap_or_else(|| command.program.clone());
        let (tx, rx) = mpsc::channel(INBOX_CAPACITY);
        let transport = StdioTransport::spawn(&command, self.max_message_bytes, tx)?;
        McpClient::start(self, label, Box::new(transport), rx).await
    }

    /// Connects over any byte streams carrying newline-delimited JSON-RPC (a socket, a server
    /// in the same process).
    pub async fn connect_io<R, W>(self, reader: R, writer: W) -> Result<McpClient, McpError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let label = self.name.clone().unwrap_or_else(|| "io".to_owned());
        let (tx, rx) = mpsc::channel(INBOX_CAPACITY);
        let transport = StdioTransport::from_io(reader, writer, self.max_message_bytes, tx);
        McpClient::start(self, label, Box::new(transport), rx).await
    }

    /// Connects to an HTTP server: Streamable HTTP, falling back to the legacy HTTP+SSE
    /// transport when the server refuses it with a 4xx (unless disabled).
    pub async fn connect_http(self, url: impl Into<String>) -> Result<McpClient, McpError> {
        let url = url.into();
        let (endpoint, label, rx) = self.http_endpoint(&url);
        let transport = StreamableHttp::new(endpoint);
        match McpClient::start(self.clone(), label, Box::new(transport), rx).await {
            Err(McpError::Http { status, message })
                if self.legacy_fallback
                    && self.era != ProtocolEra::Stateless
                    && (400..500).contains(&status)
                    && status != 401
                    && status != 403 =>
            {
                tracing::debug!(status, message, "Streamable HTTP refused: trying the legacy HTTP+SSE transport");
                self.connect_legacy_sse(url).await
            }
            connected => connected,
        }
    }

    /// Connects with the legacy HTTP+SSE transport (2024-11-05): `url` is the SSE endpoint.
    pub async fn connect_legacy_sse(self, url: impl Into<String>) -> Result<McpClient, McpError> {
        let (endpoint, label, rx) = self.http_endpoint(&url.into());
        let transport = LegacySse::connect(endpoint, self.request_timeout).await?;
        // The legacy transport predates the stateless revision.
        let builder = McpClientBuilder { era: ProtocolEra::Handshake, ..self };
        McpClient::start(builder, label, Box::new(transport), rx).await
    }
}

/// A connection to one MCP server. Cheap to clone; clones share the connection.
///
/// ```no_run
/// # async fn demo() -> Result<(), sinew_mcp::McpError> {
/// use sinew_mcp::{McpClient, StdioCommand};
///
/// let client = McpClient::builder()
///     .connect_stdio(StdioCommand::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]))
///     .await?;
/// for tool in client.list_tools().await? {
///     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
/// }
/// let result = client.call_tool("echo", serde_json::json!({"message": "hi"})).await?;
/// println!("{:?}", result.content);
/// client.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient").field("server", &self.inner.label()).finish_non_exhaustive()
    }
}

struct Inner {
    label: RwLock<String>,
    transport: Box<dyn Transport>,
    config: McpClientBuilder,
    capabilities: Value,
    next_id: AtomicI64,
    next_progress: AtomicI64,
    pending: StdMutex<HashMap<RequestId, oneshot::Sender<Result<Value, McpError>>>>,
    progress: StdMutex<HashMap<String, ProgressSink>>,
    server: RwLock<Option<ServerDescription>>,
    tools: RwLock<Arc<Vec<McpToolInfo>>>,
    /// `x-mcp-header` annotations per tool name.
    param_headers: RwLock<HashMap<String, Vec<(String, String)>>>,
    tools_changed: watch::Sender<u64>,
    /// Slots for the server's requests being answered, and for refusals being sent.
    server_requests: Arc<tokio::sync::Semaphore>,
    refusals: Arc<tokio::sync::Semaphore>,
    /// A tool-list refresh runs; `refresh_again` asks it for one more round.
    refreshing: AtomicBool,
    refresh_again: AtomicBool,
    closed: StdMutex<Option<McpError>>,
}

struct ProgressSink {
    callback: ProgressCallback,
    /// When the last notification came: restarts the request's timeout.
    last: LastProgress,
}

/// Which revision a request goes out under.
#[derive(Clone, Debug)]
struct Lifecycle {
    version: String,
    stateless: bool,
}

impl McpClient {
    /// A builder with the defaults.
    pub fn builder() -> McpClientBuilder {
        McpClientBuilder::default()
    }

    /// Spawns `program` with `args` and `env` (on top of [`DEFAULT_INHERITED_ENV`](crate::DEFAULT_INHERITED_ENV)) and connects
    /// over stdio with the defaults (REQ-114).
    pub async fn connect_stdio<I, S>(program: &str, args: I, env: HashMap<String, String>) -> Result<Self, McpError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut command = StdioCommand::new(program).args(args);
        command.env = env;
        McpClient::builder().connect_stdio(command).await
    }

    /// Connects to an HTTP server with the defaults (REQ-132).
    pub async fn connect_http(url: impl Into<String>) -> Result<Self, McpError> {
        McpClient::builder().connect_http(url).await
    }

    async fn start(
        config: McpClientBuilder,
        label: String,
        transport: Box<dyn Transport>,
        inbox: mpsc::Receiver<Inbound>,
    ) -> Result<Self, McpError> {
        let mut capabilities = Map::new();
        if config.roots.is_some() {
            capabilities.insert("roots".into(), json!({}));
        }
        if config.sampling.is_some() {
            capabilities.insert("sampling".into(), json!({}));
        }
        if config.elicitation.is_some() {
            capabilities.insert("elicitation".into(), json!({}));
        }
        let inner = Arc::new(Inner {
            label: RwLock::new(label),
            transport,
            config,
            capabilities: Value::Object(capabilities),
            next_id: AtomicI64::new(1),
            next_progress: AtomicI64::new(1),
            pending: StdMutex::default(),
            progress: StdMutex::default(),
            server: RwLock::new(None),
            tools: RwLock::new(Arc::new(Vec::new())),
            param_headers: RwLock::default(),
            tools_changed: watch::channel(0).0,
            server_requests: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_SERVER_REQUESTS)),
            refusals: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_SERVER_REQUESTS)),
            refreshing: AtomicBool::new(false),
            refresh_again: AtomicBool::new(false),
            closed: StdMutex::new(None),
        });
        tokio::spawn(dispatch(Arc::downgrade(&inner), inbox));
        let client = McpClient { inner };
        match client.negotiate().await {
            Ok(server) => {
                tracing::debug!(
                    server = %client.inner.label(),
                    version = server.protocol_version,
                    stateless = server.stateless,
                    "MCP server connected"
                );
                if client.inner.config.name.is_none()
                    && let Some(info) = &server.server_info
                {
                    *client.inner.label.write().unwrap_or_else(PoisonError::into_inner) = info.name.clone();
                }
                client.inner.transport.connected(&server.protocol_version).await;
                *client.inner.server.write().unwrap_or_else(PoisonError::into_inner) = Some(server);
                Ok(client)
            }
            Err(error) => {
                client.inner.transport.close().await;
                Err(error)
            }
        }
    }

    /// Settles the revision: `server/discover` (stateless), else the `initialize` handshake.
    async fn negotiate(&self) -> Result<ServerDescription, McpError> {
        match self.inner.config.era {
            ProtocolEra::Stateless => self.discover().await,
            ProtocolEra::Handshake => self.initialize(&self.inner.config.handshake_version).await,
            ProtocolEra::Auto => match self.discover().await {
                Ok(server) => Ok(server),
                Err(error @ (McpError::ConnectionClosed(_) | McpError::Io(_) | McpError::Transport(_))) => Err(error),
                Err(error) => {
                    tracing::debug!(%error, "no stateless revision: falling back to the initialize handshake");
                    // A -32022 may have named the handshake revisions the server speaks.
                    let offered = supported_versions(&error)
                        .into_iter()
                        .find(|v| HANDSHAKE_VERSIONS.contains(&v.as_str()))
                        .unwrap_or_else(|| self.inner.config.handshake_version.clone());
                    self.initialize(&offered).await
                }
            },
        }
    }

    async fn discover(&self) -> Result<ServerDescription, McpError> {
        let lifecycle = Lifecycle { version: LATEST_VERSION.to_owned(), stateless: true };
        let timeout = self.inner.config.request_timeout.min(DISCOVERY_TIMEOUT);
        let options = RequestOptions { timeout: Some(timeout), ..RequestOptions::default() };
        let (result, lifecycle) = self.send_request("server/discover", Value::Null, &options, lifecycle).await?;
        let supported: Vec<String> = result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        if !supported.is_empty() && !supported.contains(&lifecycle.version) {
            return Err(McpError::UnsupportedVersion {
                ours: STATELESS_VERSIONS.join(", "),
                theirs: supported.join(", "),
            });
        }
        let server_info = result
            .get("serverInfo")
            .or_else(|| result.get("_meta").and_then(|m| m.get(META_SERVER_INFO)))
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        Ok(ServerDescription {
            protocol_version: lifecycle.version,
            stateless: true,
            server_info,
            capabilities: result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
            instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
        })
    }

    async fn initialize(&self, offered: &str) -> Result<ServerDescription, McpError> {
        let params = json!({
            "protocolVersion": offered,
            "capabilities": self.inner.capabilities,
            "clientInfo": self.inner.config.client_info,
        });
        let lifecycle = Lifecycle { version: offered.to_owned(), stateless: false };
        let (result, _) = self.send_request("initialize", params, &RequestOptions::default(), lifecycle).await?;
        let version = result.get("protocolVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
        if !HANDSHAKE_VERSIONS.contains(&version.as_str()) {
            return Err(McpError::UnsupportedVersion { ours: HANDSHAKE_VERSIONS.join(", "), theirs: version });
        }
        let lifecycle = Lifecycle { version: version.clone(), stateless: false };
        self.send_notification("notifications/initialized", Value::Null, &lifecycle).await?;
        Ok(ServerDescription {
            protocol_version: version,
            stateless: false,
            server_info: result.get("serverInfo").and_then(|v| serde_json::from_value(v.clone()).ok()),
            capabilities: result.get("capabilities").cloned().unwrap_or_else(|| json!({})),
            instructions: result.get("instructions").and_then(Value::as_str).map(str::to_owned),
        })
    }

    /// What the connection settled on.
    pub fn server(&self) -> ServerDescription {
        self.inner.server.read().unwrap_or_else(PoisonError::into_inner).clone().unwrap_or_else(|| ServerDescription {
            protocol_version: String::new(),
            stateless: false,
            server_info: None,
            capabilities: json!({}),
            instructions: None,
        })
    }

    /// The server's name in errors and logs.
    pub fn name(&self) -> String {
        self.inner.label()
    }

    /// Why the connection is closed, once it is.
    pub fn closed_reason(&self) -> Option<McpError> {
        self.inner.closed.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Sends a request and returns its result (REQ-115).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        self.request_with(method, params, &RequestOptions::default()).await
    }

    /// Sends a request with a timeout, a cancellation token or a progress callback.
    pub async fn request_with(&self, method: &str, params: Value, options: &RequestOptions) -> Result<Value, McpError> {
        let lifecycle = self.lifecycle();
        self.send_request(method, params, options, lifecycle).await.map(|(result, _)| result)
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), McpError> {
        self.send_notification(method, params, &self.lifecycle()).await
    }

    /// `ping`.
    pub async fn ping(&self) -> Result<(), McpError> {
        self.request("ping", Value::Null).await.map(drop)
    }

    /// Every tool the server offers, all pages (REQ-116). Tools whose `x-mcp-header` annotations
    /// are invalid are left out with a warning, as the 2026-07-28 revision requires. The list is
    /// also kept: see [`McpClient::tools`].
    pub async fn list_tools(&self) -> Result<Vec<McpToolInfo>, McpError> {
        let mut tools = Vec::new();
        let mut annotations = HashMap::new();
        for item in self.list_all("tools/list", "tools").await? {
            let tool: McpToolInfo = match serde_json::from_value(item) {
                Ok(tool) => tool,
                Err(error) => {
                    tracing::warn!(server = %self.inner.label(), %error, "skipping a malformed tool");
                    continue;
                }
            };
            match protocol::param_headers(&tool.input_schema) {
                Ok(headers) => {
                    if !headers.is_empty() {
                        annotations.insert(tool.name.clone(), headers);
                    }
                    tools.push(tool);
                }
                Err(why) => {
                    tracing::warn!(server = %self.inner.label(), tool = tool.name, why, "skipping a tool with invalid x-mcp-header");
                }
            }
        }
        *self.inner.param_headers.write().unwrap_or_else(PoisonError::into_inner) = annotations;
        *self.inner.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(tools.clone());
        self.inner.tools_changed.send_modify(|n| *n += 1);
        Ok(tools)
    }

    /// The tools of the last [`McpClient::list_tools`], refreshed when the server sends
    /// `notifications/tools/list_changed`.
    pub fn tools(&self) -> Arc<Vec<McpToolInfo>> {
        Arc::clone(&self.inner.tools.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Changes whenever the tool list was (re)loaded.
    pub fn tool_changes(&self) -> watch::Receiver<u64> {
        self.inner.tools_changed.subscribe()
    }

    /// Calls a tool (REQ-116). A tool that fails reports `is_error: true`; an `Err` is a
    /// protocol or transport failure.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, McpError> {
        self.call_tool_with(name, arguments, &RequestOptions::default()).await
    }

    /// Calls a tool with a timeout, a cancellation token or a progress callback.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Value,
        options: &RequestOptions,
    ) -> Result<CallToolResult, McpError> {
        let params = json!({"name": name, "arguments": arguments});
        let result = self.request_with("tools/call", params, options).await?;
        serde_json::from_value(result).map_err(|e| McpError::Protocol(format!("a malformed tools/call result: {e}")))
    }

    /// Every resource, all pages.
    pub async fn list_resources(&self) -> Result<Vec<Value>, McpError> {
        self.list_all("resources/list", "resources").await
    }

    /// `resources/read`.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, McpError> {
        self.request("resources/read", json!({"uri": uri})).await
    }

    /// Every prompt, all pages.
    pub async fn list_prompts(&self) -> Result<Vec<Value>, McpError> {
        self.list_all("prompts/list", "prompts").await
    }

    /// `prompts/get`.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, McpError> {
        self.request("prompts/get", json!({"name": name, "arguments": arguments})).await
    }

    /// Closes the connection: pending requests fail, stdio servers get EOF then signals, HTTP
    /// sessions get DELETE.
    pub async fn close(&self) {
        self.inner.mark_closed(McpError::ConnectionClosed("the client was closed".into()));
        self.inner.transport.close().await;
    }

    /// Follows `nextCursor` until the last page.
    async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, McpError> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..10_000 {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => Value::Null,
            };
            let mut page = self.request(method, params).await?;
            match page.get_mut(key).map(Value::take) {
                Some(Value::Array(list)) => items.extend(list),
                None | Some(Value::Null) => {}
                Some(_) => return Err(McpError::Protocol(format!("`{method}`: `{key}` is not a list"))),
            }
            cursor = page.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()).map(str::to_owned);
            if cursor.is_none() {
                return Ok(items);
            }
        }
        Err(McpError::Protocol(format!("`{method}` did not stop paginating after 10000 pages")))
    }

    fn lifecycle(&self) -> Lifecycle {
        let server = self.inner.server.read().unwrap_or_else(PoisonError::into_inner);
        match &*server {
            Some(server) => Lifecycle { version: server.protocol_version.clone(), stateless: server.stateless },
            None => Lifecycle { version: self.inner.config.handshake_version.clone(), stateless: false },
        }
    }

    async fn send_notification(&self, method: &str, params: Value, lifecycle: &Lifecycle) -> Result<(), McpError> {
        let params = if lifecycle.stateless { self.inner.with_meta(&params, &lifecycle.version) } else { params };
        let mut message = Outgoing::plain(jsonrpc::notification(method, &params));
        message.method = Some(method.to_owned());
        message.protocol_version = Some(lifecycle.version.clone());
        message.stateless = lifecycle.stateless;
        self.inner.transport.send(message).await
    }

    /// Sends a request; retries once on -32022 with a revision the server supports, and answers
    /// `input_required` results (2026-07-28) until the result is complete. Returns the result and
    /// the revision it was obtained under.
    async fn send_request(
        &self,
        method: &str,
        params: Value,
        options: &RequestOptions,
        mut lifecycle: Lifecycle,
    ) -> Result<(Value, Lifecycle), McpError> {
        if let Some(error) = self.closed_reason() {
            return Err(error);
        }
        let mut params = params;
        let mut retried_version = false;
        let progress = options.on_progress.as_ref().map(|callback| self.inner.register_progress(callback));
        if let Some((token, _)) = &progress {
            params = with_progress_token(params, token);
        }
        let last_progress = progress.as_ref().map(|(_, last)| Arc::clone(last));
        let outcome = async {
            let mut rounds = 0;
            loop {
                let result = self.exchange(method, &params, options, &lifecycle, last_progress.as_deref()).await;
                match result {
                    Err(error)
                        if lifecycle.stateless
                            && !retried_version
                            && error.code() == Some(codes::UNSUPPORTED_PROTOCOL_VERSION) =>
                    {
                        let Some(version) = supported_versions(&error)
                            .into_iter()
                            .rev()
                            .find(|v| STATELESS_VERSIONS.contains(&v.as_str()))
                        else {
                            return Err(error);
                        };
                        tracing::debug!(method, version, "-32022: retrying at a version the server supports");
                        retried_version = true;
                        lifecycle.version = version;
                    }
                    Ok(result) if result.get("resultType").and_then(Value::as_str) == Some("input_required") => {
                        rounds += 1;
                        if rounds > MAX_INPUT_ROUNDS {
                            return Err(McpError::Protocol(format!(
                                "`{method}` still required input after {MAX_INPUT_ROUNDS} rounds"
                            )));
                        }
                        params = self.inner.answer_input_requests(params, &result).await?;
                    }
                    other => return other.map(|result| (result, lifecycle.clone())),
                }
            }
        }
        .await;
        if let Some((token, _)) = progress {
            self.inner.progress.lock().unwrap_or_else(PoisonError::into_inner).remove(&token);
        }
        if let Ok((_, used)) = &outcome
            && used.stateless
            && let Some(server) = self.inner.server.write().unwrap_or_else(PoisonError::into_inner).as_mut()
            && server.protocol_version != used.version
        {
            server.protocol_version.clone_from(&used.version);
        }
        outcome
    }

    /// One request and its answer, under a timeout (restarted by progress) and a cancel token.
    async fn exchange(
        &self,
        method: &str,
        params: &Value,
        options: &RequestOptions,
        lifecycle: &Lifecycle,
        last_progress: Option<&StdMutex<Option<Instant>>>,
    ) -> Result<Value, McpError> {
        let inner = &self.inner;
        let id = RequestId::Number(inner.next_id.fetch_add(1, Ordering::Relaxed));
        let params = if lifecycle.stateless { inner.with_meta(params, &lifecycle.version) } else { params.clone() };
        let mut message = Outgoing::plain(jsonrpc::request(&id, method, &params));
        message.id = Some(id.clone());
        message.method = Some(method.to_owned());
        message.stateless = lifecycle.stateless;
        message.protocol_version = (method != "initialize").then(|| lifecycle.version.clone());
        message.name = match method {
            "tools/call" | "prompts/get" => params.get("name").and_then(Value::as_str).map(str::to_owned),
            "resources/read" => params.get("uri").and_then(Value::as_str).map(str::to_owned),
            _ => None,
        };
        if method == "tools/call"
            && lifecycle.stateless
            && let Some(name) = &message.name
            && let Some(annotations) = inner.param_headers.read().unwrap_or_else(PoisonError::into_inner).get(name)
        {
            message.headers = protocol::param_header_values(annotations, &params["arguments"]);
        }
        let (tx, rx) = oneshot::channel();
        inner.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id.clone(), tx);
        let timeout = options.timeout.unwrap_or(inner.config.request_timeout);
        let cancel = options.cancel.clone().unwrap_or_default();
        let started = Instant::now();
        let exchange = async {
            if let Err(error) = inner.transport.send(message).await {
                return Err(inner.explain(error).await);
            }
            rx.await.unwrap_or_else(|_| Err(McpError::ConnectionClosed("the connection ended".into())))
        };
        // Progress restarts the timeout, but never past the hard maximum.
        let max_time = inner.config.max_request_time;
        let hard_limit = started.checked_add(max_time);
        // Instants too far for the clock (a `Duration::MAX` timeout) are never reached.
        let deadline = async {
            let mut until = started.checked_add(timeout);
            loop {
                until = match (until, hard_limit) {
                    (Some(until), Some(limit)) => Some(until.min(limit)),
                    (until, limit) => until.or(limit),
                };
                let Some(at) = until else { return std::future::pending().await };
                tokio::time::sleep_until(at).await;
                if hard_limit.is_some_and(|limit| at >= limit) {
                    return max_time;
                }
                let last = last_progress.and_then(|l| *l.lock().unwrap_or_else(PoisonError::into_inner));
                match last.unwrap_or(started).checked_add(timeout) {
                    Some(renewed) if renewed <= at => return timeout,
                    renewed => until = renewed,
                }
            }
        };
        let outcome = tokio::select! {
            result = exchange => return result.inspect_err(|_| { inner.forget(&id); }),
            after = deadline => McpError::Timeout { method: method.to_owned(), after },
            () = cancel.cancelled() => McpError::Cancelled { method: method.to_owned() },
        };
        inner.forget(&id);
        if method != "initialize" {
            let reason = outcome.to_string();
            let params = json!({"requestId": id, "reason": reason});
            let _ = self.send_notification("notifications/cancelled", params, lifecycle).await;
        }
        Err(outcome)
    }
}

impl Inner {
    fn label(&self) -> String {
        self.label.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn with_meta(&self, params: &Value, version: &str) -> Value {
        protocol::with_meta(params, version, &self.capabilities, &self.config.client_info)
    }

    /// A write that failed because the connection is gone: the reader says why it ended (a
    /// server's exit status and stderr) a moment later; wait a little for that.
    async fn explain(&self, error: McpError) -> McpError {
        if !matches!(error, McpError::ConnectionClosed(_)) {
            return error;
        }
        for _ in 0..50 {
            if let Some(reason) = self.closed.lock().unwrap_or_else(PoisonError::into_inner).clone() {
                return reason;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        error
    }

    fn forget(&self, id: &RequestId) {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(id);
    }

    fn register_progress(&self, callback: &ProgressCallback) -> (String, LastProgress) {
        let token = format!("sinew-{}", self.next_progress.fetch_add(1, Ordering::Relaxed));
        let last = LastProgress::default();
        let sink = ProgressSink { callback: Arc::clone(callback), last: Arc::clone(&last) };
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).insert(token.clone(), sink);
        (token, last)
    }

    /// Fails every pending request with `error`, and every later one.
    fn mark_closed(&self, error: McpError) {
        {
            let mut closed = self.closed.lock().unwrap_or_else(PoisonError::into_inner);
            if closed.is_none() {
                *closed = Some(error.clone());
            }
        }
        let pending: Vec<_> = self.pending.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        for (_, tx) in pending {
            let _ = tx.send(Err(error.clone()));
        }
    }

    /// The retry of an `input_required` result: the original params plus `inputResponses` and,
    /// if the server sent one, its `requestState` unchanged.
    async fn answer_input_requests(&self, params: Value, result: &Value) -> Result<Value, McpError> {
        let mut responses = Map::new();
        if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
            for (key, request) in requests {
                let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
                let params = request.get("params").cloned().unwrap_or(Value::Null);
                let answer = self.answer(method, params).await.map_err(|error| {
                    McpError::Protocol(format!(
                        "cannot answer the server's `{method}` input request: {}",
                        error.message
                    ))
                })?;
                responses.insert(key.clone(), answer);
            }
        }
        let mut params = match params {
            Value::Object(object) => object,
            _ => Map::new(),
        };
        params.insert("inputResponses".into(), Value::Object(responses));
        match result.get("requestState") {
            Some(state) => params.insert("requestState".into(), state.clone()),
            None => params.remove("requestState"),
        };
        Ok(Value::Object(params))
    }

    /// Answers a request of the server's.
    async fn answer(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let not_found = || RpcError::new(codes::METHOD_NOT_FOUND, format!("Method not found: {method}"));
        match method {
            "ping" => Ok(json!({})),
            "roots/list" => match &self.config.roots {
                Some(roots) => Ok(json!({"roots": roots})),
                None => Err(not_found()),
            },
            "sampling/createMessage" => match &self.config.sampling {
                Some(handler) => handler.handle(params).await,
                None => Err(not_found()),
            },
            "elicitation/create" => match &self.config.elicitation {
                Some(handler) => handler.handle(params).await,
                None => Err(not_found()),
            },
            _ => Err(not_found()),
        }
    }

    fn on_notification(self: &Arc<Self>, method: &str, params: &Value) {
        match method {
            "notifications/progress" => {
                let token = match params.get("progressToken") {
                    Some(Value::String(token)) => token.clone(),
                    Some(Value::Number(token)) => token.to_string(),
                    _ => return,
                };
                // The host's callback runs without the lock held.
                let callback = self.progress.lock().unwrap_or_else(PoisonError::into_inner).get(&token).map(|sink| {
                    *sink.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
                    Arc::clone(&sink.callback)
                });
                if let Some(callback) = callback {
                    callback(Progress {
                        progress: params.get("progress").and_then(Value::as_f64).unwrap_or(0.0),
                        total: params.get("total").and_then(Value::as_f64),
                        message: params.get("message").and_then(Value::as_str).map(str::to_owned),
                    });
                }
            }
            "notifications/tools/list_changed" => {
                // One refresh at a time: notifications that come while it runs ask for one
                // more round, not one task each.
                self.refresh_again.store(true, Ordering::SeqCst);
                if self.refreshing.swap(true, Ordering::SeqCst) {
                    return;
                }
                let client = McpClient { inner: Arc::clone(self) };
                tokio::spawn(async move {
                    loop {
                        client.inner.refresh_again.store(false, Ordering::SeqCst);
                        if let Err(error) = client.list_tools().await {
                            tracing::warn!(server = %client.name(), %error, "cannot refresh the tool list");
                        }
                        if client.inner.refresh_again.load(Ordering::SeqCst) {
                            continue;
                        }
                        client.inner.refreshing.store(false, Ordering::SeqCst);
                        // A notification between the check and the release would be lost.
                        if !client.inner.refresh_again.load(Ordering::SeqCst)
                            || client.inner.refreshing.swap(true, Ordering::SeqCst)
                        {
                            return;
                        }
                    }
                });
            }
            "notifications/message" => {
                let level = params.get("level").and_then(Value::as_str).unwrap_or("info");
                let data = params.get("data").map(Value::to_string).unwrap_or_default();
                match level {
                    "debug" => tracing::debug!(target: "sinew_mcp::server", server = %self.label(), "{data}"),
                    "info" | "notice" => tracing::info!(target: "sinew_mcp::server", server = %self.label(), "{data}"),
                    "warning" => tracing::warn!(target: "sinew_mcp::server", server = %self.label(), "{data}"),
                    _ => tracing::error!(target: "sinew_mcp::server", server = %self.label(), level, "{data}"),
                }
            }
            other => tracing::debug!(server = %self.label(), method = other, "MCP notification"),
        }
    }
}

/// When a request's last progress notification came.
type LastProgress = Arc<StdMutex<Option<Instant>>>;

fn with_progress_token(params: Value, token: &str) -> Value {
    let mut object = match params {
        Value::Object(object) => object,
        _ => Map::new(),
    };
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert("progressToken".into(), Value::from(token));
    }
    Value::Object(object)
}

/// `error.data.supported` of a -32022.
fn supported_versions(error: &McpError) -> Vec<String> {
    match error {
        McpError::JsonRpc { code: codes::UNSUPPORTED_PROTOCOL_VERSION, data: Some(data), .. } => data
            .get("supported")
            .and_then(Value::as_array)
            .map(|v| v.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Sends the answer to the server's request `id`.
async fn reply_to_server(client: McpClient, id: &RequestId, method: &str, answer: Result<Value, RpcError>) {
    let lifecycle = client.lifecycle();
    let mut message = Outgoing::plain(jsonrpc::response(id, answer));
    message.protocol_version = Some(lifecycle.version);
    message.stateless = lifecycle.stateless;
    if let Err(error) = client.inner.transport.send(message).await {
        tracing::warn!(server = %client.name(), method, %error, "cannot answer the server's request");
    }
}

/// Routes what the transport delivers. Holds the client weakly: dropping every `McpClient`
/// drops the transport, which ends the stream and this task.
async fn dispatch(client: Weak<Inner>, mut inbox: mpsc::Receiver<Inbound>) {
    while let Some(inbound) = inbox.recv().await {
        let Some(inner) = client.upgrade() else { return };
        match inbound {
            Inbound::Message(Message::Response { id, result }) => {
                let waiter = inner.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                match waiter {
                    Some(tx) => {
                        let _ = tx.send(result.map_err(McpError::from));
                    }
                    None => tracing::debug!(server = %inner.label(), %id, "an answer to no pending request"),
                }
            }
            Inbound::Message(Message::Request { id, method, params }) => {
                let Ok(slot) = Arc::clone(&inner.server_requests).try_acquire_owned() else {
                    // Too many at once: refused at once, not queued without bound. The refusal
                    // is sent from a task (this loop must keep reading), with a bound of its own:
                    // past it, the request is dropped and the server's own timeout answers it.
                    let Ok(refusing) = Arc::clone(&inner.refusals).try_acquire_owned() else {
                        tracing::warn!(server = %inner.label(), method, "dropping a server request: too many at once");
                        continue;
                    };
                    let refusal = Err(RpcError::new(
                        codes::INTERNAL_ERROR,
                        format!("the client answers at most {MAX_CONCURRENT_SERVER_REQUESTS} requests at once"),
                    ));
                    tokio::spawn(async move {
                        let _refusing = refusing;
                        reply_to_server(McpClient { inner }, &id, &method, refusal).await;
                    });
                    continue;
                };
                tokio::spawn(async move {
                    let _slot = slot;
                    let answer = inner.answer(&method, params).await;
                    reply_to_server(McpClient { inner }, &id, &method, answer).await;
                });
            }
            Inbound::Message(Message::Notification { method, params }) => inner.on_notification(&method, &params),
            Inbound::RequestFailed { id, error } => {
                let waiter = inner.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                if let Some(tx) = waiter {
                    let _ = tx.send(Err(error));
                }
            }
            Inbound::Closed(error) => {
                tracing::debug!(server = %inner.label(), %error, "MCP connection closed");
                inner.mark_closed(error);
                return;
            }
        }
    }
    if let Some(inner) = client.upgrade() {
        inner.mark_closed(McpError::ConnectionClosed("the transport stopped".into()));
    }
}
