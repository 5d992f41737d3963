//! sinew's MCP client: connect to Model Context Protocol servers and use their tools as agent
//! tools.
//!
//! - **Transports**: stdio (a subprocess; [`StdioCommand`]), Streamable HTTP, and the legacy
//!   HTTP+SSE transport of 2024-11-05, tried when a server refuses Streamable HTTP.
//! - **Every protocol era**: the stateless 2026-07-28 revision (`server/discover`, `_meta` on
//!   every request, `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` headers, a retry on -32022, and
//!   `input_required` results answered and retried), falling back to the `initialize` handshake
//!   (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05). [`ProtocolEra`] can pin one.
//! - **JSON-RPC**: concurrent requests, per-request timeouts (restarted by progress),
//!   cancellation with `notifications/cancelled`, pagination, and the server's own requests:
//!   `ping`, `roots/list`, `sampling/createMessage` and `elicitation/create` are answered through
//!   the builder's handlers, or with "method not found". `tools/list_changed` reloads the tools.
//! - **Tools**: [`McpToolAdapter`] makes each MCP tool an [`sinew_core::AgentTool`]
//!   ([`McpClient::agent_tools`]), optionally prefixed `{prefix}__{name}`.
//! - **Authorization**: [`OAuth`] answers a server's 401 with MCP's OAuth 2.1 flow (resource
//!   and authorization server metadata discovery, client registration or metadata documents,
//!   PKCE, refresh, scope step-up), keeping tokens in a [`TokenStore`]; and the grants without
//!   a person (client credentials, JWT bearer, enterprise-managed identity assertions) and DPoP.
//! - **Hostile servers**: garbage lines are skipped with a warning, oversized messages close the
//!   connection with a clear error, a server that exits fails its pending requests with its exit
//!   status and last stderr lines, a hung one times out. A closed client can be connected again.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sinew_mcp::McpError> {
//! use sinew_mcp::{McpClient, StdioCommand};
//!
//! let client = McpClient::builder()
//!     .connect_stdio(StdioCommand::new("uvx").args(["mcp-server-git"]))
//!     .await?;
//! let tools = client.agent_tools(Some("git")).await?; // git__git_status, ...
//! # drop(tools);
//! # Ok(()) }
//! ```

mod auth;
mod client;
mod error;
mod jsonrpc;
mod protocol;
mod tool;
mod transport;

pub use auth::{
    Assertion, AuthorizationHandler, AuthorizationServerMetadata, ClientCredentials, FileTokenStore, FollowRedirect,
    Grant, IdentityAssertion, LoopbackRedirect, MemoryTokenStore, OAuth, OAuthConfig, ProtectedResourceMetadata,
    SigningKey, StoredAuthorization, TokenStore, Tokens,
};
pub use client::{
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_REQUEST_TIME, DEFAULT_REQUEST_TIMEOUT, McpClient, McpClientBuilder,
    Progress, ProgressCallback, RequestOptions, ServerRequestHandler,
};
pub use error::{McpError, codes};
pub use jsonrpc::{RequestId, RpcError};
pub use protocol::{
    CallToolResult, HANDSHAKE_VERSIONS, Implementation, LATEST_HANDSHAKE_VERSION, LATEST_VERSION, LEGACY_SSE_VERSION,
    McpToolInfo, ProtocolEra, Root, STATELESS_VERSIONS, ServerDescription, is_known_version, is_stateless_version,
    schema_defaults,
};
pub use tool::{McpToolAdapter, to_tool_result};
pub use transport::http::{HeaderProvider, Refusal};
pub use transport::stdio::{DEFAULT_INHERITED_ENV, StdioCommand};
