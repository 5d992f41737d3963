//! The interactive loop and its slash commands.

use anyhow::Result;
use sinew::EndReason;

use crate::chat::{Chat, Output};
use crate::exit::Interrupted;
use crate::input::ReadLine;
use crate::render::{Level, Render, clip};
use crate::sessions::{age, snapshot_of};

pub(crate) const PROMPT: &str = "sinew> ";

const HELP: &str = "\
/help               this list
/model [MODEL]      show the model and the providers, or switch (NAME/MODEL, or a model a provider serves)
/clear              forget the conversation and start a new session
/save [FILE]        save the session now (it is saved after every turn anyway); with FILE, also write the conversation there as JSON
/sessions           the saved sessions, most recent first
/resume ID          continue a saved session (an id prefix is enough)
/thinking           expand or collapse the model's thinking
/quit               leave (Ctrl-D works too; Ctrl-C aborts a turn, twice quits)";

/// What a command asks of the loop.
enum Flow {
    Continue,
    Quit,
}

/// Reads prompts and commands until `/quit`, end of input, or two Ctrl-C in a row.
pub(crate) async fn run(chat: &mut Chat) -> Result<()> {
    chat.output.notice(Level::Dim, &banner(chat));
    let mut armed = false;
    loop {
        let line = match chat.input.read(PROMPT, &mut chat.interrupts).await {
            ReadLine::Line(line) => line,
            ReadLine::Interrupted if armed => return Ok(()),
            ReadLine::Interrupted => {
                armed = true;
                chat.output.notice(Level::Dim, "(Ctrl-C again to quit, or /quit)");
                continue;
            }
            ReadLine::Eof => return Ok(()),
        };
        armed = false;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        chat.input.remember(line);
        if let Some(command) = line.strip_prefix('/') {
            match command_line(chat, command).await {
                Ok(Flow::Continue) => {}
                Ok(Flow::Quit) => return Ok(()),
                Err(error) => chat.output.notice(Level::Error, &format!("{error:#}")),
            }
            continue;
        }
        match chat.ask(line.to_owned()).await {
            Ok(outcome) => armed = outcome.reason == EndReason::Aborted,
            Err(error) if error.downcast_ref::<Interrupted>().is_some() => return Ok(()),
            Err(error) => chat.output.notice(Level::Error, &format!("error: {error:#}")),
        }
    }
}

fn banner(chat: &Chat) -> String {
    format!("sinew · {} · session {} · /help for commands", chat.agent.model(), short(chat.agent.session_id()))
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

async fn command_line(chat: &mut Chat, command: &str) -> Result<Flow> {
    let (name, argument) = match command.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command, ""),
    };
    match name {
        "help" | "?" => chat.output.notice(Level::Info, HELP),
        "quit" | "exit" | "q" => return Ok(Flow::Quit),
        "clear" => {
            chat.agent.reset();
            chat.agent.new_session();
            let line = format!("conversation cleared; new session {}", short(chat.agent.session_id()));
            chat.output.notice(Level::Success, &line);
        }
        "model" => model(chat, argument)?,
        "save" => save(chat, argument).await?,
        "sessions" => sessions(chat).await?,
        "resume" => resume(chat, argument).await?,
        "thinking" => thinking(chat),
        other => chat.output.notice(Level::Warning, &format!("unknown command /{other}; /help lists them")),
    }
    Ok(Flow::Continue)
}

fn model(chat: &mut Chat, argument: &str) -> Result<()> {
    let Some(providers) = &chat.providers else {
        chat.output.notice(Level::Warning, "the demo's model is scripted; it cannot be switched");
        return Ok(());
    };
    if argument.is_empty() {
        let mut lines = vec![format!("model: {}", chat.agent.model())];
        for entry in &providers.entries {
            let default = entry.default_model.as_deref().map(|m| format!(", default {m}")).unwrap_or_default();
            lines.push(format!("  provider {} ({}{default})", entry.name, entry.kind.name()));
        }
        lines.push("switch with /model MODEL or /model NAME/MODEL".into());
        chat.output.notice(Level::Info, &lines.join("\n"));
        return Ok(());
    }
    let model = providers.qualify(argument, None)?;
    chat.agent.set_model(&model);
    chat.output.notice(Level::Success, &format!("model: {model}"));
    Ok(())
}

async fn save(chat: &mut Chat, file: &str) -> Result<()> {
    chat.sessions.flush().await?;
    if chat.sessions.is_enabled() {
        let line = format!("session {} is saved in {}", chat.agent.session_id(), chat.sessions.location);
        chat.output.notice(Level::Success, &line);
    }
    if !file.is_empty() {
        chat.agent.snapshot().save(file)?;
        chat.output.notice(Level::Success, &format!("conversation written to {file}"));
    } else if !chat.sessions.is_enabled() {
        chat.output.notice(Level::Warning, "saving is off (--no-save): give a file, /save FILE");
    }
    Ok(())
}

async fn sessions(chat: &mut Chat) -> Result<()> {
    let summaries = chat.sessions.list(20).await?;
    if summaries.is_empty() {
        chat.output.notice(Level::Info, &format!("no saved sessions yet in {}", chat.sessions.location));
        return Ok(());
    }
    let current = chat.agent.session_id().to_owned();
    let lines: Vec<String> = summaries
        .iter()
        .map(|s| {
            let mark = if s.session_id == current { "*" } else { " " };
            format!(
                "{mark} {}  {:>9}  {:>2} prompt{}  {}  {}",
                s.session_id,
                age(s.updated_at),
                s.prompts,
                if s.prompts == 1 { " " } else { "s" },
                s.model.as_deref().unwrap_or("?"),
                clip(&s.first_prompt, 50)
            )
        })
        .collect();
    chat.output.notice(Level::Info, &lines.join("\n"));
    chat.output.notice(Level::Dim, "continue one with /resume ID (a prefix is enough)");
    Ok(())
}

async fn resume(chat: &mut Chat, id: &str) -> Result<()> {
    if id.is_empty() {
        anyhow::bail!("which session? /resume ID (see /sessions)");
    }
    chat.sessions.flush().await?;
    let session = chat.sessions.find(id).await?;
    restore(chat, &session);
    Ok(())
}

/// Makes `session` the conversation: its history, its ids, and its model when still available.
pub(crate) fn restore(chat: &mut Chat, session: &sinew::session::Session) {
    let snapshot = snapshot_of(session, chat.agent.system_prompt());
    let messages = snapshot.messages.len();
    chat.agent.reset();
    chat.agent.restore(snapshot);
    let stored_model = session.loops.iter().rev().find_map(|l| l.config.as_ref()).map(|c| c.model.clone());
    if let (Some(model), Some(providers)) = (stored_model, &chat.providers)
        && let Ok(model) = providers.qualify(&model, None)
        && model != chat.agent.model()
    {
        chat.agent.set_model(&model);
    }
    let line = format!("resumed session {} ({messages} messages) · {}", session.session_id, chat.agent.model());
    chat.output.notice(Level::Success, &line);
}

fn thinking(chat: &mut Chat) {
    let Output::Display(display) = &mut chat.output else { return };
    display.show_thinking = !display.show_thinking;
    if display.show_thinking {
        let last = display.last_thinking.clone();
        let term = display.terminal();
        display.notice(Level::Dim, "thinking is shown in full");
        if !last.is_empty() {
            display.notice(Level::Info, &term.paint("2", &last));
        }
    } else {
        display.notice(Level::Dim, "thinking is collapsed to one line");
    }
}
