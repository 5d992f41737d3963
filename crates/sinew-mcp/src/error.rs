//! What can go wrong talking to an MCP server.

use std::time::Duration;

use serde_json::Value;
use sinew_core::ToolError;

/// An MCP failure. Every variant says what happened in terms a user can act on; all of them
/// become [`ToolError::Failed`] when an MCP tool call fails (see [`McpError::into_tool_error`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The transport failed: a connection refused, a stream cut, a process that would not start.
    #[error("transport error: {0}")]
    Transport(String),
    /// The server answered over HTTP with a failure status and no JSON-RPC error.
    #[error("HTTP {status}: {message}")]
    Http {
        /// The HTTP status code.
        status: u16,
        /// An excerpt of the response body, or what the status means here (an expired session...).
        message: String,
    },
    /// The server broke the protocol: a malformed or oversized message, a missing result.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// Authorizing with the server failed: discovery, registration, the user's approval or the
    /// token endpoint, or a check that refused what a server sent (a foreign resource, a wrong
    /// issuer).
    #[error("authorization failed: {0}")]
    Authorization(String),
    /// The server answered with a JSON-RPC error.
    #[error("JSON-RPC error {code}: {message}")]
    JsonRpc {
        /// The JSON-RPC error `code` (see [`codes`]).
        code: i64,
        /// The error's `message`.
        message: String,
        /// The error's `data`, when the server sent any.
        data: Option<Value>,
    },
    /// A message could not be encoded or decoded.
    #[error("serialization error: {0}")]
    Serialization(String),
    /// Reading or writing the server's pipes failed.
    #[error("I/O error: {0}")]
    Io(String),
    /// The connection is gone: the server exited, closed its output, or the client was closed.
    #[error("connection closed: {0}")]
    ConnectionClosed(String),
    /// No answer came in time. A `notifications/cancelled` was sent for the request.
    #[error("`{method}` timed out after {after:?}")]
    Timeout {
        /// The request's method, e.g. `tools/call`.
        method: String,
        /// How long it waited: the request timeout, or the maximum request time when progress kept
        /// restarting it.
        after: Duration,
    },
    /// Our side cancelled the request. A `notifications/cancelled` was sent for it.
    #[error("`{method}` was cancelled")]
    Cancelled {
        /// The request's method, e.g. `tools/call`.
        method: String,
    },
    /// No protocol revision both sides speak.
    #[error("no common protocol version: we speak {ours}, the server offered {theirs}")]
    UnsupportedVersion {
        /// The protocol versions we speak, comma-separated.
        ours: String,
        /// The version or versions the server offered, comma-separated.
        theirs: String,
    },
}

/// JSON-RPC error codes of the protocol.
pub mod codes {
    /// -32700: the message was not valid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// -32600: the message is not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// -32601: the method does not exist or is not offered.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// -32602: the method's params are invalid.
    pub const INVALID_PARAMS: i64 = -32602;
    /// -32603: the receiver failed internally.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// 2026-07-28: a required HTTP header is missing or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// 2026-07-28: the requested protocol version is not supported; `data.supported` lists them.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

impl McpError {
    /// The JSON-RPC error code, for [`McpError::JsonRpc`].
    pub fn code(&self) -> Option<i64> {
        match self {
            McpError::JsonRpc { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// This error as a failed tool call of `tool` on `server`, with that context in the message.
    pub fn into_tool_error(self, server: &str, tool: &str) -> ToolError {
        match self {
            McpError::Cancelled { .. } => ToolError::Cancelled,
            error => ToolError::Failed(sinew_core::Failure::with_source(
                format!("MCP server `{server}`, tool `{tool}`: {error}"),
                error,
            )),
        }
    }

    pub(crate) fn io(error: &std::io::Error) -> Self {
        McpError::Io(error.to_string())
    }
}

impl From<serde_json::Error> for McpError {
    fn from(error: serde_json::Error) -> Self {
        McpError::Serialization(error.to_string())
    }
}
