//! The transport: [`ResponsesProvider`] joins the request builder and the decoder over
//! `sinew-http`.

use std::sync::Arc;

use futures::stream::BoxStream;
use sinew_core::{CancellationToken, ProviderError, RetryConfig, StreamEvent, StreamProvider, StreamRequest};
use sinew_http::{HttpClient, stream_response};

use crate::decode::decoder;
use crate::request::{ResponsesConfig, build_request};

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A model behind a Responses endpoint: OpenAI or Azure OpenAI.
///
/// ```no_run
/// use sinew_provider_openai_responses::{ResponsesConfig, ResponsesProvider};
///
/// let openai = ResponsesProvider::new(ResponsesConfig::openai("sk-..."));
/// let azure = ResponsesProvider::new(ResponsesConfig::azure("my-resource", "azure-key"));
/// // or, reading OPENAI_API_KEY, OPENAI_BASE_URL and proxies:
/// let provider = ResponsesProvider::from_env()?;
/// # Ok::<(), sinew_core::ProviderError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ResponsesProvider {
    config: Arc<ResponsesConfig>,
    client: HttpClient,
    retry: RetryConfig,
}

impl ResponsesProvider {
    /// A provider with its own HTTP client and the default retries ([`sinew_http::default_retry`]).
    pub fn new(config: ResponsesConfig) -> Self {
        ResponsesProvider { config: Arc::new(config), client: HttpClient::new(), retry: sinew_http::default_retry() }
    }

    /// OpenAI from the environment: `OPENAI_API_KEY`, `OPENAI_BASE_URL` if set; proxies from
    /// `HTTPS_PROXY`/`NO_PROXY`.
    pub fn from_env() -> Result<Self, ProviderError> {
        let key = var("OPENAI_API_KEY").ok_or_else(|| ProviderError::Auth("set OPENAI_API_KEY".into()))?;
        let mut config = ResponsesConfig::openai(key);
        if let Some(base_url) = var("OPENAI_BASE_URL") {
            config.base_url = base_url;
        }
        Ok(ResponsesProvider::new(config).with_client(HttpClient::from_env()))
    }

    /// Azure OpenAI from the environment: `AZURE_OPENAI_API_KEY`, and `AZURE_OPENAI_RESOURCE`
    /// (the v1 API) or `AZURE_OPENAI_ENDPOINT` with `AZURE_OPENAI_API_VERSION`; proxies from
    /// `HTTPS_PROXY`/`NO_PROXY`.
    pub fn azure_from_env() -> Result<Self, ProviderError> {
        let key = var("AZURE_OPENAI_API_KEY").ok_or_else(|| ProviderError::Auth("set AZURE_OPENAI_API_KEY".into()))?;
        let config = match (var("AZURE_OPENAI_RESOURCE"), var("AZURE_OPENAI_ENDPOINT"), var("AZURE_OPENAI_API_VERSION"))
        {
            (_, Some(endpoint), Some(version)) => ResponsesConfig::azure_versioned(&endpoint, &version, key),
            (Some(resource), _, _) => ResponsesConfig::azure(&resource, key),
            (None, Some(endpoint), None) => {
                let mut config = ResponsesConfig::azure("", key);
                config.base_url = format!("{}/openai/v1", endpoint.trim_end_matches('/'));
                config
            }
            (None, None, _) => {
                return Err(ProviderError::Other(
                    "set AZURE_OPENAI_RESOURCE, or AZURE_OPENAI_ENDPOINT (and AZURE_OPENAI_API_VERSION)".into(),
                ));
            }
        };
        Ok(ResponsesProvider::new(config).with_client(HttpClient::from_env()))
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

    pub fn config(&self) -> &ResponsesConfig {
        &self.config
    }
}

impl StreamProvider for ResponsesProvider {
    fn provider_id(&self) -> &str {
        &self.config.provider_id
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        let http = build_request(&self.config, request);
        let decoder = decoder(&self.config.provider_id, request.model);
        stream_response(self.client.clone(), Ok(http), self.retry, decoder, cancel)
    }
}
