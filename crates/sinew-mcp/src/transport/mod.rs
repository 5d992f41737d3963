//! Transports carry JSON-RPC messages; the client does the protocol.
//!
//! A transport delivers what arrives to an [`Inbox`] (in order, with back-pressure) and sends what
//! the client gives it. Stdio has one stream each way; HTTP turns each message into a POST whose
//! response (JSON or an SSE stream) it reads on a task of its own.

pub(crate) mod http;
pub(crate) mod stdio;

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::error::McpError;
use crate::jsonrpc::{Message, RequestId};

/// How many received messages may wait for the client before a transport stops reading.
pub(crate) const INBOX_CAPACITY: usize = 256;

/// What a transport hands the client.
#[derive(Debug)]
pub(crate) enum Inbound {
    Message(Message),
    /// A request of ours can no longer be answered (its HTTP response failed).
    RequestFailed {
        id: RequestId,
        error: McpError,
    },
    /// The connection is gone; nothing more will arrive.
    Closed(McpError),
}

pub(crate) type Inbox = mpsc::Sender<Inbound>;

/// One message to send, with what HTTP transports put in headers.
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    pub(crate) body: Bytes,
    /// The id, for requests.
    pub(crate) id: Option<RequestId>,
    /// The method, for requests and notifications (`Mcp-Method`).
    pub(crate) method: Option<String>,
    /// `Mcp-Name`: the tool, prompt or resource a request is about.
    pub(crate) name: Option<String>,
    /// More headers (`Mcp-Param-*`).
    pub(crate) headers: Vec<(String, String)>,
    /// `MCP-Protocol-Version` (none on `initialize`).
    pub(crate) protocol_version: Option<String>,
    /// The stateless revision's headers apply (`Mcp-Method`, `Mcp-Name`).
    pub(crate) stateless: bool,
}

impl Outgoing {
    pub(crate) fn plain(body: Vec<u8>) -> Self {
        Outgoing {
            body: body.into(),
            id: None,
            method: None,
            name: None,
            headers: Vec::new(),
            protocol_version: None,
            stateless: false,
        }
    }
}

#[async_trait]
pub(crate) trait Transport: Send + Sync {
    /// Sends one message. For a request, a failure here means it was not delivered.
    async fn send(&self, message: Outgoing) -> Result<(), McpError>;

    /// The handshake is over at `version`: a transport may open its server-to-client stream
    /// (before the first request, so that nothing the server sends on it is lost).
    async fn connected(&self, _version: &str) {}

    /// Ends the connection (idempotent).
    async fn close(&self);
}
