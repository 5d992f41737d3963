//! `bash`: runs a command in its own process group; everything it started dies on timeout,
//! cancellation or completion, so no grandchild outlives the call.
//!
//! A process group is not enough: `setsid cmd &`, or a daemon that double-forks, leaves it (and,
//! once its parent exits, the process tree too). So every call carries a cookie in its
//! environment, `SINEW_BASH_CALL=<random>`, which every descendant inherits whatever group or
//! session it moves to; at the end of the call the processes carrying it are found in `/proc`
//! and killed, until none is left (Jenkins' process-tree killer does the same). Only a process
//! that rebuilds its own environment escapes, and even then the call does not wait for it: the
//! pipes are read until the deadline and a short grace, never longer.
//!
//! The command gets the environment minus the variables whose names say they hold a secret
//! (`*_API_KEY`, `*_TOKEN`, `*_SECRET*`, `*PASSWORD*`, `*CREDENTIALS*`, ...): a model-written
//! command has no business reading the agent's own API keys. `with_env_passthrough` keeps
//! named ones, `with_full_env` keeps all.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use sinew_core::{AgentTool, ToolContext, ToolError, ToolResult, ToolUpdateFn};
use tokio::io::{AsyncRead, AsyncReadExt};

/// Commands containing one of these are refused before anything runs (REQ-139). Substring
/// matches: a guard against accidents, not a sandbox.
pub const DEFAULT_DENY_PATTERNS: &[&str] = &[
    "rm -rf /",
    "rm -rf ~",
    "rm -rf $HOME",
    "rm -rf --no-preserve-root",
    ":(){ :|:& };:",
    "mkfs",
    "dd if=/dev/zero of=/dev/",
    "dd if=/dev/random of=/dev/",
    "> /dev/sd",
    "chmod -R 777 /",
    "shutdown",
    "reboot",
    "halt -f",
];

/// Asked before each command; `false` refuses it (REQ-097).
pub type ConfirmFn = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// The variable every process of a call inherits, with the call's own random value.
const CALL_COOKIE: &str = "SINEW_BASH_CALL";

/// How long the pipes are still read after the command ended (or was killed): what a process
/// that escaped the kill still holds open is not waited for.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Whether an environment variable's name says it holds a secret: one of its `_`-separated
/// words is `KEY`, `APIKEY`, `TOKEN`, `SECRET`, `PASS`, `CREDENTIAL(S)` or `PAT`, or ends in
/// `TOKEN`, `PASSWORD` or `PASSWD` (case-insensitive). `ANTHROPIC_API_KEY`, `GITHUB_TOKEN`,
/// `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`, `DB_PASS` and `GOOGLE_APPLICATION_CREDENTIALS` are; `PATH`, `HOME` and `SSH_AUTH_SOCK` are not. A rule on names is best-effort: a secret in a
/// variable named otherwise (a password inside `DATABASE_URL`) is passed; `with_full_env` and
/// `with_env_passthrough` make the choice explicit.
pub fn is_secret_env_var(name: &str) -> bool {
    const WORDS: &[&str] = &["KEY", "APIKEY", "TOKEN", "SECRET", "SECRETS", "CREDENTIAL", "CREDENTIALS", "PAT", "PASS"];
    let upper = name.to_ascii_uppercase();
    upper.split(['_', '-', '.']).any(|word| {
        WORDS.contains(&word) || word.ends_with("PASSWORD") || word.ends_with("PASSWD") || word.ends_with("TOKEN")
    })
}

/// Runs shell commands with `bash -c`.
#[derive(Clone)]
pub struct BashTool {
    cwd: PathBuf,
    timeout: Duration,
    max_output_bytes: usize,
    deny_patterns: Vec<String>,
    confirm: Option<ConfirmFn>,
    approval: bool,
    env: EnvPolicy,
}

/// Which of the agent's environment variables a command sees.
#[derive(Clone, Debug)]
enum EnvPolicy {
    /// All but the secret-looking ones, plus these names.
    WithoutSecrets {
        passthrough: Vec<String>,
    },
    All,
}

impl std::fmt::Debug for BashTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashTool")
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("deny_patterns", &self.deny_patterns)
            .field("confirm", &self.confirm.is_some())
            .field("env", &self.env)
            .finish()
    }
}

