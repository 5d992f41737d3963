//! `sinew`: a coding agent in the terminal.
//!
//! `sinew "fix the failing test"` answers once; `sinew` alone opens a conversation. Providers
//! come from the command line, `~/.config/sinew/config.toml` and the environment; every
//! conversation is saved (SQLite in the user's data directory, or PostgreSQL). `docs/cli.md`
//! is the manual.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod approval;
mod chat;
mod config;
mod demo;
mod exit;
mod input;
mod mcp;
mod providers;
mod render;
mod repl;
mod serve;
mod sessions;

use std::io::{IsTerminal, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;
use sinew::extract::{DEFAULT_MAX_RETRIES, correction, read_answer};
use sinew::tools::{Workspace, default_tools};
use sinew::typed::SchemaValidator;
use sinew::{Agent, AgentTool, EndReason, ExecutionLimits, ResponseFormat, ThinkingLevel, valid_tool_name};

use crate::approval::{Approvals, GATED_TOOLS};
use crate::chat::{Chat, Output};
use crate::config::Config;
use crate::exit::UsageError;
use crate::input::{Input, Interrupts};
use crate::providers::{Overrides, Providers};
use crate::render::{Display, JsonLines, Level, Terminal};
use crate::sessions::{AGENT_ID, Sessions};

/// A coding agent in the terminal.
///
/// With a PROMPT, answers it and exits; without one, opens a conversation (type /help).
/// Conversations are saved; `/sessions` and `--resume` bring them back.
#[derive(Debug, Parser)]
#[command(name = "sinew", version, after_help = AFTER_HELP, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The prompt, for a one-shot answer. Without one, sinew opens a conversation.
    prompt: Vec<String>,
    /// The model: NAME/MODEL (a provider name, e.g. anthropic/claude-sonnet-4-5), or a model one
    /// configured provider serves.
    #[arg(short, long, env = "SINEW_MODEL")]
    model: Option<String>,
    /// The provider: a [providers.NAME] table of the configuration, or a kind (anthropic,
    /// openai, openai-responses, azure, gemini, vertex, bedrock) set up from the environment.
    #[arg(short, long, env = "SINEW_PROVIDER")]
    provider: Option<String>,
    /// Sends the provider's requests to this base URL (a proxy, a compatible server).
    #[arg(long, requires = "provider")]
    base_url: Option<String>,
    /// Prints every event of the run as one JSON object per line (needs a PROMPT).
    #[arg(long)]
    json: bool,
    /// Makes the answer JSON that fits the JSON Schema in FILE (needs a PROMPT): the provider's
    /// structured output is asked for it, the answer is checked, and one that does not fit is
    /// sent back to the model (twice at most). Only the checked answer goes to stdout.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["json", "demo"])]
    json_schema: Option<PathBuf>,
    /// Runs bash and the file-writing tools without asking.
    #[arg(long)]
    yolo: bool,
    /// The directory the file tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Continues a saved session (an id prefix is enough).
    #[arg(short, long, value_name = "ID", conflicts_with = "continue_last")]
    resume: Option<String>,
    /// Continues the most recent session.
    #[arg(short = 'c', long = "continue")]
    continue_last: bool,
    /// Where sessions are saved: a SQLite file, or a postgres:// URL
    /// (default: sessions.db in $XDG_DATA_HOME/sinew or ~/.local/share/sinew).
    #[arg(long, env = "SINEW_SESSION_STORE", value_name = "PATH|URL")]
    session_store: Option<String>,
    /// Saves nothing.
    #[arg(long)]
    no_save: bool,
    /// How hard the model thinks: off, minimal, low, medium, high.
    #[arg(long, value_name = "LEVEL")]
    thinking: Option<String>,
    /// Prints the model's thinking in full (dimmed) instead of one collapsed line.
    #[arg(long)]
    show_thinking: bool,
    /// The configuration file (default: $XDG_CONFIG_HOME/sinew/config.toml or
    /// ~/.config/sinew/config.toml).
    #[arg(long, env = "SINEW_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Runs a scripted, offline demonstration (no API key needed).
    #[arg(long, conflicts_with_all = ["resume", "continue_last", "model", "provider"])]
    demo: bool,
    /// More logging on stderr (-v: warnings and info, -vv: debug).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Serves a directory of ADK apps (AgentConfig YAML) in the dialect of ADK's api_server.
    Serve(serve::ServeArgs),
}

