//! A multi-agent pipeline with `SubAgentTool` (REQ-175):
//!
//! ```text
//! ANTHROPIC_API_KEY=... cargo run -p sinew --example pipeline -- "Write a README section for src/"
//! ```
//!
//! A lead agent owns the task and delegates through two tools that are agents themselves: a
//! `researcher` that reads the current directory with the read-only built-in tools, and a
//! `writer` with no tools that turns notes into prose. Each sub-agent runs on a fresh history of
//! its own; its streamed text reaches the lead's run as tool updates, printed here as they come.
//! The provider is whichever the environment configures (`ProviderRegistry::from_env`), the model
//! `SINEW_MODEL` or the registry's default (`ProviderRegistry::default_model`).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;

use futures::StreamExt;
use sinew::tools::{ListFilesTool, ReadFileTool, SearchTool, Workspace};
use sinew::{Agent, AgentEvent, LoopOutcome, ProviderRegistry, StreamDelta, StreamProvider, SubAgentTool};

const LEAD: &str = "You lead a small team. Ask the researcher for the facts you need (it can read the \
    project), then ask the writer to write the result from those facts. Answer with the writer's text.";
const RESEARCHER: &str = "You research a software project with your file tools and answer with short, \
    factual notes: names, paths, what each part does. Never guess; say what you could not find.";
const WRITER: &str = "You write clear, concise technical prose from the notes you are given. Use only \
    those facts.";

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let registry = ProviderRegistry::from_env();
    if registry.is_empty() {
        eprintln!("no provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY...");
        std::process::exit(2);
    }
    let Some(model) = std::env::var("SINEW_MODEL").ok().or_else(|| registry.default_model()) else {
        eprintln!("set SINEW_MODEL: the configured providers have no default (an Azure deployment, a local server)");
        std::process::exit(2);
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let task =
        if args.is_empty() { "Summarize what this project does, in one paragraph.".into() } else { args.join(" ") };
    let mut lead = pipeline([registry.clone(), registry.clone(), registry], &model, &Workspace::current_dir()?);
    let outcome = run(&mut lead, &task, &mut std::io::stdout()).await?;
    if outcome.error.is_some() {
        std::process::exit(1);
    }
    Ok(())
}

/// The lead agent with its two sub-agents as tools; `providers` serve the lead, the researcher
/// and the writer, in that order (usually one provider, cloned).
pub(crate) fn pipeline<P: StreamProvider + 'static>(providers: [P; 3], model: &str, workspace: &Workspace) -> Agent {
    let [lead, researcher, writer] = providers;
    let researcher = SubAgentTool::new("researcher", researcher, model)
        .with_description("Researches the project's files and answers with factual notes.")
        .with_system_prompt(RESEARCHER)
        .with_tool(ReadFileTool::new(workspace.clone()))
        .with_tool(ListFilesTool::new(workspace.clone()))
        .with_tool(SearchTool::new(workspace.clone()))
        .with_max_turns(12);
    let writer = SubAgentTool::new("writer", writer, model)
        .with_description("Writes prose from the notes in its task.")
        .with_system_prompt(WRITER)
        .with_max_turns(2);
    Agent::new(lead, model).with_system_prompt(LEAD).with_tool(researcher).with_tool(writer)
}

/// Runs `task` on the lead, printing the sub-agents' progress and the lead's answer to `out`.
pub(crate) async fn run(lead: &mut Agent, task: &str, out: &mut impl Write) -> std::io::Result<LoopOutcome> {
    writeln!(out, "task: {task}")?;
    let mut events = lead.prompt(task);
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::ToolExecutionStart { tool_name, args, .. } => {
                let task = args["task"].as_str().unwrap_or_default();
                writeln!(out, "\n[{tool_name} <- lead] {task}")?;
            }
            AgentEvent::ToolExecutionUpdate { partial_result, .. } => {
                write!(out, "{}", sinew::content::join_text(&partial_result.content, ""))?;
            }
            AgentEvent::ToolExecutionEnd { tool_name, result, .. } => {
                let turns = result.details["turns"].as_u64().unwrap_or(0);
                let plural = if turns == 1 { "" } else { "s" };
                writeln!(out, "\n[{tool_name} -> lead after {turns} turn{plural}]")?;
            }
            AgentEvent::MessageUpdate { delta: StreamDelta::Text { delta, .. }, .. } => write!(out, "{delta}")?,
            _ => {}
        }
        out.flush()?;
    }
    let outcome = events.finish().await;
    match &outcome.error {
        Some(error) => writeln!(out, "\n(the run failed: {error})")?,
        None => writeln!(out, "\n({:?})", outcome.reason)?,
    }
    Ok(outcome)
}
