//! The transport: [`GeminiProvider`] is `sinew-http`'s [`HttpProvider`] over the [`Gemini`]
//! protocol.

use std::sync::Arc;

use sinew_core::{ProviderError, StreamRequest};
use sinew_http::{Auth, Authorizer, HttpProvider, HttpRequest, Protocol, SseMessageDecoder, env_var};

use crate::decode::{GeminiEvents, decoder};
use crate::request::{GeminiConfig, check_options, checked_request};

/// A Gemini model, through the Gemini API or Vertex AI.
///
/// ```no_run
/// use sinew_provider_gemini::{GeminiConfig, GeminiProvider};
///
/// let gemini = GeminiProvider::new(GeminiConfig::gemini("AIza..."));
/// let vertex = GeminiProvider::new(GeminiConfig::vertex("my-project", "us-central1", "ya29..."));
/// // or, reading GEMINI_API_KEY and proxies:
/// let provider = GeminiProvider::from_env()?;
/// // Vertex from GOOGLE_CLOUD_* variables:
/// let vertex = GeminiProvider::new(GeminiConfig::vertex_from_env()?);
/// # Ok::<(), sinew_core::ProviderError>(())
/// ```
pub type GeminiProvider = HttpProvider<Gemini>;

/// Gemini's `streamGenerateContent` protocol.
#[derive(Clone, Copy, Debug)]
pub struct Gemini;

impl Protocol for Gemini {
    type Config = GeminiConfig;
    type Decoder = SseMessageDecoder<GeminiEvents>;

    fn config_from_env() -> Result<GeminiConfig, ProviderError> {
        GeminiConfig::from_env()
    }

    fn provider_id(config: &GeminiConfig) -> &str {
        &config.provider_id
    }

    fn request(config: &GeminiConfig, request: &StreamRequest<'_>) -> Result<HttpRequest, ProviderError> {
        check_options(request)?;
        checked_request(config, request)
    }

    fn decoder(config: &GeminiConfig, model: &str) -> Self::Decoder {
        decoder(&config.provider_id, model)
    }

    fn authorizer(config: &GeminiConfig) -> Option<Arc<dyn Authorizer>> {
        config.auth.authorizer()
    }
}

impl GeminiConfig {
    /// The Gemini API: `GEMINI_API_KEY` (or `GOOGLE_API_KEY`).
    pub fn from_env() -> Result<Self, ProviderError> {
        let key = env_var("GEMINI_API_KEY")
            .or_else(|| env_var("GOOGLE_API_KEY"))
            .ok_or_else(|| ProviderError::Auth("set GEMINI_API_KEY".into()))?;
        Ok(GeminiConfig::gemini(key))
    }

    /// Vertex AI: `GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION` (default `global`) and an
    /// access token in `GOOGLE_VERTEX_ACCESS_TOKEN` (e.g. from `gcloud auth print-access-token`),
    /// else, with the feature `adc`, Application Default Credentials
    /// ([`crate::GoogleCredentials`]), whose tokens are refreshed.
    pub fn vertex_from_env() -> Result<Self, ProviderError> {
        let project =
            env_var("GOOGLE_CLOUD_PROJECT").ok_or_else(|| ProviderError::Other("set GOOGLE_CLOUD_PROJECT".into()))?;
        let location = env_var("GOOGLE_CLOUD_LOCATION").unwrap_or_else(|| "global".into());
        let auth = match env_var("GOOGLE_VERTEX_ACCESS_TOKEN") {
            Some(token) => Auth::Bearer(token),
            None => default_auth()?,
        };
        Ok(GeminiConfig::vertex_with_auth(&project, &location, auth))
    }
}

/// Application Default Credentials, located at the first request.
#[cfg(feature = "adc")]
fn default_auth() -> Result<Auth, ProviderError> {
    Ok(Auth::Token(Arc::new(crate::GoogleCredentials::from_env())))
}

#[cfg(not(feature = "adc"))]
fn default_auth() -> Result<Auth, ProviderError> {
    Err(ProviderError::Auth(
        "set GOOGLE_VERTEX_ACCESS_TOKEN (gcloud auth print-access-token), or build sinew-provider-gemini with its \
         `adc` feature for Application Default Credentials"
            .into(),
    ))
}
