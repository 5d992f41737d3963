//! `sinew serve`: ADK's `api_server` dialect over the ADK apps of a directory of AgentConfig YAML
//! files (`docs/server.md`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use sinew::adk::{FileArtifactService, Llm, ModelAdapter, ToolAdapter};
use sinew::tools::{Workspace, default_tools};
use sinew_server::{AdkApi, AgentRegistry, ServerConfig, serve, session_service_from_uri};

use crate::config::Config;
use crate::exit::UsageError;
use crate::providers::{Overrides, Providers};

/// Serves the ADK apps of a directory (each subdirectory with a root_agent.yaml) in the dialect of
/// ADK's api_server. Models are PROVIDER/MODEL names of the providers sinew finds; tools are
/// sinew's built-in ones (confined to --workspace) and those of the configured MCP servers.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The directory of apps.
    #[arg(value_name = "AGENTS_DIR")]
    agents: PathBuf,
    /// The address to listen on (loopback unless you say otherwise).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// The port to listen on; 0 picks a free one (printed on start).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Where sessions live: memory://, sqlite:///path, postgresql://…
    /// (default: sqlite:///AGENTS_DIR/.adk/sessions.db).
    #[arg(long = "session_service_uri", alias = "session-service-uri", value_name = "URI")]
    session_service_uri: Option<String>,
    /// Keeps artifacts on disk under this directory (default: in memory).
    #[arg(long = "artifact_dir", alias = "artifact-dir", value_name = "DIR")]
    artifact_dir: Option<PathBuf>,
    /// Every request must carry `Authorization: Bearer <TOKEN>` (prefer SINEW_SERVER_TOKEN: a
    /// command line is visible to every user of the machine).
    #[arg(long, env = "SINEW_SERVER_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The directory the file tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
}

pub(crate) async fn run(args: ServeArgs, config: &Config) -> Result<()> {
    if !args.agents.is_dir() {
        bail!(UsageError(format!("{} is not a directory of apps", args.agents.display())));
    }
    if !sinew_server::is_loopback_host(&args.host) && args.token.is_none() {
        // The apps' tools run commands and write files: nobody else gets them without a token.
        bail!(UsageError(format!(
            "--host {} reaches other machines: set SINEW_SERVER_TOKEN (or --token) so that requests must carry it",
            args.host
        )));
    }
    let providers = Providers::discover(config, &Overrides { provider: None, base_url: None })?;
    let registry = providers.registry;
    let mut agents = AgentRegistry::new(move |name| {
        let (provider, model) = registry.resolve(name)?;
        Some(Arc::new(ModelAdapter::new(provider.clone(), model)) as Arc<dyn Llm>)
    });
    let root = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let workspace =
        Workspace::confined(&root).with_context(|| format!("cannot use {} as the workspace", root.display()))?;
    for tool in default_tools(&workspace) {
        agents = agents.tool(Arc::new(ToolAdapter::new(tool)));
    }
    let (connected, failures) = crate::mcp::connect_all(&config.mcp.servers).await;
    for failure in failures {
        eprintln!("sinew serve: warning: {failure}");
    }
    for server in &connected {
        for tool in &server.tools {
            agents = agents.tool(Arc::new(ToolAdapter::new(tool.clone())));
        }
    }

    let uri = match &args.session_service_uri {
        Some(uri) => uri.clone(),
        None => {
            let dir = args.agents.join(".adk");
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            format!("sqlite:///{}", dir.join("sessions.db").display())
        }
    };
    let sessions = session_service_from_uri(&uri).await.map_err(|e| UsageError(e.to_string()))?;
    let mut api = AdkApi::new(sessions).apps_from_dir(&args.agents, &agents).map_err(|e| UsageError(e.to_string()))?;
    if let Some(dir) = &args.artifact_dir {
        api = api.artifact_service(Arc::new(FileArtifactService::new(dir)?));
    }
    let mut server = ServerConfig::default();
    if let Some(token) = args.token {
        server = server.bearer_token(token);
    }
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let address = listener.local_addr()?;
    println!("sinew serve: ADK api_server on http://{address} (apps: {})", api_names(&args.agents));
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serve(listener, api, server, shutdown).await?;
    // The MCP servers' clients live until the server stops.
    drop(connected);
    Ok(())
}

fn api_names(dir: &std::path::Path) -> String {
    AgentRegistry::app_names(dir).map(|names| names.join(", ")).unwrap_or_default()
}
