//! The transport: [`ResponsesProvider`] is `sinew-http`'s [`HttpProvider`] over the
//! [`OpenAiResponses`] protocol.

use std::sync::Arc;

use sinew_core::{ProviderError, StreamRequest};
use sinew_http::{Auth, Authorizer, HttpProvider, HttpRequest, Protocol, SseMessageDecoder, env_var};

use crate::decode::{ResponsesEvents, decoder};
use crate::request::{ResponsesConfig, check_options, checked_request};

/// A model behind a Responses endpoint: OpenAI or Azure OpenAI.
///
/// ```no_run
/// use sinew_provider_openai_responses::{ResponsesConfig, ResponsesProvider};
///
/// let openai = ResponsesProvider::new(ResponsesConfig::openai("sk-..."));
/// let azure = ResponsesProvider::new(ResponsesConfig::azure("my-resource", "azure-key"));
/// // or, reading OPENAI_API_KEY, OPENAI_BASE_URL and proxies:
/// let provider = ResponsesProvider::from_env()?;
/// // Azure from AZURE_OPENAI_* variables:
/// let azure = ResponsesProvider::new(ResponsesConfig::azure_from_env()?);
/// # Ok::<(), sinew_core::ProviderError>(())
/// ```
pub type ResponsesProvider = HttpProvider<OpenAiResponses>;

/// The Responses protocol.
#[derive(Clone, Copy, Debug)]
pub struct OpenAiResponses;

impl Protocol for OpenAiResponses {
    type Config = ResponsesConfig;
    type Decoder = SseMessageDecoder<ResponsesEvents>;

    fn config_from_env() -> Result<ResponsesConfig, ProviderError> {
        ResponsesConfig::from_env()
    }

    fn provider_id(config: &ResponsesConfig) -> &str {
        &config.provider_id
    }

    fn request(config: &ResponsesConfig, request: &StreamRequest<'_>) -> Result<HttpRequest, ProviderError> {
        check_options(request)?;
        checked_request(config, request)
    }

    fn decoder(config: &ResponsesConfig, model: &str) -> Self::Decoder {
        decoder(&config.provider_id, model)
    }

    fn authorizer(config: &ResponsesConfig) -> Option<Arc<dyn Authorizer>> {
        config.auth.authorizer()
    }
}

impl ResponsesConfig {
    /// OpenAI: `OPENAI_API_KEY`, and `OPENAI_BASE_URL` if set.
    pub fn from_env() -> Result<Self, ProviderError> {
        let key = env_var("OPENAI_API_KEY").ok_or_else(|| ProviderError::Auth("set OPENAI_API_KEY".into()))?;
        let mut config = ResponsesConfig::openai(key);
        if let Some(base_url) = env_var("OPENAI_BASE_URL") {
            config.base_url = base_url;
        }
        Ok(config)
    }

    /// Azure OpenAI: `AZURE_OPENAI_API_KEY` (else, with the feature `entra`, Entra ID tokens
    /// from [`sinew_http::EntraCredential::from_env`]), and `AZURE_OPENAI_RESOURCE` (the v1 API)
    /// or `AZURE_OPENAI_ENDPOINT` with `AZURE_OPENAI_API_VERSION`.
    pub fn azure_from_env() -> Result<Self, ProviderError> {
        let auth = match env_var("AZURE_OPENAI_API_KEY") {
            Some(key) => Auth::Header { name: "api-key".into(), value: key },
            None => entra()?,
        };
        let config = match (
            env_var("AZURE_OPENAI_RESOURCE"),
            env_var("AZURE_OPENAI_ENDPOINT"),
            env_var("AZURE_OPENAI_API_VERSION"),
        ) {
            (_, Some(endpoint), Some(version)) => Ok(ResponsesConfig::azure_versioned(&endpoint, &version, "")),
            (Some(resource), _, _) => Ok(ResponsesConfig::azure(&resource, "")),
            (None, Some(endpoint), None) => {
                let mut config = ResponsesConfig::azure("", "");
                config.base_url = format!("{}/openai/v1", endpoint.trim_end_matches('/'));
                Ok(config)
            }
            (None, None, _) => Err(ProviderError::Other(
                "set AZURE_OPENAI_RESOURCE, or AZURE_OPENAI_ENDPOINT (and AZURE_OPENAI_API_VERSION)".into(),
            )),
        };
        config.map(|config| ResponsesConfig { auth, ..config })
    }
}

/// Entra ID tokens from the environment's sources, fetched at the first request.
#[cfg(feature = "entra")]
fn entra() -> Result<Auth, ProviderError> {
    Ok(Auth::Token(Arc::new(sinew_http::EntraCredential::from_env())))
}

#[cfg(not(feature = "entra"))]
fn entra() -> Result<Auth, ProviderError> {
    Err(ProviderError::Auth(
        "set AZURE_OPENAI_API_KEY, or build sinew-provider-openai-responses with its `entra` feature for Entra ID"
            .into(),
    ))
}
