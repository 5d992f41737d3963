//! The configuration's MCP servers, connected at start; their tools join the agent's.

use std::sync::Arc;
use std::time::Duration;

use sinew::AgentTool;
use sinew::mcp::{McpClient, StdioCommand};

use crate::config::McpServerConfig;

/// How long one server may take to start and list its tools.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A connected server and its tools (named `{prefix}__{tool}`).
pub(crate) struct Connected {
    pub(crate) name: String,
    pub(crate) client: McpClient,
    pub(crate) tools: Vec<Arc<dyn AgentTool>>,
    pub(crate) require_approval: bool,
}

/// Connects every server at once. A server that fails is reported by name and left out; the
/// others are used.
pub(crate) async fn connect_all<'a>(
    servers: impl IntoIterator<Item = (&'a String, &'a McpServerConfig)>,
) -> (Vec<Connected>, Vec<String>) {
    let attempts = servers.into_iter().map(|(name, server)| async move {
        let connected = tokio::time::timeout(CONNECT_TIMEOUT, connect(name, server)).await;
        match connected {
            Ok(Ok(connected)) => Ok(connected),
            Ok(Err(error)) => Err(format!("MCP server `{name}` is not available: {error}")),
            Err(_) => Err(format!("MCP server `{name}` did not answer within {}s", CONNECT_TIMEOUT.as_secs())),
        }
    });
    let mut connected = Vec::new();
    let mut failures = Vec::new();
    for result in futures::future::join_all(attempts).await {
        match result {
            Ok(server) => connected.push(server),
            Err(failure) => failures.push(failure),
        }
    }
    (connected, failures)
}

async fn connect(name: &str, server: &McpServerConfig) -> Result<Connected, String> {
    let builder = McpClient::builder().name(name);
    let client = match (&server.command, &server.url) {
        (Some(command), None) => {
            let mut stdio = StdioCommand::new(command).args(&server.args);
            for (key, value) in &server.env {
                stdio = stdio.env(key, value);
            }
            for name in &server.inherit_env {
                stdio = stdio.inherit(name);
            }
            if let Some(dir) = &server.cwd {
                stdio = stdio.cwd(dir);
            }
            builder.connect_stdio(stdio).await.map_err(|e| e.to_string())?
        }
        (None, Some(url)) => {
            let headers: Vec<(String, String)> = server.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            builder.headers(headers).connect_http(url).await.map_err(|e| e.to_string())?
        }
        _ => return Err("give it either `command` (stdio) or `url` (HTTP)".into()),
    };
    let prefix = server.prefix.as_deref().unwrap_or(name);
    match client.agent_tools(Some(prefix)).await {
        Ok(tools) => Ok(Connected { name: name.to_owned(), client, tools, require_approval: server.require_approval }),
        Err(error) => {
            client.close().await;
            Err(format!("listing its tools failed: {error}"))
        }
    }
}
