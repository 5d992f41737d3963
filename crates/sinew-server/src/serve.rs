//! Serving [`AdkApi`] over HTTP/1.1 on a listener.

use std::future::Future;
use std::sync::Arc;

use http::{HeaderValue, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::adk_api::AdkApi;
use crate::http::{Body, detail};

/// The default address: loopback only, ADK's port.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1:8000";

/// The default request-body limit: 10 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// How a server treats its requests.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Request bodies over this many bytes are refused with 413.
    pub max_body_bytes: usize,
    /// When set, every request must carry `Authorization: Bearer <token>` (401 otherwise).
    pub bearer_token: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig { max_body_bytes: DEFAULT_MAX_BODY_BYTES, bearer_token: None }
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("max_body_bytes", &self.max_body_bytes)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "<redacted>"))
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

/// Serves `api` on `listener` until `shutdown` completes. Each connection is a task of its own;
/// a client that goes away drops its response, which cancels its run between two events (the
/// session keeps what was stored).
pub async fn serve(
    listener: TcpListener,
    api: AdkApi,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let api = Arc::new(api);
    let config = Arc::new(config);
    tokio::pin!(shutdown);
    loop {
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
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let (api, config) = (api.clone(), config.clone());
                async move { Ok::<_, std::convert::Infallible>(answer(&api, &config, request).await) }
            });
            if let Err(error) =
                hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await
            {
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
}

async fn answer(api: &AdkApi, config: &ServerConfig, request: Request<Incoming>) -> Response<Body> {
    if let Some(token) = &config.bearer_token
        && !authorized(&request, token)
    {
        let mut response = detail(StatusCode::UNAUTHORIZED, "Not authenticated");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    api.handle(request, config.max_body_bytes).await
}
