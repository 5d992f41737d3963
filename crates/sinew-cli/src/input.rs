//! Reading the user: lines with editing and history on a terminal (rustyline), plain lines
//! from a pipe otherwise, and Ctrl-C.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

#[cfg(unix)]
use futures::FutureExt;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;

/// What a read gave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadLine {
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    Eof,
}

/// Where lines come from.
pub(crate) enum Input {
    /// A terminal: rustyline, with the history kept in a file.
    Editor { editor: Box<DefaultEditor>, history: Option<PathBuf> },
    /// A pipe (or a terminal used for answers only): lines read on a thread of their own, so a
    /// Ctrl-C is seen while waiting for one.
    Lines { lines: tokio::sync::mpsc::Receiver<std::io::Result<String>> },
}

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Input::Editor { history, .. } => f.debug_struct("Editor").field("history", history).finish(),
            Input::Lines { .. } => f.write_str("Lines"),
        }
    }
}

impl Input {
    /// A line editor, its history loaded from `history` (created when first saved).
    pub(crate) fn editor(history: Option<PathBuf>) -> rustyline::Result<Input> {
        let mut editor = DefaultEditor::new()?;
        if let Some(path) = &history {
            // No history yet is the normal first run.
            let _ = editor.load_history(path);
        }
        Ok(Input::Editor { editor: Box::new(editor), history })
    }

    /// Lines of stdin.
    pub(crate) fn lines() -> Input {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        std::thread::Builder::new()
            .name("sinew-stdin".into())
            .spawn(move || {
                for line in std::io::stdin().lock().lines() {
                    let failed = line.is_err();
                    if tx.blocking_send(line).is_err() || failed {
                        break;
                    }
                }
            })
            .map(drop)
            .unwrap_or_else(|error| tracing::error!("cannot start the stdin reader: {error}"));
        Input::Lines { lines: rx }
    }

    /// Shows `prompt` and reads one line.
    pub(crate) async fn read(&mut self, prompt: &str, interrupts: &mut Interrupts) -> ReadLine {
        match self {
            Input::Editor { editor, .. } => {
                // rustyline blocks, and sees Ctrl-C itself (the terminal is in raw mode).
                match tokio::task::block_in_place(|| editor.readline(prompt)) {
                    Ok(line) => ReadLine::Line(line),
                    Err(ReadlineError::Interrupted) => ReadLine::Interrupted,
                    Err(ReadlineError::Eof) => ReadLine::Eof,
                    Err(error) => {
                        tracing::error!("cannot read the terminal: {error}");
                        ReadLine::Eof
                    }
                }
            }
            Input::Lines { lines } => {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "{prompt}");
                let _ = err.flush();
                drop(err);
                tokio::select! {
                    line = lines.recv() => match line {
                        Some(Ok(line)) => {
                            // A terminal echoes what was typed; a pipe does not.
                            if !std::io::stdin().is_terminal() {
                                eprintln!("{line}");
                            }
                            ReadLine::Line(line)
                        }
                        Some(Err(error)) => {
                            tracing::error!("cannot read stdin: {error}");
                            ReadLine::Eof
                        }
                        None => ReadLine::Eof,
                    },
                    () = interrupts.recv() => ReadLine::Interrupted,
                }
            }
        }
    }

    /// Adds a line to the history, and saves the history file.
    pub(crate) fn remember(&mut self, line: &str) {
        if let Input::Editor { editor, history } = self {
            let _ = editor.add_history_entry(line);
            if let Some(path) = history {
                // What was typed may hold secrets: the file is its owner's alone (0600).
                let saved = editor.save_history(path).map_err(|e| e.to_string()).and_then(|()| {
                    #[cfg(unix)]
                    {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::set_permissions(&*path, std::fs::Permissions::from_mode(0o600))
                            .map_err(|e| e.to_string())?;
                    }
                    Ok(())
                });
                if let Err(error) = saved {
                    tracing::warn!("cannot save the history to {}: {error}", path.display());
                }
            }
        }
    }
}

/// Ctrl-C as a stream of signals. Installed once at start, so SIGINT never kills the process
/// while a turn runs: the first one aborts the turn, a second one exits.
#[derive(Debug)]
pub(crate) struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    pub(crate) fn install() -> std::io::Result<Interrupts> {
        #[cfg(unix)]
        {
            let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
            Ok(Interrupts { signal })
        }
        #[cfg(not(unix))]
        Ok(Interrupts {})
    }

    /// The next Ctrl-C. Cancel-safe.
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        if self.signal.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }

    /// Forgets a Ctrl-C that arrived while nothing was listening.
    pub(crate) fn drain(&mut self) {
        #[cfg(unix)]
        while let Some(Some(())) = self.signal.recv().now_or_never() {}
    }
}
