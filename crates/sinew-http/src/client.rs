//! The HTTP client: hyper + hyper-util's pooled client over rustls (ring), optional proxies.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use sinew_core::{Failure, ProviderError};
use tokio::net::TcpStream;
use tower_service::Service;

use crate::request::{HttpRequest, redact_url};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What an HTTP/1 connection reads into at a time, and so the most it buffers of a response: 16 KiB,
/// fixed. hyper's default lets a buffer grow to about 400 KiB while reads fill it, and a streamed
/// answer arrives faster than it is decoded: with 100 agents at once over HTTP/1, read buffers
/// were 40% of the heap. A bound of 32 KiB that the buffer grew to still took about 78 KiB per
/// connection (a buffer is replaced while body chunks split from it are alive); a fixed size
/// takes 3-5 MB less at 100 agents and less CPU (`cargo xtask bench e2e --workload conc`).
/// HTTP/2 connections, which most services negotiate over TLS, are not concerned. A response's
/// headers must fit in it (services send 1-4 KiB): past it, the response is a protocol error, not
/// retried.
const READ_BUFFER: usize = 16 * 1024;

/// One pooled HTTP/1.1 + HTTP/2 client. Cheap to clone: clones share the connection pool.
///
/// Create one per application and hand it to every provider; a client per request pays a TCP and
/// TLS handshake each time. Requires a tokio runtime with the time driver enabled.
#[derive(Clone)]
pub struct HttpClient {
    inner: Client<HttpsConnector<ProxyConnector>, Full<Bytes>>,
    read_timeout: Duration,
    proxied: bool,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").field("read_timeout", &self.read_timeout).field("proxied", &self.proxied).finish()
    }
}

impl Default for HttpClient {
    fn default() -> Self {
        HttpClient::new()
    }
}

impl HttpClient {
    /// A client with default timeouts and no proxy.
    pub fn new() -> Self {
        HttpClient::builder().build()
    }

    /// A client with default timeouts whose proxies come from the environment: `HTTPS_PROXY`,
    /// `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (either case).
    pub fn from_env() -> Self {
        HttpClient::builder().proxies_from_env().build()
    }

    /// Settings to start from: the defaults, no proxy.
    pub fn builder() -> HttpClientBuilder {
        HttpClientBuilder::default()
    }

    /// Sends `request` once and returns the response, whatever its status.
    ///
    /// Fails with [`ProviderError::Network`] when the connection cannot be made or no response
    /// head arrives within the read timeout.
    pub async fn send_once(&self, request: &HttpRequest) -> Result<HttpResponse, ProviderError> {
        let mut builder = http::Request::builder().method(request.method.clone()).uri(&request.url);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let http_request = builder
            .body(Full::new(request.body.clone()))
            .map_err(|e| ProviderError::Other(format!("invalid request to {}: {e}", redact_url(&request.url))))?;
        let response = match tokio::time::timeout(self.read_timeout, self.inner.request(http_request)).await {
            Err(_) => {
                return Err(ProviderError::Network(
                    format!("no response from {} within {:?}", redact_url(&request.url), self.read_timeout).into(),
                ));
            }
            Ok(Err(error)) if head_too_large(&error) => {
                return Err(ProviderError::Protocol(format!(
                    "the response of {} has headers larger than the {} KiB the client reads, or too many",
                    redact_url(&request.url),
                    READ_BUFFER / 1024
                )));
            }
            Ok(Err(error)) => {
                return Err(ProviderError::Network(Failure::with_source(error_chain(&error), error)));
            }
            Ok(Ok(response)) => response,
        };
        let (parts, body) = response.into_parts();
        tracing::debug!(method = %request.method, url = %redact_url(&request.url), status = parts.status.as_u16(), "http response");
        Ok(HttpResponse { status: parts.status, headers: parts.headers, body, read_timeout: self.read_timeout })
    }
}

/// Settings of an [`HttpClient`].
#[derive(Debug)]
pub struct HttpClientBuilder {
    connect_timeout: Duration,
    read_timeout: Duration,
    pool_idle_timeout: Duration,
    pool_max_idle_per_host: usize,
    proxies: Option<ProxySettings>,
}

#[derive(Debug)]
enum ProxySettings {
    Env,
    Explicit { http: Option<String>, https: Option<String>, no_proxy: Option<String> },
}

impl Default for HttpClientBuilder {
    fn default() -> Self {
        HttpClientBuilder {
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(600),
            pool_idle_timeout: Duration::from_secs(90),
            pool_max_idle_per_host: 32,
            proxies: None,
        }
    }
}

