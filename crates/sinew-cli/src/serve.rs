//! `sinew serve`: ADK's `api_server` dialect over the ADK apps of a directory of AgentConfig YAML
//! files, the agent-backed chat API and its page (`docs/server.md`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use sinew::adk::{FileArtifactService, Llm, ModelAdapter, Tool, ToolAdapter};
use sinew::tools::{Workspace, default_tools};
use sinew_server::{
    AdkApi, AgentRegistry, ChatApi, Routes, ServerConfig, chat_store_from_uri, serve, session_service_from_uri,
};

use crate::config::Config;
use crate::exit::UsageError;
use crate::providers::{Overrides, Providers};

/// Serves the ADK apps of a directory (each subdirectory with a root_agent.yaml) in the dialect of
/// ADK's api_server, and the chat API (agent definitions, conversations over SSE) with its page at
/// `/`. Models are PROVIDER/MODEL names of the providers sinew finds; tools are sinew's built-in
/// ones (confined to --workspace) and those of the configured MCP servers.
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
    /// Where chat keeps its tables: sqlite:///path or postgresql://…[?schema=NAME] (schema kb by
    /// default) (default: sqlite:///AGENTS_DIR/.adk/chat.db).
    #[arg(long = "chat_store_uri", alias = "chat-store-uri", value_name = "URI")]
    chat_store_uri: Option<String>,
    /// The model that answers plain chat conversations (no agent definition): PROVIDER/MODEL
    /// (default: the configured model).
    #[arg(long, value_name = "MODEL")]
    model: Option<String>,
    /// Keeps artifacts on disk under this directory (default: in memory).
    #[arg(long = "artifact_dir", alias = "artifact-dir", value_name = "DIR")]
    artifact_dir: Option<PathBuf>,
    /// Every request must carry `Authorization: Bearer <TOKEN>` (prefer SINEW_SERVER_TOKEN: a
    /// command line is visible to every user of the machine).
    #[arg(long, env = "SINEW_SERVER_TOKEN", value_name = "TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Lets web pages of this origin (`https://app.example`, or `*`) call the server (CORS);
    /// repeatable. Off unless given.
    #[arg(long = "allow_origins", alias = "allow-origins", value_name = "ORIGIN")]
    allow_origins: Vec<String>,
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
    let plain_model = providers.initial_model(args.model.as_deref(), None, config).ok();
    let registry = providers.registry;
    let plain_model = match plain_model {
        Some(name) => match registry.resolve(&name) {
            Some((provider, model)) => Some(Arc::new(ModelAdapter::new(provider.clone(), model)) as Arc<dyn Llm>),
            None => bail!(UsageError(format!("no provider serves model `{name}`"))),
        },
        None => None,
    };
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
        let tools = server.tools.iter().map(|tool| Arc::new(ToolAdapter::new(tool.clone())) as Arc<dyn Tool>).collect();
        agents = agents.mcp_server(server.name.clone(), tools);
    }

    let state = args.agents.join(".adk");
    let default_uri = |file: &str| -> Result<String> {
        std::fs::create_dir_all(&state).with_context(|| format!("cannot create {}", state.display()))?;
        Ok(format!("sqlite:///{}", state.join(file).display()))
    };
    let uri = match &args.session_service_uri {
        Some(uri) => uri.clone(),
        None => default_uri("sessions.db")?,
    };
    let sessions = session_service_from_uri(&uri).await.map_err(|e| UsageError(e.to_string()))?;
    let chat_uri = match &args.chat_store_uri {
        Some(uri) => uri.clone(),
        None => default_uri("chat.db")?,
    };
    let chat_store = chat_store_from_uri(&chat_uri).await.map_err(|e| UsageError(e.to_string()))?;
    let agents = Arc::new(agents);
    let mut api = AdkApi::new(sessions).apps_from_dir(&args.agents, &agents).map_err(|e| UsageError(e.to_string()))?;
    let mut chat = ChatApi::new(chat_store, agents.clone());
    if let Some(model) = plain_model {
        chat = chat.plain_model(model);
    }
    if let Some(dir) = &args.artifact_dir {
        api = api.artifact_service(Arc::new(FileArtifactService::new(dir)?));
    }
    let mut server = ServerConfig::default();
    if let Some(token) = args.token {
        server = server.bearer_token(token);
    }
    for origin in args.allow_origins {
        server = server.allow_origin(origin);
    }
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .with_context(|| format!("cannot listen on {}:{}", args.host, args.port))?;
    let address = listener.local_addr()?;
    println!("sinew serve: chat on http://{address}/, ADK api_server there too (apps: {})", api_names(&args.agents));
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serve(listener, Routes::new().adk(api).chat(chat), server, shutdown).await?;
    // The MCP servers' clients live until the server stops.
    drop(connected);
    Ok(())
}

fn api_names(dir: &std::path::Path) -> String {
    AgentRegistry::app_names(dir).map(|names| names.join(", ")).unwrap_or_default()
}
