//! The tiered cascade (REQ-056…REQ-059): truncate tool outputs, then summarise old turns, then
//! drop the middle, then keep what fits.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

use async_trait::async_trait;
use sinew_core::{AgentMessage, CompactionStrategy, Content, ContextConfig, Message, TokenCounter};

use crate::count::{message_tokens, total_tokens};
use crate::groups::{first_user, groups, head_end, tail_start};

/// The default strategy: [`compact_messages`].
#[derive(Clone, Copy, Debug, Default)]
pub struct TieredCompaction;

#[async_trait]
impl CompactionStrategy for TieredCompaction {
    async fn compact(&self, messages: &[AgentMessage], config: &ContextConfig) -> Option<Vec<AgentMessage>> {
        match compact_messages(messages, config) {
            Cow::Borrowed(_) => None,
            Cow::Owned(compacted) => Some(compacted),
        }
    }
}

/// Fits `messages` into [`ContextConfig::history_budget`], cheapest loss first:
///
/// 1. tool outputs cut to `tool_output_max_lines` ([`truncate_tool_outputs`]);
/// 2. turns older than the last `keep_recent` messages summarised ([`summarize_old_turns`]);
/// 3. all but the first `keep_first` and last `keep_recent` messages dropped ([`drop_middle`]);
/// 4. only the newest turns that fit kept ([`keep_within_budget`]);
/// 5. the largest texts shortened ([`shorten_texts`]).
///
/// A history that fits is returned borrowed, untouched. Each step keeps the history valid: a tool
/// call stays with its results, the first user message stays, order is kept. The result fits
/// unless the parts no step shortens (tool-call arguments, thinking, attachments) of the first user
/// message and the newest turn exceed the budget by themselves.
pub fn compact_messages<'a>(messages: &'a [AgentMessage], config: &ContextConfig) -> Cow<'a, [AgentMessage]> {
    let counter = &*config.token_counter;
    let budget = config.history_budget();
    let before = total_tokens(messages, counter);
    if before <= budget {
        return Cow::Borrowed(messages);
    }
    let mut compacted = messages.to_vec();
    let fits = |m: &[AgentMessage]| total_tokens(m, counter) <= budget;
    let mut level = 1;
    truncate_tool_outputs(&mut compacted, config.tool_output_max_lines);
    if !fits(&compacted) {
        level = 2;
        compacted = summarize_old_turns(compacted, config.keep_recent);
    }
    if !fits(&compacted) {
        level = 3;
        compacted = drop_middle(compacted, config.keep_first, config.keep_recent);
    }
    if !fits(&compacted) {
        level = 4;
        compacted = keep_within_budget(compacted, budget, counter);
        shorten_texts(&mut compacted, budget, counter);
    }
    tracing::debug!(
        level,
        messages_before = messages.len(),
        messages_after = compacted.len(),
        tokens_before = before,
        budget,
        "compacted the history"
    );
    Cow::Owned(compacted)
}

/// Level 1: cuts every text block of every tool result to at most `max_lines` lines, keeping the
/// head and the tail around a `[... N lines truncated ...]` line. Returns how many blocks were cut.
pub fn truncate_tool_outputs(messages: &mut [AgentMessage], max_lines: usize) -> usize {
    let mut cut = 0;
    for message in messages {
        let AgentMessage::Llm(Message::ToolResult(result)) = message else { continue };
        for block in &mut result.content {
            if let Content::Text { text, .. } = block
                && let Some(shorter) = truncate_lines(text, max_lines)
            {
                *text = shorter;
                cut += 1;
            }
        }
    }
    cut
}

/// `text` in at most `max_lines` lines, the marker line included; `None` if it already fits.
fn truncate_lines(text: &str, max_lines: usize) -> Option<String> {
    let total = text.lines().count();
    if total <= max_lines {
        return None;
    }
    let keep = max_lines.saturating_sub(1);
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let mut out = String::new();
    for line in text.lines().take(head) {
        out.push_str(line);
        out.push('\n');
    }
    let _ = write!(out, "[... {} lines truncated ...]", total - keep);
    for line in text.lines().skip(total - tail) {
        out.push('\n');
        out.push_str(line);
    }
    Some(out)
}

/// The first line of the message [`summarize_old_turns`] writes.
pub const SUMMARY_HEADER: &str = "[Summary] Earlier in this conversation:";

