//! The transport: [`GeminiProvider`] joins the request builder and the decoder over
//! `sinew-http`.

use std::sync::Arc;

use futures::stream::BoxStream;
use sinew_core::{CancellationToken, ProviderError, RetryConfig, StreamEvent, StreamProvider, StreamRequest};
use sinew_http::{HttpClient, stream_response};

use crate::decode::decoder;
use crate::request::{GeminiConfig, build_request};

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// A Gemini model, through the Gemini API or Vertex AI.
///
/// ```no_run
/// use sinew_provider_gemini::{GeminiConfig, GeminiProvider};
///
/// let gemini = GeminiProvider::new(GeminiConfig::gemini("AIza..."));
/// let vertex = GeminiProvider::new(GeminiConfig::vertex("my-project", "us-central1", "ya29..."));
/// // or, reading GEMINI_API_KEY and proxies:
/// let provider = GeminiProvider::from_env()?;
/// # Ok::<(), sinew_core::ProviderError>(())
/// ```
#[derive(Clone, Debug)]
pub struct GeminiProvider {
    config: Arc<GeminiConfig>,
    client: HttpClient,
    retry: RetryConfig,
}

impl GeminiProvider {
    /// A provider with its own HTTP client and the default retries ([`sinew_http::default_retry`]).
    pub fn new(config: GeminiConfig) -> Self {
        GeminiProvider { config: Arc::new(config), client: HttpClient::new(), retry: sinew_http::default_retry() }
    }

    /// The Gemini API from the environment: `GEMINI_API_KEY` (or `GOOGLE_API_KEY`); proxies
    /// from `HTTPS_PROXY`/`NO_PROXY`.
    pub fn from_env() -> Result<Self, ProviderError> {
        let key = var("GEMINI_API_KEY")
            .or_else(|| var("GOOGLE_API_KEY"))
            .ok_or_else(|| ProviderError::Auth("set GEMINI_API_KEY".into()))?;
        Ok(GeminiProvider::new(GeminiConfig::gemini(key)).with_client(HttpClient::from_env()))
    }

    /// Vertex AI from the environment: `GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION` (default
    /// `global`) and an access token in `GOOGLE_VERTEX_ACCESS_TOKEN` (e.g. from `gcloud auth
    /// print-access-token`; tokens expire, so long-running hosts refresh and rebuild). Proxies from
    /// `HTTPS_PROXY`/`NO_PROXY`.
    pub fn vertex_from_env() -> Result<Self, ProviderError> {
        let project =
            var("GOOGLE_CLOUD_PROJECT").ok_or_else(|| ProviderError::Other("set GOOGLE_CLOUD_PROJECT".into()))?;
        let location = var("GOOGLE_CLOUD_LOCATION").unwrap_or_else(|| "global".into());
        let token = var("GOOGLE_VERTEX_ACCESS_TOKEN").ok_or_else(|| {
            ProviderError::Auth("set GOOGLE_VERTEX_ACCESS_TOKEN (gcloud auth print-access-token)".into())
        })?;
        Ok(GeminiProvider::new(GeminiConfig::vertex(&project, &location, token)).with_client(HttpClient::from_env()))
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

    pub fn config(&self) -> &GeminiConfig {
        &self.config
    }
}

impl StreamProvider for GeminiProvider {
    fn provider_id(&self) -> &str {
        &self.config.provider_id
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        let http = build_request(&self.config, request);
        let decoder = decoder(&self.config.provider_id, request.model);
        stream_response(self.client.clone(), Ok(http), self.retry, decoder, cancel)
    }
}
