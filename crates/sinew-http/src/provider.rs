//! [`HttpProvider`]: a wire protocol's pure halves (configuration, request builder, decoder) made
//! a [`StreamProvider`] over the shared client. Each provider crate supplies a [`Protocol`].

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::stream::BoxStream;
use sinew_core::{CancellationToken, ProviderError, RetryConfig, StreamEvent, StreamProvider, StreamRequest};

use crate::client::HttpClient;
use crate::credentials::Authorizer;
use crate::request::HttpRequest;
use crate::retry::default_retry;
use crate::stream::{StreamDecoder, StreamLimits, stream_authorized_response};

/// A wire protocol, as a provider crate defines it.
pub trait Protocol: Send + Sync + 'static {
    /// The provider's settings: endpoint, credentials, request defaults.
    type Config: fmt::Debug + Send + Sync + 'static;
    /// Turns the response body into stream events.
    type Decoder: StreamDecoder;

    /// The configuration the environment describes (what `from_env` uses).
    fn config_from_env() -> Result<Self::Config, ProviderError>;

    /// The id stamped on messages (see [`StreamProvider::provider_id`]).
    fn provider_id(config: &Self::Config) -> &str;

    /// The HTTP request of one call (pure, except for what the configuration asks, like a clock
    /// for signatures).
    fn request(config: &Self::Config, request: &StreamRequest<'_>) -> Result<HttpRequest, ProviderError>;

    /// A decoder for the response to a request for `model`.
    fn decoder(config: &Self::Config, model: &str) -> Self::Decoder;

    /// What adds credentials fetched when each attempt is sent (tokens that expire, signatures
    /// made with keys from a credential chain); `None` (the default) when [`Protocol::request`]
    /// added them.
    fn authorizer(_config: &Self::Config) -> Option<Arc<dyn Authorizer>> {
        None
    }
}

/// A model behind protocol `P`, called over an [`HttpClient`].
pub struct HttpProvider<P: Protocol> {
    config: Arc<P::Config>,
    client: HttpClient,
    retry: RetryConfig,
    limits: StreamLimits,
    protocol: PhantomData<fn() -> P>,
}

impl<P: Protocol> HttpProvider<P> {
    /// A provider with its own HTTP client and the default retries ([`default_retry`]).
    pub fn new(config: P::Config) -> Self {
        HttpProvider {
            config: Arc::new(config),
            client: HttpClient::new(),
            retry: default_retry(),
            limits: StreamLimits::default(),
            protocol: PhantomData,
        }
    }

    /// Configuration from the environment (see the protocol's configuration), and a client whose
    /// proxies come from `HTTPS_PROXY`/`NO_PROXY`.
    pub fn from_env() -> Result<Self, ProviderError> {
        Ok(HttpProvider::new(P::config_from_env()?).with_client(HttpClient::from_env()))
    }

    /// Shares `client` (and its connection pool) with other providers.
    #[must_use]
    pub fn with_client(mut self, client: HttpClient) -> Self {
        self.client = client;
        self
    }

    /// How failed requests are retried before the error reaches the caller, unless the request
    /// brings its own policy ([`StreamRequest::retry`], as the agent loop does).
    #[must_use]
    pub fn with_retry(mut self, retry: RetryConfig) -> Self {
        self.retry = retry;
        self
    }

    /// What one call may take: response bytes, silence, a deadline ([`StreamLimits`]).
    #[must_use]
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The protocol's configuration this provider was built with.
    pub fn config(&self) -> &P::Config {
        &self.config
    }
}

impl<P: Protocol> Clone for HttpProvider<P> {
    fn clone(&self) -> Self {
        HttpProvider {
            config: Arc::clone(&self.config),
            client: self.client.clone(),
            retry: self.retry,
            limits: self.limits,
            protocol: PhantomData,
        }
    }
}

impl<P: Protocol> fmt::Debug for HttpProvider<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider")
            .field("config", &self.config)
            .field("client", &self.client)
            .field("retry", &self.retry)
            .field("limits", &self.limits)
            .finish()
    }
}

impl<P: Protocol> StreamProvider for HttpProvider<P> {
    fn provider_id(&self) -> &str {
        P::provider_id(&self.config)
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        let http = P::request(&self.config, request);
        let decoder = P::decoder(&self.config, request.model);
        let retry = request.retry.unwrap_or(self.retry);
        let authorizer = P::authorizer(&self.config);
        stream_authorized_response(self.client.clone(), http, authorizer, retry, self.limits, decoder, cancel)
    }

    fn retries_requests(&self, _model: &str) -> bool {
        true
    }
}

/// An environment variable, `None` when unset or blank.
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
