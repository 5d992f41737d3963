//! The transport: [`OpenAiChatProvider`] is `sinew-http`'s [`HttpProvider`] over the
//! [`OpenAiChat`] protocol.

use std::sync::Arc;

use sinew_core::{ProviderError, StreamRequest};
use sinew_http::{Auth, Authorizer, HttpProvider, HttpRequest, Protocol, SseMessageDecoder, env_var};

use crate::decode::{ChatEvents, decoder};
use crate::request::{OpenAiChatConfig, check_options, checked_request};

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
pub type OpenAiChatProvider = HttpProvider<OpenAiChat>;

/// The Chat Completions protocol.
#[derive(Clone, Copy, Debug)]
pub struct OpenAiChat;

impl Protocol for OpenAiChat {
    type Config = OpenAiChatConfig;
    type Decoder = SseMessageDecoder<ChatEvents>;

    fn config_from_env() -> Result<OpenAiChatConfig, ProviderError> {
        OpenAiChatConfig::from_env()
    }

    fn provider_id(config: &OpenAiChatConfig) -> &str {
        &config.provider_id
    }

    fn request(config: &OpenAiChatConfig, request: &StreamRequest<'_>) -> Result<HttpRequest, ProviderError> {
        check_options(request)?;
        checked_request(config, request)
    }

    fn decoder(config: &OpenAiChatConfig, model: &str) -> Self::Decoder {
        decoder(&config.provider_id, model)
    }

    fn authorizer(config: &OpenAiChatConfig) -> Option<Arc<dyn Authorizer>> {
        config.auth.authorizer()
    }
}

impl OpenAiChatConfig {
    /// `OPENAI_API_KEY`, and `OPENAI_BASE_URL` for any compatible server (Ollama, vLLM,
    /// llama.cpp...; the key may then be unset).
    pub fn from_env() -> Result<Self, ProviderError> {
        match (env_var("OPENAI_API_KEY"), env_var("OPENAI_BASE_URL")) {
            (key, Some(base_url)) if !base_url.contains("api.openai.com") => {
                Ok(OpenAiChatConfig::compatible("openai-compatible", base_url, key.map_or(Auth::None, Auth::Bearer)))
            }
            (Some(key), base_url) => {
                let mut config = OpenAiChatConfig::openai(key);
                if let Some(base_url) = base_url {
                    config.base_url = base_url;
                }
                Ok(config)
            }
            (None, _) => {
                Err(ProviderError::Auth("set OPENAI_API_KEY, or OPENAI_BASE_URL for a compatible server".into()))
            }
        }
    }
}
