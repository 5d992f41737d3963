//! Getting the user's approval: the authorization URL out, the redirect back.

use std::time::Duration;

use async_trait::async_trait;
use sinew_http::{HttpClient, HttpRequest};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::error::McpError;

/// [`LoopbackRedirect`]'s default redirect URI.
pub(super) const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";
/// The most of the browser's request line and headers read.
const REQUEST_LIMIT: usize = 16 * 1024;
/// How long one browser connection may take to send its request.
const REQUEST_WAIT: Duration = Duration::from_secs(10);

/// Plays the user's part: takes the authorization URL and returns the URL the authorization
/// server redirected back to (with `code`, `state`, `iss` in its query).
#[async_trait]
pub trait AuthorizationHandler: Send + Sync {
    /// Gets the user's approval at `url`.
    async fn authorize(&self, url: &str) -> Result<String, McpError>;
}

/// Sends the user to the authorization URL (a callback that opens a browser, or prints it) and
/// waits on `127.0.0.1` for the browser's redirect, at most `timeout` (default 5 minutes).
pub struct LoopbackRedirect {
    redirect_uri: String,
    show: Box<dyn Fn(&str) + Send + Sync>,
    timeout: Duration,
}

impl std::fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("redirect_uri", &self.redirect_uri)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl LoopbackRedirect {
    /// Listens at `redirect_uri` (an `http://127.0.0.1:PORT/path` or `http://localhost:PORT/path`
    /// URL, which must be the [`OAuthConfig::redirect_uri`](super::OAuthConfig)); `show` gets the
    /// authorization URL to open or print.
    pub fn new(redirect_uri: impl Into<String>, show: impl Fn(&str) + Send + Sync + 'static) -> Self {
        LoopbackRedirect { redirect_uri: redirect_uri.into(), show: Box::new(show), timeout: Duration::from_secs(300) }
    }

    /// How long to wait for the user.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn address(&self) -> Result<(String, String), McpError> {
        let invalid = || {
            McpError::Authorization(format!(
                "the redirect URI {} is not an http://127.0.0.1:PORT/... or http://localhost:PORT/... URL",
                self.redirect_uri
            ))
        };
        let rest = self.redirect_uri.strip_prefix("http://").ok_or_else(invalid)?;
        let (authority, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
        let (host, port) = authority.rsplit_once(':').ok_or_else(invalid)?;
        if !matches!(host, "127.0.0.1" | "localhost" | "[::1]") || port.parse::<u16>().is_err() {
            return Err(invalid());
        }
        let host = if host == "localhost" { "127.0.0.1" } else { host.trim_matches(['[', ']']) };
        let address = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
        Ok((address, path.split('?').next().unwrap_or("/").to_owned()))
    }
}

#[async_trait]
impl AuthorizationHandler for LoopbackRedirect {
    async fn authorize(&self, url: &str) -> Result<String, McpError> {
        let (address, path) = self.address()?;
        let listener = TcpListener::bind(&address)
            .await
            .map_err(|e| McpError::Authorization(format!("cannot listen for the redirect on {address}: {e}")))?;
        // Only the redirect that carries this request's `state` is taken: another local
        // program cannot end the wait with a forged one.
        let state = url
            .split_once('?')
            .map_or("", |(_, query)| query)
            .split('&')
            .filter_map(|pair| pair.strip_prefix("state="))
            .next_back()
            .map(str::to_owned);
        (self.show)(url);
        tokio::time::timeout(self.timeout, accept_redirect(&listener, &path, state.as_deref()))
            .await
            .map_err(|_| McpError::Authorization(format!("no authorization came back within {:?}", self.timeout)))?
    }
}

/// Accepts connections until one asks for `path` (with `state`, when the request had one);
/// answers it with a page saying the window may be closed, and returns its request target.
async fn accept_redirect(listener: &TcpListener, path: &str, state: Option<&str>) -> Result<String, McpError> {
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|e| McpError::Authorization(format!("the redirect listener failed: {e}")))?;
        let Ok(Some(target)) = tokio::time::timeout(REQUEST_WAIT, read_target(&mut socket)).await else {
            continue;
        };
        let (target_path, query) = target.split_once('?').unwrap_or((&target, ""));
        if target_path != path {
            let _ = socket.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
            continue;
        }
        if let Some(state) = state
            && !query.split('&').any(|pair| pair.strip_prefix("state=") == Some(state))
        {
            let _ =
                socket.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
            continue;
        }
        let page = "<!doctype html><title>sinew</title><p>Authorization received. You can close this window.</p>";
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            page.len()
        );
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(page.as_bytes()).await;
        return Ok(format!("http://127.0.0.1{target}"));
    }
}

/// The request target of a `GET` (its first line), reading at most [`REQUEST_LIMIT`] bytes.
async fn read_target(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 || buffer.len() + read > REQUEST_LIMIT {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let line = buffer.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    (parts.next()? == "GET").then_some(())?;
    parts.next().filter(|t| t.starts_with('/')).map(str::to_owned)
}

/// Follows the authorization URL itself and returns where the server redirected: for servers
/// that approve without a person (and tests). The redirect's target is not fetched.
#[derive(Clone, Debug, Default)]
pub struct FollowRedirect {
    http: HttpClient,
}

impl FollowRedirect {
    /// Follows with `http`.
    pub fn new(http: HttpClient) -> Self {
        FollowRedirect { http }
    }
}

/// How many redirects inside the authorization server are followed before the one to the
/// client must come.
const MAX_REDIRECTS: usize = 5;

#[async_trait]
impl AuthorizationHandler for FollowRedirect {
    async fn authorize(&self, url: &str) -> Result<String, McpError> {
        let mut url = url.to_owned();
        for _ in 0..MAX_REDIRECTS {
            let request = HttpRequest {
                method: http::Method::GET,
                url: url.clone(),
                headers: Vec::new(),
                body: bytes::Bytes::new(),
            };
            let response =
                self.http.send_once(&request).await.map_err(|e| {
                    McpError::Authorization(format!("the authorization endpoint cannot be reached: {e}"))
                })?;
            if !response.status.is_redirection() {
                return Err(McpError::Authorization(format!(
                    "the authorization endpoint answered HTTP {} instead of redirecting (it wants a person: use LoopbackRedirect)",
                    response.status.as_u16()
                )));
            }
            let Some(location) = response.headers.get(http::header::LOCATION).and_then(|v| v.to_str().ok()) else {
                return Err(McpError::Authorization("the authorization endpoint redirected without a Location".into()));
            };
            let next = resolve(&url, location);
            if next.contains("code=") || next.contains("error=") {
                return Ok(next);
            }
            url = next;
        }
        Err(McpError::Authorization(format!("the authorization endpoint redirected more than {MAX_REDIRECTS} times")))
    }
}

/// The handler of a client no person stands behind.
pub(super) struct NoUser;

#[async_trait]
impl AuthorizationHandler for NoUser {
    async fn authorize(&self, _url: &str) -> Result<String, McpError> {
        Err(McpError::Authorization(
            "the server asks for a person's approval, and this client has none to ask: give OAuth an AuthorizationHandler".into(),
        ))
    }
}

/// `location` resolved against `base` (absolute, or absolute-path).
fn resolve(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let origin_end = base.find("://").map_or(0, |i| i + 3);
    let origin = base[origin_end..].find('/').map_or(base, |slash| &base[..origin_end + slash]);
    if location.starts_with('/') { format!("{origin}{location}") } else { format!("{origin}/{location}") }
}