/// What one prompt may use before the run stops: a coding task may take many turns, and every
/// turn sends the whole context again.
const LIMITS: ExecutionLimits = ExecutionLimits::new(200, 20_000_000, Duration::from_secs(3600));

const AFTER_HELP: &str = "\
Providers (any one is enough; see docs/cli.md for the configuration file):
  ANTHROPIC_API_KEY                 Anthropic
  OPENAI_API_KEY                    OpenAI
  OPENAI_BASE_URL [OPENAI_API_KEY]  an OpenAI-compatible server (Ollama, vLLM, llama.cpp...)
  GEMINI_API_KEY                    Gemini
  GOOGLE_CLOUD_PROJECT (+ Application Default Credentials)   Vertex AI
  AZURE_OPENAI_RESOURCE (+ AZURE_OPENAI_API_KEY or Entra ID) Azure OpenAI
  AWS_REGION + AWS credentials (or AWS_BEARER_TOKEN_BEDROCK) Bedrock

Examples:
  sinew --demo                      see it work, offline
  sinew \"why does the build fail?\"  one answer
  sinew                             a conversation
  sinew -c \"and the tests?\"         continue the last conversation";

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sinew: cannot start the async runtime: {error}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    let telemetry = match start_telemetry(&runtime) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("sinew: {error}");
            return ExitCode::from(exit::USAGE);
        }
    };
    init_logging(cli.verbose, telemetry.as_ref());
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => {
            if error.downcast_ref::<exit::Interrupted>().is_none() {
                eprintln!("sinew: {error:#}");
            }
            exit::status_of(&error)
        }
    };
    // The last spans and metrics are exported on the runtime's workers while this thread waits.
    if let Some(telemetry) = telemetry
        && let Err(error) = telemetry.shutdown()
    {
        eprintln!("sinew: warning: telemetry was not all exported: {error}");
    }
    code
}

/// Whether exported spans carry message content: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
/// set to `true` (the GenAI conventions' switch), and telemetry on.
fn capture_message_content() -> bool {
    let on = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
    on("OTEL_EXPORTER_OTLP_ENDPOINT")
        && std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
            .is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Telemetry to the collector `OTEL_EXPORTER_OTLP_ENDPOINT` names, if it names one.
fn start_telemetry(runtime: &tokio::runtime::Runtime) -> Result<Option<sinew::telemetry::Telemetry>> {
    let Some(config) = sinew::telemetry::OtelConfig::from_env()? else { return Ok(None) };
    let _inside = runtime.enter();
    Ok(Some(sinew::telemetry::Telemetry::start(config)?))
}

fn init_logging(verbose: u8, telemetry: Option<&sinew::telemetry::Telemetry>) {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::filter::LevelFilter;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;

    // Warnings worth the user's eye (retries, a failed MCP server) are already on the display.
    let level = match verbose {
        0 => LevelFilter::ERROR,
        1 => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    };
    let display = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).without_time().with_filter(level);
    // The GenAI spans are at INFO, whatever the display shows.
    let export = telemetry.map(|telemetry| telemetry.layer().with_filter(LevelFilter::INFO));
    let _ = tracing_subscriber::registry().with(display).with(export).try_init();
}

/// The configuration file `--config` names (an error when it cannot be read), else the default
/// one when it exists.
fn load_config(explicit: Option<&Path>) -> Result<Config> {
    let path = match explicit {
        Some(path) => Some(path.to_owned()),
        None => config::default_config_path(),
    };
    Ok(match &path {
        Some(path) => Config::load(path, explicit.is_some()).map_err(|e| UsageError(format!("{e:#}")))?,
        None => Config::default(),
    })
}