/// Level 2: keeps the last `keep_recent` messages (and always the newest turn) as they are, and
/// the first user message. Everything else before them becomes one user message: a
/// [`SUMMARY_HEADER`], then a `[Summary] ...` line per assistant turn (what it said, which tools
/// it called, how they went) and a `[User] ...` entry per user message, in order. Images of those
/// user messages are kept; an earlier summary is merged in. Extension messages stay, before it.
pub fn summarize_old_turns(messages: Vec<AgentMessage>, keep_recent: usize) -> Vec<AgentMessage> {
    let groups = groups(&messages);
    let tail = tail_start(&groups, messages.len(), keep_recent);
    let first = first_user(&messages);
    if groups
        .iter()
        .take_while(|g| g.end <= tail)
        .all(|g| g.start == first.unwrap_or(usize::MAX) || is_extension(&messages[g.start]))
    {
        return messages;
    }
    let mut out = Vec::with_capacity(tail.min(8) + messages.len() - tail);
    let mut summary = Summary::default();
    let mut rest = messages.into_iter();
    for group in groups.iter().take_while(|g| g.end <= tail) {
        let members: Vec<AgentMessage> = rest.by_ref().take(group.len()).collect();
        match &members[0] {
            AgentMessage::Extension(_) => out.extend(members),
            AgentMessage::Llm(Message::User(_)) if Some(group.start) == first => {
                // Whatever came before the first user message is summarised before it.
                summary.flush(&mut out);
                out.extend(members);
            }
            AgentMessage::Llm(Message::User(user)) => summary.user(&user.content),
            _ => {
                summary.line();
                summarize(&members, &mut summary.text);
            }
        }
    }
    summary.flush(&mut out);
    out.extend(rest);
    out
}

fn is_extension(message: &AgentMessage) -> bool {
    matches!(message, AgentMessage::Extension(_))
}

/// The summary message being written.
#[derive(Default)]
struct Summary {
    text: String,
    /// What the user attached to the messages summed up, kept as it was.
    attachments: Vec<Content>,
}

impl Summary {
    /// Starts a new line (the header first).
    fn line(&mut self) {
        if self.text.is_empty() {
            self.text.push_str(SUMMARY_HEADER);
        }
        self.text.push('\n');
    }

    fn user(&mut self, content: &[Content]) {
        let text = sinew_core::join_text(content, "\n");
        if let Some(earlier) = text.strip_prefix(SUMMARY_HEADER) {
            // An earlier summary: its lines join this one.
            if !earlier.trim().is_empty() {
                self.line();
                self.text.push_str(earlier.trim_start_matches('\n'));
            }
        } else {
            self.line();
            self.text.push_str("[User] ");
            self.text.push_str(&text);
        }
        // What the user attached (images, documents, audio) stays as it was.
        self.attachments.extend(
            content
                .iter()
                .filter(|c| {
                    matches!(
                        c,
                        Content::Image { .. }
                            | Content::ImageUrl { .. }
                            | Content::Document { .. }
                            | Content::DocumentUrl { .. }
                            | Content::Audio { .. }
                    )
                })
                .cloned(),
        );
    }

    fn flush(&mut self, out: &mut Vec<AgentMessage>) {
        if self.text.is_empty() && self.attachments.is_empty() {
            return;
        }
        if self.text.is_empty() {
            self.line();
        }
        let mut content = vec![Content::text(std::mem::take(&mut self.text))];
        content.append(&mut self.attachments);
        out.push(AgentMessage::Llm(Message::user_content(content)));
    }
}

const PREVIEW_CHARS: usize = 120;
const ARGUMENTS_CHARS: usize = 60;

/// One `[Summary]` line for an assistant turn (or a stray tool result).
fn summarize(group: &[AgentMessage], out: &mut String) {
    out.push_str("[Summary]");
    let outcomes: HashMap<&str, bool> =
        group.iter().filter_map(AgentMessage::as_tool_result).map(|r| (r.tool_call_id.as_str(), r.is_error)).collect();
    match group[0].as_llm() {
        Some(Message::Assistant(assistant)) => {
            let text = assistant.text();
            if !text.trim().is_empty() {
                out.push_str(" Assistant: \"");
                push_preview(out, &text, PREVIEW_CHARS);
                out.push('"');
            }
            let mut calls = assistant.tool_calls().peekable();
            if calls.peek().is_some() {
                out.push_str(" Called");
            }
            let mut first = true;
            for call in calls {
                out.push_str(if first { " " } else { "; " });
                first = false;
                out.push_str(call.name);
                out.push(' ');
                push_preview(out, &call.arguments.to_string(), ARGUMENTS_CHARS);
                out.push_str(match outcomes.get(call.id) {
                    Some(false) => " → ok",
                    Some(true) => " → error",
                    None => " → no result",
                });
            }
            if text.trim().is_empty() && first {
                out.push_str(" Assistant turn without text.");
            }
        }
        Some(Message::ToolResult(result)) => {
            let _ = write!(out, " Result of {}{}", result.tool_name, if result.is_error { " (error)" } else { "" });
        }
        _ => {}
    }
}

