//! The transport: [`GeminiProvider`] is `sinew-http`'s [`HttpProvider`] over the [`Gemini`]
//! protocol.

use sinew_core::{ProviderError, StreamRequest};
use sinew_http::{HttpProvider, HttpRequest, Protocol, SseMessageDecoder, env_var};

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
    /// access token in `GOOGLE_VERTEX_ACCESS_TOKEN` (e.g. from `gcloud auth print-access-token`;
    /// tokens expire, so long-running hosts refresh and rebuild).
    pub fn vertex_from_env() -> Result<Self, ProviderError> {
        let project =
            env_var("GOOGLE_CLOUD_PROJECT").ok_or_else(|| ProviderError::Other("set GOOGLE_CLOUD_PROJECT".into()))?;
        let location = env_var("GOOGLE_CLOUD_LOCATION").unwrap_or_else(|| "global".into());
        let token = env_var("GOOGLE_VERTEX_ACCESS_TOKEN").ok_or_else(|| {
            ProviderError::Auth("set GOOGLE_VERTEX_ACCESS_TOKEN (gcloud auth print-access-token)".into())
        })?;
        Ok(GeminiConfig::vertex(&project, &location, token))
    }
}