impl HttpClientBuilder {
    /// How long a TCP connection may take (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long to wait for the response head, and then for each next body chunk (default
    /// 600 s: reasoning models can think for minutes before their first byte).
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// How long an idle pooled connection is kept (default 90 s).
    pub fn pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = timeout;
        self
    }

    /// Idle connections kept per host (default 32).
    pub fn pool_max_idle_per_host(mut self, max: usize) -> Self {
        self.pool_max_idle_per_host = max;
        self
    }

    /// Proxies from `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY`, read at `build`.
    pub fn proxies_from_env(mut self) -> Self {
        self.proxies = Some(ProxySettings::Env);
        self
    }

    /// Explicit proxies (`http://[user:pass@]host:port`) for plain and TLS destinations, and a
    /// `NO_PROXY`-style list of hosts reached directly.
    pub fn proxies(mut self, http: Option<&str>, https: Option<&str>, no_proxy: Option<&str>) -> Self {
        self.proxies = Some(ProxySettings::Explicit {
            http: http.map(str::to_owned),
            https: https.map(str::to_owned),
            no_proxy: no_proxy.map(str::to_owned),
        });
        self
    }

    /// The client. Proxies from the environment are read now.
    pub fn build(self) -> HttpClient {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(self.connect_timeout));
        http.set_keepalive(Some(Duration::from_secs(60)));
        let matcher = self.proxies.map(|settings| match settings {
            ProxySettings::Env => Matcher::from_env(),
            ProxySettings::Explicit { http, https, no_proxy } => {
                let mut builder = Matcher::builder();
                if let Some(http) = http {
                    builder = builder.http(http);
                }
                if let Some(https) = https {
                    builder = builder.https(https);
                }
                if let Some(no_proxy) = no_proxy {
                    builder = builder.no(no_proxy);
                }
                builder.build()
            }
        });
        let proxied = matcher.is_some();
        let connector = ProxyConnector { http, proxies: matcher.map(Arc::new) };
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config())
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(connector);
        let inner = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(self.pool_idle_timeout)
            .pool_max_idle_per_host(self.pool_max_idle_per_host)
            .http1_read_buf_exact_size(READ_BUFFER)
            .pool_timer(TokioTimer::new())
            .timer(TokioTimer::new())
            .build(https);
        HttpClient { inner, read_timeout: self.read_timeout, proxied }
    }
}

/// rustls with the ring provider and the roots the crate features select: the platform's store
/// (`native-roots`) when it has any, else Mozilla's (`webpki-roots`).
fn tls_config() -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    #[cfg(feature = "native-roots")]
    {
        let native = rustls_native_certs::load_native_certs();
        for error in &native.errors {
            tracing::warn!(%error, "could not load a native root certificate");
        }
        roots.add_parsable_certificates(native.certs);
    }
    #[cfg(feature = "webpki-roots")]
    if roots.is_empty() {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports TLS 1.2 and 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// Connects directly, or through an HTTP `CONNECT` tunnel when a proxy matches the destination.
#[derive(Clone, Debug)]
struct ProxyConnector {
    http: HttpConnector,
    proxies: Option<Arc<Matcher>>,
}

impl Service<Uri> for ProxyConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        if let Some(intercept) = self.proxies.as_ref().and_then(|matcher| matcher.intercept(&dst)) {
            let mut tunnel = Tunnel::new(intercept.uri().clone(), self.http.clone());
            if let Some(auth) = intercept.basic_auth() {
                tunnel = tunnel.with_auth(auth.clone());
            }
            // The tunnel assumes port 443 when the destination names none.
            let dst = with_default_port(dst);
            return Box::pin(async move { tunnel.call(dst).await.map_err(Into::into) });
        }
        let mut http = self.http.clone();
        Box::pin(async move { http.call(dst).await.map_err(Into::into) })
    }
}

fn with_default_port(dst: Uri) -> Uri {
    if dst.port().is_some() || dst.scheme_str() != Some("http") {
        return dst;
    }
    let Some(host) = dst.host() else { return dst };
    let mut parts = dst.clone().into_parts();
    parts.authority = format!("{host}:80").parse().ok();
    Uri::from_parts(parts).unwrap_or(dst)
}

/// A response whose body is read chunk by chunk, each read bounded by the read timeout.
#[derive(Debug)]
pub struct HttpResponse {
    /// The response's status, whatever it is.
    pub status: StatusCode,
    /// The response's headers.
    pub headers: HeaderMap,
    body: Incoming,
    read_timeout: Duration,
}

impl HttpResponse {
    /// The next chunk of the body; `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<Bytes>, ProviderError> {
        loop {
            let frame = match tokio::time::timeout(self.read_timeout, self.body.frame()).await {
                Err(_) => {
                    return Err(ProviderError::Network(
                        format!("the response stalled: no data for {:?}", self.read_timeout).into(),
                    ));
                }
                Ok(None) => return Ok(None),
                Ok(Some(Err(error))) => {
                    return Err(ProviderError::Network(Failure::with_source(error_chain(&error), error)));
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data()
                && !data.is_empty()
            {
                return Ok(Some(data));
            }
        }
    }

    /// The whole body, or its first `limit` bytes.
    pub async fn bytes(&mut self, limit: usize) -> Result<Bytes, ProviderError> {
        let mut body = BytesMut::new();
        while body.len() < limit {
            match self.chunk().await? {
                Some(chunk) => body.extend_from_slice(&chunk[..chunk.len().min(limit - body.len())]),
                None => break,
            }
        }
        Ok(body.freeze())
    }
}

/// Whether hyper refused a response because its head did not fit in [`READ_BUFFER`] (or had too
/// many headers). hyper names the case by a method only with its `server` feature, which a client
/// does not build, so the parse error is recognised by its words.
fn head_too_large(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.downcast_ref::<hyper::Error>().is_some_and(|e| e.is_parse() && e.to_string().contains("too large")) {
            return true;
        }
        cause = error.source();
    }
    false
}

/// An error and its causes, `outer: inner: innermost` (a cause already in the text is not
/// repeated).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_port_is_added_only_to_plain_http() {
        assert_eq!(with_default_port("http://h.test/x".parse().unwrap()).to_string(), "http://h.test:80/x");
        assert_eq!(with_default_port("http://h.test:8080/x".parse().unwrap()).to_string(), "http://h.test:8080/x");
        assert_eq!(with_default_port("https://h.test/x".parse().unwrap()).to_string(), "https://h.test/x");
    }
}
