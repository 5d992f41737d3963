//! Serving [`AdkApi`] over HTTP/1.1 on a listener.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::adk_api::AdkApi;
use crate::chat::ChatApi;
use crate::http::{Body, detail};

/// The default address: loopback only, ADK's port.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8000";

/// The default request-body limit: 10 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// How long a client may take to send a request's headers, unless configured.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to send a request's body, unless configured.
pub const DEFAULT_BODY_TIMEOUT: Duration = crate::http::BODY_TIMEOUT;

/// Connections served at once, unless configured; more wait to be accepted.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How a server treats its requests.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Request bodies over this many bytes are refused with 413.
    pub max_body_bytes: usize,
    /// When set, every request must carry `Authorization: Bearer <token>` (401 otherwise).
    pub bearer_token: Option<String>,
    /// A client that has not sent a request's headers in this time is disconnected.
    pub header_timeout: Duration,
    /// A request whose body has not arrived in this time (from its headers) is refused with 408.
    pub body_timeout: Duration,
    /// Connections served at once; more wait in the listener's backlog.
    pub max_connections: usize,
    /// Web origins (`https://app.example`, or `*`) whose pages may call the APIs: CORS is off
    /// unless this names some.
    pub allowed_origins: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            bearer_token: None,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            allowed_origins: Vec::new(),
        }
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("max_body_bytes", &self.max_body_bytes)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
            .field("header_timeout", &self.header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("max_connections", &self.max_connections)
            .field("allowed_origins", &self.allowed_origins)
            .finish()
    }
}

impl ServerConfig {
    /// Requests must carry this bearer token.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Request bodies up to `bytes`.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Headers within `timeout`.
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// Bodies within `timeout` of their headers.
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// Lets pages of `origin` (`scheme://host[:port]`, or `*` for any) call the APIs: preflight
    /// requests are answered and responses carry `Access-Control-Allow-Origin` (adk-python's
    /// `--allow_origins`). A bearer token, when set, is still required.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into().trim_end_matches('/').to_owned());
        self
    }

    /// Whether pages of `origin` may call the APIs.
    fn allows(&self, origin: &str) -> bool {
        self.allowed_origins.iter().any(|allowed| allowed == "*" || allowed.eq_ignore_ascii_case(origin))
    }

    /// At most `connections` served at once (at least one).
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }
}

/// What a server answers: ADK's `api_server` dialect, the chat API (`/api/…`) and the chat page
/// (`/`), each when given.
#[derive(Debug, Default)]
pub struct Routes {
    adk: Option<AdkApi>,
    chat: Option<ChatApi>,
}

impl Routes {
    /// No routes yet.
    pub fn new() -> Self {
        Routes::default()
    }

    /// Serves ADK's dialect.
    #[must_use]
    pub fn adk(mut self, api: AdkApi) -> Self {
        self.adk = Some(api);
        self
    }

    /// Serves the chat API and its page.
    #[must_use]
    pub fn chat(mut self, api: ChatApi) -> Self {
        self.chat = Some(api);
        self
    }

    async fn handle<B>(&self, request: Request<B>, max_body: usize) -> Response<Body>
    where
        B: http_body::Body<Data = bytes::Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let path = request.uri().path();
        if let Some(chat) = &self.chat {
            if ChatApi::owns(path) {
                return chat.handle(request, max_body).await;
            }
            if let Some(page) = crate::page::serve(&request) {
                return page;
            }
        }
        match &self.adk {
            Some(adk) => adk.handle(request, max_body).await,
            None => detail(StatusCode::NOT_FOUND, "Not Found"),
        }
    }
}

impl From<AdkApi> for Routes {
    fn from(api: AdkApi) -> Self {
        Routes::new().adk(api)
    }
}

impl From<ChatApi> for Routes {
    fn from(api: ChatApi) -> Self {
        Routes::new().chat(api)
    }
}

