//! The built-in evaluation strategies of parallel groups (REQ-200…REQ-202, REQ-207…REQ-209).

use std::sync::Arc;

use async_trait::async_trait;
use sinew_core::{AgentEvent, AgentMessage, CancellationToken, EndReason, Message, TokenCounter};

use crate::agent_loop::run;
use crate::config::{AgentContext, AgentLoopConfig};
use crate::emit::{EventSender, Sink};
use crate::parallel::{Evaluation, EvaluationDecision, EvaluationInput, EvaluationStrategy, ParallelLoopOutcome};

/// For a single branch: selects it. More than one is not its job: it selects none.
#[derive(Clone, Copy, Debug, Default)]
pub struct TransparentEvaluation;

#[async_trait]
impl EvaluationStrategy for TransparentEvaluation {
    fn name(&self) -> &str {
        "transparent"
    }

    async fn evaluate(&self, input: EvaluationInput<'_>, _: &EventSender, _: &CancellationToken) -> Evaluation {
        Evaluation::free(match input.branches.len() {
            1 => EvaluationDecision::Select(0),
            n => EvaluationDecision::NoSelection(format!("transparent evaluation takes one branch, not {n}")),
        })
    }
}

/// Always the first branch.
#[derive(Clone, Copy, Debug, Default)]
pub struct PickFirstEvaluation;

#[async_trait]
impl EvaluationStrategy for PickFirstEvaluation {
    fn name(&self) -> &str {
        "pick_first"
    }

    async fn evaluate(&self, input: EvaluationInput<'_>, _: &EventSender, _: &CancellationToken) -> Evaluation {
        Evaluation::free(if input.branches.is_empty() {
            EvaluationDecision::NoSelection("there are no branches".into())
        } else {
            EvaluationDecision::Select(0)
        })
    }
}

/// The completed branch that used the fewest tokens (the first of equals).
#[derive(Clone, Copy, Debug, Default)]
pub struct TokenEfficientEvaluation;

#[async_trait]
impl EvaluationStrategy for TokenEfficientEvaluation {
    fn name(&self) -> &str {
        "token_efficient"
    }

    async fn evaluate(&self, input: EvaluationInput<'_>, _: &EventSender, _: &CancellationToken) -> Evaluation {
        Evaluation::free(by_tokens(input.branches, std::cmp::Reverse))
    }
}

/// The completed branch that used the most tokens (the first of equals): the most elaborate.
#[derive(Clone, Copy, Debug, Default)]
pub struct ElaborateEvaluation;

#[async_trait]
impl EvaluationStrategy for ElaborateEvaluation {
    fn name(&self) -> &str {
        "elaborate"
    }

    async fn evaluate(&self, input: EvaluationInput<'_>, _: &EventSender, _: &CancellationToken) -> Evaluation {
        Evaluation::free(by_tokens(input.branches, |tokens| tokens))
    }
}

/// The completed branch with the greatest `key(total_tokens)`; the first of equals. A branch that
/// failed or was cut short never wins over one that completed.
fn by_tokens<K: Ord>(branches: &[ParallelLoopOutcome], key: impl Fn(u64) -> K) -> EvaluationDecision {
    let completed = branches.iter().enumerate().filter(|(_, b)| b.outcome.reason == EndReason::Completed);
    // `max_by_key` keeps the last of equals; reversing the order keeps the first.
    match completed.rev().max_by_key(|(_, b)| key(b.outcome.usage.total_tokens)) {
        Some((i, _)) => EvaluationDecision::Select(i),
        None => EvaluationDecision::NoSelection("no branch completed".into()),
    }
}

/// The judge's instructions unless [`LlmJudgeEvaluation::with_system_prompt`] says otherwise.
pub const DEFAULT_JUDGE_PROMPT: &str = "You judge candidate answers to a user's query. Read the query and every \
candidate, decide which one answers it best (correct, complete, clear), and reply with that candidate's number \
only.";

/// Lines of a text the first compaction tier keeps (its end).
const JUDGE_TAIL_LINES: usize = 80;

