//! [`ProviderRegistry`]: several providers behind one [`StreamProvider`], chosen per model.

use std::sync::Arc;

use futures::stream::BoxStream;
use sinew_core::{
    AssistantMessage, CancellationToken, ProviderError, StopReason, StreamEvent, StreamProvider, StreamRequest,
};

/// Several providers behind one, so an agent can switch models across services.
///
/// A request's model picks the provider: an explicit `provider_id/model` prefix (stripped before
/// the call), else the catalog's protocol for the model ([`crate::catalog::model`]), else the
/// model's family (`claude-` → `anthropic`, `gpt-`/`o1`/`o3`/`o4` → `openai_responses` or
/// `openai`, `gemini-` → `google` or `google_vertex`, Bedrock model ids → `bedrock`), else the
/// only registered provider. A model no provider serves ends in a clear error.
#[derive(Clone, Default)]
pub struct ProviderRegistry {
    providers: Vec<Arc<dyn StreamProvider>>,
}

impl std::fmt::Debug for ProviderRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderRegistry").field("providers", &self.ids()).finish()
    }
}

impl ProviderRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ProviderRegistry::default()
    }

    /// Every provider whose configuration is in the environment (`ANTHROPIC_API_KEY`,
    /// `OPENAI_API_KEY` / `OPENAI_BASE_URL`, `AZURE_OPENAI_*`, `GEMINI_API_KEY`,
    /// `GOOGLE_CLOUD_PROJECT` + `GOOGLE_VERTEX_ACCESS_TOKEN`, `AWS_REGION` + credentials), among
    /// the providers compiled in (the facade's features). All share one HTTP client.
    ///
    /// With a cloud credential chain compiled in, the variables that name its credentials count
    /// too: `AWS_PROFILE`, `AWS_WEB_IDENTITY_TOKEN_FILE` and a container's
    /// `AWS_CONTAINER_CREDENTIALS_*` (`aws-credentials`); `GOOGLE_APPLICATION_CREDENTIALS`
    /// (`google-credentials`); `AZURE_CLIENT_ID` or a managed identity's `IDENTITY_ENDPOINT`
    /// (`azure-credentials`). Credentials found only on the machine (instance metadata, gcloud's
    /// or the Azure CLI's sign-in) are not guessed at: build those providers explicitly.
    pub fn from_env() -> Self {
        #[allow(unused_mut)]
        let mut registry = ProviderRegistry::new();
        #[cfg(any(feature = "openai-responses", feature = "gemini", feature = "bedrock"))]
        let set = |name: &str| sinew_http::env_var(name).is_some();
        #[cfg(any(
            feature = "anthropic",
            feature = "openai",
            feature = "openai-responses",
            feature = "gemini",
            feature = "bedrock"
        ))]
        let client = sinew_http::HttpClient::from_env();
        #[cfg(feature = "anthropic")]
        if let Ok(config) = sinew_provider_anthropic::AnthropicConfig::from_env() {
            registry.register(sinew_provider_anthropic::AnthropicProvider::new(config).with_client(client.clone()));
        }
        #[cfg(feature = "openai")]
        if let Ok(config) = sinew_provider_openai_chat::OpenAiChatConfig::from_env() {
            registry.register(sinew_provider_openai_chat::OpenAiChatProvider::new(config).with_client(client.clone()));
        }
        #[cfg(feature = "openai-responses")]
        {
            use sinew_provider_openai_responses::{ResponsesConfig, ResponsesProvider};
            // A compatible server behind OPENAI_BASE_URL speaks Chat Completions, not Responses.
            let compatible = sinew_http::env_var("OPENAI_BASE_URL").is_some_and(|u| !u.contains("api.openai.com"));
            let azure = cfg!(not(feature = "azure-credentials"))
                || ["AZURE_OPENAI_API_KEY", "AZURE_CLIENT_ID", "IDENTITY_ENDPOINT"].iter().any(|v| set(v));
            for config in [(!compatible).then(ResponsesConfig::from_env), azure.then(ResponsesConfig::azure_from_env)]
                .into_iter()
                .flatten()
                .flatten()
            {
                registry.register(ResponsesProvider::new(config).with_client(client.clone()));
            }
        }
        #[cfg(feature = "gemini")]
        {
            use sinew_provider_gemini::{GeminiConfig, GeminiProvider};
            let vertex = cfg!(not(feature = "google-credentials"))
                || set("GOOGLE_VERTEX_ACCESS_TOKEN")
                || set("GOOGLE_APPLICATION_CREDENTIALS");
            let configs = [Some(GeminiConfig::from_env()), vertex.then(GeminiConfig::vertex_from_env)];
            for config in configs.into_iter().flatten().flatten() {
                registry.register(GeminiProvider::new(config).with_client(client.clone()));
            }
        }
        #[cfg(feature = "bedrock")]
        let aws = cfg!(not(feature = "aws-credentials"))
            || set("AWS_BEARER_TOKEN_BEDROCK")
            || (set("AWS_ACCESS_KEY_ID") && set("AWS_SECRET_ACCESS_KEY"))
            || [
                "AWS_PROFILE",
                "AWS_WEB_IDENTITY_TOKEN_FILE",
                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            ]
            .iter()
            .any(|v| set(v));
        #[cfg(feature = "bedrock")]
        if let Some(Ok(config)) = aws.then(sinew_provider_bedrock::BedrockConfig::from_env) {
            registry.register(sinew_provider_bedrock::BedrockProvider::new(config).with_client(client.clone()));
        }
        registry
    }

    /// Adds `provider` under its [`StreamProvider::provider_id`], replacing one with the same id.
    pub fn register(&mut self, provider: impl StreamProvider + 'static) -> &mut Self {
        let provider: Arc<dyn StreamProvider> = Arc::new(provider);
        self.providers.retain(|p| p.provider_id() != provider.provider_id());
        self.providers.push(provider);
        self
    }

    /// The registered provider ids, in registration order.
    pub fn ids(&self) -> Vec<&str> {
        self.providers.iter().map(|p| p.provider_id()).collect()
    }

    /// The provider registered as `provider_id`.
    pub fn get(&self, provider_id: &str) -> Option<&Arc<dyn StreamProvider>> {
        self.providers.iter().find(|p| p.provider_id() == provider_id)
    }

    /// Whether no provider is registered.
    pub fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }

    /// A model this registry serves, for hosts that start before the user picks one: Claude
    /// Sonnet (Anthropic), GPT-5 (OpenAI Responses), GPT-4o (Chat Completions), Gemini Flash
    /// (Gemini API, Vertex AI) or Claude Sonnet on Bedrock, of the first of these providers that
    /// is registered, with its id as prefix. `None` when only providers whose models the caller
    /// names are registered (Azure deployments, compatible servers).
    pub fn default_model(&self) -> Option<String> {
        const DEFAULTS: &[(&str, &str)] = &[
            ("anthropic", "claude-sonnet-4-5"),
            ("openai_responses", "gpt-5"),
            ("openai", "gpt-4o"),
            ("google", "gemini-2.5-flash"),
            ("google_vertex", "gemini-2.5-flash"),
            ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ];
        DEFAULTS.iter().find(|(id, _)| self.get(id).is_some()).map(|(id, model)| format!("{id}/{model}"))
    }

    /// The provider for `model`, and the model name to send it.
    pub fn resolve<'m>(&self, model: &'m str) -> Option<(&Arc<dyn StreamProvider>, &'m str)> {
        if let Some((prefix, rest)) = model.split_once('/')
            && let Some(provider) = self.get(prefix)
        {
            return Some((provider, rest));
        }
        let catalog = crate::catalog::model(model).map(|m| m.protocol);
        let candidates: &[&str] = match catalog {
            Some(protocol) => &[protocol],
            None => family(model),
        };
        if let Some(provider) = candidates.iter().find_map(|id| self.get(id)) {
            return Some((provider, model));
        }
        // Same family, another protocol of it (gpt-5 over Chat when Responses is not registered).
        if let Some(provider) = family(model).iter().find_map(|id| self.get(id)) {
            return Some((provider, model));
        }
        match self.providers.as_slice() {
            [only] => Some((only, model)),
            _ => None,
        }
    }
}

