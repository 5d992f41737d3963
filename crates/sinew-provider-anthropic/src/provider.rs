//! The transport: [`AnthropicProvider`] is `sinew-http`'s [`HttpProvider`] over the
//! [`Anthropic`] protocol.

use sinew_core::{ProviderError, StreamRequest};
use sinew_http::{HttpProvider, HttpRequest, Protocol, SseMessageDecoder, env_var};

use crate::decode::{AnthropicEvents, PROVIDER_ID, decoder};
use crate::request::{AnthropicAuth, AnthropicConfig, check_options, checked_request};

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
pub type AnthropicProvider = HttpProvider<Anthropic>;

/// The Anthropic Messages protocol.
#[derive(Clone, Copy, Debug)]
pub struct Anthropic;

impl Protocol for Anthropic {
    type Config = AnthropicConfig;
    type Decoder = SseMessageDecoder<AnthropicEvents>;

    fn config_from_env() -> Result<AnthropicConfig, ProviderError> {
        AnthropicConfig::from_env()
    }

    fn provider_id(_: &AnthropicConfig) -> &str {
        PROVIDER_ID
    }

    fn request(config: &AnthropicConfig, request: &StreamRequest<'_>) -> Result<HttpRequest, ProviderError> {
        check_options(request)?;
        checked_request(config, request)
    }

    fn decoder(_: &AnthropicConfig, model: &str) -> Self::Decoder {
        decoder(model)
    }
}

impl AnthropicConfig {
    /// `ANTHROPIC_API_KEY`, or `ANTHROPIC_OAUTH_TOKEN` for a Claude subscription;
    /// `ANTHROPIC_BASE_URL` if set.
    pub fn from_env() -> Result<Self, ProviderError> {
        let auth = match (env_var("ANTHROPIC_API_KEY"), env_var("ANTHROPIC_OAUTH_TOKEN")) {
            (Some(key), _) => AnthropicAuth::ApiKey(key),
            (None, Some(token)) => AnthropicAuth::OAuth(token),
            (None, None) => {
                return Err(ProviderError::Auth("set ANTHROPIC_API_KEY (or ANTHROPIC_OAUTH_TOKEN)".into()));
            }
        };
        let mut config = AnthropicConfig::new("");
        config.auth = auth;
        if let Some(base_url) = env_var("ANTHROPIC_BASE_URL") {
            config.base_url = base_url;
        }
        Ok(config)
    }
}
