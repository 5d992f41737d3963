//! The stdio transport: a subprocess, one JSON-RPC message per line each way.
//!
//! The server's stderr is drained to `tracing` (target `sinew_mcp::server`) and its last lines are
//! kept to explain an exit; it is read to its end whatever it holds (long lines are cut, bytes
//! that are not UTF-8 replaced), so the server never blocks on it or dies of a closed pipe.
//! Closing sends EOF on stdin, then SIGTERM to the server's process group after a grace period,
//! then SIGKILL (REQ-134).
//!
//! The server does not inherit the client's whole environment, API keys included: as the
//! official MCP SDKs do, it gets `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and `USER`
//! ([`DEFAULT_INHERITED_ENV`]), the variables named with [`StdioCommand::inherit`], and
//! [`StdioCommand::env`].

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

use super::{Inbound, Inbox, Outgoing, Transport};
use crate::error::McpError;
use crate::jsonrpc::{excerpt_bytes, parse_frame};

/// How long a closing server gets after EOF, and again after SIGTERM.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// Stderr lines kept to explain an exit.
const STDERR_TAIL: usize = 20;
/// The longest stderr line kept (the rest of it is read and dropped).
const STDERR_LINE: usize = 4 * 1024;

/// What a stdio server inherits of the client's environment by default: the official MCP SDKs'
/// list (`DEFAULT_INHERITED_ENV_VARS` of the TypeScript SDK, `get_default_environment` of the
/// Python one) on Unix.
pub const DEFAULT_INHERITED_ENV: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// How to start a stdio server.
#[derive(Clone, Default)]
pub struct StdioCommand {
    /// The executable to start: a path, or a name looked up in `PATH`.
    pub program: String,
    /// The arguments passed to it, in order.
    pub args: Vec<String>,
    /// Variables set for the server, on top of what it inherits.
    pub env: HashMap<String, String>,
    /// More of the client's variables the server inherits, besides [`DEFAULT_INHERITED_ENV`].
    pub inherit: Vec<String>,
    /// The server's working directory; `None`: the client's.
    pub cwd: Option<PathBuf>,
}

/// Values of `env` are not shown: they are often credentials.
impl std::fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut env: Vec<&str> = self.env.keys().map(String::as_str).collect();
        env.sort_unstable();
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("inherit", &self.inherit)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl StdioCommand {
    /// Starts `program` with no arguments, the default inherited environment and the client's working directory.
    pub fn new(program: impl Into<String>) -> Self {
        StdioCommand { program: program.into(), ..StdioCommand::default() }
    }

    /// Appends arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the server's variable `name` to `value`, on top of what it inherits.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// Lets the server inherit the client's variable `name` (when set).
    #[must_use]
    pub fn inherit(mut self, name: impl Into<String>) -> Self {
        self.inherit.push(name.into());
        self
    }

    /// The environment the server starts with, from the client's `vars`.
    fn environment(
        &self,
        vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    ) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        let inherited = vars.filter(|(name, _)| {
            let name = name.to_string_lossy();
            DEFAULT_INHERITED_ENV.contains(&name.as_ref()) || self.inherit.iter().any(|n| *n == name)
        });
        let set = self.env.iter().map(|(k, v)| (k.into(), v.into()));
        inherited.chain(set).collect()
    }

    /// Starts the server in `dir` instead of the client's working directory.
    #[must_use]
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    fn display(&self) -> String {
        std::iter::once(self.program.as_str()).chain(self.args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
    }
}

type Writer = Box<dyn AsyncWrite + Send + Unpin>;

pub(crate) struct StdioTransport {
    writer: Mutex<Option<Writer>>,
    child: Arc<Mutex<Option<Child>>>,
    stderr: Arc<StdMutex<VecDeque<String>>>,
    reader: StdMutex<Option<JoinHandle<()>>>,
}