async fn run(cli: Cli) -> Result<ExitCode> {
    if let Some(Command::Serve(args)) = cli.command {
        serve::run(args, &load_config(cli.config.as_deref())?).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let prompt = (!cli.prompt.is_empty()).then(|| cli.prompt.join(" "));
    if cli.json && prompt.is_none() && !cli.demo {
        return Err(UsageError("--json needs a PROMPT: sinew --json \"...\"".into()).into());
    }
    if cli.json_schema.is_some() && prompt.is_none() {
        return Err(UsageError("--json-schema needs a PROMPT: sinew --json-schema FILE \"...\"".into()).into());
    }
    let schema = cli.json_schema.as_deref().map(load_schema).transpose()?;
    let thinking = cli.thinking.as_deref().map(parse_thinking).transpose()?;
    let term = Terminal::detect();
    if cli.demo {
        return demo(cli, term, thinking).await;
    }

    let config = load_config(cli.config.as_deref())?;
    let thinking = match (thinking, config.thinking.as_deref()) {
        (Some(level), _) => Some(level),
        (None, Some(level)) => Some(parse_thinking(level)?),
        (None, None) => None,
    };
    let overrides = Overrides { provider: cli.provider.as_deref(), base_url: cli.base_url.as_deref() };
    let providers = Providers::discover(&config, &overrides)?;
    let model = providers.initial_model(cli.model.as_deref(), cli.provider.as_deref(), &config)?;

    let root = workspace_root(cli.workspace.as_deref())?;
    let workspace =
        Workspace::confined(&root).with_context(|| format!("cannot use {} as the workspace", root.display()))?;
    let mut tools: Vec<std::sync::Arc<dyn AgentTool>> = default_tools(&workspace);
    let mut gated: Vec<String> = GATED_TOOLS.map(String::from).into();

    let sessions = if cli.no_save {
        Sessions::disabled()
    } else {
        Sessions::open(cli.session_store.as_deref().or(config.session_store.as_deref())).await?
    };

    let (connected, failures) = mcp::connect_all(&config.mcp.servers).await;
    let show_thinking = cli.show_thinking || config.show_thinking;
    let mut output = match cli.json {
        true => Output::Json(JsonLines),
        false if schema.is_some() => Output::Display(Display::new(term, show_thinking, false).with_answer_on_stderr()),
        false => Output::Display(Display::new(term, show_thinking, prompt.is_none())),
    };
    for failure in failures {
        output.notice(Level::Warning, &format!("warning: {failure}"));
    }
    let mut clients = Vec::new();
    for server in connected {
        if server.require_approval {
            gated.extend(server.tools.iter().map(|t| t.definition().name.clone()));
        }
        let line = format!("MCP server `{}`: {} tools", server.name, server.tools.len());
        output.notice(Level::Dim, &line);
        tools.extend(server.tools);
        clients.push(server.client);
    }

    let approvals = Approvals::new(cli.yolo, gated);
    let mut agent = Agent::new(providers.registry.clone(), &model)
        .with_agent_id(AGENT_ID)
        .with_message_content_capture(capture_message_content())
        .with_system_prompt(system_prompt(&root, config.instructions.as_deref()))
        .with_tools(tools)
        .with_approval_policy(approvals.policy())
        .with_execution_limits(Some(LIMITS));
    if let Some(level) = thinking {
        agent = agent.with_thinking(level);
    }
    if let Some((name, validator)) = &schema {
        let format =
            ResponseFormat::JsonSchema { name: name.clone(), schema: validator.schema().clone(), strict: true };
        let options = agent.config().request_options.clone().with_response_format(format);
        agent = agent.with_request_options(options);
    }

    let interactive = prompt.is_none();
    let input = if interactive && std::io::stdin().is_terminal() {
        let history = config::data_dir().map(|dir| dir.join("history.txt"));
        if let Some(dir) = history.as_deref().and_then(Path::parent) {
            let _ = std::fs::create_dir_all(dir);
        }
        Input::editor(history).context("cannot set up the line editor")?
    } else {
        Input::lines()
    };
    let mut chat = Chat {
        agent,
        providers: Some(providers),
        sessions,
        output,
        approvals,
        input,
        interrupts: Interrupts::install().context("cannot listen for Ctrl-C")?,
        mcp: clients,
    };

    let resumed = match (&cli.resume, cli.continue_last) {
        (Some(id), _) => Some(chat.sessions.find(id).await?),
        (None, true) => Some(
            chat.sessions.latest().await?.ok_or_else(|| UsageError("there is no saved session to continue".into()))?,
        ),
        (None, false) => None,
    };
    if let Some(session) = &resumed {
        repl::restore(&mut chat, session);
        if cli.model.is_some() {
            chat.agent.set_model(&model);
        }
    }

    let code = match (prompt, &schema) {
        (Some(prompt), Some((_, validator))) => one_shot_structured(&mut chat, prompt, validator).await,
        (Some(prompt), None) => one_shot(&mut chat, prompt).await,
        (None, _) => repl::run(&mut chat).await.map(|()| ExitCode::SUCCESS),
    };
    chat.shutdown().await;
    code
}

/// Answers one prompt. Exit status 0 when the run completed, 1 when it failed or hit a limit.
async fn one_shot(chat: &mut Chat, prompt: String) -> Result<ExitCode> {
    let outcome = chat.ask(prompt).await?;
    session_notice(chat);
    Ok(exit_status(outcome.reason))
}

/// Answers one prompt with JSON that fits `validator`'s schema, printed alone on stdout. An
/// answer that does not fit goes back to the model with what is wrong (as often as an
/// `Extractor` sends it back: [`DEFAULT_MAX_RETRIES`] times); exit status 1 when none fits.
async fn one_shot_structured(chat: &mut Chat, prompt: String, validator: &SchemaValidator) -> Result<ExitCode> {
    let mut message = prompt;
    let mut problem = String::new();
    for _ in 0..=DEFAULT_MAX_RETRIES {
        let outcome = chat.ask(message).await?;
        if outcome.reason != EndReason::Completed {
            session_notice(chat);
            return Ok(exit_status(outcome.reason));
        }
        match read_answer(&outcome.final_text().unwrap_or_default(), validator) {
            Ok(value) => {
                session_notice(chat);
                let mut out = std::io::stdout().lock();
                if let Err(error) = writeln!(out, "{value}").and_then(|()| out.flush()) {
                    chat.output.notice(Level::Error, &format!("error: cannot write the answer: {error}"));
                    return Ok(ExitCode::from(exit::FAILURE));
                }
                return Ok(ExitCode::SUCCESS);
            }
            Err(wrong) => {
                chat.output.notice(Level::Warning, &format!("the answer is not valid: {wrong}"));
                message = correction(&wrong);
                problem = wrong;
            }
        }
    }
    session_notice(chat);
    let attempts = DEFAULT_MAX_RETRIES + 1;
    chat.output.notice(Level::Error, &format!("error: no answer fits the schema after {attempts} attempts: {problem}"));
    Ok(ExitCode::from(exit::FAILURE))
}

/// Says how to continue the session, when it is saved.
fn session_notice(chat: &mut Chat) {
    if chat.sessions.is_enabled() {
        let line =
            format!("session {} (continue with: sinew --resume {})", chat.agent.session_id(), chat.agent.session_id());
        chat.output.notice(Level::Dim, &line);
    }
}

/// The exit status of a run that ended so.
fn exit_status(reason: EndReason) -> ExitCode {
    match reason {
        EndReason::Completed => ExitCode::SUCCESS,
        EndReason::Aborted => ExitCode::from(exit::INTERRUPTED),
        _ => ExitCode::from(exit::FAILURE),
    }
}

/// The largest `--json-schema` file read.
const MAX_SCHEMA_BYTES: u64 = 1 << 20;

/// The `--json-schema` file: a name for the schema (the file's stem) and the schema, compiled.
fn load_schema(path: &Path) -> Result<(String, SchemaValidator)> {
    let cannot_read =
        |error: &dyn std::fmt::Display| UsageError(format!("cannot read the schema {}: {error}", path.display()));
    // Read through a limit, as a pipe or device has no size to check first.
    let file = std::fs::File::open(path).map_err(|error| cannot_read(&error))?;
    let mut text = String::new();
    std::io::Read::take(file, MAX_SCHEMA_BYTES + 1).read_to_string(&mut text).map_err(|error| cannot_read(&error))?;
    if text.len() as u64 > MAX_SCHEMA_BYTES {
        return Err(cannot_read(&format!("more than the {MAX_SCHEMA_BYTES} bytes a schema may have")).into());
    }
    let schema: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| UsageError(format!("the schema {} is not JSON: {error}", path.display())))?;
    let validator =
        SchemaValidator::new(schema).map_err(|error| UsageError(format!("the schema {}: {error}", path.display())))?;
    if validator.schema().get("type").is_some_and(|kind| kind != "object") {
        let message =
            format!("the schema {}: its root must be an object (structured output answers with one)", path.display());
        return Err(UsageError(message).into());
    }
    let stem = path.file_stem().map(|stem| stem.to_string_lossy()).unwrap_or_default();
    Ok((valid_tool_name(stem.strip_suffix(".schema").unwrap_or(&stem)), validator))
}

