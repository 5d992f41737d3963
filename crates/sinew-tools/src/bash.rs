//! `bash`: runs a command in its own process group; the whole group dies on timeout,
//! cancellation or completion, so no grandchild outlives the call.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
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

/// Runs shell commands with `bash -c`.
#[derive(Clone)]
pub struct BashTool {
    cwd: PathBuf,
    timeout: Duration,
    max_output_bytes: usize,
    deny_patterns: Vec<String>,
    confirm: Option<ConfirmFn>,
    approval: bool,
}

impl std::fmt::Debug for BashTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BashTool")
            .field("cwd", &self.cwd)
            .field("timeout", &self.timeout)
            .field("max_output_bytes", &self.max_output_bytes)
            .field("deny_patterns", &self.deny_patterns)
            .field("confirm", &self.confirm.is_some())
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
        }
    }

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

    #[must_use]
    pub fn with_deny_patterns(mut self, patterns: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.deny_patterns = patterns.into_iter().map(Into::into).collect();
        self
    }

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

/// Reads a pipe to its end, keeping the first `max` bytes; says whether it dropped any. Each
/// chunk kept is also handed to `live`, as it arrives.
async fn drain(mut pipe: impl AsyncRead + Unpin, max: usize, live: Option<ToolUpdateFn>) -> (Vec<u8>, bool) {
    let (mut kept, mut buffer, mut truncated) = (Vec::new(), vec![0u8; 16 * 1024], false);
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => return (kept, truncated),
            Ok(n) => {
                let room = max.saturating_sub(kept.len());
                if let Some(live) = live.as_ref().filter(|_| room > 0) {
                    live(ToolResult::text(String::from_utf8_lossy(&buffer[..n.min(room)]).into_owned()));
                }
                kept.extend_from_slice(&buffer[..n.min(room)]);
                truncated |= n > room;
            }
        }
    }
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

/// Kills the group when dropped: also when the call itself is dropped mid-run.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
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
            return Err(ToolError::Failed(format!("Command blocked: it contains `{pattern}`, which is denied.")));
        }
        if let Some(confirm) = &self.confirm
            && !confirm(command)
        {
            return Err(ToolError::Failed("Command was not confirmed by the user.".into()));
        }
        ctx.check_cancelled()?;
        let mut process = tokio::process::Command::new("bash");
        process
            .arg("-c")
            .arg(command)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        process.process_group(0);
        let mut child = process.spawn().map_err(|e| ToolError::Failed(format!("cannot run bash: {e}")))?;
        let pid = child.id();
        let _guard = GroupGuard(pid);
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            kill_group(pid);
            return Err(ToolError::Failed("bash started without its pipes".into()));
        };
        ctx.progress(&format!("$ {command}"));
        // Both pipes are read while the command runs: a full pipe can never block it. Output is
        // also streamed to the host as updates, each carrying what arrived since the last.
        let max = self.max_output_bytes;
        let live = ctx.on_update.clone();
        let readers =
            tokio::spawn(async move { tokio::join!(drain(stdout, max, live.clone()), drain(stderr, max, live)) });
        let ending = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => Ending::Exited(status),
                Err(e) => {
                    kill_group(pid);
                    return Err(ToolError::Failed(format!("waiting for bash failed: {e}")));
                }
            },
            () = tokio::time::sleep(self.timeout) => Ending::TimedOut,
            () = ctx.cancel.cancelled() => Ending::Cancelled,
        };
        // Whatever ended it, nothing the command started outlives it (background jobs included),
        // and its pipes close so the readers finish.
        kill_group(pid);
        let _ = child.wait().await;
        let ((out, out_cut), (err, err_cut)) =
            readers.await.map_err(|e| ToolError::Failed(format!("reading the output failed: {e}")))?;
        let status = match ending {
            Ending::Exited(status) => status,
            Ending::TimedOut => {
                return Err(ToolError::Failed(format!("Command timed out after {}s", self.timeout.as_secs_f64())));
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
