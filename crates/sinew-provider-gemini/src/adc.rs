//! Google's Application Default Credentials, from `google-cloud-auth`, as a [`TokenSource`]
//! (feature `adc`).

use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use google_cloud_auth::credentials::{
    AccessTokenCredentials, external_account, external_account_authorized_user, impersonated, mds, service_account,
    user_account,
};
use serde_json::Value;
use sinew_core::{Failure, ProviderError};
use sinew_http::{AccessToken, TokenSource, error_chain};

/// The scope Vertex AI's tokens are asked for.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The largest credentials file read (they are a few kilobytes).
const MAX_FILE: u64 = 1 << 20;

/// Tokens from Google's Application Default Credentials, found as the Google Cloud libraries
/// find them: the file `GOOGLE_APPLICATION_CREDENTIALS` names, else gcloud's
/// `application_default_credentials.json` (in `CLOUDSDK_CONFIG`, else `~/.config/gcloud`), else
/// the metadata server of the machine (GCE, GKE, Cloud Run; `GCE_METADATA_HOST` overrides its
/// address). The file may hold a service account key, an authorized user (`gcloud auth
/// application-default login`), an external account (workload identity federation, with file-
/// or URL-sourced subject tokens and service account impersonation), an impersonated service
/// account or an external authorized user (workforce identity).
///
/// Tokens are minted by `google-cloud-auth` (Google's own Rust crate), which caches them and
/// refreshes them in the background before they expire; its requests go over rustls with `ring`
/// (installed as the process's default provider if none is). The credentials are built at the
/// first request and built again after a failure that will not pass by itself. `Debug` shows
/// no secret.
///
/// ```no_run
/// use std::sync::Arc;
/// use sinew_http::Auth;
/// use sinew_provider_gemini::{GeminiConfig, GeminiProvider, GoogleCredentials};
///
/// let adc = Arc::new(GoogleCredentials::from_env());
/// let provider = GeminiProvider::new(GeminiConfig::vertex_with_auth("my-project", "global", Auth::Token(adc)));
/// ```
pub struct GoogleCredentials {
    origin: Origin,
    scopes: Vec<String>,
    built: Mutex<Option<AccessTokenCredentials>>,
}

/// Reads an environment variable.
type Vars = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where the credentials come from.
#[derive(Clone)]
enum Origin {
    /// Application Default Credentials, the variables read through this function.
    Environment(Vars),
    /// A credentials file's contents.
    Json(Value),
}

impl GoogleCredentials {
    /// Application Default Credentials, located through the process's environment.
    pub fn from_env() -> Self {
        GoogleCredentials::from_vars(sinew_http::env_var)
    }

    /// Application Default Credentials, located through the variables `var` gives
    /// (`GOOGLE_APPLICATION_CREDENTIALS`, `CLOUDSDK_CONFIG`, `HOME`, `GCE_METADATA_HOST`).
    pub fn from_vars(var: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        GoogleCredentials::new(Origin::Environment(Arc::new(var)))
    }

    /// The credentials a credentials file holds (any of the types above).
    pub fn from_json(credentials: Value) -> Self {
        GoogleCredentials::new(Origin::Json(credentials))
    }

    fn new(origin: Origin) -> Self {
        GoogleCredentials { origin, scopes: vec![CLOUD_PLATFORM_SCOPE.to_owned()], built: Mutex::new(None) }
    }

    /// Asks for tokens with these scopes instead of `cloud-platform`.
    #[must_use]
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The credentials, built now if they are not yet.
    fn credentials(&self) -> Result<AccessTokenCredentials, ProviderError> {
        let mut built = self.built.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(credentials) = built.as_ref() {
            return Ok(credentials.clone());
        }
        // google-cloud-auth's HTTP client brings no crypto provider: it takes the process's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let credentials = match &self.origin {
            Origin::Json(json) => from_json(json.clone(), &self.scopes)?,
            Origin::Environment(var) => match adc_file(var.as_ref())? {
                Some(json) => from_json(json, &self.scopes)?,
                None => {
                    let mut builder = mds::Builder::default().with_scopes(self.scopes.clone());
                    if let Some(host) = var("GCE_METADATA_HOST") {
                        builder = builder.with_endpoint(format!("http://{host}"));
                    }
                    builder.build_access_token_credentials().map_err(|e| build_error("the metadata server", &e))?
                }
            },
        };
        *built = Some(credentials.clone());
        Ok(credentials)
    }
}

