//! Compaction that asks a model to summarise what it drops.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use sinew_core::{
    AgentMessage, CancellationToken, CompactionStrategy, Content, ContextConfig, Message, StreamEvent, StreamProvider,
    StreamRequest,
};

use crate::count::total_tokens;
use crate::groups::{first_user, groups, head_end, tail_start};
use crate::tiered::{compact_messages, cut_between};

/// The instructions given to the summarising model.
pub const DEFAULT_SUMMARY_PROMPT: &str = "You compact the history of a conversation between a user and an AI \
assistant that uses tools. Summarise the transcript you are given so the assistant can continue the work \
without it: the user's goals and constraints, decisions made, files and commands involved, results obtained, \
errors met and how they were handled, and what remains to do. Be concise and factual; keep names, paths and \
numbers exact. Answer with the summary only.";

/// Each block of the transcript is cut to this many characters (head and tail kept).
const BLOCK_CHARS: usize = 4_000;

/// Replaces the middle of an over-budget history (all but the first `keep_first` and the last
/// `keep_recent` messages, the first user message always kept) with a summary written by a
/// model, in one user message starting with `[Summary of N earlier messages]`.
///
/// When the model call fails, times out or answers nothing, or the result still does not fit,
/// the [tiered cascade](crate::compact_messages) does the work instead: compaction never fails.
pub struct SummarizingCompaction<P> {
    provider: P,
    model: String,
    prompt: String,
    max_summary_tokens: u32,
    timeout: Duration,
}

impl<P> std::fmt::Debug for SummarizingCompaction<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummarizingCompaction")
            .field("model", &self.model)
            .field("max_summary_tokens", &self.max_summary_tokens)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<P: StreamProvider> SummarizingCompaction<P> {
    /// Summaries by `model` of `provider`, at most 2,048 tokens, within 60 seconds.
    pub fn new(provider: P, model: impl Into<String>) -> Self {
        SummarizingCompaction {
            provider,
            model: model.into(),
            prompt: DEFAULT_SUMMARY_PROMPT.to_owned(),
            max_summary_tokens: 2_048,
            timeout: Duration::from_secs(60),
        }
    }

    /// Replaces the summarising instructions.
    #[must_use]
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// The summary's output limit.
    #[must_use]
    pub fn with_max_summary_tokens(mut self, tokens: u32) -> Self {
        self.max_summary_tokens = tokens;
        self
    }

    /// How long the summarising call may take before the cascade takes over.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn summary(&self, transcript: &str) -> Result<String, String> {
        let question = Message::user(transcript);
        let messages = [&question];
        let mut request = StreamRequest::new(&self.model, &self.prompt, &messages);
        request.max_tokens = Some(self.max_summary_tokens);
        let cancel = CancellationToken::new();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let mut stream = self.provider.stream(&request, cancel);
        let call = async {
            while let Some(event) = stream.next().await {
                match event {
                    StreamEvent::Done(message) => return Ok(message.text()),
                    StreamEvent::Error { error, .. } => return Err(error.to_string()),
                    _ => {}
                }
            }
            Err("the stream ended without a message".to_owned())
        };
        let text = tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| format!("no summary within {:?}", self.timeout))??;
        if text.trim().is_empty() { Err("the summary was empty".to_owned()) } else { Ok(text) }
    }
}

#[async_trait]
impl<P: StreamProvider> CompactionStrategy for SummarizingCompaction<P> {
    async fn compact(&self, messages: &[AgentMessage], config: &ContextConfig) -> Option<Vec<AgentMessage>> {
        let counter = &*config.token_counter;
        if total_tokens(messages, counter) <= config.history_budget() {
            return None;
        }
        let groups = groups(messages);
        let head = head_end(&groups, config.keep_first);
        let tail = tail_start(&groups, messages.len(), config.keep_recent).max(head);
        let pinned = first_user(messages).filter(|&i| i >= head && i < tail);
        let middle = (head..tail).filter(|&i| Some(i) != pinned).map(|i| &messages[i]);
        let transcript = transcript(middle, config.history_budget().saturating_mul(4));
        let summarized = match transcript {
            Some(transcript) => match self.summary(&transcript).await {
                Ok(summary) => Some(cut_between(messages.to_vec(), head, tail, |dropped| {
                    AgentMessage::user(format!("[Summary of {dropped} earlier messages]\n{summary}"))
                })),
                Err(error) => {
                    tracing::warn!(%error, "summarising compaction failed; falling back to the tiered cascade");
                    None
                }
            },
            None => None,
        };
        let candidate = summarized.unwrap_or_else(|| messages.to_vec());
        Some(match compact_messages(&candidate, config) {
            Cow::Borrowed(_) => candidate,
            Cow::Owned(compacted) => compacted,
        })
    }
}

/// The messages as a plain transcript of at most about `max_bytes`; `None` when there is nothing.
fn transcript<'a>(messages: impl Iterator<Item = &'a AgentMessage>, max_bytes: usize) -> Option<String> {
    let mut out = String::new();
    for message in messages {
        let Some(message) = message.as_llm() else { continue };
        match message {
            Message::User(m) => render("User", &m.content, &mut out),
            Message::Assistant(m) => render("Assistant", &m.content, &mut out),
            Message::ToolResult(m) => {
                let label = format!("Result of {}{}", m.tool_name, if m.is_error { " (error)" } else { "" });
                render(&label, &m.content, &mut out);
            }
        }
    }
    if out.is_empty() {
        return None;
    }
    if out.len() > max_bytes {
        out = crate::tiered::cut_middle(&out, max_bytes);
    }
    Some(format!("<transcript>\n{out}</transcript>"))
}

fn render(label: &str, content: &[Content], out: &mut String) {
    for block in content {
        let _ = match block {
            Content::Text { text, .. } if !text.trim().is_empty() => {
                writeln!(out, "{label}: {}", clip(text))
            }
            Content::ToolCall { name, arguments, .. } => {
                writeln!(out, "{label} called {name} {}", clip(&arguments.to_string()))
            }
            Content::Image { .. } | Content::ImageUrl { .. } => writeln!(out, "{label}: [an image]"),
            Content::Document { name, .. } | Content::DocumentUrl { name, .. } => match name {
                Some(name) => writeln!(out, "{label}: [a document: {name}]"),
                None => writeln!(out, "{label}: [a document]"),
            },
            Content::Audio { .. } => writeln!(out, "{label}: [audio]"),
            _ => Ok(()),
        };
    }
}

fn clip(text: &str) -> Cow<'_, str> {
    if text.len() <= BLOCK_CHARS {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(crate::tiered::cut_middle(text, BLOCK_CHARS))
    }
}