async fn demo(cli: Cli, term: Terminal, thinking: Option<ThinkingLevel>) -> Result<ExitCode> {
    let scratch = tempfile::Builder::new()
        .prefix("sinew-demo-")
        .tempdir()
        .context("cannot create the demo's scratch directory")?;
    let workspace = Workspace::confined(scratch.path())?;
    let approvals = Approvals::new(cli.yolo, GATED_TOOLS.map(String::from));
    let mut agent = Agent::new(demo::provider(), demo::MODEL)
        .with_agent_id(AGENT_ID)
        .with_tools(default_tools(&workspace))
        .with_approval_policy(approvals.policy());
    if let Some(level) = thinking {
        agent = agent.with_thinking(level);
    }
    let output = match cli.json {
        true => Output::Json(JsonLines),
        false => Output::Display(Display::new(term, cli.show_thinking, false)),
    };
    let mut chat = Chat {
        agent,
        providers: None,
        sessions: Sessions::disabled(),
        output,
        approvals,
        input: Input::lines(),
        interrupts: Interrupts::install().context("cannot listen for Ctrl-C")?,
        mcp: Vec::new(),
    };
    chat.output.notice(Level::Warning, &demo::banner(scratch.path()));
    chat.output.notice(Level::Info, &format!("{}{}", repl::PROMPT, demo::PROMPT));
    let code = one_shot(&mut chat, demo::PROMPT.to_owned()).await?;
    chat.output.notice(
        Level::Dim,
        "── end of the demo ── To talk to a real model, set a provider (sinew --help lists them) and run sinew.",
    );
    Ok(code)
}

