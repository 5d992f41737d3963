//! Compaction with a model-written summary, and its fallback.

use std::sync::Arc;
use std::time::Duration;

use sinew_compaction::{CompactionStrategy, ContextConfig, HeuristicTokenCounter, SummarizingCompaction, total_tokens};
use sinew_core::{AgentMessage, ProviderError};
use sinew_testing::{MockProvider, MockResponse, assert_history_valid};

use crate::{calls, result, said, text_of, user};

const H: &HeuristicTokenCounter = &HeuristicTokenCounter;

/// A question, then `turns` tool turns with bulky outputs, then a last question.
fn session(turns: usize) -> Vec<AgentMessage> {
    let mut history = vec![user("Refactor the parser", 1)];
    for i in 0..turns {
        let (id, t) = (format!("c{i}"), 2 + 3 * i as u64);
        history.push(calls(&[&id], t));
        history.push(result(&id, &format!("parser.rs line {i}\n").repeat(40), t + 1));
        history.push(said(&format!("step {i} done"), t + 2));
    }
    history.push(user("and now the tests", 100));
    history
}

fn config() -> ContextConfig {
    ContextConfig::default()
        .with_max_context_tokens(1_500)
        .with_system_prompt_tokens(100)
        .with_keep_first(1)
        .with_keep_recent(4)
}

#[tokio::test]
async fn the_middle_is_replaced_by_the_models_summary() {
    let history = session(8);
    assert!(total_tokens(&history, H) > 1_400);
    let mock = Arc::new(MockProvider::new([MockResponse::text("The user wants the parser refactored; 5 steps done.")]));
    let strategy = SummarizingCompaction::new(Arc::clone(&mock), "small-model").with_max_summary_tokens(300);
    let compacted = strategy.compact(&history, &config()).await.unwrap();

    assert_eq!(compacted[0], history[0], "the first user message stays");
    assert_eq!(
        text_of(&compacted[1]),
        "[Summary of 21 earlier messages]\nThe user wants the parser refactored; 5 steps done."
    );
    assert_eq!(&compacted[2..], &history[history.len() - 4..]);
    assert!(total_tokens(&compacted, H) <= 1_400);
    assert_history_valid(&compacted);

    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].model.as_str(), requests[0].max_tokens), ("small-model", Some(300)));
    let transcript = sinew_core::join_text(requests[0].messages[0].content(), "");
    assert!(transcript.starts_with("<transcript>\nAssistant called bash"), "{transcript}");
    assert!(transcript.contains("Result of bash: parser.rs line 0"));
    assert!(transcript.contains("Assistant: step 5 done"));
    assert!(!transcript.contains("Refactor the parser"), "the kept messages are not summarised");
    assert!(requests[0].system_prompt.contains("Summarise"));
}

#[tokio::test]
async fn a_history_that_fits_costs_no_call() {
    let history = session(1);
    let mock = Arc::new(MockProvider::new([]));
    let strategy = SummarizingCompaction::new(Arc::clone(&mock), "m");
    assert_eq!(strategy.compact(&history, &config()).await, None);
    assert_eq!(mock.calls(), 0);
}

async fn falls_back(response: MockResponse, timeout: Duration) {
    let history = session(8);
    let mock = Arc::new(MockProvider::new([response]));
    let strategy = SummarizingCompaction::new(Arc::clone(&mock), "m").with_timeout(timeout);
    let compacted = strategy.compact(&history, &config()).await.unwrap();
    assert_eq!(mock.calls(), 1);
    assert!(!compacted.iter().any(|m| text_of(m).starts_with("[Summary of")));
    assert!(total_tokens(&compacted, H) <= 1_400, "the cascade did the work");
    assert_eq!(compacted[0], history[0]);
    assert_history_valid(&compacted);
}

#[tokio::test]
async fn a_failed_call_falls_back_to_the_cascade() {
    falls_back(MockResponse::error(ProviderError::Network("down".into())), Duration::from_secs(5)).await;
}

#[tokio::test]
async fn an_empty_summary_falls_back_to_the_cascade() {
    falls_back(MockResponse::text("  "), Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_slow_model_falls_back_to_the_cascade() {
    falls_back(MockResponse::new().hang(), Duration::from_millis(50)).await;
}

#[tokio::test]
async fn a_summary_too_long_is_compacted_further() {
    let history = session(8);
    let mock = Arc::new(MockProvider::new([MockResponse::text("word ".repeat(2_000))]));
    let compacted = SummarizingCompaction::new(mock, "m").compact(&history, &config()).await.unwrap();
    assert!(total_tokens(&compacted, H) <= 1_400);
    assert_history_valid(&compacted);
}