/// A model judges: it reads the query (and the conversation before it) and every branch's final
/// answer, and names the best by number (REQ-201).
///
/// The judge must read all answers at once, so they must fit its context budget
/// (`judge_config.context_config.max_context_tokens`, less the system prompt's share). What does
/// not fit is compacted for the judge only, in tiers: the last 80 lines of each text, then its
/// first and last paragraphs, then a hard cut to an equal share of the budget. The prior
/// conversation is compacted first, the answers only if that is not enough (REQ-202, REQ-208).
/// If even that does not fit, the judge is asked anyway and a `ProgressMessage` says so. The
/// winner's history is always the branch's own, never the compacted text.
///
/// The judge runs in the branches' session with its events sent to the group's channel; its usage
/// is the evaluation's. An answer without a valid candidate number selects none.
pub struct LlmJudgeEvaluation {
    judge_config: AgentLoopConfig,
    system_prompt: String,
}

impl LlmJudgeEvaluation {
    /// A judge running on `judge_config` (its provider and model; its tools are not used).
    pub fn new(mut judge_config: AgentLoopConfig) -> Self {
        judge_config.get_steering_messages = None;
        judge_config.get_follow_up_messages = None;
        LlmJudgeEvaluation { judge_config, system_prompt: DEFAULT_JUDGE_PROMPT.to_owned() }
    }

    /// Replaces the judge's instructions (default: [`DEFAULT_JUDGE_PROMPT`]); they must have it reply
    /// with the winning candidate's number.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = prompt.into();
        self
    }

    /// The message the judge reads.
    pub fn judge_message(&self, input: &EvaluationInput<'_>) -> (String, JudgeFit) {
        let (prior, query) = query_of(input);
        let answers: Vec<String> = input.branches.iter().map(|b| final_answer(&b.outcome.messages)).collect();
        let Some(context) = &self.judge_config.context_config else {
            return (build_judge_message(&prior, &query, &answers), JudgeFit::Fits);
        };
        let budget = context.history_budget();
        let counter = Arc::clone(&context.token_counter);
        let (prior, answers, fit) = compact_for_judge(prior, &query, answers, budget, &*counter);
        (build_judge_message(&prior, &query, &answers), fit)
    }
}

impl std::fmt::Debug for LlmJudgeEvaluation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmJudgeEvaluation").field("model", &self.judge_config.model).finish_non_exhaustive()
    }
}

#[async_trait]
impl EvaluationStrategy for LlmJudgeEvaluation {
    fn name(&self) -> &str {
        "llm_judge"
    }

    async fn evaluate(&self, input: EvaluationInput<'_>, tx: &EventSender, cancel: &CancellationToken) -> Evaluation {
        let (message, fit) = self.judge_message(&input);
        let loop_id = format!("{}.judge", input.group_id);
        if fit == JudgeFit::TooLarge {
            let note = AgentEvent::ProgressMessage {
                loop_id: loop_id.as_str().into(),
                tool_call_id: String::new(),
                tool_name: String::new(),
                text: "the candidates do not fit the judge's context even compacted; judging them anyway".into(),
            };
            let _ = tx.send(note);
        }
        let mut context = AgentContext {
            system_prompt: self.system_prompt.clone(),
            agent_id: Some("judge".into()),
            session_id: Some(input.session_id.to_owned()),
            loop_id: Some(loop_id),
            ..AgentContext::default()
        };
        let entry = crate::agent_loop::Entry::Prompt(vec![AgentMessage::user(message)]);
        let outcome = run(&mut context, &self.judge_config, Sink::Channel(tx.clone()), cancel, entry, None).await;
        let verdict = outcome.final_text().unwrap_or_default();
        let decision = match first_number(&verdict) {
            Some(n) if (1..=input.branches.len()).contains(&n) => EvaluationDecision::Select(n - 1),
            _ if outcome.reason != EndReason::Completed => EvaluationDecision::NoSelection(format!(
                "the judge did not finish ({:?}{})",
                outcome.reason,
                outcome.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default()
            )),
            _ => EvaluationDecision::NoSelection(format!("the judge named no candidate: {verdict:?}")),
        };
        Evaluation { decision, usage: outcome.usage }
    }
}