impl StdioTransport {
    /// Spawns the server and starts reading its output into `inbox`.
    pub(crate) fn spawn(command: &StdioCommand, max_message_bytes: usize, inbox: Inbox) -> Result<Self, McpError> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .env_clear()
            .envs(command.environment(std::env::vars_os()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &command.cwd {
            cmd.current_dir(dir);
        }
        // Its own process group, so that closing reaches what it started (npx → node).
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| McpError::Transport(format!("cannot start MCP server `{}`: {e}", command.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(McpError::Transport("the server's pipes were not created".into()));
        };
        let tail = Arc::new(StdMutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let stderr_task = tokio::spawn(drain_stderr(stderr, Arc::clone(&tail)));
        let child = Arc::new(Mutex::new(Some(child)));
        let exit = ExitInfo { child: Arc::clone(&child), stderr: Arc::clone(&tail), stderr_task: Some(stderr_task) };
        let reader = tokio::spawn(read_lines(BufReader::new(stdout), max_message_bytes, inbox, Some(exit)));
        Ok(StdioTransport {
            writer: Mutex::new(Some(Box::new(stdin))),
            child,
            stderr: tail,
            reader: StdMutex::new(Some(reader)),
        })
    }

    /// A transport over any pair of byte streams (a socket, an in-process server).
    pub(crate) fn from_io<R, W>(reader: R, writer: W, max_message_bytes: usize, inbox: Inbox) -> Self
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let reader = tokio::spawn(read_lines(BufReader::new(reader), max_message_bytes, inbox, None));
        StdioTransport {
            writer: Mutex::new(Some(Box::new(writer))),
            child: Arc::new(Mutex::new(None)),
            stderr: Arc::new(StdMutex::new(VecDeque::new())),
            reader: StdMutex::new(Some(reader)),
        }
    }
}

#[async_trait]
impl Transport for StdioTransport {
    async fn send(&self, message: Outgoing) -> Result<(), McpError> {
        let mut writer = self.writer.lock().await;
        let Some(stream) = writer.as_mut() else {
            return Err(McpError::ConnectionClosed("the client was closed".into()));
        };
        let written = async {
            stream.write_all(&message.body).await?;
            stream.write_all(b"\n").await?;
            stream.flush().await
        }
        .await;
        written.map_err(|e| {
            let tail = stderr_text(&self.stderr);
            McpError::ConnectionClosed(format!("cannot write to the server ({e}){tail}"))
        })
    }

    async fn close(&self) {
        // EOF first: well-behaved servers exit on it.
        drop(self.writer.lock().await.take());
        let child = self.child.lock().await.take();
        if let Some(child) = child {
            shut_down(child).await;
        }
        if let Some(reader) = self.reader.lock().ok().and_then(|mut r| r.take()) {
            reader.abort();
        }
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.lock().ok().and_then(|mut r| r.take()) {
            reader.abort();
        }
        // `kill_on_drop` ends the child itself; its group gets a SIGKILL too.
        #[cfg(unix)]
        if let Ok(mut child) = self.child.try_lock()
            && let Some(pid) = child.as_ref().and_then(Child::id)
        {
            signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            drop(child.take());
        }
    }
}

async fn shut_down(mut child: Child) {
    if tokio::time::timeout(SHUTDOWN_GRACE, child.wait()).await.is_ok() {
        return;
    }
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        tracing::debug!(pid, "MCP server still running after EOF: SIGTERM");
        signal_group(pid, nix::sys::signal::Signal::SIGTERM);
        if tokio::time::timeout(SHUTDOWN_GRACE, child.wait()).await.is_ok() {
            return;
        }
        signal_group(pid, nix::sys::signal::Signal::SIGKILL);
    }
    tracing::debug!("MCP server ignored SIGTERM: killing it");
    let _ = child.kill().await;
}

#[cfg(unix)]
fn signal_group(pid: u32, signal: nix::sys::signal::Signal) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// What the reader needs to explain why the server's output ended.
struct ExitInfo {
    child: Arc<Mutex<Option<Child>>>,
    stderr: Arc<StdMutex<VecDeque<String>>>,
    stderr_task: Option<JoinHandle<()>>,
}

impl ExitInfo {
    async fn explain(mut self) -> String {
        let status = {
            let mut child = self.child.lock().await;
            match child.as_mut() {
                Some(child) => match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
                    Ok(Ok(status)) => format!("the server exited ({status})"),
                    _ => "the server closed its output".to_owned(),
                },
                None => "the server was closed".to_owned(),
            }
        };
        if let Some(task) = self.stderr_task.take() {
            let _ = tokio::time::timeout(Duration::from_millis(500), task).await;
        }
        format!("{status}{}", stderr_text(&self.stderr))
    }
}

fn stderr_text(tail: &StdMutex<VecDeque<String>>) -> String {
    let lines = tail.lock().map(|t| t.iter().cloned().collect::<Vec<_>>().join("\n")).unwrap_or_default();
    if lines.is_empty() { String::new() } else { format!("; its stderr ended with:\n{lines}") }
}

