//! The transport: [`BedrockProvider`] is `sinew-http`'s [`HttpProvider`] over the [`Bedrock`]
//! protocol.

use std::sync::Arc;

use sinew_core::{ProviderError, StreamRequest};
use sinew_http::{Authorizer, HttpProvider, HttpRequest, Protocol, env_var};

use crate::decode::{BedrockDecoder, PROVIDER_ID, decoder};
use crate::request::{BedrockConfig, check_options, checked_request};

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

/// The ConverseStream protocol. SigV4 requests are signed when each attempt is sent, at that time.
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
        checked_request(config, request)
    }

    fn decoder(_: &BedrockConfig, model: &str) -> BedrockDecoder {
        decoder(model)
    }

    fn authorizer(config: &BedrockConfig) -> Option<Arc<dyn Authorizer>> {
        config.authorizer()
    }
}

impl BedrockConfig {
    /// `AWS_REGION` (or `AWS_DEFAULT_REGION`); a Bedrock API key in `AWS_BEARER_TOKEN_BEDROCK`,
    /// else SigV4 with credentials from AWS's default chain ([`crate::AwsCredentialChain`], with
    /// the feature `credential-chain`), or without it from `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, read again at every request.
    pub fn from_env() -> Result<Self, ProviderError> {
        let region = env_var("AWS_REGION")
            .or_else(|| env_var("AWS_DEFAULT_REGION"))
            .ok_or_else(|| ProviderError::Other("set AWS_REGION".into()))?;
        match env_var("AWS_BEARER_TOKEN_BEDROCK") {
            Some(key) => Ok(BedrockConfig::with_api_key(region, key)),
            None => Ok(BedrockConfig::new(region, default_credentials()?)),
        }
    }
}

/// AWS's default chain: its sources are looked at when the first request is sent.
#[cfg(feature = "credential-chain")]
fn default_credentials() -> Result<crate::AwsCredentialChain, ProviderError> {
    Ok(crate::AwsCredentialChain::new())
}

/// The `AWS_*` variables; without them, fail now rather than at the first request.
#[cfg(not(feature = "credential-chain"))]
fn default_credentials() -> Result<crate::EnvCredentials, ProviderError> {
    crate::AwsCredentials::from_env()?;
    Ok(crate::EnvCredentials)
}
