//! The tiered cascade and its levels (REQ-056…REQ-059, REQ-164).

use std::borrow::Cow;

use sinew_compaction::{
    CompactionStrategy, ContextConfig, HeuristicTokenCounter, SUMMARY_HEADER, TieredCompaction, compact_messages,
    drop_middle, keep_within_budget, shorten_texts, summarize_old_turns, total_tokens, truncate_tool_outputs,
};
use sinew_core::{AgentMessage, AssistantMessage, Content};
use sinew_testing::assert_history_valid;

use crate::{calls, note, original_stamps, result, said, text_of, user};

const H: &HeuristicTokenCounter = &HeuristicTokenCounter;

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("output line {i}")).collect::<Vec<_>>().join("\n")
}

/// user, then `turns` × (call, result of 200 lines, answer), then a last question.
fn session(turns: usize) -> Vec<AgentMessage> {
    let mut history = vec![user("first question", 1)];
    let mut t = 2;
    for i in 0..turns {
        let id = format!("c{i}");
        history.push(calls(&[&id], t));
        history.push(result(&id, &lines(200), t + 1));
        history.push(said(&format!("answer {i}"), t + 2));
        t += 3;
    }
    history.push(user("last question", t));
    history
}

fn config(max_context_tokens: usize) -> ContextConfig {
    ContextConfig::default()
        .with_max_context_tokens(max_context_tokens)
        .with_system_prompt_tokens(0)
        .with_keep_recent(4)
        .with_keep_first(2)
}

#[test]
fn a_history_within_budget_is_borrowed_untouched() {
    let history = session(3);
    let total = total_tokens(&history, H);
    // Exactly at the budget: nothing to do.
    let compacted = compact_messages(&history, &config(total));
    assert!(matches!(compacted, Cow::Borrowed(_)));
    assert_eq!(&*compacted, &history[..]);
    // One token over: compaction.
    let compacted = compact_messages(&history, &config(total - 1));
    assert!(matches!(compacted, Cow::Owned(_)));
    assert!(total_tokens(&compacted, H) < total);
}

#[test]
fn the_system_prompt_share_is_reserved() {
    let history = session(3);
    let total = total_tokens(&history, H);
    let config = config(total).with_system_prompt_tokens(10);
    assert!(matches!(compact_messages(&history, &config), Cow::Owned(_)));
}

#[test]
fn level_1_cuts_tool_outputs_to_max_lines_and_nothing_else() {
    let mut history = vec![user(&lines(200), 1), calls(&["a"], 2), result("a", &lines(200), 3)];
    assert_eq!(truncate_tool_outputs(&mut history, 50), 1);
    let output = text_of(&history[2]);
    let kept: Vec<&str> = output.lines().collect();
    assert_eq!(kept.len(), 50);
    assert_eq!(kept[25], "[... 151 lines truncated ...]");
    assert_eq!((kept[0], kept[49]), ("output line 1", "output line 200"));
    assert_eq!(text_of(&history[0]).lines().count(), 200, "user messages are not tool output");
    assert_eq!(truncate_tool_outputs(&mut history, 50), 0, "already short enough");
}

#[test]
fn the_cascade_stops_at_level_1_when_that_fits() {
    let history = session(3);
    let cut = {
        let mut copy = history.clone();
        truncate_tool_outputs(&mut copy, 50);
        total_tokens(&copy, H)
    };
    let compacted = compact_messages(&history, &config(cut));
    assert_eq!(compacted.len(), history.len());
    assert!(!compacted.iter().any(|m| text_of(m).contains("[Summary]")));
    assert_history_valid(&compacted);
}

