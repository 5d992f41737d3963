//! The transport: [`OpenAiChatProvider`] joins the request builder and the decoder over
//! `sinew-http`.

use std::sync::Arc;

use futures::stream::BoxStream;
use sinew_core::{CancellationToken, ProviderError, RetryConfig, StreamEvent, StreamProvider, StreamRequest};
use sinew_http::{Auth, HttpClient, stream_response};

use crate::decode::decoder;
use crate::request::{OpenAiChatConfig, build_request};

/// A model behind a Chat Completions endpoint: OpenAI or any compatible server.
///
/// ```no_run
/// use sinew_provider_openai_chat::{OpenAiChatConfig, OpenAiChatProvider};
///
/// let openai = OpenAiChatProvider::new(OpenAiChatConfig::openai("sk-..."));
/// let local = OpenAiChatProvider::new(OpenAiChatConfig::ollama());
/// // or, reading OPENAI_API_KEY, OPENAI_BASE_URL and proxies:
/// let provider = OpenAiChatProvider::from_env()?;
/// # Ok::<(), sinew_core::ProviderError>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiChatProvider {
    config: Arc<OpenAiChatConfig>,
    client: HttpClient,
    retry: RetryConfig,
}

impl OpenAiChatProvider {
    /// A provider with its own HTTP client and the default retries ([`sinew_http::default_retry`]).
    pub fn new(config: OpenAiChatConfig) -> Self {
        OpenAiChatProvider { config: Arc::new(config), client: HttpClient::new(), retry: sinew_http::default_retry() }
    }

    /// Configuration from the environment: `OPENAI_API_KEY`, and `OPENAI_BASE_URL` for any
    /// compatible server (Ollama, vLLM, llama.cpp...; the key may then be unset); proxies from
    /// `HTTPS_PROXY`/`NO_PROXY`.
    pub fn from_env() -> Result<Self, ProviderError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let config = match (var("OPENAI_API_KEY"), var("OPENAI_BASE_URL")) {
            (key, Some(base_url)) if !base_url.contains("api.openai.com") => {
                OpenAiChatConfig::compatible("openai-compatible", base_url, key.map_or(Auth::None, Auth::Bearer))
            }
            (Some(key), base_url) => {
                let mut config = OpenAiChatConfig::openai(key);
                if let Some(base_url) = base_url {
                    config.base_url = base_url;
                }
                config
            }
            (None, _) => {
                return Err(ProviderError::Auth(
                    "set OPENAI_API_KEY, or OPENAI_BASE_URL for a compatible server".into(),
                ));
            }
        };
        Ok(OpenAiChatProvider::new(config).with_client(HttpClient::from_env()))
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

    pub fn config(&self) -> &OpenAiChatConfig {
        &self.config
    }
}

impl StreamProvider for OpenAiChatProvider {
    fn provider_id(&self) -> &str {
        &self.config.provider_id
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        let http = build_request(&self.config, request);
        let decoder = decoder(&self.config.provider_id, request.model);
        stream_response(self.client.clone(), Ok(http), self.retry, decoder, cancel)
    }
}
