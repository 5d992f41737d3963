//! Which model providers exist: the configuration file's `[providers.NAME]` tables, then every
//! provider whose credentials are in the environment, under one [`ProviderRegistry`].
//!
//! Each provider is registered under its *name* (the table's name, or its kind for one found in
//! the environment), and the agent asks for `NAME/MODEL`: the registry strips the name, so two
//! providers of one kind (a local server and OpenAI, say) never collide.

use std::sync::Arc;

use futures::stream::BoxStream;
use sinew::http::{Auth, HttpClient};
use sinew::{CancellationToken, ProviderRegistry, StreamEvent, StreamProvider, StreamRequest};

use crate::config::{Config, ProviderConfig};
use crate::exit::UsageError;

/// A wire protocol, as the configuration names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Anthropic,
    /// Chat Completions: OpenAI or any compatible server.
    OpenAi,
    OpenAiResponses,
    Azure,
    Gemini,
    Vertex,
    Bedrock,
}

impl Kind {
    pub(crate) const ALL: [Kind; 7] =
        [Kind::Anthropic, Kind::OpenAi, Kind::OpenAiResponses, Kind::Azure, Kind::Gemini, Kind::Vertex, Kind::Bedrock];

    pub(crate) fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Anthropic => "anthropic",
            Kind::OpenAi => "openai",
            Kind::OpenAiResponses => "openai-responses",
            Kind::Azure => "azure",
            Kind::Gemini => "gemini",
            Kind::Vertex => "vertex",
            Kind::Bedrock => "bedrock",
        }
    }

    fn default_model(self) -> Option<&'static str> {
        match self {
            Kind::Anthropic => Some("claude-sonnet-4-5"),
            Kind::OpenAi | Kind::OpenAiResponses => Some("gpt-5"),
            Kind::Gemini | Kind::Vertex => Some("gemini-2.5-pro"),
            Kind::Bedrock => Some("anthropic.claude-sonnet-4-5-20250929-v1:0"),
            // Azure serves deployments, whose names only their owner knows.
            Kind::Azure => None,
        }
    }

    /// The provider id of this kind of service, as the facade's routing names it.
    fn provider_id(self) -> &'static str {
        match self {
            Kind::Anthropic => "anthropic",
            Kind::OpenAi => "openai",
            Kind::OpenAiResponses => "openai_responses",
            Kind::Azure => "azure_openai",
            Kind::Gemini => "google",
            Kind::Vertex => "google_vertex",
            Kind::Bedrock => "bedrock",
        }
    }

    /// Whether this kind of service is the provider `id` of the facade's routing (OpenAI's
    /// API answers to either of its protocols).
    fn answers_to(self, id: &str) -> bool {
        match self {
            Kind::OpenAi | Kind::OpenAiResponses => id == "openai" || id == "openai_responses",
            kind => kind.provider_id() == id,
        }
    }
}

/// What to set to use sinew at all: the message of exit status 2.
pub(crate) const NOTHING_CONFIGURED: &str = "\
no model provider is configured. Set one of:
  ANTHROPIC_API_KEY                                    Anthropic (Claude)
  OPENAI_API_KEY                                       OpenAI
  OPENAI_BASE_URL (and OPENAI_API_KEY if it needs one) an OpenAI-compatible server: Ollama, vLLM, llama.cpp...
  GEMINI_API_KEY                                       Gemini
  GOOGLE_CLOUD_PROJECT with GOOGLE_APPLICATION_CREDENTIALS, gcloud's application default
    credentials or GOOGLE_VERTEX_ACCESS_TOKEN        Vertex AI (GOOGLE_CLOUD_LOCATION, default global)
  AZURE_OPENAI_RESOURCE (or AZURE_OPENAI_ENDPOINT) with AZURE_OPENAI_API_KEY, else Entra ID
    (AZURE_CLIENT_ID..., a managed identity or `az login`)   Azure OpenAI
  AWS_REGION with AWS credentials (keys, AWS_PROFILE, web identity, a container's; or
    AWS_BEARER_TOKEN_BEDROCK)                        Bedrock
or describe providers in ~/.config/sinew/config.toml (see docs/cli.md),
or run `sinew --demo`, a scripted demonstration that needs none of this.";