/// Reads the server's stderr to its end: each line (cut at [`STDERR_LINE`] bytes, not UTF-8
/// replaced) goes to `tracing` and the tail.
async fn drain_stderr(stderr: impl AsyncRead + Unpin, tail: Arc<StdMutex<VecDeque<String>>>) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut cut = false;
    loop {
        let Ok(buffer) = reader.fill_buf().await else { return };
        if buffer.is_empty() {
            if !line.is_empty() {
                stderr_line(&tail, &line, cut);
            }
            return;
        }
        let (piece, complete) = match memchr::memchr(b'\n', buffer) {
            Some(at) => (&buffer[..at], true),
            None => (buffer, false),
        };
        let room = STDERR_LINE.saturating_sub(line.len());
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        cut |= piece.len() > room;
        let used = piece.len() + usize::from(complete);
        reader.consume(used);
        if complete {
            stderr_line(&tail, &line, cut);
            line.clear();
            cut = false;
        }
    }
}

fn stderr_line(tail: &StdMutex<VecDeque<String>>, line: &[u8], cut: bool) {
    let mut text = String::from_utf8_lossy(trim_line(line)).into_owned();
    if cut {
        text.push_str(" …");
    }
    tracing::debug!(target: "sinew_mcp::server", "{text}");
    if let Ok(mut tail) = tail.lock() {
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(text);
    }
}

/// Reads newline-delimited messages into `inbox` until EOF, an oversized line or a read error.
async fn read_lines(mut reader: impl AsyncBufRead + Unpin, max: usize, inbox: Inbox, exit: Option<ExitInfo>) {
    let mut line = Vec::new();
    let mut garbage = 0usize;
    let mut last_garbage = String::new();
    let end = loop {
        line.clear();
        match read_line_limited(&mut reader, &mut line, max).await {
            Err(error) => break McpError::io(&error),
            Ok(LineRead::TooLong) => {
                break McpError::Protocol(format!("the server sent a message over the {max}-byte limit"));
            }
            Ok(LineRead::Eof) => {
                let why = match exit {
                    Some(exit) => exit.explain().await,
                    None => "the server closed its output".to_owned(),
                };
                let why = if garbage > 0 {
                    format!("{why} (it also wrote {garbage} lines that are not JSON-RPC, the last: {last_garbage})")
                } else {
                    why
                };
                break McpError::ConnectionClosed(why);
            }
            Ok(LineRead::Line) => {}
        }
        let text = trim_line(&line);
        if text.is_empty() {
            continue;
        }
        match parse_frame(text) {
            Ok(messages) => {
                for message in messages {
                    if inbox.send(Inbound::Message(message)).await.is_err() {
                        return;
                    }
                }
            }
            Err(error) => {
                // Servers must write only JSON-RPC to stdout; some print banners. Skip, loudly.
                garbage += 1;
                last_garbage = excerpt_bytes(text);
                tracing::warn!(target: "sinew_mcp::server", %error, "skipping a line that is not JSON-RPC");
            }
        }
    };
    let _ = inbox.send(Inbound::Closed(end)).await;
}

enum LineRead {
    Line,
    Eof,
    TooLong,
}

/// Reads one line (without its `\n`) into `out`, refusing to buffer more than `max` bytes.
async fn read_line_limited(
    reader: &mut (impl AsyncBufRead + Unpin),
    out: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(if out.is_empty() { LineRead::Eof } else { LineRead::Line });
        }
        let (used, done) = match memchr::memchr(b'\n', buffer) {
            Some(at) => {
                out.extend_from_slice(&buffer[..at]);
                (at + 1, true)
            }
            None => {
                out.extend_from_slice(buffer);
                (buffer.len(), false)
            }
        };
        reader.consume(used);
        if out.len() > max {
            return Ok(LineRead::TooLong);
        }
        if done {
            return Ok(LineRead::Line);
        }
    }
}

fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.trim_ascii()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    #[test]
    fn the_server_inherits_the_allow_list_and_debug_hides_values() {
        let command = StdioCommand::new("srv").env("API_TOKEN", "SECRET-VALUE").inherit("EXTRA");
        let vars = ["PATH", "HOME", "OPENAI_API_KEY", "EXTRA", "OTHER"]
            .into_iter()
            .map(|name| (OsString::from(name), OsString::from("v")));
        let mut names: Vec<String> =
            command.environment(vars).into_iter().map(|(name, _)| name.to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["API_TOKEN", "EXTRA", "HOME", "PATH"]);
        let shown = format!("{command:?}");
        assert!(shown.contains("API_TOKEN") && !shown.contains("SECRET-VALUE"), "{shown}");
    }
}