/// The ids of the providers that can serve `model`, most fitting first: the catalog's protocol
/// for a model it knows, then every provider of its family (`claude-` → `anthropic`, `bedrock`;
/// `gpt-` and `o1`/`o3`/`o4` → OpenAI's; `gemini-` → Google's; Bedrock's model ids). Empty for a
/// model of no known family. The one routing rule of sinew: the registry and the CLI use it.
pub fn providers_for_model(model: &str) -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = crate::catalog::model(model).map(|m| m.protocol).into_iter().collect();
    for id in family(model) {
        if !ids.contains(id) {
            ids.push(id);
        }
    }
    ids
}

/// The providers that can serve a model family, most fitting first.
fn family(model: &str) -> &'static [&'static str] {
    const BEDROCK_PREFIXES: &[&str] = &[
        "anthropic.",
        "amazon.",
        "meta.",
        "mistral.",
        "cohere.",
        "ai21.",
        "us.",
        "eu.",
        "apac.",
        "global.",
        "arn:aws:",
    ];
    if model.starts_with("claude-") {
        &["anthropic", "bedrock"]
    } else if model.starts_with("gpt-") || ["o1", "o3", "o4"].iter().any(|p| model.starts_with(p)) {
        &["openai_responses", "openai", "azure_openai"]
    } else if model.starts_with("gemini-") {
        &["google", "google_vertex"]
    } else if BEDROCK_PREFIXES.iter().any(|p| model.starts_with(p)) {
        &["bedrock"]
    } else {
        &[]
    }
}

impl StreamProvider for ProviderRegistry {
    fn provider_id(&self) -> &str {
        "registry"
    }

    fn provider_id_for(&self, model: &str) -> &str {
        self.resolve(model).map_or("registry", |(provider, model)| provider.provider_id_for(model))
    }

    /// From the model catalog ([`crate::catalog::model`]), for the model the request names.
    fn context_window(&self, model: &str) -> Option<u64> {
        let (_, model) = self.resolve(model)?;
        crate::catalog::model(model).map(|m| u64::from(m.context_window))
    }

    fn retries_requests(&self, model: &str) -> bool {
        self.resolve(model).is_some_and(|(provider, model)| provider.retries_requests(model))
    }

    fn stream(&self, request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        match self.resolve(request.model) {
            Some((provider, model)) => provider.stream(&request.with_model(model), cancel),
            None => {
                let message = format!(
                    "no provider for model `{}` (registered: {}); prefix the model with a provider id, e.g. `openai/{}`",
                    request.model,
                    if self.is_empty() { "none".to_owned() } else { self.ids().join(", ") },
                    request.model
                );
                let error = ProviderError::Other(message);
                let mut partial = AssistantMessage::new("registry", request.model);
                partial.stop_reason = StopReason::Error;
                partial.error_message = Some(error.to_string());
                Box::pin(futures::stream::iter([StreamEvent::error(error, partial)]))
            }
        }
    }
}
