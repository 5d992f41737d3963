//! A sandbox per test: its own home (so its own configuration, data directory and session
//! database) and its own workspace; and the binary run in it.

use std::path::PathBuf;
use std::process::{Output, Stdio};

use serde_json::Value;
use sinew_testing::ReceivedRequest;
use tempfile::TempDir;
use tokio::io::AsyncWriteExt;

pub(crate) const BINARY: &str = env!("CARGO_BIN_EXE_sinew");

pub(crate) struct Sandbox {
    pub(crate) home: TempDir,
    pub(crate) workspace: TempDir,
    /// Provider variables, on top of a cleared environment.
    pub(crate) env: Vec<(String, String)>,
}

impl Sandbox {
    pub(crate) fn new(env: &[(&str, &str)]) -> Sandbox {
        Sandbox {
            home: tempfile::tempdir().unwrap(),
            workspace: tempfile::tempdir().unwrap(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    /// Everything the binary may see of the environment: PATH, the sandbox's home, and the
    /// test's provider variables. Nothing of the developer's own keys or configuration.
    pub(crate) fn vars(&self) -> Vec<(String, String)> {
        let mut vars = vec![
            ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".to_owned(), self.home.path().display().to_string()),
            ("NO_COLOR".to_owned(), "1".to_owned()),
        ];
        vars.extend(self.env.iter().cloned());
        vars
    }

    /// The default session database.
    pub(crate) fn database(&self) -> PathBuf {
        self.home.path().join(".local/share/sinew/sessions.db")
    }

    pub(crate) fn file(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.workspace.path().join(name)).ok()
    }

    /// Runs `sinew ARGS` in the workspace with `stdin` as its input, to its end.
    pub(crate) async fn run(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = tokio::process::Command::new(BINARY)
            .args(args)
            .env_clear()
            .envs(self.vars())
            .current_dir(self.workspace.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
        drop(input);
        Run::from(child.wait_with_output().await.unwrap())
    }
}

/// A finished run.
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }
}

impl Run {
    pub(crate) fn assert_code(&self, code: i32) -> &Run {
        assert_eq!(self.code, Some(code), "exit status\n--- stdout\n{}\n--- stderr\n{}", self.stdout, self.stderr);
        self
    }

    /// The session id the one-shot run reports.
    pub(crate) fn session_id(&self) -> String {
        let line = self
            .stderr
            .lines()
            .find(|l| l.starts_with("session "))
            .unwrap_or_else(|| panic!("no session line in\n{}", self.stderr));
        line.split_whitespace().nth(1).unwrap().to_owned()
    }
}

/// The request's messages.
pub(crate) fn messages(request: &ReceivedRequest) -> Vec<Value> {
    request.json()["messages"].as_array().cloned().unwrap_or_default()
}

/// The text of a message, whichever way its protocol spells content.
pub(crate) fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    }
}

/// Whether the last message is a tool result (Anthropic: a user message of `tool_result`
/// blocks; OpenAI: a `tool` message).
pub(crate) fn answers_tools(messages: &[Value]) -> bool {
    messages.last().is_some_and(|m| {
        m["role"] == "tool" || m["content"].as_array().is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
    })
}