impl BashTool {
    /// Commands run in `cwd`, with a 120 s timeout, 256 KiB of each stream kept, and the default
    /// deny patterns.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        BashTool {
            cwd: cwd.into(),
            timeout: Duration::from_secs(120),
            max_output_bytes: 256 * 1024,
            deny_patterns: DEFAULT_DENY_PATTERNS.iter().map(|p| (*p).to_owned()).collect(),
            confirm: None,
            approval: false,
            env: EnvPolicy::WithoutSecrets { passthrough: Vec::new() },
        }
    }

    /// Lets commands see these variables even though their names look secret (a `GITHUB_TOKEN`
    /// for `gh`, say).
    #[must_use]
    pub fn with_env_passthrough(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let names = names.into_iter().map(Into::into);
        match &mut self.env {
            EnvPolicy::WithoutSecrets { passthrough } => passthrough.extend(names),
            EnvPolicy::All => {}
        }
        self
    }

    /// Lets commands see the whole environment, secrets included.
    #[must_use]
    pub fn with_full_env(mut self) -> Self {
        self.env = EnvPolicy::All;
        self
    }

    /// How long a command may run (default 120 s); past it, everything it started is killed
    /// and the call fails.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How much of stdout and of stderr is kept (each; the rest is read and dropped).
    #[must_use]
    pub fn with_max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Replaces [`DEFAULT_DENY_PATTERNS`]: commands containing one of `patterns` are refused.
    #[must_use]
    pub fn with_deny_patterns(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.deny_patterns = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Asks `confirm` before each command that passed the deny patterns; `false` refuses it.
    #[must_use]
    pub fn with_confirm(mut self, confirm: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.confirm = Some(Arc::new(confirm));
        self
    }

    /// Every call suspends the run until the host approves it (the agent's approval flow).
    #[must_use]
    pub fn requiring_approval(mut self) -> Self {
        self.approval = true;
        self
    }
}

/// What was read of one pipe: the first `max` bytes, and whether any were dropped.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    truncated: bool,
}

/// Reads a pipe to its end into `captured`, keeping the first `max` bytes. Each chunk kept is
/// also handed to `live`, as it arrives. What was read is in `captured` even if this is dropped
/// before the end.
async fn drain(
    mut pipe: impl AsyncRead + Unpin,
    max: usize,
    live: Option<ToolUpdateFn>,
    captured: Arc<Mutex<Captured>>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let room = {
                    let mut captured = captured.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                    let room = max.saturating_sub(captured.kept.len());
                    captured.kept.extend_from_slice(&buffer[..n.min(room)]);
                    captured.truncated |= n > room;
                    room
                };
                // The host's callback runs without the lock held.
                if let Some(live) = live.as_ref().filter(|_| room > 0) {
                    live(ToolResult::text(String::from_utf8_lossy(&buffer[..n.min(room)]).into_owned()));
                }
            }
        }
    }
}

