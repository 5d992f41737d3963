//! `ProviderRegistry` routing, with real providers against a local server and mocks.

use futures::StreamExt;
use sinew::testing::{MockProvider, MockResponse, MockServer, ServedResponse, fixture_bytes};
use sinew::{CancellationToken, Message, ProviderError, ProviderRegistry, StreamEvent, StreamProvider, StreamRequest};

async fn run(provider: &dyn StreamProvider, model: &str) -> Result<sinew::AssistantMessage, ProviderError> {
    let prompt = Message::user("hi");
    let messages = [&prompt];
    let events: Vec<StreamEvent> =
        provider.stream(&StreamRequest::new(model, "", &messages), CancellationToken::new()).collect().await;
    match events.into_iter().last() {
        Some(StreamEvent::Done(message)) => Ok(*message),
        Some(StreamEvent::Error { error, .. }) => Err(error),
        other => panic!("{other:?}"),
    }
}

/// A mock that answers with its own name, registered under `id`.
#[derive(Debug)]
struct Named(&'static str, MockProvider);

impl StreamProvider for Named {
    fn provider_id(&self) -> &str {
        self.0
    }

    fn stream(
        &self,
        request: &StreamRequest<'_>,
        cancel: CancellationToken,
    ) -> futures::stream::BoxStream<'static, StreamEvent> {
        self.1.stream(request, cancel)
    }
}

fn named(id: &'static str) -> Named {
    Named(id, MockProvider::from_fn(move |request| MockResponse::text(format!("{id}:{}", request.model))))
}

#[tokio::test]
async fn models_route_by_prefix_catalog_and_family() {
    let mut registry = ProviderRegistry::new();
    for id in ["anthropic", "openai", "openai_responses", "google", "bedrock", "deepseek"] {
        registry.register(named(id));
    }
    let cases = [
        ("claude-sonnet-4-5-20250929", "anthropic:claude-sonnet-4-5-20250929"),
        ("gpt-5", "openai_responses:gpt-5"),
        ("gpt-4o", "openai:gpt-4o"),
        ("gpt-9-future", "openai_responses:gpt-9-future"),
        ("gemini-3-pro-preview", "google:gemini-3-pro-preview"),
        ("amazon.nova-micro-v1:0", "bedrock:amazon.nova-micro-v1:0"),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("deepseek-reasoner", "deepseek:deepseek-reasoner"),
        ("openai/llama3.2", "openai:llama3.2"),
        ("bedrock/claude-x", "bedrock:claude-x"),
    ];
    for (model, want) in cases {
        assert_eq!(run(&registry, model).await.unwrap().text(), want, "{model}");
    }
    let error = run(&registry, "my-local-llama").await.unwrap_err();
    assert!(error.to_string().contains("no provider for model `my-local-llama`"), "{error}");
    assert!(error.to_string().contains("anthropic, openai"), "the error lists what is registered: {error}");
}

#[tokio::test]
async fn one_provider_serves_everything_and_registering_again_replaces() {
    let mut registry = ProviderRegistry::new();
    assert!(run(&registry, "x").await.unwrap_err().to_string().contains("registered: none"));
    registry.register(named("ollama"));
    assert_eq!(run(&registry, "llama3.2").await.unwrap().text(), "ollama:llama3.2");
    registry.register(Named("ollama", MockProvider::new([MockResponse::text("replaced")])));
    assert_eq!(registry.ids(), ["ollama"]);
    assert_eq!(run(&registry, "llama3.2").await.unwrap().text(), "replaced");
}

#[tokio::test]
async fn real_providers_behind_the_registry_talk_to_their_servers() {
    let anthropic_server =
        MockServer::scripted([ServedResponse::sse(fixture_bytes("anthropic/short-text-minimal.sse"))]).await;
    let chat_server = MockServer::scripted([ServedResponse::sse(fixture_bytes("openai-chat/text-usage.sse"))]).await;
    let mut anthropic = sinew::anthropic::AnthropicConfig::new("k");
    anthropic.base_url = anthropic_server.url();
    let chat = sinew::openai::OpenAiChatConfig::compatible(
        "openai",
        format!("{}/v1", chat_server.url()),
        sinew::openai::Auth::None,
    );
    let mut registry = ProviderRegistry::new();
    registry.register(sinew::anthropic::AnthropicProvider::new(anthropic));
    registry.register(sinew::openai::OpenAiChatProvider::new(chat));

    let claude = run(&registry, "claude-haiku-4-5").await.unwrap();
    assert_eq!(claude.provider, "anthropic");
    let gpt = run(&registry, "gpt-4o").await.unwrap();
    assert_eq!(gpt.provider, "openai");
    assert!(gpt.text().starts_with("I'm unable"));
    assert_eq!(anthropic_server.requests()[0].json()["model"], "claude-haiku-4-5");
    assert_eq!(chat_server.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn the_registry_names_the_provider_it_picks_and_the_models_window() {
    let mut registry = ProviderRegistry::new();
    registry.register(named("anthropic"));
    registry.register(named("openai"));
    assert_eq!(registry.provider_id(), "registry");
    assert_eq!(registry.provider_id_for("claude-sonnet-4-5"), "anthropic");
    assert_eq!(registry.provider_id_for("openai/llama3.2"), "openai");
    assert_eq!(registry.provider_id_for("gemini-2.5-pro"), "registry", "no provider for it");
    let window = sinew::catalog::model("claude-sonnet-4-5").unwrap().context_window;
    assert_eq!(registry.context_window("claude-sonnet-4-5-20250929"), Some(u64::from(window)));
    assert_eq!(registry.context_window("openai/llama3.2"), None, "not in the catalog");

    // The agent's default budget follows the window, and an explicit one wins.
    let agent = sinew::Agent::new(registry, "claude-sonnet-4-5").with_max_tokens(8_000);
    let budget = |agent: &sinew::Agent| agent.config().context_config.as_ref().map(|c| c.max_context_tokens);
    assert_eq!(budget(&agent), Some(window as usize - 8_000));
    let mut agent = agent.with_context_config(Some(sinew::ContextConfig::default()));
    agent.set_model("claude-haiku-4-5");
    assert_eq!(budget(&agent), Some(sinew::ContextConfig::default().max_context_tokens));

    // Events and telemetry name the real provider, not the registry.
    let mut registry = ProviderRegistry::new();
    registry.register(named("anthropic"));
    let mut agent = sinew::Agent::new(registry, "claude-sonnet-4-5");
    let (events, _) = agent.prompt("hi").collect().await;
    let provider = events.iter().find_map(|e| match e {
        sinew::AgentEvent::AgentStart { provider, .. } => Some(provider.clone()),
        _ => None,
    });
    assert_eq!(provider.as_deref(), Some("anthropic"));
}

#[tokio::test]
async fn an_option_the_service_lacks_ends_the_run_before_any_request() {
    let server = MockServer::scripted([ServedResponse::sse(fixture_bytes("anthropic/short-text-minimal.sse"))]).await;
    let mut config = sinew::anthropic::AnthropicConfig::new("k");
    config.base_url = server.url();
    let options = sinew::RequestOptions::default().with_seed(7);
    let mut agent = sinew::Agent::new(sinew::anthropic::AnthropicProvider::new(config), "claude-haiku-4-5")
        .with_request_options(options);
    let outcome = agent.prompt("hi").finish().await;
    assert_eq!(outcome.reason, sinew::EndReason::Failed);
    let error = outcome.error.unwrap_or_default();
    assert!(error.contains("Anthropic Messages has no equivalent of the request option `seed`"), "{error}");
    assert!(server.requests().is_empty(), "nothing was sent");
}