/// Up to `max` characters of `text` on one line, with `…` when cut.
fn push_preview(out: &mut String, text: &str, max: usize) {
    let mut chars = text.chars();
    for c in chars.by_ref().take(max) {
        out.push(if c.is_control() { ' ' } else { c });
    }
    if chars.next().is_some() {
        out.push('…');
    }
}

/// Level 3: keeps the first `keep_first` and the last `keep_recent` messages (never cutting into a
/// turn, always keeping the first user message and the newest turn) with a marker user message
/// saying how many were dropped in between.
pub fn drop_middle(messages: Vec<AgentMessage>, keep_first: usize, keep_recent: usize) -> Vec<AgentMessage> {
    let groups = groups(&messages);
    let head = head_end(&groups, keep_first);
    let tail = tail_start(&groups, messages.len(), keep_recent).max(head);
    cut_between(messages, head, tail, omission_marker)
}

/// Keeps `messages[..head]`, the first user message, `replacement(dropped)` and `messages[tail..]`.
pub(crate) fn cut_between(
    messages: Vec<AgentMessage>,
    head: usize,
    tail: usize,
    replacement: impl FnOnce(usize) -> AgentMessage,
) -> Vec<AgentMessage> {
    let pinned = first_user(&messages).filter(|&i| i >= head && i < tail);
    let dropped = tail - head - usize::from(pinned.is_some());
    if dropped == 0 {
        return messages;
    }
    let mut out = Vec::with_capacity(messages.len() - dropped + 1);
    let mut replacement = Some(replacement);
    for (i, message) in messages.into_iter().enumerate() {
        if i == tail
            && let Some(replacement) = replacement.take()
        {
            out.push(replacement(dropped));
        }
        if i < head || i >= tail || Some(i) == pinned {
            out.push(message);
        }
    }
    out
}

fn omission_marker(dropped: usize) -> AgentMessage {
    AgentMessage::user(format!("[... {dropped} earlier messages omitted to fit the context window ...]"))
}

/// Level 4 (the fallback): the first user message, a marker, and as many of the newest turns as
/// fit in `budget`, the newest always.
pub fn keep_within_budget(messages: Vec<AgentMessage>, budget: usize, counter: &dyn TokenCounter) -> Vec<AgentMessage> {
    let groups = groups(&messages);
    let Some(last) = groups.last() else { return messages };
    let pinned = first_user(&messages);
    let reserved = pinned.map_or(0, |i| message_tokens(&messages[i], counter))
        + message_tokens(&omission_marker(messages.len()), counter);
    let room = budget.saturating_sub(reserved);
    let mut start = last.start;
    let mut used: usize = messages[last.clone()].iter().map(|m| message_tokens(m, counter)).sum();
    for group in groups.iter().rev().skip(1) {
        let cost: usize = messages[group.clone()].iter().map(|m| message_tokens(m, counter)).sum();
        if used + cost > room {
            break;
        }
        used += cost;
        start = group.start;
    }
    cut_between(messages, 0, start, omission_marker)
}

