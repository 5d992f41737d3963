//! Errors of providers and tools.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What went wrong: a message, and the error that caused it when there is one (a hyper, rustls
/// or I/O error), reachable through [`std::error::Error::source`]. Carried by
/// [`ProviderError::Network`] and [`ToolError::Failed`].
///
/// Two are equal when their messages are: the cause is for inspection, not identity. It
/// dereferences to its message.
#[derive(Clone)]
pub struct Failure {
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl Failure {
    /// `message`, caused by `source`.
    pub fn with_source(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Failure { message: message.into(), source: Some(Arc::new(source)) }
    }

    /// The message, without the cause's.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::ops::Deref for Failure {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure { message, source: None }
    }
}

impl From<&str> for Failure {
    fn from(message: &str) -> Self {
        Failure::from(message.to_owned())
    }
}

impl PartialEq for Failure {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for Failure {}

impl PartialEq<str> for Failure {
    fn eq(&self, other: &str) -> bool {
        self.message == other
    }
}

impl PartialEq<&str> for Failure {
    fn eq(&self, other: &&str) -> bool {
        self.message == *other
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.message, f)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The service rejected the request (a 4xx that is none of the cases below).
    #[error("api error{}: {message}", status.map(|s| format!(" (status {s})")).unwrap_or_default())]
    Api {
        /// The HTTP status, or the status a stream error stands for; `None` when a stream error
        /// named none.
        status: Option<u16>,
        /// The service's error text.
        message: String,
    },
    /// The service failed or is overloaded (5xx, 529); worth retrying.
    #[error("service unavailable (status {status}): {message}")]
    Unavailable {
        /// The HTTP status, or the status the service's stream error stands for.
        status: u16,
        /// The service's error text.
        message: String,
    },
    /// The connection failed or broke; worth retrying. The underlying error is its
    /// [`source`](std::error::Error::source).
    #[error("network error: {0}")]
    Network(#[source] Failure),
    /// The credentials were missing or refused.
    #[error("authentication failed: {0}")]
    Auth(String),
    /// Too many requests; retry after the given delay when the service said one.
    #[error("rate limited{}: {message}", retry_after_ms.map(|ms| format!(" (retry after {ms} ms)")).unwrap_or_default())]
    RateLimited {
        /// The wait the service asked for, in milliseconds; `None` when it named none.
        retry_after_ms: Option<u64>,
        /// The service's error text.
        message: String,
    },
    /// The prompt does not fit the model's context window.
    #[error("context overflow: {message}")]
    ContextOverflow {
        /// The service's error text.
        message: String,
    },
    /// The response could not be understood (malformed stream, bad JSON).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The call was cancelled.
    #[error("request cancelled")]
    Cancelled,
    /// The call ran out of time: its stream went quiet for too long, or its deadline passed. Not
    /// retried: a deadline is the caller's.
    #[error("timed out: {0}")]
    Timeout(String),
    /// Anything else, such as missing configuration or a request that cannot be built or signed.
    #[error("{0}")]
    Other(String),
}

impl ProviderError {
    /// Maps an HTTP status and response body to an error.
    ///
    /// Context overflow is checked first (a 400/413 with an empty body, or a known overflow
    /// phrase), then 429, then 401/403, then 5xx; anything else is [`ProviderError::Api`].
    pub fn classify(status: u16, message: impl Into<String>) -> ProviderError {
        let message = message.into();
        if is_context_overflow(status, &message) {
            ProviderError::ContextOverflow { message }
        } else if status == 429 {
            ProviderError::RateLimited { retry_after_ms: None, message }
        } else if status == 401 || status == 403 {
            ProviderError::Auth(message)
        } else if status >= 500 {
            ProviderError::Unavailable { status, message }
        } else {
            ProviderError::Api { status: Some(status), message }
        }
    }

    /// Whether retrying the same request may succeed: rate limits, network failures and
    /// unavailable services.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ProviderError::RateLimited { .. } | ProviderError::Network(_) | ProviderError::Unavailable { .. }
        )
    }

    /// The delay the service asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::RateLimited { retry_after_ms: Some(ms), .. } => Some(Duration::from_millis(*ms)),
            _ => None,
        }
    }
}

/// Phrases by which services say the prompt is too long (matched case-insensitively).
///
/// Each comes from a real service's error text; the comment names it.
pub const CONTEXT_OVERFLOW_PHRASES: &[&str] = &[
    "prompt is too long",                      // Anthropic
    "exceed context limit",                    // Anthropic: input length and max_tokens exceed context limit
    "input is too long for requested model",   // Amazon Bedrock
    "exceeds the context window",              // OpenAI Responses
    "context_length_exceeded",                 // OpenAI error code
    "maximum context length is",               // OpenAI Chat, vLLM, OpenRouter
    "exceeds the maximum number of tokens",    // Google Gemini
    "maximum prompt length is",                // xAI
    "reduce the length of the messages",       // Groq
    "too large for model with",                // Mistral
    "exceeds the available context size",      // llama.cpp server
    "greater than the context length",         // LM Studio
    "context window exceeds limit",            // MiniMax
    "exceeded model token limit",              // Kimi / Moonshot
    "exceeds the limit of",                    // GitHub Copilot
    "context length exceeded",                 // generic OpenAI-compatible servers
    "input length exceeds the context length", // Ollama
];

/// Whether a failed response means the prompt overflowed the context window.
///
/// True for a 400 or 413 with an empty body (Cerebras and Mistral answer so), or when `message`
/// contains one of [`CONTEXT_OVERFLOW_PHRASES`].
pub fn is_context_overflow(status: u16, message: &str) -> bool {
    if (status == 400 || status == 413) && message.trim().is_empty() {
        return true;
    }
    let lower = message.to_ascii_lowercase();
    CONTEXT_OVERFLOW_PHRASES.iter().any(|p| lower.contains(p))
}

/// Why a tool call failed. Each becomes an error tool result the model can react to.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    #[error("{0}")]
    /// The tool failed; the model sees the message. The error that caused it, when there is one
    /// (an I/O error...), is its [`source`](std::error::Error::source).
    Failed(#[source] Failure),
    /// The model called a tool the run does not have; holds the name it used.
    #[error("Tool {0} not found")]
    NotFound(String),
    /// The arguments do not fit the tool's parameters; holds what is wrong.
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    /// The call was cancelled before it finished.
    #[error("tool call cancelled")]
    Cancelled,
}

#[cfg(test)]
mod tests;