fn parse_thinking(level: &str) -> Result<ThinkingLevel> {
    Ok(match level {
        "off" => ThinkingLevel::Off,
        "minimal" => ThinkingLevel::Minimal,
        "low" => ThinkingLevel::Low,
        "medium" => ThinkingLevel::Medium,
        "high" => ThinkingLevel::High,
        other => {
            return Err(
                UsageError(format!("unknown thinking level `{other}`: use off, minimal, low, medium or high")).into()
            );
        }
    })
}

fn workspace_root(dir: Option<&Path>) -> Result<PathBuf> {
    let dir = match dir {
        Some(dir) => dir.to_owned(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    dir.canonicalize().map_err(|e| UsageError(format!("workspace {}: {e}", dir.display())).into())
}

/// The built-in instructions, the configuration's, and the workspace's `AGENTS.md`.
fn system_prompt(root: &Path, instructions: Option<&str>) -> String {
    let mut prompt = format!(
        "You are sinew, a coding assistant working in a terminal, in the workspace {}. \
         Use the tools to read, search and change files and to run commands. Work in small, \
         verifiable steps, and check changes to code by building or testing. Paths are relative \
         to the workspace. Be concise: your answers are read in a terminal.\n\
         Operating system: {}.",
        root.display(),
        std::env::consts::OS
    );
    if let Some(instructions) = instructions {
        prompt.push_str("\n\n");
        prompt.push_str(instructions);
    }
    const MAX_AGENTS_MD: usize = 32 * 1024;
    if let Ok(text) = std::fs::read_to_string(root.join("AGENTS.md")) {
        let text = match text.char_indices().nth(MAX_AGENTS_MD) {
            Some((cut, _)) => &text[..cut],
            None => &text,
        };
        prompt.push_str("\n\nProject instructions (AGENTS.md):\n");
        prompt.push_str(text);
    }
    prompt
}