/// Whether the judge's message fits its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JudgeFit {
    /// It fits, as it is or compacted for the judge.
    Fits,
    /// Even fully compacted, it does not.
    TooLarge,
}

/// The conversation before the query (a transcript, empty if none) and the query.
///
/// With prompts, the query is their user text and the prior conversation the whole history. When
/// the branches continued the history, the query is its last user message and the prior
/// conversation what came before it (REQ-207).
fn query_of(input: &EvaluationInput<'_>) -> (String, String) {
    if !input.prompts.is_empty() {
        let query = input.prompts.iter().filter_map(user_text).collect::<Vec<_>>().join("\n\n");
        return (transcript(input.history), query);
    }
    match input.history.iter().rposition(|m| user_text(m).is_some()) {
        Some(i) => (transcript(&input.history[..i]), user_text(&input.history[i]).unwrap_or_default()),
        None => (transcript(input.history), String::new()),
    }
}

fn user_text(message: &AgentMessage) -> Option<String> {
    match message {
        AgentMessage::Llm(Message::User(user)) => {
            Some(sinew_core::content::join_text(&user.content, "\n")).filter(|t| !t.is_empty())
        }
        _ => None,
    }
}

/// The user and assistant text of a history, one `User:` or `Assistant:` paragraph per message;
/// tool calls and results are left out.
fn transcript(messages: &[AgentMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        let (who, text) = match message {
            AgentMessage::Llm(Message::User(_)) => ("User", user_text(message).unwrap_or_default()),
            AgentMessage::Llm(Message::Assistant(assistant)) => ("Assistant", assistant.text()),
            _ => continue,
        };
        if !text.is_empty() {
            out.push_str(&format!("{who}: {text}\n\n"));
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// A branch's final answer: the text of its last assistant message with text.
fn final_answer(messages: &[AgentMessage]) -> String {
    messages
        .iter()
        .rev()
        .filter_map(AgentMessage::as_assistant)
        .map(|m| m.text())
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| "(no answer)".to_owned())
}

/// The judge's user message (REQ-209).
pub(crate) fn build_judge_message(prior: &str, query: &str, answers: &[String]) -> String {
    let mut message = String::new();
    if !prior.is_empty() {
        message.push_str(&format!("Conversation so far:\n{prior}\n\n"));
    }
    message.push_str(&format!("Query:\n{query}\n\nCandidates:\n"));
    for (i, answer) in answers.iter().enumerate() {
        message.push_str(&format!("\n[{}]\n{answer}\n", i + 1));
    }
    message.push_str(&format!("\nReply with the number (1 to {}) of the best candidate only.", answers.len()));
    message
}

/// The first decimal number in `text`.
fn first_number(text: &str) -> Option<usize> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let digits = &text[start..];
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Compacts the prior conversation, then the answers, tier by tier, until the judge's message fits
/// `budget` tokens (REQ-202, REQ-208).
pub(crate) fn compact_for_judge(
    mut prior: String,
    query: &str,
    mut answers: Vec<String>,
    budget: usize,
    counter: &dyn TokenCounter,
) -> (String, Vec<String>, JudgeFit) {
    let fits = |prior: &str, answers: &[String]| counter.count(&build_judge_message(prior, query, answers)) <= budget;
    if fits(&prior, &answers) {
        return (prior, answers, JudgeFit::Fits);
    }
    // An equal share of what the query leaves, in bytes (about four per token), for the prior
    // conversation and each answer.
    let share = budget.saturating_sub(counter.count(query)).saturating_mul(4) / (answers.len() + 1);
    let tiers: [&dyn Fn(&str) -> String; 3] =
        [&|text| last_lines(text, JUDGE_TAIL_LINES), &first_and_last_paragraphs, &|text| hard_cut(text, share)];
    // Iteration 1: the prior conversation only, answers intact.
    for tier in tiers {
        prior = tier(&prior);
        if fits(&prior, &answers) {
            return (prior, answers, JudgeFit::Fits);
        }
    }
    // Iteration 2: each answer too.
    for tier in tiers {
        for answer in &mut answers {
            *answer = tier(answer);
        }
        if fits(&prior, &answers) {
            return (prior, answers, JudgeFit::Fits);
        }
    }
    (prior, answers, JudgeFit::TooLarge)
}

/// Tier 1: the last `keep` lines.
fn last_lines(text: &str, keep: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= keep {
        return text.to_owned();
    }
    format!("[... {} earlier lines omitted ...]\n{}", lines.len() - keep, lines[lines.len() - keep..].join("\n"))
}

/// Tier 2: the first and the last paragraph.
fn first_and_last_paragraphs(text: &str) -> String {
    let paragraphs: Vec<&str> = text.split("\n\n").filter(|p| !p.trim().is_empty()).collect();
    match paragraphs.as_slice() {
        [first, .., last] if paragraphs.len() > 2 => {
            format!("{first}\n\n[... {} paragraphs omitted ...]\n\n{last}", paragraphs.len() - 2)
        }
        _ => text.to_owned(),
    }
}

/// Tier 3: at most `max_bytes` (on a character boundary).
fn hard_cut(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}[... truncated ...]", &text[..end])
}

#[cfg(test)]
mod tests {
    use sinew_core::HeuristicTokenCounter;

    use super::*;

    /// REQ-209: the prior conversation's section is there only when there is one.
    #[test]
    fn the_judge_sees_prior_context_only_when_there_is_some() {
        let answers = ["A".to_owned(), "B".to_owned()];
        let fresh = build_judge_message("", "Which?", &answers);
        assert!(fresh.starts_with("Query:\nWhich?\n\nCandidates:\n\n[1]\nA\n\n[2]\nB\n"), "{fresh}");
        assert!(!fresh.contains("Conversation so far"));
        let continued = build_judge_message("user: hi", "Which?", &answers);
        assert!(continued.starts_with("Conversation so far:\nuser: hi\n\nQuery:\nWhich?"), "{continued}");
    }

    #[test]
    fn numbers_and_tiers() {
        assert_eq!(first_number("I pick [2] because"), Some(2));
        assert_eq!(first_number("none"), None);
        assert_eq!(first_number("12."), Some(12));
        let long: String = (1..=200).map(|i| format!("line {i}\n")).collect();
        let cut = last_lines(&long, 80);
        assert!(cut.starts_with("[... 120 earlier lines omitted ...]\nline 121\n"), "{}", &cut[..60]);
        assert!(cut.ends_with("line 200"));
        assert_eq!(first_and_last_paragraphs("a\n\nb\n\nc\n\nd"), "a\n\n[... 2 paragraphs omitted ...]\n\nd");
        assert_eq!(first_and_last_paragraphs("a\n\nb"), "a\n\nb");
        assert_eq!(hard_cut("žžžž", 3), "ž[... truncated ...]");
        assert_eq!(hard_cut("short", 10), "short");
    }

    #[test]
    fn the_prior_conversation_is_compacted_before_the_answers() {
        let counter = HeuristicTokenCounter;
        let prior: String = (0..400).map(|i| format!("User: old question {i}\n\n")).collect();
        let answers = vec!["first answer".to_owned(), "second answer".to_owned()];
        let (prior_after, answers_after, fit) =
            compact_for_judge(prior.clone(), "q?", answers.clone(), 1_000, &counter);
        assert_eq!(fit, JudgeFit::Fits);
        assert!(prior_after.len() < prior.len());
        assert_eq!(answers_after, answers, "the answers fit once the prior conversation is compacted");

        let huge = "word ".repeat(20_000);
        let (_, answers_after, fit) = compact_for_judge(String::new(), "q?", vec![huge.clone(), huge], 2_000, &counter);
        assert_eq!(fit, JudgeFit::Fits);
        assert!(answers_after.iter().all(|a| a.ends_with("[... truncated ...]")));
        let (_, _, fit) = compact_for_judge(String::new(), &"q ".repeat(10_000), vec!["a".into()], 100, &counter);
        assert_eq!(fit, JudgeFit::TooLarge);
    }
}
