//! Live tests: each provider against its real service (REQ-178), one agent run that must call a
//! tool and use its result.
//!
//! They cost money and need credentials, so `cargo test` and `cargo xtask ci` do not run them
//! (`test = false`). `cargo xtask live` runs the ones whose credentials are in the environment and
//! prints, for every other one, that it is skipped and which variables would turn it on. Run
//! directly (`cargo test -p sinew --all-features --test live`), a test without its credentials
//! fails and says what is missing: it never passes without talking to its service.
//!
//! The model of each is its default below, or `SINEW_LIVE_MODEL_<PROVIDER>` (e.g.
//! `SINEW_LIVE_MODEL_ANTHROPIC=claude-sonnet-4-5`, `SINEW_LIVE_MODEL_OPENAI_COMPATIBLE=qwen3`);
//! Azure's is its deployment, `AZURE_OPENAI_DEPLOYMENT`.

use serde_json::json;
use sinew::testing::FnTool;
use sinew::{Agent, AgentEvent, EndReason, ProviderRegistry, ToolResult};

/// Runs one agent on `provider_id`'s service: it must call `add` and answer with the sum.
async fn live(provider_id: &str, default_model: &str) {
    let registry = ProviderRegistry::from_env();
    let Some(provider) = registry.get(provider_id) else {
        panic!("{provider_id} is not configured in this environment (`cargo xtask live` names its variables)");
    };
    let variable = format!("SINEW_LIVE_MODEL_{}", provider_id.to_uppercase().replace('-', "_"));
    let model = std::env::var(&variable).unwrap_or_else(|_| default_model.to_owned());
    let add = FnTool::new("add", |args, _ctx| async move {
        let sum = args["a"].as_i64().unwrap_or_default() + args["b"].as_i64().unwrap_or_default();
        Ok(ToolResult::text(sum.to_string()))
    })
    .with_description("Adds two integers and returns their sum.")
    .with_schema(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"]
    }));
    let mut agent = Agent::new(std::sync::Arc::clone(provider), &model)
        .with_system_prompt("You are terse. Use the add tool for arithmetic, then answer with the number only.")
        .with_max_tokens(1024)
        .with_tool(add);

    let (events, outcome) = agent.prompt("What is 1234 + 4321?").collect().await;
    assert_eq!(outcome.reason, EndReason::Completed, "{provider_id} on {model}: {:?}", outcome.error);
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd { tool_name, result, is_error: false, .. } => {
                Some((tool_name.clone(), sinew::content::join_text(&result.content, "")))
            }
            _ => None,
        })
        .collect();
    assert!(calls.contains(&("add".to_owned(), "5555".to_owned())), "{provider_id} on {model} called {calls:?}");
    let answer = outcome.final_text().unwrap_or_default();
    assert!(answer.replace([',', ' '], "").contains("5555"), "{provider_id} on {model} answered {answer:?}");
    let usage = outcome.usage;
    assert!(usage.input + usage.cache_read > 0 && usage.output > 0, "usage is reported: {usage:?}");
    let streamed = events.iter().filter(|e| matches!(e, AgentEvent::MessageUpdate { .. })).count();
    assert!(streamed > 0, "the answer streamed");
}

#[tokio::test]
async fn anthropic() {
    live("anthropic", "claude-haiku-4-5").await;
}

#[tokio::test]
async fn openai() {
    live("openai", "gpt-4o-mini").await;
}

#[tokio::test]
async fn openai_responses() {
    live("openai_responses", "gpt-5-mini").await;
}

#[tokio::test]
async fn azure_openai() {
    let deployment = std::env::var("AZURE_OPENAI_DEPLOYMENT").unwrap_or_default();
    assert!(!deployment.is_empty(), "set AZURE_OPENAI_DEPLOYMENT to the deployment to call");
    live("azure_openai", &deployment).await;
}

#[tokio::test]
async fn google() {
    live("google", "gemini-2.5-flash").await;
}

#[tokio::test]
async fn google_vertex() {
    live("google_vertex", "gemini-2.5-flash").await;
}

#[tokio::test]
async fn bedrock() {
    live("bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0").await;
}

#[tokio::test]
async fn openai_compatible() {
    live("openai-compatible", "llama3.2").await;
}
