//! Token counting for messages (REQ-054, REQ-055).

use sinew_core::{AgentMessage, Content, Message, TokenCounter};

/// Per-message overhead of a user or assistant message (role markers and separators).
pub const MESSAGE_OVERHEAD: usize = 4;
/// Per-message overhead of a tool result (the call id and wrapping come on top of the content).
pub const TOOL_RESULT_OVERHEAD: usize = 8;

/// The tokens an image costs: `clamp(raw_bytes / 750, 85, 16000)`, with `raw_bytes` the size of
/// the decoded base64 data.
pub fn image_tokens(base64_len: usize) -> usize {
    let raw_bytes = base64_len / 4 * 3;
    (raw_bytes / 750).clamp(85, 16_000)
}

/// The tokens an image behind a URL is counted at: its size is unknown, so a typical photo's.
pub const IMAGE_URL_TOKENS: usize = 1_600;
/// The tokens a document behind a URL is counted at: a few pages'.
pub const DOCUMENT_URL_TOKENS: usize = 5_000;

/// The tokens a document costs: `raw_bytes / 30` (a PDF page of ~50 KB is ~1,600 tokens of text
/// and page image), at least 100.
pub fn document_tokens(base64_len: usize) -> usize {
    (base64_len / 4 * 3 / 30).max(100)
}

/// The tokens audio costs: `raw_bytes / 1000` (16 kHz 16-bit audio is 32 KB, and ~32 tokens, a
/// second), at least 32.
pub fn audio_tokens(base64_len: usize) -> usize {
    (base64_len / 4 * 3 / 1_000).max(32)
}

/// The tokens of content blocks. Signatures are not counted, except the encrypted payload of
/// redacted thinking, which is sent back in its place.
pub fn content_tokens(content: &[Content], counter: &dyn TokenCounter) -> usize {
    content.iter().map(|block| block_tokens(block, counter)).sum()
}

fn block_tokens(block: &Content, counter: &dyn TokenCounter) -> usize {
    match block {
        Content::Text { text, .. } => counter.count(text),
        Content::Image { data, .. } => image_tokens(data.len()),
        Content::ImageUrl { url, .. } => counter.count(url) + IMAGE_URL_TOKENS,
        // Text runs about four bytes a token; other documents (PDF pages) by `document_tokens`.
        Content::Document { data, mime_type, .. } if mime_type.starts_with("text/") => (data.len() / 4 * 3 / 4).max(1),
        Content::Document { data, .. } => document_tokens(data.len()),
        Content::DocumentUrl { url, .. } => counter.count(url) + DOCUMENT_URL_TOKENS,
        Content::Audio { data, .. } => audio_tokens(data.len()),
        Content::Thinking { thinking, signature, redacted, .. } => {
            let hidden = if *redacted { signature.as_deref().map_or(0, |s| counter.count(s)) } else { 0 };
            counter.count(thinking) + hidden
        }
        Content::ToolCall { name, arguments, .. } => counter.count(name) + counter.count_json(arguments),
        Content::Opaque { data, .. } => counter.count_json(data),
        // A kind of block added later: its JSON is a fair measure.
        other => serde_json::to_value(other).map_or(0, |value| counter.count_json(&value)),
    }
}

/// The tokens of one message, overhead included. Extension messages are never sent: zero.
pub fn message_tokens(message: &AgentMessage, counter: &dyn TokenCounter) -> usize {
    match message {
        AgentMessage::Llm(Message::User(m)) => content_tokens(&m.content, counter) + MESSAGE_OVERHEAD,
        AgentMessage::Llm(Message::Assistant(m)) => content_tokens(&m.content, counter) + MESSAGE_OVERHEAD,
        AgentMessage::Llm(Message::ToolResult(m)) => content_tokens(&m.content, counter) + TOOL_RESULT_OVERHEAD,
        AgentMessage::Extension(_) => 0,
    }
}

/// The tokens of a whole history.
pub fn total_tokens(messages: &[AgentMessage], counter: &dyn TokenCounter) -> usize {
    messages.iter().map(|m| message_tokens(m, counter)).sum()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sinew_core::{AssistantMessage, ExtensionMessage, HeuristicTokenCounter, ToolResultMessage};

    use super::*;

    const H: &HeuristicTokenCounter = &HeuristicTokenCounter;

    #[test]
    fn images_cost_their_size_within_bounds() {
        // 750 raw bytes per token, at least 85, at most 16,000.
        assert_eq!(image_tokens(0), 85);
        assert_eq!(image_tokens(4 * 25_000), 100); // 75,000 raw bytes
        assert_eq!(image_tokens(4 * 10_000_000), 16_000);
        assert_eq!(content_tokens(&[Content::image("A".repeat(4 * 25_000), "image/png")], H), 100);
    }

    #[test]
    fn messages_carry_their_overhead() {
        let user = AgentMessage::user("hello"); // 2 tokens
        assert_eq!(message_tokens(&user, H), 2 + 4);

        let mut assistant = AssistantMessage::new("p", "m");
        assistant.content = vec![Content::text("abcdefgh"), Content::tool_call("c1", "bash", json!({"c": "ls"}))];
        // 2 for the text, 1 for "bash", 3 for `{"c":"ls"}` (10 bytes).
        assert_eq!(message_tokens(&assistant.into(), H), 2 + 1 + 3 + 4);

        let result = ToolResultMessage::error("c1", "bash", "oops"); // 1 token
        assert_eq!(message_tokens(&result.into(), H), 1 + 8);

        let extension = ExtensionMessage { kind: "note".into(), data: json!("x".repeat(1000)) };
        assert_eq!(message_tokens(&extension.into(), H), 0);
    }

    #[test]
    fn thinking_counts_its_text_and_a_redacted_payload() {
        let visible =
            Content::Thinking { thinking: "abcd".into(), signature: Some("s".repeat(400)), redacted: false, id: None };
        let redacted =
            Content::Thinking { thinking: String::new(), signature: Some("s".repeat(400)), redacted: true, id: None };
        assert_eq!(content_tokens(&[visible], H), 1);
        assert_eq!(content_tokens(&[redacted], H), 100);
    }

    #[test]
    fn opaque_blocks_count_as_their_json() {
        let block = Content::Opaque { provider: "anthropic".into(), data: json!({"type": "server_tool_use"}) };
        assert_eq!(content_tokens(&[block], H), r#"{"type":"server_tool_use"}"#.len().div_ceil(4));
    }
}
