//! Content blocks: what a message is made of.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One block of message content.
///
/// Serialized with a `"type"` discriminant (`"text"`, `"image"`, `"imageUrl"`, `"document"`,
/// `"documentUrl"`, `"audio"`, `"thinking"`, `"toolCall"`, `"opaque"`). Optional fields are omitted when empty, so plain content stays small on disk.
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
    /// An image at a URL the service fetches itself.
    #[serde(rename_all = "camelCase")]
    ImageUrl {
        /// Where the image is (`https://`, or a service's own storage such as `gs://`).
        url: String,
        /// The image's media type, when known (Gemini needs it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A document (a PDF, plain text...), base64-encoded.
    #[serde(rename_all = "camelCase")]
    Document {
        /// The document's bytes, base64-encoded (no `data:` URL prefix).
        data: String,
        /// The document's media type, such as `"application/pdf"`.
        mime_type: String,
        /// A file name, for services that show or need one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// A document at a URL the service fetches itself.
    #[serde(rename_all = "camelCase")]
    DocumentUrl {
        /// Where the document is.
        url: String,
        /// The document's media type, such as `"application/pdf"`.
        mime_type: String,
        /// A file name, for services that show or need one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    /// Audio, base64-encoded.
    #[serde(rename_all = "camelCase")]
    Audio {
        /// The audio's bytes, base64-encoded.
        data: String,
        /// The audio's media type, such as `"audio/wav"` or `"audio/mpeg"`.
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

    /// An image the service fetches from `url`.
    pub fn image_url(url: impl Into<String>) -> Self {
        Content::ImageUrl { url: url.into(), mime_type: None }
    }

    /// A document block from base64 data.
    pub fn document(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Document { data: data.into(), mime_type: mime_type.into(), name: None }
    }

    /// A document the service fetches from `url`.
    pub fn document_url(url: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::DocumentUrl { url: url.into(), mime_type: mime_type.into(), name: None }
    }

    /// An audio block from base64 data.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Audio { data: data.into(), mime_type: mime_type.into() }
    }

    /// What kind of block this is, as errors name it (`"image URL"`, `"document"`...).
    pub fn kind(&self) -> &'static str {
        match self {
            Content::Text { .. } => "text",
            Content::Image { .. } => "image",
            Content::ImageUrl { .. } => "image URL",
            Content::Document { .. } => "document",
            Content::DocumentUrl { .. } => "document URL",
            Content::Audio { .. } => "audio",
            Content::Thinking { .. } => "thinking",
            Content::ToolCall { .. } => "tool call",
            Content::Opaque { .. } => "opaque block",
        }
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

/// [`join_text`] borrowed when `content` holds one text block, as a tool's output usually does:
/// request builders write it as it is.
///
/// ```
/// use std::borrow::Cow;
/// use sinew_core::{Content, join_text, joined_text};
///
/// let one = [Content::text("done"), Content::image("aGk=", "image/png")];
/// assert!(matches!(joined_text(&one, "\n"), Cow::Borrowed("done")));
/// let two = [Content::text("a"), Content::text("")];
/// assert_eq!(joined_text(&two, "\n"), join_text(&two, "\n"));
/// assert_eq!(joined_text(&two, "\n"), "a\n");
/// ```
pub fn joined_text<'a>(content: &'a [Content], sep: &str) -> std::borrow::Cow<'a, str> {
    let mut texts = content.iter().filter_map(Content::as_text);
    match (texts.next(), texts.next()) {
        (Some(only), None) => std::borrow::Cow::Borrowed(only),
        _ => std::borrow::Cow::Owned(join_text(content, sep)),
    }
}