#[test]
fn level_2_summarises_old_turns_and_keeps_recent_ones() {
    let history = session(3); // 11 messages
    let summarized = summarize_old_turns(history.clone(), 4);
    // The last turn (call, result, answer) and the last question are kept as they were.
    assert_eq!(&summarized[summarized.len() - 4..], &history[history.len() - 4..]);
    // Before them: the first question and one summary of the two older turns.
    assert_eq!(summarized.len(), 6);
    assert_eq!(summarized[0], history[0]);
    let summary = text_of(&summarized[1]);
    assert!(summarized[1].is_user());
    let summary_lines: Vec<&str> = summary.lines().collect();
    assert_eq!(summary_lines.len(), 5, "{summary}");
    assert_eq!(summary_lines[0], SUMMARY_HEADER);
    assert!(summary_lines.iter().all(|l| l.starts_with("[Summary]")));
    assert!(summary_lines[1].contains(r#"bash {"command":"run c0"} → ok"#), "{summary}");
    assert!(summary_lines[2].contains(r#"Assistant: "answer 0""#), "{summary}");
    assert_history_valid(&summarized);
}

#[test]
fn level_2_folds_later_prompts_and_earlier_summaries_into_one_message() {
    let mut history = session(2);
    history.extend(session(2).into_iter().enumerate().map(|(i, m)| match i {
        0 => user("second question", 50),
        _ => m,
    }));
    let once = summarize_old_turns(history.clone(), 4);
    assert_eq!(once.len(), 2 + 4);
    let summary = text_of(&once[1]);
    assert!(summary.contains("\n[User] last question\n"), "{summary}");
    assert!(summary.contains("\n[User] second question\n"), "{summary}");

    // Compacting again merges the first summary instead of stacking a second one.
    let mut longer = once.clone();
    longer.extend(session(1).into_iter().skip(1));
    let twice = summarize_old_turns(longer, 4);
    assert_eq!(twice.len(), 2 + 4);
    let merged = text_of(&twice[1]);
    assert_eq!(merged.matches(SUMMARY_HEADER).count(), 1, "{merged}");
    assert!(merged.starts_with(&summary), "the earlier summary comes first, unchanged");
    assert_history_valid(&twice);
}

#[test]
fn level_2_does_nothing_when_everything_is_recent() {
    let history = session(1);
    assert_eq!(summarize_old_turns(history.clone(), 10), history);
}

#[test]
fn level_2_names_calls_without_results_and_failures() {
    let mut failed = result("b", "boom", 3);
    if let AgentMessage::Llm(sinew_core::Message::ToolResult(r)) = &mut failed {
        r.is_error = true;
    }
    let history = vec![user("q", 1), calls(&["b"], 2), failed, user("next", 4), said("done", 5)];
    let summarized = summarize_old_turns(history, 1);
    assert_eq!(summarized.len(), 3);
    let summary = text_of(&summarized[1]);
    assert!(summary.contains("→ error\n[User] next"), "{summary}");
}

#[test]
fn level_3_keeps_head_marker_tail_in_order() {
    let history = session(5); // 17 messages
    let dropped = drop_middle(history.clone(), 2, 4);
    // The head holds 1 message: a second would cut the first call from its result.
    assert_eq!(dropped[0], history[0]);
    assert!(text_of(&dropped[1]).contains("earlier messages omitted"), "{}", text_of(&dropped[1]));
    assert_eq!(&dropped[2..], &history[history.len() - 4..]);
    assert_eq!(text_of(&dropped[1]), "[... 12 earlier messages omitted to fit the context window ...]");
    assert_history_valid(&dropped);
}

#[test]
fn level_3_with_few_messages_changes_nothing() {
    let history = session(1); // 5 messages
    assert_eq!(drop_middle(history.clone(), 2, 4), history);
    assert_eq!(drop_middle(history.clone(), 10, 10), history);
}

#[test]
fn level_3_keeps_the_first_user_message_whatever_keep_first_says() {
    let mut history = vec![note(1), said("hello", 2), user("the task", 3)];
    history.extend(session(3).into_iter().skip(1));
    let dropped = drop_middle(history.clone(), 0, 2);
    assert_eq!(dropped[0], history[2], "the first user message is pinned");
    assert!(text_of(&dropped[1]).contains("omitted"));
    assert_history_valid(&dropped);
}

#[test]
fn keep_within_budget_keeps_the_newest_turns_that_fit() {
    let history = session(6);
    let budget = 600;
    let kept = keep_within_budget(history.clone(), budget, H);
    assert_eq!(kept[0], history[0]);
    assert!(text_of(&kept[1]).contains("omitted"));
    assert_eq!(kept.last(), history.last());
    assert!(total_tokens(&kept, H) <= budget);
    assert_history_valid(&kept);
    let stamps = original_stamps(&kept);
    assert!(stamps.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn oversized_texts_are_shortened_as_a_last_resort() {
    let mut history = vec![user(&"x".repeat(40_000), 1)];
    assert!(shorten_texts(&mut history, 1_000, H));
    assert!(total_tokens(&history, H) <= 1_000);
    let text = text_of(&history[0]);
    assert!(text.starts_with("xxx") && text.ends_with("xxx") && text.contains("characters truncated"));

    // Signed assistant text is left alone (the signature covers it); so there is nothing to cut.
    let mut signed = AssistantMessage::new("gemini", "m");
    signed.content = vec![Content::Text { text: "y".repeat(4_000), signature: Some("sig".into()) }];
    let mut history: Vec<AgentMessage> = vec![signed.into()];
    assert!(!shorten_texts(&mut history, 100, H));
    assert_eq!(text_of(&history[0]).len(), 4_000);
}

#[test]
fn a_huge_first_message_and_last_result_still_fit() {
    let history =
        vec![user(&"q".repeat(100_000), 1), said("working", 2), calls(&["a"], 3), result("a", &"r".repeat(100_000), 4)];
    let config = config(0).with_max_context_tokens(2_000).with_system_prompt_tokens(200);
    let compacted = compact_messages(&history, &config);
    assert!(total_tokens(&compacted, H) <= 1_800);
    assert_eq!(original_stamps(&compacted)[0], 1);
    assert_eq!(*original_stamps(&compacted).last().unwrap(), 4);
    assert_history_valid(&compacted);
}

#[test]
fn images_count_toward_the_budget() {
    let image = Content::image("A".repeat(4 * 250_000), "image/png"); // 750 kB → 1,000 tokens
    let history = vec![AgentMessage::from(sinew_core::Message::user_content(vec![image]))];
    assert_eq!(total_tokens(&history, H), 1_000 + 4);
}

#[tokio::test]
async fn the_strategy_says_none_when_nothing_changes() {
    let history = session(2);
    let total = total_tokens(&history, H);
    assert_eq!(TieredCompaction.compact(&history, &config(total)).await, None);
    let compacted = TieredCompaction.compact(&history, &config(total / 2)).await.unwrap();
    assert!(total_tokens(&compacted, H) <= total / 2);
}

/// One token per byte: four times the heuristic.
struct PerByte;

impl sinew_compaction::TokenCounter for PerByte {
    fn count(&self, text: &str) -> usize {
        text.len()
    }
}

#[test]
fn the_configured_token_counter_decides() {
    let history = session(2);
    let heuristic = total_tokens(&history, H);
    let config = config(heuristic);
    assert!(matches!(compact_messages(&history, &config), Cow::Borrowed(_)));
    let precise = config.with_token_counter(std::sync::Arc::new(PerByte));
    let compacted = compact_messages(&history, &precise);
    assert!(matches!(compacted, Cow::Owned(_)), "the same history is too big when counted per byte");
    assert!(total_tokens(&compacted, &PerByte) <= precise.history_budget());
}
