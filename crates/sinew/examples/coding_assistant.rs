//! A coding assistant in the terminal, from the library alone (REQ-175):
//!
//! ```text
//! ANTHROPIC_API_KEY=... cargo run -p sinew --example coding_assistant -- claude-sonnet-4-5
//! ```
//!
//! The six built-in tools (bash, read, write, edit, list, search) work in the current directory;
//! the model's provider is whichever the environment configures (`ProviderRegistry::from_env`:
//! Anthropic, OpenAI, Azure, Gemini, Vertex, Bedrock, or a compatible server behind
//! `OPENAI_BASE_URL`). The model is the first argument, else `SINEW_MODEL`, else the registry's
//! default for the first configured provider (`ProviderRegistry::default_model`).
//!
//! Commands: `/model NAME` switches models and keeps the conversation, `/clear` forgets it,
//! `/quit` (or end of input) leaves.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, Write};

use futures::StreamExt;
use sinew::tools::{Workspace, default_tools};
use sinew::{Agent, AgentEvent, LoopOutcome, ProviderRegistry, StreamDelta, StreamProvider};

const SYSTEM_PROMPT: &str = "You are a coding assistant working in the user's project. Read files before \
    you change them, keep changes small, run the tests when there are some, and say what you changed.";

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let registry = ProviderRegistry::from_env();
    if registry.is_empty() {
        eprintln!(
            "no provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY, \
             AZURE_OPENAI_API_KEY, AWS_REGION with credentials, or OPENAI_BASE_URL"
        );
        std::process::exit(2);
    }
    let Some(model) =
        std::env::args().nth(1).or_else(|| std::env::var("SINEW_MODEL").ok()).or_else(|| registry.default_model())
    else {
        eprintln!("name the model: the configured providers have no default (an Azure deployment, a local server)");
        std::process::exit(2);
    };
    let agent = assistant(registry, &model, &Workspace::current_dir()?);
    println!("sinew coding assistant on {model}: /model NAME, /clear, /quit");
    let lines = std::io::stdin().lock().lines().map_while(Result::ok);
    repl(agent, lines, &mut std::io::stdout()).await?;
    Ok(())
}

/// The assistant: `model` on `provider`, with the built-in tools on `workspace`.
pub(crate) fn assistant(provider: impl StreamProvider + 'static, model: &str, workspace: &Workspace) -> Agent {
    Agent::new(provider, model).with_system_prompt(SYSTEM_PROMPT).with_tools(default_tools(workspace))
}

/// Reads prompts and commands from `lines` until `/quit` or their end, streaming each run's
/// text and tool calls to `out`. Returns the agent, for its history.
pub(crate) async fn repl(
    mut agent: Agent,
    lines: impl Iterator<Item = String>,
    out: &mut impl Write,
) -> std::io::Result<Agent> {
    write!(out, "> ")?;
    out.flush()?;
    for line in lines {
        let line = line.trim();
        match line.split_once(' ').unwrap_or((line, "")) {
            ("", _) => {}
            ("/quit", _) => break,
            ("/clear", _) => {
                agent.reset();
                writeln!(out, "(conversation cleared)")?;
            }
            ("/model", "") => writeln!(out, "(model: {}; /model NAME to switch)", agent.model())?,
            ("/model", name) => {
                agent.set_model(name.trim());
                writeln!(out, "(model: {})", agent.model())?;
            }
            _ if line.starts_with('/') => writeln!(out, "(unknown command {line}; try /model, /clear, /quit)")?,
            _ => run(&mut agent, line, out).await?,
        }
        write!(out, "> ")?;
        out.flush()?;
    }
    writeln!(out)?;
    Ok(agent)
}

/// One prompt: text as it streams, each tool call and its outcome, and how the run ended.
async fn run(agent: &mut Agent, prompt: &str, out: &mut impl Write) -> std::io::Result<()> {
    let mut events = agent.prompt(prompt);
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } => {
                write!(out, "{delta}")?;
                out.flush()?;
            }
            AgentEvent::ToolExecutionStart { tool_name, args, .. } => writeln!(out, "\n[{tool_name}] {args}")?,
            AgentEvent::ToolExecutionEnd { tool_name, is_error: true, result, .. } => {
                writeln!(out, "[{tool_name} failed] {}", sinew::content::join_text(&result.content, " "))?;
            }
            _ => {}
        }
    }
    match events.finish().await {
        LoopOutcome { error: Some(error), .. } => writeln!(out, "\n(the run failed: {error})"),
        outcome => writeln!(out, "\n({:?})", outcome.reason),
    }
}