/// One usable provider.
#[derive(Clone, Debug)]
pub(crate) struct ProviderEntry {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    /// A Chat Completions server other than OpenAI's: it may serve any model name.
    pub(crate) compatible: bool,
    pub(crate) default_model: Option<String>,
}

/// The configured providers, and the registry the agent calls through.
#[derive(Debug)]
pub(crate) struct Providers {
    pub(crate) entries: Vec<ProviderEntry>,
    pub(crate) registry: ProviderRegistry,
    /// Providers of the environment that could not be built, and why: shown when nothing else
    /// answers the request.
    pub(crate) skipped: Vec<String>,
}

/// What the command line adds to the configuration.
#[derive(Debug, Default)]
pub(crate) struct Overrides<'a> {
    pub(crate) provider: Option<&'a str>,
    pub(crate) base_url: Option<&'a str>,
}

impl Providers {
    /// The configuration's providers, then every provider of the environment not already named.
    /// `--provider KIND` with no such table builds that kind from the environment.
    pub(crate) fn discover(config: &Config, overrides: &Overrides<'_>) -> Result<Providers, UsageError> {
        let client = HttpClient::from_env();
        let mut providers = Providers { entries: Vec::new(), registry: ProviderRegistry::new(), skipped: Vec::new() };
        for (name, table) in &config.providers {
            let kind = match table.kind.as_deref().or(Some(name.as_str())).and_then(Kind::parse) {
                Some(kind) => kind,
                None => {
                    return Err(UsageError(format!(
                        "provider `{name}` has no known kind: set kind to one of {}",
                        kind_names()
                    )));
                }
            };
            let base_url = overrides.base_url.filter(|_| overrides.provider == Some(name.as_str()));
            providers.add(name, kind, table, base_url, &client).map_err(UsageError)?;
        }
        if let Some(wanted) = overrides.provider
            && providers.entry(wanted).is_none()
        {
            let kind = Kind::parse(wanted).ok_or_else(|| {
                UsageError(format!(
                    "unknown provider `{wanted}`: name a [providers.NAME] table of the configuration or one of {}",
                    kind_names()
                ))
            })?;
            providers.add(wanted, kind, &ProviderConfig::default(), overrides.base_url, &client).map_err(UsageError)?;
        }
        for kind in Kind::ALL {
            let Some(kind) = in_environment(kind) else { continue };
            let name = env_name(kind);
            if providers.entry(name).is_some() || providers.entries.iter().any(|e| e.kind == kind) {
                continue;
            }
            if let Err(why) = providers.add(name, kind, &ProviderConfig::default(), None, &client) {
                providers.skipped.push(why);
            }
        }
        if providers.entries.is_empty() {
            let mut message = NOTHING_CONFIGURED.to_owned();
            for why in &providers.skipped {
                message.push_str(&format!("\n(found but unusable: {why})"));
            }
            return Err(UsageError(message));
        }
        Ok(providers)
    }

    /// A registry of providers already built, for tests and the demo.
    #[cfg(test)]
    pub(crate) fn from_entries(entries: Vec<ProviderEntry>) -> Providers {
        Providers { entries, registry: ProviderRegistry::new(), skipped: Vec::new() }
    }

