//! The transport: [`BedrockProvider`] joins the request builder and the decoder over
//! `sinew-http`.

use std::sync::Arc;
use std::time::SystemTime;

use futures::stream::BoxStream;
use sinew_core::{CancellationToken, ProviderError, RetryConfig, StreamEvent, StreamProvider, StreamRequest};
use sinew_http::{HttpClient, stream_response};

use crate::decode::{PROVIDER_ID, decoder};
use crate::request::{AwsCredentials, BedrockConfig, EnvCredentials, build_request};

/// A model on AWS Bedrock, through ConverseStream.
///
/// ```no_run
/// use sinew_provider_bedrock::{AwsCredentials, BedrockConfig, BedrockProvider};
///
/// let credentials = AwsCredentials { access_key_id: "AKIA...".into(), secret_access_key: "...".into(), session_token: None };
/// let provider = BedrockProvider::new(BedrockConfig::new("us-east-1", credentials));
/// // or, reading AWS_REGION and AWS_* credentials (or AWS_BEARER_TOKEN_BEDROCK) and proxies:
/// let provider = BedrockProvider::from_env()?;
/// # Ok::<(), sinew_core::ProviderError>(())
/// ```
#[derive(Clone, Debug)]
pub struct BedrockProvider {
    config: Arc<BedrockConfig>,
    client: HttpClient,
    retry: RetryConfig,
}

impl BedrockProvider {
    /// A provider with its own HTTP client and the default retries ([`sinew_http::default_retry`]).
    pub fn new(config: BedrockConfig) -> Self {
        BedrockProvider { config: Arc::new(config), client: HttpClient::new(), retry: sinew_http::default_retry() }
    }

    /// Configuration from the environment: `AWS_REGION` (or `AWS_DEFAULT_REGION`); a Bedrock API
    /// key in `AWS_BEARER_TOKEN_BEDROCK`, else SigV4 with `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, read again at every request; proxies
    /// from `HTTPS_PROXY`/`NO_PROXY`.
    pub fn from_env() -> Result<Self, ProviderError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let region = var("AWS_REGION")
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .ok_or_else(|| ProviderError::Other("set AWS_REGION".into()))?;
        let config = match var("AWS_BEARER_TOKEN_BEDROCK") {
            Some(key) => BedrockConfig::with_api_key(region, key),
            None => {
                // Fail now, not at the first request, when no credentials are set.
                AwsCredentials::from_env()?;
                BedrockConfig::new(region, EnvCredentials)
            }
        };
        Ok(BedrockProvider::new(config).with_client(HttpClient::from_env()))
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

    pub fn config(&self) -> &BedrockConfig {
        &self.config
    }
}

impl StreamProvider for BedrockProvider {
    fn provider_id(&self) -> &str {
        PROVIDER_ID
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        let http = build_request(&self.config, request, SystemTime::now());
        stream_response(self.client.clone(), http, self.retry, decoder(request.model), cancel)
    }
}
