//! MCP servers' tools on an agent: everything of [`sinew_mcp`], plus [`AgentMcpExt`].

use std::sync::Arc;

use sinew_agent::Agent;
use sinew_core::AgentTool;
pub use sinew_mcp::*;

/// Connects MCP servers and adds their tools to an [`Agent`] (REQ-119, REQ-133).
///
/// Each tool keeps the connection alive; it closes when the agent (and every other holder of its
/// tools) is dropped. Keep the [`McpClient`] yourself, with [`McpClientBuilder`] and
/// [`Agent::with_tools`], to close it explicitly or to configure roots, handlers and timeouts.
///
/// ```no_run
/// # async fn demo(agent: sinew::Agent) -> Result<(), sinew::mcp::McpError> {
/// use sinew::mcp::{AgentMcpExt, StdioCommand};
///
/// let agent = agent
///     .with_mcp_server_stdio(StdioCommand::new("npx").args(["-y", "@modelcontextprotocol/server-everything"]), Some("everything"))
///     .await?
///     .with_mcp_server_http("http://127.0.0.1:8000/mcp", Some("docs"))
///     .await?;
/// # drop(agent); Ok(()) }
/// ```
#[allow(async_fn_in_trait)]
pub trait AgentMcpExt: Sized {
    /// Spawns a stdio server and adds its tools, named `{prefix}__{name}` when a prefix is given.
    async fn with_mcp_server_stdio(self, command: StdioCommand, prefix: Option<&str>) -> Result<Self, McpError>;

    /// Connects to an HTTP server (Streamable HTTP, else legacy SSE) and adds its tools.
    async fn with_mcp_server_http(self, url: &str, prefix: Option<&str>) -> Result<Self, McpError>;

    /// Adds the tools of a connected client.
    async fn with_mcp_client(self, client: &McpClient, prefix: Option<&str>) -> Result<Self, McpError>;
}

impl AgentMcpExt for Agent {
    async fn with_mcp_server_stdio(self, command: StdioCommand, prefix: Option<&str>) -> Result<Self, McpError> {
        let client = McpClient::builder().connect_stdio(command).await?;
        self.with_mcp_client(&client, prefix).await
    }

    async fn with_mcp_server_http(self, url: &str, prefix: Option<&str>) -> Result<Self, McpError> {
        let client = McpClient::builder().connect_http(url).await?;
        self.with_mcp_client(&client, prefix).await
    }

    async fn with_mcp_client(self, client: &McpClient, prefix: Option<&str>) -> Result<Self, McpError> {
        let tools: Vec<Arc<dyn AgentTool>> = client.agent_tools(prefix).await?;
        Ok(self.with_tools(tools))
    }
}
