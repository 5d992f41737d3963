//! REQ-165: for any valid history and configuration, the cascade's result fits the budget, keeps
//! every tool call with its results, keeps the first user message and the newest turn, and
//! keeps order. 10,000 cases each.

use proptest::prelude::*;
use sinew_compaction::{ContextConfig, HeuristicTokenCounter, TokenBudgetTruncation, compact_messages, total_tokens};
use sinew_core::AgentMessage;
use sinew_testing::assert_history_valid;

use crate::{calls, note, original_stamps, result, said, user};

const H: &HeuristicTokenCounter = &HeuristicTokenCounter;

#[derive(Clone, Debug)]
enum Turn {
    User(String),
    Said(String),
    Tools(Vec<String>),
    Note,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        // Lengths matter here, not letters: cheap to generate.
        3 => (0usize..80, b'a'..=b'z').prop_map(|(n, c)| char::from(c).to_string().repeat(n)),
        1 => (1usize..400, 1usize..60).prop_map(|(lines, width)| format!("{}\n", "é".repeat(width)).repeat(lines)),
        1 => (1usize..8_000).prop_map(|n| "w".repeat(n)),
    ]
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        3 => text().prop_map(Turn::User),
        3 => text().prop_map(Turn::Said),
        4 => prop::collection::vec(text(), 1..4).prop_map(Turn::Tools),
        1 => Just(Turn::Note),
    ]
}

/// A valid history: it starts with a user message; every call is answered right after.
fn history() -> impl Strategy<Value = Vec<AgentMessage>> {
    (text(), prop::collection::vec(turn(), 0..60)).prop_map(|(first, turns)| {
        let mut t = 1;
        let mut stamp = || {
            t += 1;
            t
        };
        let mut batch = 0;
        let mut history = vec![user(&first, 1)];
        for turn in turns {
            match turn {
                Turn::User(text) => history.push(user(&text, stamp())),
                Turn::Said(text) => history.push(said(&text, stamp())),
                Turn::Note => history.push(note(stamp())),
                Turn::Tools(outputs) => {
                    batch += 1;
                    let ids: Vec<String> = (0..outputs.len()).map(|i| format!("call{batch}_{i}")).collect();
                    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                    history.push(calls(&refs, stamp()));
                    for (id, output) in ids.iter().zip(outputs) {
                        history.push(result(id, &output, stamp()));
                    }
                }
            }
        }
        history
    })
}

fn config() -> impl Strategy<Value = ContextConfig> {
    (600usize..40_000, 0usize..200, 0usize..16, 0usize..6, 1usize..80).prop_map(
        |(max_context_tokens, system_prompt_tokens, keep_recent, keep_first, tool_output_max_lines)| {
            ContextConfig::default()
                .with_max_context_tokens(max_context_tokens)
                .with_system_prompt_tokens(system_prompt_tokens)
                .with_keep_recent(keep_recent)
                .with_keep_first(keep_first)
                .with_tool_output_max_lines(tool_output_max_lines)
        },
    )
}

/// The invariants every strategy keeps.
fn check(original: &[AgentMessage], compacted: &[AgentMessage]) -> Result<(), TestCaseError> {
    assert_history_valid(compacted);
    let stamps = original_stamps(compacted);
    prop_assert!(stamps.windows(2).all(|w| w[0] < w[1]), "order changed: {stamps:?}");
    prop_assert_eq!(stamps.first(), Some(&1), "the first user message was dropped");
    let last = original_stamps(original).last().copied();
    prop_assert_eq!(stamps.last().copied(), last, "the newest message was dropped");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10_000, ..ProptestConfig::default() })]

    #[test]
    fn the_cascade_fits_the_budget_and_keeps_the_history_valid(history in history(), config in config()) {
        let compacted = compact_messages(&history, &config);
        let budget = config.history_budget();
        prop_assert!(total_tokens(&compacted, H) <= budget, "{} > {budget}", total_tokens(&compacted, H));
        check(&history, &compacted)?;
        if total_tokens(&history, H) <= budget {
            prop_assert_eq!(&*compacted, &history[..]);
        }
    }

    #[test]
    fn truncation_keeps_the_history_valid(history in history(), budget in 1usize..20_000) {
        let kept = TokenBudgetTruncation::new(budget).truncate(&history, H);
        check(&history, &kept)?;
        // Only the pinned first message and the newest turn may exceed the budget.
        let mut newest = history.len();
        while newest > 1 && matches!(&history[newest - 1], AgentMessage::Extension(_) | AgentMessage::Llm(sinew_core::Message::ToolResult(_))) {
            newest -= 1;
        }
        let floor = total_tokens(&history[..1], H) + total_tokens(&history[newest.saturating_sub(1)..], H);
        prop_assert!(total_tokens(&kept, H) <= budget.max(floor), "{} > {budget}", total_tokens(&kept, H));
    }
}