/// The captured bytes of a pipe, taken out.
fn take(captured: &Mutex<Captured>) -> Captured {
    std::mem::take(&mut *captured.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

fn render(bytes: &[u8], truncated: bool) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    if truncated {
        text.push_str("\n... (output truncated)");
    }
    text
}

/// Kills the process group `pid` leads.
fn kill_group(pid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

/// Kills every process whose environment carries `cookie` (`SINEW_BASH_CALL=<cookie>`), again
/// until none is left (a process may fork while it is being looked for), at most 20 rounds.
/// Linux: reads `/proc/<pid>/environ`; elsewhere it does nothing (the process group kill
/// remains).
fn kill_cookie_holders(cookie: &str) {
    #[cfg(target_os = "linux")]
    {
        let needle = format!("{CALL_COOKIE}={cookie}");
        let own = std::process::id();
        for _ in 0..20 {
            let Ok(entries) = std::fs::read_dir("/proc") else { return };
            let mut found = false;
            for entry in entries.flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
                if u32::try_from(pid).is_ok_and(|p| p == own) {
                    continue;
                }
                let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
                if environ.split(|b| *b == 0).any(|var| var == needle.as_bytes()) {
                    found = true;
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
                }
            }
            if !found {
                return;
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cookie;
}

/// Kills the group and the cookie's holders when dropped before the call cleaned up itself:
/// when the call is dropped mid-run.
struct CallGuard {
    pid: Option<u32>,
    cookie: String,
    cleaned_up: bool,
    /// The task reading the pipes: it must not outlive the call either.
    readers: Option<tokio::task::AbortHandle>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(readers) = &self.readers {
            readers.abort();
        }
        if self.cleaned_up {
            return;
        }
        kill_group(self.pid);
        // Blocking work in a destructor: it reads /proc for a few milliseconds; a dropped call
        // has no task left to hand it to.
        kill_cookie_holders(&self.cookie);
    }
}

/// The environment a command gets under `policy`, from the agent's `vars`.
fn command_env(
    policy: &EnvPolicy,
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    vars.filter(|(name, _)| match policy {
        EnvPolicy::All => true,
        EnvPolicy::WithoutSecrets { passthrough } => {
            let name = name.to_string_lossy();
            !is_secret_env_var(&name) || passthrough.iter().any(|p| *p == name)
        }
    })
    .filter(|(name, _)| name != CALL_COOKIE)
    .collect()
}

enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Cancelled,
}

#[async_trait]
impl AgentTool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Run a shell command with bash -c in the workspace and return its exit code, stdout and stderr."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command line"}},
            "required": ["command"]
        })
    }

    fn requires_approval(&self, _params: &Value) -> bool {
        self.approval
    }

    async fn execute(&self, params: Value, ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let command =
            params["command"].as_str().ok_or_else(|| ToolError::InvalidArgs("`command` must be a string".into()))?;
        if let Some(pattern) = self.deny_patterns.iter().find(|p| command.contains(p.as_str())) {
            return Err(ToolError::Failed(
                format!("Command blocked: it contains `{pattern}`, which is denied.").into(),
            ));
        }
        if let Some(confirm) = &self.confirm
            && !confirm(command)
        {
            return Err(ToolError::Failed("Command was not confirmed by the user.".into()));
        }
        ctx.check_cancelled()?;
        let cookie = format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..));
        let mut process = tokio::process::Command::new("bash");
        process
            .arg("-c")
            .arg(command)
            .env_clear()
            .envs(command_env(&self.env, std::env::vars_os()))
            .env(CALL_COOKIE, &cookie)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        process.process_group(0);
        let mut child = process
            .spawn()
            .map_err(|e| ToolError::Failed(sinew_core::Failure::with_source(format!("cannot run bash: {e}"), e)))?;
        let pid = child.id();
        let mut guard = CallGuard { pid, cookie, cleaned_up: false, readers: None };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(ToolError::Failed("bash started without its pipes".into()));
        };
        ctx.progress(&format!("$ {command}"));
        // Both pipes are read while the command runs: a full pipe can never block it. Output is
        // also streamed to the host as updates, each carrying what arrived since the last.
        let max = self.max_output_bytes;
        let live = ctx.on_update.clone();
        let (out, err) = (Arc::new(Mutex::new(Captured::default())), Arc::new(Mutex::new(Captured::default())));
        let mut readers = tokio::spawn({
            let (out, err) = (Arc::clone(&out), Arc::clone(&err));
            async move { tokio::join!(drain(stdout, max, live.clone(), out), drain(stderr, max, live, err)) }
        });
        guard.readers = Some(readers.abort_handle());
        // A timeout too large for the clock never fires.
        let deadline = tokio::time::Instant::now().checked_add(self.timeout);
        let ending = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => Ending::Exited(status),
                Err(e) => {
                    kill_group(pid);
                    return Err(ToolError::Failed(sinew_core::Failure::with_source(format!("waiting for bash failed: {e}"), e)));
                }
            },
            () = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            } => Ending::TimedOut,
            () = ctx.cancel.cancelled() => Ending::Cancelled,
        };
        // Whatever ended it, nothing the command started outlives it (background jobs, and
        // what left the group), and its pipes close so the readers finish.
        kill_group(pid);
        let _ = child.wait().await;
        let cookie = guard.cookie.clone();
        let _ = tokio::task::spawn_blocking(move || kill_cookie_holders(&cookie)).await;
        guard.cleaned_up = true;
        // Read what is still in the pipes, but never wait on them past the deadline and a
        // short grace: a process that escaped still holds them open.
        let incomplete = tokio::select! {
            _ = &mut readers => false,
            () = tokio::time::sleep(PIPE_GRACE) => {
                readers.abort();
                true
            }
        };
        let (out, err) = (take(&out), take(&err));
        let (out, out_cut, err, err_cut) = (out.kept, out.truncated || incomplete, err.kept, err.truncated);
        let status = match ending {
            Ending::Exited(status) => status,
            Ending::TimedOut => {
                return Err(ToolError::Failed(
                    format!("Command timed out after {}s", self.timeout.as_secs_f64()).into(),
                ));
            }
            Ending::Cancelled => return Err(ToolError::Cancelled),
        };
        let code = status.code().unwrap_or(-1);
        let text = if err.is_empty() {
            format!("Exit code: {code}\n{}", render(&out, out_cut))
        } else {
            format!("Exit code: {code}\nSTDOUT:\n{}\nSTDERR:\n{}", render(&out, out_cut), render(&err, err_cut))
        };
        Ok(ToolResult::text(text).with_details(json!({"exit_code": code, "success": status.success()})))
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use super::*;

    fn env_of(tool: &BashTool) -> Vec<String> {
        let vars = ["PATH", "HOME", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", CALL_COOKIE]
            .into_iter()
            .map(|name| (OsString::from(name), OsString::from("value")));
        command_env(&tool.env, vars).into_iter().map(|(name, _)| name.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn secrets_are_kept_from_commands_unless_passed_through() {
        let tool = BashTool::new(".");
        assert_eq!(env_of(&tool), ["PATH", "HOME"], "no secret, and no inherited cookie");
        assert_eq!(env_of(&tool.clone().with_env_passthrough(["GITHUB_TOKEN"])), ["PATH", "HOME", "GITHUB_TOKEN"]);
        assert_eq!(
            env_of(&tool.with_full_env()),
            ["PATH", "HOME", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"]
        );
    }
}
