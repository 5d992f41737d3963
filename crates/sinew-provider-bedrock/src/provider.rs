//! The transport: [`BedrockProvider`] is `sinew-http`'s [`HttpProvider`] over the [`Bedrock`]
//! protocol.

use std::time::SystemTime;

use sinew_core::{ProviderError, StreamRequest};
use sinew_http::{HttpProvider, HttpRequest, Protocol, env_var};

use crate::decode::{BedrockDecoder, PROVIDER_ID, decoder};
use crate::request::{AwsCredentials, BedrockConfig, EnvCredentials, check_options, checked_request};

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
pub type BedrockProvider = HttpProvider<Bedrock>;

/// The ConverseStream protocol. Requests are signed when they are built, at the current time.
#[derive(Clone, Copy, Debug)]
pub struct Bedrock;

impl Protocol for Bedrock {
    type Config = BedrockConfig;
    type Decoder = BedrockDecoder;

    fn config_from_env() -> Result<BedrockConfig, ProviderError> {
        BedrockConfig::from_env()
    }

    fn provider_id(_: &BedrockConfig) -> &str {
        PROVIDER_ID
    }

    fn request(config: &BedrockConfig, request: &StreamRequest<'_>) -> Result<HttpRequest, ProviderError> {
        check_options(request)?;
        checked_request(config, request, SystemTime::now())
    }

    fn decoder(_: &BedrockConfig, model: &str) -> BedrockDecoder {
        decoder(model)
    }
}

impl BedrockConfig {
    /// `AWS_REGION` (or `AWS_DEFAULT_REGION`); a Bedrock API key in `AWS_BEARER_TOKEN_BEDROCK`,
    /// else SigV4 with `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`,
    /// read again at every request.
    pub fn from_env() -> Result<Self, ProviderError> {
        let region = env_var("AWS_REGION")
            .or_else(|| env_var("AWS_DEFAULT_REGION"))
            .ok_or_else(|| ProviderError::Other("set AWS_REGION".into()))?;
        match env_var("AWS_BEARER_TOKEN_BEDROCK") {
            Some(key) => Ok(BedrockConfig::with_api_key(region, key)),
            None => {
                // Fail now, not at the first request, when no credentials are set.
                AwsCredentials::from_env()?;
                Ok(BedrockConfig::new(region, EnvCredentials))
            }
        }
    }
}
