//! Content blocks: what a message is made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of message content.
///
/// Serialized with a `"type"` discriminant (`"text"`, `"image"`, `"thinking"`, `"toolCall"`,
/// `"opaque"`). Optional fields are omitted when empty, so plain content stays small on disk.
///
/// # Provider-opaque data
/// Some providers hand out data that means nothing to us but must be sent back verbatim on the next
/// turn, or the service rejects the request or loses its reasoning state. Each has a home here:
///
/// | data | where it lives |
/// |---|---|
/// | Anthropic / Bedrock thinking signature | [`Content::Thinking::signature`] |
/// | Anthropic `redacted_thinking`, Bedrock `redactedContent` | `Thinking { redacted: true, signature: <the data> }` |
/// | OpenAI Responses reasoning item id and `encrypted_content` | `Thinking { id, signature }` |
/// | Gemini `thoughtSignature` on a text, thought or function-call part | the block's `signature` |
/// | Server-tool blocks and anything else a provider does not model | [`Content::Opaque`] |
///
/// Signatures are only valid for the provider that issued them: a request builder sends them back
/// only when the assistant message's `provider` is its own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Provider-opaque signature attached to this text (Gemini `thoughtSignature`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// An image, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Image {
        /// The image bytes, base64-encoded (no `data:` URL prefix).
        data: String,
        /// The image's media type, such as `"image/png"`.
        mime_type: String,
    },
    /// Model reasoning. `thinking` is the visible text (or summary); `signature` the opaque token.
    Thinking {
        /// The visible reasoning text or summary; empty when redacted.
        thinking: String,
        /// The provider's opaque token for the reasoning, sent back verbatim; `None` when it gave
        /// none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// The reasoning was redacted by the provider; `signature` holds the encrypted payload.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
        /// Provider item id (OpenAI Responses reasoning item id).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// A call of a tool, requested by the model.
    ToolCall {
        /// The call's id, given by the provider; the tool result names it.
        id: String,
        /// The name of the tool called.
        name: String,
        /// The arguments, usually a JSON object (a string holding the raw text when the model's
        /// JSON did not parse).
        arguments: Value,
        /// Provider-opaque signature attached to the call (Gemini `thoughtSignature`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// A block sinew does not model, kept verbatim so it round-trips to the provider that made it.
    Opaque {
        /// The `provider_id` of the provider that produced it.
        provider: String,
        /// The block as the provider sent it.
        data: Value,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into(), signature: None }
    }

    /// An image block from base64 data.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image { data: data.into(), mime_type: mime_type.into() }
    }

    /// A thinking block without signature.
    pub fn thinking(thinking: impl Into<String>) -> Self {
        Content::Thinking { thinking: thinking.into(), signature: None, redacted: false, id: None }
    }

    /// A tool call block.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Content::ToolCall { id: id.into(), name: name.into(), arguments, signature: None }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The tool call in this block, if it is one.
    pub fn as_tool_call(&self) -> Option<ToolCallRef<'_>> {
        match self {
            Content::ToolCall { id, name, arguments, .. } => Some(ToolCallRef { id, name, arguments }),
            _ => None,
        }
    }
}

/// A borrowed view of a [`Content::ToolCall`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ToolCallRef<'a> {
    /// The call's id, given by the provider.
    pub id: &'a str,
    /// The name of the tool called.
    pub name: &'a str,
    /// The call's arguments.
    pub arguments: &'a Value,
}

/// Joins the text blocks of `content`, separated by `sep`.
pub fn join_text(content: &[Content], sep: &str) -> String {
    let mut out = String::new();
    for text in content.iter().filter_map(Content::as_text) {
        if !out.is_empty() {
            out.push_str(sep);
        }
        out.push_str(text);
    }
    out
}