/// The last resort: shortens the largest text blocks (of user messages, tool results and unsigned
/// assistant text) to a common cap, around a `[... N characters truncated ...]` marker, so that
/// the history fits `budget` with as much text kept as possible. Returns whether it fits.
pub fn shorten_texts(messages: &mut [AgentMessage], budget: usize, counter: &dyn TokenCounter) -> bool {
    // Texts this short are not worth cutting; each cut adds a marker of about this many tokens.
    const FLOOR_TOKENS: usize = 16;
    const MARKER_TOKENS: usize = 12;
    // The estimate of bytes per token is corrected by a few more passes at most.
    for _ in 0..8 {
        let total = total_tokens(messages, counter);
        if total <= budget {
            return true;
        }
        let mut blocks: Vec<(usize, &mut String)> = messages
            .iter_mut()
            .flat_map(shortenable_texts)
            .map(|text| (counter.count(text), text))
            .filter(|(tokens, _)| *tokens > FLOOR_TOKENS)
            .collect();
        if blocks.is_empty() {
            return false;
        }
        let shortenable: usize = blocks.iter().map(|(tokens, _)| tokens).sum();
        let available = budget.saturating_sub(total - shortenable);
        let mut sizes: Vec<usize> = blocks.iter().map(|(tokens, _)| *tokens).collect();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let cap = water_level(&sizes, available, MARKER_TOKENS).max(FLOOR_TOKENS);
        let mut shortened = false;
        for (tokens, text) in &mut blocks {
            if *tokens > cap {
                // Assume bytes per token are even across the text; the next pass corrects.
                let shorter = cut_middle(text, text.len() * cap / *tokens);
                shortened |= shorter.len() < text.len();
                **text = shorter;
            }
        }
        if !shortened {
            return false;
        }
    }
    total_tokens(messages, counter) <= budget
}

/// The largest cap `c` such that every size above it cut to `c` (plus a marker each) and the
/// others kept add up to at most `available`. `sizes` are sorted, largest first.
fn water_level(sizes: &[usize], available: usize, marker: usize) -> usize {
    let mut rest: usize = sizes.iter().sum();
    for (j, &size) in sizes.iter().enumerate() {
        rest -= size;
        let capped = j + 1;
        let room = available.saturating_sub(rest + marker * capped);
        let cap = room / capped;
        if sizes.get(capped).is_none_or(|&next| cap >= next) {
            return cap.min(size);
        }
    }
    0
}

fn shortenable_texts(message: &mut AgentMessage) -> impl Iterator<Item = &mut String> {
    let (content, unsigned_only) = match message {
        AgentMessage::Llm(Message::User(m)) => (&mut m.content[..], false),
        AgentMessage::Llm(Message::ToolResult(m)) => (&mut m.content[..], false),
        AgentMessage::Llm(Message::Assistant(m)) => (&mut m.content[..], true),
        AgentMessage::Extension(_) => (&mut [][..], false),
    };
    content.iter_mut().filter_map(move |block| match block {
        Content::Text { text, signature } if !(unsigned_only && signature.is_some()) => Some(text),
        _ => None,
    })
}

/// About `keep_bytes` of `text`, head and tail, around a marker; cut on character boundaries.
pub(crate) fn cut_middle(text: &str, keep_bytes: usize) -> String {
    let marker_guess = 40;
    let keep = keep_bytes.saturating_sub(marker_guess);
    let mut head = keep / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (keep - keep / 2);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let omitted = text[head..tail].chars().count();
    format!("{}[... {omitted} characters truncated ...]{}", &text[..head], &text[tail..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_head_and_tail_in_max_lines() {
        let text: String = (1..=200).map(|i| format!("line {i}\n")).collect();
        let cut = truncate_lines(&text, 50).unwrap();
        let lines: Vec<&str> = cut.lines().collect();
        assert_eq!(lines.len(), 50);
        assert_eq!(lines[0], "line 1");
        assert_eq!(lines[24], "line 25");
        assert_eq!(lines[25], "[... 151 lines truncated ...]");
        assert_eq!(lines[26], "line 177");
        assert_eq!(lines[49], "line 200");
        assert_eq!(truncate_lines(&text, 200), None);
        assert_eq!(truncate_lines("a\nb", 1).unwrap(), "[... 2 lines truncated ...]");
    }

    #[test]
    fn the_water_level_cuts_the_largest_first() {
        // 1,000 + 100 + 10 with room for 400: only the largest is capped, at 400 - 110 - 12.
        assert_eq!(water_level(&[1_000, 100, 10], 400, 12), 278);
        // Room for 150: both large ones capped at (150 - 10 - 24) / 2 = 58.
        assert_eq!(water_level(&[1_000, 100, 10], 150, 12), 58);
        // No room at all.
        assert_eq!(water_level(&[1_000, 100, 10], 5, 12), 0);
    }

    #[test]
    fn cutting_the_middle_respects_characters() {
        let text = "é".repeat(1000);
        let cut = cut_middle(&text, 500);
        assert!(cut.len() < 600);
        assert!(cut.starts_with('é') && cut.ends_with('é'));
        assert!(cut.contains("characters truncated"));
    }
}