/// Whether `request` carries the token (compared in constant time).
fn authorized(request: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let Some(given) = given.strip_prefix("Bearer ").or_else(|| given.strip_prefix("bearer ")) else { return false };
    let (given, token) = (given.trim().as_bytes(), token.as_bytes());
    given.len() == token.len() && given.iter().zip(token).fold(0, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Serves `routes` (an [`AdkApi`], a [`ChatApi`], or both as [`Routes`]) on `listener` until
/// `shutdown` completes. Each connection is a task of its own;
/// a client that goes away drops its response, which cancels its run between two events (the
/// session keeps what was stored).
pub async fn serve(
    listener: TcpListener,
    routes: impl Into<Routes>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let api = Arc::new(routes.into());
    let config = Arc::new(config);
    let loopback = listener.local_addr().is_ok_and(|addr| addr.ip().is_loopback());
    let connections = Arc::new(tokio::sync::Semaphore::new(config.max_connections.max(1)));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = connections.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return Ok(()),
            },
            () = &mut shutdown => return Ok(()),
        };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // A connection that failed before it was accepted is that client's problem.
                Err(error) => {
                    tracing::debug!(%error, "accept failed");
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let (api, config) = (api.clone(), config.clone());
        let header_timeout = config.header_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let service = service_fn(move |request: Request<Incoming>| {
                let (api, config) = (api.clone(), config.clone());
                async move { Ok::<_, std::convert::Infallible>(answer(&api, &config, loopback, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
}

/// Whether `host` (a host name or address, with or without a port: a `Host` header's value, an
/// origin's host, a `--host` flag) names this machine.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim().trim_end_matches('.');
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':')
            .map_or(host, |(name, port)| if port.chars().all(|c| c.is_ascii_digit()) { name } else { host })
    };
    name.eq_ignore_ascii_case("localhost")
        || name.to_ascii_lowercase().ends_with(".localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// On a loopback listener, a request naming another host was sent here by rebound DNS, and one
/// from another origin by a web page: both are refused (adk-python refuses them too), but for
/// the origins the configuration allows.
fn foreign(request: &Request<Incoming>, config: &ServerConfig) -> bool {
    let hosts: Vec<&HeaderValue> = request.headers().get_all(header::HOST).iter().collect();
    if hosts.len() > 1
        || hosts.first().is_some_and(|h| h.to_str().map_or(true, |h| h.contains(',') || !is_loopback_host(h)))
    {
        return true;
    }
    request.headers().get(header::ORIGIN).is_some_and(|origin| {
        let origin = origin.to_str().unwrap_or_default();
        let host = origin.split_once("://").map_or("", |(_, rest)| rest);
        origin != "null" && !is_loopback_host(host) && !config.allows(origin)
    })
}

/// The allowed origin a request comes from, when it comes from one.
fn cors_origin<'a>(request: &'a Request<Incoming>, config: &ServerConfig) -> Option<&'a HeaderValue> {
    let origin = request.headers().get(header::ORIGIN)?;
    config.allows(origin.to_str().ok()?).then_some(origin)
}

/// The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`).
fn preflight(request: &Request<Incoming>, origin: &HeaderValue) -> Response<Body> {
    let mut response = Response::new(crate::http::empty_body());
    *response.status_mut() = StatusCode::NO_CONTENT;
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS"),
    );
    let asked = request.headers().get(header::ACCESS_CONTROL_REQUEST_HEADERS).cloned();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        asked.unwrap_or_else(|| HeaderValue::from_static("authorization, content-type")),
    );
    headers.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    response
}

async fn answer(api: &Routes, config: &ServerConfig, loopback: bool, request: Request<Incoming>) -> Response<Body> {
    if loopback && foreign(&request, config) {
        return detail(StatusCode::FORBIDDEN, "Forbidden: requests from other hosts or origins are refused");
    }
    let Some(origin) = cors_origin(&request, config).cloned() else { return answer_inside(api, config, request).await };
    if request.method() == http::Method::OPTIONS
        && request.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    {
        return preflight(&request, &origin);
    }
    let mut response = answer_inside(api, config, request).await;
    response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    response.headers_mut().append(header::VARY, HeaderValue::from_static("Origin"));
    response
}

/// A request that may be answered: the token checked, then the routes.
async fn answer_inside(api: &Routes, config: &ServerConfig, request: Request<Incoming>) -> Response<Body> {
    // The page's static files hold no data: a browser loads them before it can send a token.
    let page = api.chat.is_some()
        && matches!(*request.method(), http::Method::GET | http::Method::HEAD)
        && crate::page::file(request.uri().path()).is_some();
    if let Some(token) = &config.bearer_token
        && !page
        && !authorized(&request, token)
    {
        let mut response = detail(StatusCode::UNAUTHORIZED, "Not authenticated");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    let request = request.map(|body| crate::http::TimedBody::new(body, config.body_timeout));
    api.handle(request, config.max_body_bytes).await
}
