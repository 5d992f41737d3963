//! The transport: [`AnthropicProvider`] joins the request builder and the decoder over
//! `sinew-http`.

use std::sync::Arc;

use futures::stream::BoxStream;
use sinew_core::{CancellationToken, ProviderError, RetryConfig, StreamEvent, StreamProvider, StreamRequest};
use sinew_http::{HttpClient, stream_response};

use crate::decode::PROVIDER_ID;
use crate::request::{AnthropicAuth, AnthropicConfig, build_request};

/// Claude over the Messages API.
///
/// ```no_run
/// use sinew_provider_anthropic::{AnthropicConfig, AnthropicProvider};
///
/// let provider = AnthropicProvider::new(AnthropicConfig::new("sk-ant-..."));
/// // or, reading ANTHROPIC_API_KEY (or ANTHROPIC_OAUTH_TOKEN), ANTHROPIC_BASE_URL and proxies:
/// let provider = AnthropicProvider::from_env()?;
/// # Ok::<(), sinew_core::ProviderError>(())
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicProvider {
    config: Arc<AnthropicConfig>,
    client: HttpClient,
    retry: RetryConfig,
}

impl AnthropicProvider {
    /// A provider with its own HTTP client and the default retries ([`sinew_http::default_retry`]).
    pub fn new(config: AnthropicConfig) -> Self {
        AnthropicProvider { config: Arc::new(config), client: HttpClient::new(), retry: sinew_http::default_retry() }
    }

    /// Configuration from the environment: `ANTHROPIC_API_KEY`, or `ANTHROPIC_OAUTH_TOKEN` for a
    /// Claude subscription; `ANTHROPIC_BASE_URL` if set; proxies from `HTTPS_PROXY`/`NO_PROXY`.
    pub fn from_env() -> Result<Self, ProviderError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let auth = match (var("ANTHROPIC_API_KEY"), var("ANTHROPIC_OAUTH_TOKEN")) {
            (Some(key), _) => AnthropicAuth::ApiKey(key),
            (None, Some(token)) => AnthropicAuth::OAuth(token),
            (None, None) => {
                return Err(ProviderError::Auth("set ANTHROPIC_API_KEY (or ANTHROPIC_OAUTH_TOKEN)".into()));
            }
        };
        let mut config = AnthropicConfig::new("");
        config.auth = auth;
        if let Some(base_url) = var("ANTHROPIC_BASE_URL") {
            config.base_url = base_url;
        }
        Ok(AnthropicProvider::new(config).with_client(HttpClient::from_env()))
    }

    /// Shares `client` (and its connection pool) with other providers.
    pub fn with_client(mut self, client: HttpClient) -> Self {
        self.client = client;
        self
    }

    /// How failed requests are retried before the error reaches the caller.
    pub fn with_retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }
}

impl StreamProvider for AnthropicProvider {
    fn provider_id(&self) -> &str {
        PROVIDER_ID
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        let http = build_request(&self.config, request);
        stream_response(self.client.clone(), Ok(http), self.retry, crate::decoder(request.model), cancel)
    }
}
