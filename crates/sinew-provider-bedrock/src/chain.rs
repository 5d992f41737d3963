//! AWS's default credential chain, from `aws-config`, as a [`CredentialsProvider`] (feature
//! `credential-chain`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use aws_config::{BehaviorVersion, ConfigLoader};
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_smithy_http_client::tls::Provider as TlsProvider;
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use sinew_core::{Failure, ProviderError};
use sinew_http::{CredentialCache, Expiring, error_chain};
use tokio::sync::OnceCell;

use crate::request::{AwsCredentials, CredentialsProvider};

type Loader = Box<dyn Fn() -> ConfigLoader + Send + Sync>;

/// Credentials from AWS's default chain, as the AWS SDKs find them: the `AWS_*` environment
/// variables; the shared `~/.aws/config` and `~/.aws/credentials` files (`AWS_PROFILE`,
/// `AWS_CONFIG_FILE`, `AWS_SHARED_CREDENTIALS_FILE`) with their role assumption, SSO sessions and
/// `credential_process`; web identity (`AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN`: EKS's
/// IRSA); the ECS container endpoint; EC2 instance metadata (IMDSv2). The first source that has
/// credentials gives them; one that has none passes to the next.
///
/// The chain is loaded at the first request, not when it is made. Credentials are cached and
/// refreshed five minutes before they expire, in the background while they are still good
/// ([`CredentialCache`]), so no request waits for a refresh. Their requests go over rustls with
/// `ring`. `Debug` shows no credential.
///
/// ```no_run
/// use sinew_provider_bedrock::{AwsCredentialChain, BedrockConfig, BedrockProvider};
///
/// let provider = BedrockProvider::new(BedrockConfig::new("us-east-1", AwsCredentialChain::new()));
/// // A named profile:
/// let chain = AwsCredentialChain::from_profile("bedrock");
/// // Or any other setting of aws-config's loader:
/// let chain = AwsCredentialChain::from_loader(|| {
///     aws_config::defaults(aws_config::BehaviorVersion::latest()).profile_name("bedrock")
/// });
/// ```
#[derive(Clone)]
pub struct AwsCredentialChain {
    cache: CredentialCache<AwsCredentials>,
}

impl AwsCredentialChain {
    /// The default chain (`aws_config::defaults` with the latest behaviour version).
    pub fn new() -> Self {
        AwsCredentialChain::from_loader(|| aws_config::defaults(BehaviorVersion::latest()))
    }

    /// The default chain, with the shared files' profile `profile` rather than `AWS_PROFILE`'s
    /// (or `default`).
    pub fn from_profile(profile: impl Into<String>) -> Self {
        let profile = profile.into();
        AwsCredentialChain::from_loader(move || aws_config::defaults(BehaviorVersion::latest()).profile_name(&profile))
    }

    /// The chain of the configuration `loader` describes (a profile name, a region, an `Env`
    /// in tests...). It is called once, at the first request; sinew gives the loader its HTTP
    /// client (rustls with `ring`).
    pub fn from_loader(loader: impl Fn() -> ConfigLoader + Send + Sync + 'static) -> Self {
        let loader: Arc<Loader> = Arc::new(Box::new(loader));
        let provider: Arc<OnceCell<SharedCredentialsProvider>> = Arc::new(OnceCell::new());
        let cache = CredentialCache::new(move || {
            let (loader, provider) = (Arc::clone(&loader), Arc::clone(&provider));
            async move {
                let provider = provider.get_or_try_init(|| load(&loader)).await?;
                fetch(provider).await
            }
        });
        AwsCredentialChain { cache }
    }

    /// Credentials from any of aws-config's providers (an `AssumeRoleProvider`, a
    /// `ProfileFileCredentialsProvider`...), cached and refreshed as the chain's are.
    pub fn from_provider(provider: impl ProvideCredentials + 'static) -> Self {
        let provider = SharedCredentialsProvider::new(provider);
        let cache = CredentialCache::new(move || {
            let provider = provider.clone();
            async move { fetch(&provider).await }
        });
        AwsCredentialChain { cache }
    }
}

impl Default for AwsCredentialChain {
    fn default() -> Self {
        AwsCredentialChain::new()
    }
}

impl fmt::Debug for AwsCredentialChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentialChain").field("cache", &self.cache).finish()
    }
}

#[async_trait]
impl CredentialsProvider for AwsCredentialChain {
    async fn credentials(&self) -> Result<AwsCredentials, ProviderError> {
        self.cache.get().await
    }

    fn invalidate(&self) -> bool {
        self.cache.invalidate()
    }
}

async fn load(loader: &Loader) -> Result<SharedCredentialsProvider, ProviderError> {
    let http = aws_smithy_http_client::Builder::new().tls_provider(TlsProvider::Rustls(CryptoMode::Ring)).build_https();
    let config = loader().http_client(http).load().await;
    config.credentials_provider().ok_or_else(|| {
        ProviderError::Auth("the AWS configuration has no credentials provider (credentials were turned off)".into())
    })
}

async fn fetch(provider: &SharedCredentialsProvider) -> Result<Expiring<AwsCredentials>, ProviderError> {
    let credentials = provider.provide_credentials().await.map_err(error)?;
    Ok(Expiring {
        value: AwsCredentials {
            access_key_id: credentials.access_key_id().to_owned(),
            secret_access_key: credentials.secret_access_key().to_owned(),
            session_token: credentials.session_token().map(str::to_owned),
        },
        expires_at: credentials.expiry(),
    })
}

/// The chain's error with its causes (aws-config's messages name sources and files, never a
/// credential). A source that timed out, or whose service failed for now (aws-config's
/// `ProviderError`: a 5xx from instance metadata, the container endpoint or STS), may answer next
/// time; missing or invalid configuration will not.
fn error(error: CredentialsError) -> ProviderError {
    let message = format!("no AWS credentials: {}", error_chain(&error));
    match error {
        CredentialsError::ProviderTimedOut(_) | CredentialsError::ProviderError(_) => {
            ProviderError::Network(Failure::from(message))
        }
        _ => ProviderError::Auth(message),
    }
}
