//! Token-budget truncation, newest first (the history management of the ADK spec).

use std::borrow::Cow;

use sinew_compaction::{
    CompactionStrategy, ContextConfig, DEFAULT_TOKEN_BUDGET, HeuristicTokenCounter, TokenBudgetTruncation,
    message_tokens, total_tokens,
};
use sinew_core::AgentMessage;
use sinew_testing::assert_history_valid;

use crate::{calls, result, said, user};

const H: &HeuristicTokenCounter = &HeuristicTokenCounter;

/// Every message costs 104 tokens (400 bytes + 4), tool results 108.
fn x(n: usize) -> String {
    "x".repeat(n)
}

#[test]
fn zero_means_the_default_budget() {
    assert_eq!(TokenBudgetTruncation::new(0).budget(), DEFAULT_TOKEN_BUDGET);
    assert_eq!(DEFAULT_TOKEN_BUDGET, 32_000);
    assert_eq!(TokenBudgetTruncation::new(500).budget(), 500);
}

#[test]
fn newest_messages_are_kept_until_the_budget_is_spent() {
    let history: Vec<AgentMessage> = (0..10).map(|i| user(&x(400), i + 1)).collect();
    let plain = TokenBudgetTruncation::new(350).keep_first_user_message(false);
    let kept = plain.truncate(&history, H);
    assert_eq!(&*kept, &history[7..], "three messages of 104 fit in 350");
    assert!(matches!(kept, Cow::Borrowed(_)));
    assert_eq!(plain.start(&history, H), 7);

    // By default the first user message stays in front, and counts.
    let kept = TokenBudgetTruncation::new(350).truncate(&history, H);
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[0], history[0]);
    assert_eq!(&kept[1..], &history[8..]);
    assert!(total_tokens(&kept, H) <= 350);
}

#[test]
fn a_cut_history_never_starts_with_a_tool_result() {
    let history =
        vec![user("q", 1), calls(&["a", "b"], 2), result("a", &x(400), 3), result("b", &x(400), 4), said(&x(400), 5)];
    let budget = message_tokens(&history[3], H) + message_tokens(&history[4], H);
    let truncation = TokenBudgetTruncation::new(budget).keep_first_user_message(false);
    // The budget reaches back to result "b": it and nothing before it is dropped.
    let kept = truncation.truncate(&history, H);
    assert_eq!(&*kept, &history[4..]);
    assert_history_valid(&kept);
}

#[test]
fn a_cut_history_never_starts_with_an_unanswered_call() {
    // The pending call at the end is the newest turn and stays; the cut falls before it.
    let history = vec![user(&x(400), 1), said(&x(400), 2), user("go", 3), calls(&["p"], 4)];
    let truncation = TokenBudgetTruncation::new(30).keep_first_user_message(false);
    let kept = truncation.truncate(&history, H);
    assert_eq!(&*kept, &history[2..]);

    // A call whose results were cut off (here: a second call's result missing) is skipped.
    let history = vec![user(&x(400), 1), calls(&["a", "b"], 2), result("a", "ok", 3), user("then", 4), said("fine", 5)];
    assert_eq!(TokenBudgetTruncation::new(60).keep_first_user_message(false).start(&history, H), 3);
}

#[test]
fn without_truncation_a_trailing_call_is_kept() {
    let history = vec![user("q", 1), calls(&["pending"], 2)];
    let kept = TokenBudgetTruncation::new(1_000).truncate(&history, H);
    assert_eq!(&*kept, &history[..]);
}

#[test]
fn the_newest_turn_is_kept_even_over_budget() {
    let history = vec![user("q", 1), calls(&["a"], 2), result("a", &x(40_000), 3)];
    let kept = TokenBudgetTruncation::new(100).keep_first_user_message(false).truncate(&history, H);
    assert_eq!(&*kept, &history[1..], "the call stays with its result");
}

#[tokio::test]
async fn as_a_strategy_it_takes_the_smaller_budget() {
    let history: Vec<AgentMessage> = (0..10).map(|i| user(&x(400), i + 1)).collect();
    let config = ContextConfig::default().with_max_context_tokens(400).with_system_prompt_tokens(100);
    let kept = TokenBudgetTruncation::default().compact(&history, &config).await.unwrap();
    assert!(total_tokens(&kept, H) <= 300);
    assert_eq!(kept[0], history[0]);
    let roomy = ContextConfig::default().with_max_context_tokens(1_000_000);
    assert_eq!(TokenBudgetTruncation::new(2_000).compact(&history, &roomy).await, None);
}