    fn add(
        &mut self,
        name: &str,
        kind: Kind,
        table: &ProviderConfig,
        base_url: Option<&str>,
        client: &HttpClient,
    ) -> Result<(), String> {
        let built = build(name, kind, table, base_url, client)?;
        self.registry.register(Named { name: name.to_owned(), inner: Arc::clone(&built.provider) });
        self.entries.push(ProviderEntry {
            name: name.to_owned(),
            kind,
            compatible: built.compatible,
            // A compatible server serves whatever it loaded: there is no default to guess.
            default_model: table
                .model
                .clone()
                .or_else(|| kind.default_model().filter(|_| !built.compatible).map(str::to_owned)),
        });
        Ok(())
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&ProviderEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The model to start with: the command line's, the configuration's, else the default of
    /// the chosen (or first) provider. Always `NAME/MODEL`.
    pub(crate) fn initial_model(
        &self,
        model: Option<&str>,
        provider: Option<&str>,
        config: &Config,
    ) -> Result<String, UsageError> {
        let provider = provider.or(config.provider.as_deref());
        if let Some(model) = model.or(config.model.as_deref()) {
            return self.qualify(model, provider);
        }
        let entry = match provider {
            Some(name) => self.entry(name).ok_or_else(|| UsageError(format!("unknown provider `{name}`")))?,
            None => &self.entries[0],
        };
        match &entry.default_model {
            Some(model) => Ok(format!("{}/{model}", entry.name)),
            None => Err(UsageError(format!(
                "provider `{}` has no default model: pass --model, set SINEW_MODEL, or set `model` in its [providers.{}] table",
                entry.name, entry.name
            ))),
        }
    }

    /// `model` as `NAME/MODEL`: an explicit provider name, else `provider`, else the provider
    /// that serves its family, else the only provider (or the only compatible server).
    pub(crate) fn qualify(&self, model: &str, provider: Option<&str>) -> Result<String, UsageError> {
        if let Some((name, _)) = model.split_once('/')
            && self.entry(name).is_some()
        {
            return Ok(model.to_owned());
        }
        if let Some(name) = provider {
            return match self.entry(name) {
                Some(_) => Ok(format!("{name}/{model}")),
                None => Err(UsageError(format!("unknown provider `{name}`"))),
            };
        }
        // The facade's one routing rule, most fitting provider first.
        let by_family = sinew::providers_for_model(model)
            .into_iter()
            .find_map(|id| self.entries.iter().find(|e| !e.compatible && e.kind.answers_to(id)));
        let compatible: Vec<_> = self.entries.iter().filter(|e| e.compatible).collect();
        let entry = match (by_family, self.entries.as_slice(), compatible.as_slice()) {
            (Some(entry), _, _) => entry,
            (None, [only], _) => only,
            (None, _, [only]) => *only,
            _ => {
                return Err(UsageError(format!(
                    "no configured provider is known to serve `{model}` (configured: {}); write it as NAME/{model}",
                    self.names().join(", ")
                )));
            }
        };
        Ok(format!("{}/{model}", entry.name))
    }

    pub(crate) fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }
}

fn kind_names() -> String {
    Kind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
}