#[async_trait]
impl TokenSource for GoogleCredentials {
    async fn token(&self) -> Result<AccessToken, ProviderError> {
        let credentials = self.credentials()?;
        match credentials.access_token().await {
            // google-cloud-auth refreshes the token before it expires; it does not say when.
            Ok(token) => Ok(AccessToken::new(token.token, None)),
            Err(error) => {
                let transient = error.is_transient();
                let message = format!("no Google access token: {}", error_chain(&error));
                if transient {
                    Err(ProviderError::Network(Failure::from(message)))
                } else {
                    // The credentials will not recover: the next request builds them again.
                    *self.built.lock().unwrap_or_else(PoisonError::into_inner) = None;
                    Err(ProviderError::Auth(message))
                }
            }
        }
    }

    /// Builds the credentials again at the next request: google-cloud-auth keeps its token
    /// inside them and offers no other way to drop it.
    fn invalidate(&self) -> bool {
        self.built.lock().unwrap_or_else(PoisonError::into_inner).take().is_some()
    }
}

impl fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let origin = match &self.origin {
            Origin::Environment(_) => "application default credentials",
            Origin::Json(json) => json.get("type").and_then(Value::as_str).unwrap_or("a credentials file"),
        };
        f.debug_struct("GoogleCredentials").field("origin", &origin).field("scopes", &self.scopes).finish()
    }
}

/// The ADC file's contents: `None` when there is none and the metadata server is asked.
fn adc_file(var: &(dyn Fn(&str) -> Option<String> + Send + Sync)) -> Result<Option<Value>, ProviderError> {
    let (path, named) = match var("GOOGLE_APPLICATION_CREDENTIALS") {
        Some(path) => (PathBuf::from(path), true),
        None => {
            let config = match (var("CLOUDSDK_CONFIG"), var("HOME")) {
                (Some(config), _) => PathBuf::from(config),
                (None, Some(home)) => PathBuf::from(home).join(".config/gcloud"),
                (None, None) => return Ok(None),
            };
            (config.join("application_default_credentials.json"), false)
        }
    };
    let shown = path.display();
    let text = match read_bounded(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && !named => return Ok(None),
        Err(error) => {
            return Err(ProviderError::Auth(format!("cannot read the Google credentials file {shown}: {error}")));
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ProviderError::Auth(format!("the Google credentials file {shown} is not JSON: {e}")))
}

fn read_bounded(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?.take(MAX_FILE + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE {
        return Err(std::io::Error::other(format!("it is larger than {MAX_FILE} bytes")));
    }
    Ok(text)
}

/// Credentials of the file's `type`.
fn from_json(json: Value, scopes: &[String]) -> Result<AccessTokenCredentials, ProviderError> {
    let kind = json.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
    let scopes = scopes.to_vec();
    let built = match kind.as_str() {
        "service_account" => service_account::Builder::new(json)
            .with_access_specifier(service_account::AccessSpecifier::from_scopes(scopes))
            .build_access_token_credentials(),
        "authorized_user" => user_account::Builder::new(json).with_scopes(scopes).build_access_token_credentials(),
        "external_account" => external_account::Builder::new(json).with_scopes(scopes).build_access_token_credentials(),
        "impersonated_service_account" => {
            impersonated::Builder::new(json).with_scopes(scopes).build_access_token_credentials()
        }
        "external_account_authorized_user" => {
            // Its scopes are the file's own.
            external_account_authorized_user::Builder::new(json).build_access_token_credentials()
        }
        "" => return Err(ProviderError::Auth("the Google credentials file has no `type`".into())),
        other => {
            return Err(ProviderError::Auth(format!(
                "the Google credentials file's type `{other}` is not one sinew knows (service_account, \
                 authorized_user, external_account, impersonated_service_account, external_account_authorized_user)"
            )));
        }
    };
    built.map_err(|e| build_error(&format!("the `{kind}` credentials"), &e))
}

fn build_error(what: &str, error: &(dyn std::error::Error + 'static)) -> ProviderError {
    ProviderError::Auth(format!("cannot use {what}: {}", error_chain(error)))
}