/// The name a provider found in the environment gets.
fn env_name(kind: Kind) -> &'static str {
    match kind {
        Kind::OpenAiResponses => "openai",
        other => other.name(),
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether Vertex AI can have a token: one given, or Application Default Credentials in a file
/// (the metadata server alone is not guessed: set `GOOGLE_CLOUD_PROJECT` in a provider table).
fn has_google_credentials() -> bool {
    let gcloud = var("CLOUDSDK_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(|| var("HOME").map(|home| std::path::Path::new(&home).join(".config/gcloud")));
    var("GOOGLE_VERTEX_ACCESS_TOKEN").is_some()
        || var("GOOGLE_APPLICATION_CREDENTIALS").is_some()
        || gcloud.is_some_and(|dir| dir.join("application_default_credentials.json").is_file())
}

/// `kind` if its credentials are in the environment. OpenAI's own API is reached through
/// Responses; a compatible server behind `OPENAI_BASE_URL` through Chat Completions.
fn in_environment(kind: Kind) -> Option<Kind> {
    let found = match kind {
        Kind::Anthropic => var("ANTHROPIC_API_KEY").or_else(|| var("ANTHROPIC_OAUTH_TOKEN")).is_some(),
        Kind::OpenAi => var("OPENAI_API_KEY").is_some() || var("OPENAI_BASE_URL").is_some(),
        Kind::OpenAiResponses => false,
        Kind::Azure => {
            var("AZURE_OPENAI_API_KEY").is_some()
                || var("AZURE_OPENAI_RESOURCE").or_else(|| var("AZURE_OPENAI_ENDPOINT")).is_some()
        }
        Kind::Gemini => var("GEMINI_API_KEY").or_else(|| var("GOOGLE_API_KEY")).is_some(),
        Kind::Vertex => var("GOOGLE_CLOUD_PROJECT").is_some() && has_google_credentials(),
        Kind::Bedrock => {
            var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).is_some()
                && [
                    "AWS_BEARER_TOKEN_BEDROCK",
                    "AWS_ACCESS_KEY_ID",
                    "AWS_PROFILE",
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                ]
                .iter()
                .any(|name| var(name).is_some())
        }
    };
    match kind {
        Kind::OpenAi if found && var("OPENAI_BASE_URL").is_none_or(|url| url.contains("api.openai.com")) => {
            Some(Kind::OpenAiResponses)
        }
        _ => found.then_some(kind),
    }
}

struct Built {
    provider: Arc<dyn StreamProvider>,
    compatible: bool,
}

/// The secret of `table`: `api_key`, else the variable `api_key_env` names, else the first of
/// the kind's own variables that is set.
fn secret(name: &str, table: &ProviderConfig, defaults: &[&str]) -> Result<Option<String>, String> {
    if let Some(key) = &table.api_key {
        return Ok(Some(key.clone()));
    }
    if let Some(variable) = &table.api_key_env {
        return var(variable).map(Some).ok_or_else(|| format!("provider `{name}`: {variable} is not set"));
    }
    Ok(defaults.iter().find_map(|v| var(v)))
}

fn build(
    name: &str,
    kind: Kind,
    table: &ProviderConfig,
    base_url: Option<&str>,
    client: &HttpClient,
) -> Result<Built, String> {
    use sinew::anthropic::{AnthropicAuth, AnthropicConfig, AnthropicProvider};
    use sinew::bedrock::{AwsCredentialChain, BedrockConfig, BedrockProvider};
    use sinew::gemini::{GeminiConfig, GeminiProvider, GoogleCredentials};
    use sinew::openai::{OpenAiChatConfig, OpenAiChatProvider};
    use sinew::openai_responses::{ResponsesConfig, ResponsesProvider};

    let missing = |what: &str| format!("provider `{name}` ({}): {what}", kind.name());
    let base_url = base_url.map(str::to_owned).or_else(|| table.base_url.clone());
    let headers: Vec<(String, String)> = table.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    let client = client.clone();
    let mut compatible = false;
    let provider: Arc<dyn StreamProvider> = match kind {
        Kind::Anthropic => {
            let mut config = match secret(name, table, &["ANTHROPIC_API_KEY"])? {
                Some(key) => AnthropicConfig::new(key),
                None => match var("ANTHROPIC_OAUTH_TOKEN") {
                    Some(token) => {
                        let mut config = AnthropicConfig::new("");
                        config.auth = AnthropicAuth::OAuth(token);
                        config
                    }
                    None => return Err(missing("set ANTHROPIC_API_KEY (or api_key_env)")),
                },
            };
            if let Some(url) = base_url.or_else(|| var("ANTHROPIC_BASE_URL")) {
                config.base_url = url;
            }
            config.extra_headers.extend(headers);
            Arc::new(AnthropicProvider::new(config).with_client(client))
        }
        Kind::OpenAi => {
            let key = secret(name, table, &["OPENAI_API_KEY"])?;
            let base_url = base_url.or_else(|| var("OPENAI_BASE_URL"));
            let mut config = match (base_url, key) {
                (Some(url), key) if !url.contains("api.openai.com") => {
                    compatible = true;
                    OpenAiChatConfig::compatible(name, url, key.map_or(Auth::None, Auth::Bearer))
                }
                (url, Some(key)) => {
                    let mut config = OpenAiChatConfig::openai(key);
                    if let Some(url) = url {
                        config.base_url = url;
                    }
                    config
                }
                (_, None) => return Err(missing("set OPENAI_API_KEY, or base_url for a compatible server")),
            };
            config.extra_headers.extend(headers);
            Arc::new(OpenAiChatProvider::new(config).with_client(client))
        }
        Kind::OpenAiResponses => {
            let key = secret(name, table, &["OPENAI_API_KEY"])?.ok_or_else(|| missing("set OPENAI_API_KEY"))?;
            let mut config = ResponsesConfig::openai(key);
            if let Some(url) = base_url.or_else(|| var("OPENAI_BASE_URL")) {
                config.base_url = url;
            }
            config.extra_headers.extend(headers);
            Arc::new(ResponsesProvider::new(config).with_client(client))
        }
        Kind::Azure => {
            let auth = match secret(name, table, &["AZURE_OPENAI_API_KEY"])? {
                Some(key) => Auth::Header { name: "api-key".into(), value: key },
                None => Auth::Token(Arc::new(sinew::http::EntraCredential::from_env())),
            };
            // The configurations are made keyless: `auth` goes in below.
            let key = "";
            let resource = table.resource.clone().or_else(|| var("AZURE_OPENAI_RESOURCE"));
            let endpoint = base_url.or_else(|| table.endpoint.clone()).or_else(|| var("AZURE_OPENAI_ENDPOINT"));
            let version = table.api_version.clone().or_else(|| var("AZURE_OPENAI_API_VERSION"));
            let mut config = match (endpoint, version, resource) {
                (Some(endpoint), Some(version), _) => ResponsesConfig::azure_versioned(&endpoint, &version, key),
                (Some(endpoint), None, _) => {
                    let mut config = ResponsesConfig::azure("", key);
                    config.base_url = format!("{}/openai/v1", endpoint.trim_end_matches('/'));
                    config
                }
                (None, _, Some(resource)) => ResponsesConfig::azure(&resource, key),
                (None, _, None) => {
                    return Err(missing("set AZURE_OPENAI_RESOURCE, or AZURE_OPENAI_ENDPOINT (resource / endpoint)"));
                }
            };
            config.auth = auth;
            config.extra_headers.extend(headers);
            Arc::new(ResponsesProvider::new(config).with_client(client))
        }
        Kind::Gemini => {
            let key = secret(name, table, &["GEMINI_API_KEY", "GOOGLE_API_KEY"])?
                .ok_or_else(|| missing("set GEMINI_API_KEY"))?;
            let mut config = GeminiConfig::gemini(key);
            if let Some(url) = base_url {
                config.models_url = format!("{}/models", url.trim_end_matches('/'));
            }
            config.extra_headers.extend(headers);
            Arc::new(GeminiProvider::new(config).with_client(client))
        }
        Kind::Vertex => {
            let project = table
                .project
                .clone()
                .or_else(|| var("GOOGLE_CLOUD_PROJECT"))
                .ok_or_else(|| missing("set GOOGLE_CLOUD_PROJECT (or project)"))?;
            let location =
                table.location.clone().or_else(|| var("GOOGLE_CLOUD_LOCATION")).unwrap_or_else(|| "global".into());
            let auth = match &table.access_token_env {
                Some(variable) => Auth::Bearer(var(variable).ok_or_else(|| missing(&format!("set {variable}")))?),
                None => match var("GOOGLE_VERTEX_ACCESS_TOKEN") {
                    Some(token) => Auth::Bearer(token),
                    None => Auth::Token(Arc::new(GoogleCredentials::from_env())),
                },
            };
            let mut config = GeminiConfig::vertex_with_auth(&project, &location, auth);
            if let Some(url) = base_url {
                config.models_url = format!("{}/models", url.trim_end_matches('/'));
            }
            config.extra_headers.extend(headers);
            Arc::new(GeminiProvider::new(config).with_client(client))
        }
        Kind::Bedrock => {
            let region = table
                .region
                .clone()
                .or_else(|| var("AWS_REGION"))
                .or_else(|| var("AWS_DEFAULT_REGION"))
                .ok_or_else(|| missing("set AWS_REGION (or region)"))?;
            let mut config = match secret(name, table, &["AWS_BEARER_TOKEN_BEDROCK"])? {
                Some(key) => BedrockConfig::with_api_key(region, key),
                None => {
                    let chain = match &table.profile {
                        Some(profile) => AwsCredentialChain::from_profile(profile),
                        None => AwsCredentialChain::new(),
                    };
                    BedrockConfig::new(region, chain)
                }
            };
            if let Some(url) = base_url {
                config.endpoint = url;
            }
            Arc::new(BedrockProvider::new(config).with_client(client))
        }
    };
    Ok(Built { provider, compatible })
}

/// A provider registered under the name the user gave it.
struct Named {
    name: String,
    inner: Arc<dyn StreamProvider>,
}

impl StreamProvider for Named {
    fn provider_id(&self) -> &str {
        &self.name
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        self.inner.stream(request, cancel)
    }

    fn retries_requests(&self, model: &str) -> bool {
        self.inner.retries_requests(model)
    }

    fn context_window(&self, model: &str) -> Option<u64> {
        self.inner.context_window(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, kind: Kind, compatible: bool) -> ProviderEntry {
        ProviderEntry { name: name.into(), kind, compatible, default_model: kind.default_model().map(Into::into) }
    }

    #[test]
    fn models_are_qualified_by_name_family_or_the_only_provider() {
        let providers = Providers::from_entries(vec![
            entry("anthropic", Kind::Anthropic, false),
            entry("ollama", Kind::OpenAi, true),
            entry("openai", Kind::OpenAiResponses, false),
        ]);
        let check = |model: &str, provider: Option<&str>, expected: &str| {
            assert_eq!(providers.qualify(model, provider).unwrap(), expected, "{model}");
        };
        check("claude-haiku-4-5", None, "anthropic/claude-haiku-4-5");
        check("gpt-5-mini", None, "openai/gpt-5-mini");
        check("ollama/qwen3-coder", None, "ollama/qwen3-coder");
        check("qwen3-coder", None, "ollama/qwen3-coder");
        check("meta-llama/Llama-3.3", None, "ollama/meta-llama/Llama-3.3");
        check("my-model", Some("anthropic"), "anthropic/my-model");
        assert!(providers.qualify("x", Some("nope")).unwrap_err().0.contains("unknown provider `nope`"));

        let two = Providers::from_entries(vec![entry("a", Kind::Anthropic, false), entry("g", Kind::Gemini, false)]);
        let error = two.qualify("llama3", None).unwrap_err().0;
        assert!(error.contains("configured: a, g") && error.contains("NAME/llama3"), "{error}");
        let one = Providers::from_entries(vec![entry("local", Kind::OpenAi, true)]);
        assert_eq!(one.qualify("anything", None).unwrap(), "local/anything");

        // The facade's routing decides, most fitting provider first, whatever the order here.
        let cloud = Providers::from_entries(vec![
            entry("aws", Kind::Bedrock, false),
            entry("vertex", Kind::Vertex, false),
            entry("claude", Kind::Anthropic, false),
        ]);
        assert_eq!(cloud.qualify("claude-sonnet-4-5", None).unwrap(), "claude/claude-sonnet-4-5");
        assert_eq!(cloud.qualify("gemini-2.5-pro", None).unwrap(), "vertex/gemini-2.5-pro");
        assert_eq!(cloud.qualify("amazon.nova-pro-v1:0", None).unwrap(), "aws/amazon.nova-pro-v1:0");
    }

    #[test]
    fn the_initial_model_falls_back_to_the_provider_default() {
        let providers = Providers::from_entries(vec![
            entry("azure", Kind::Azure, false),
            entry("anthropic", Kind::Anthropic, false),
        ]);
        let config = Config::default();
        assert_eq!(providers.initial_model(None, Some("anthropic"), &config).unwrap(), "anthropic/claude-sonnet-4-5");
        let error = providers.initial_model(None, None, &config).unwrap_err().0;
        assert!(error.contains("`azure` has no default model") && error.contains("--model"), "{error}");
        assert_eq!(
            providers.initial_model(Some("my-deployment"), Some("azure"), &config).unwrap(),
            "azure/my-deployment"
        );
    }

    #[test]
    fn a_table_without_a_known_kind_is_refused() {
        let config: Config = toml::from_str("[providers.mine]\nbase_url = \"http://x\"\n").unwrap();
        let error = Providers::discover(&config, &Overrides::default()).unwrap_err().0;
        assert!(error.contains("provider `mine` has no known kind") && error.contains("openai-responses"), "{error}");
    }

    #[test]
    fn a_named_key_variable_that_is_unset_is_an_error() {
        let table = ProviderConfig { api_key_env: Some("SINEW_TEST_SURELY_UNSET_KEY".into()), ..Default::default() };
        let error = secret("mine", &table, &[]).unwrap_err();
        assert_eq!(error, "provider `mine`: SINEW_TEST_SURELY_UNSET_KEY is not set");
    }
}
