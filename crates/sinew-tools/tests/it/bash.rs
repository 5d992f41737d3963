//! Real subprocesses. "No process left behind" is checked by a marker only the test's processes
//! carry in their command line, looked up in /proc.

use std::time::Duration;

use serde_json::json;
use sinew_core::{AgentTool, CancellationToken, ToolContext, ToolError};
use sinew_tools::BashTool;

use crate::ctx;

fn tool() -> (tempfile::TempDir, BashTool) {
    let dir = tempfile::tempdir().unwrap();
    let tool = BashTool::new(dir.path());
    (dir, tool)
}

fn text(result: &sinew_core::ToolResult) -> String {
    sinew_core::join_text(&result.content, "")
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| String::from_utf8_lossy(cmdline).contains(marker))
        .count()
}

async fn gone(marker: &str) -> bool {
    for _ in 0..50 {
        if processes_with(marker) == 0 {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn exit_codes_stdout_and_stderr() {
    let (_dir, tool) = tool();
    let result = tool.execute(json!({"command": "echo hi; pwd >/dev/null"}), ctx()).await.unwrap();
    assert_eq!(text(&result), "Exit code: 0\nhi\n");
    assert_eq!(result.details, json!({"exit_code": 0, "success": true}));
    let result = tool.execute(json!({"command": "echo out; echo err >&2; exit 3"}), ctx()).await.unwrap();
    assert_eq!(text(&result), "Exit code: 3\nSTDOUT:\nout\n\nSTDERR:\nerr\n");
    assert_eq!(result.details, json!({"exit_code": 3, "success": false}));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_tree() {
    let (_dir, tool) = tool();
    let tool = tool.with_timeout(Duration::from_millis(500));
    let marker = format!("300.{}1", std::process::id());
    let error =
        tool.execute(json!({"command": format!("sleep {marker} & sleep {marker}; wait")}), ctx()).await.unwrap_err();
    assert_eq!(error, ToolError::Failed("Command timed out after 0.5s".into()));
    assert!(gone(&marker).await, "no sleep left behind");
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_tree() {
    let (_dir, tool) = tool();
    let marker = format!("300.{}2", std::process::id());
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let error = tool
        .execute(
            json!({"command": format!("sleep {marker} & sleep {marker}; wait")}),
            ToolContext::new("c", "bash", cancel),
        )
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    assert!(gone(&marker).await, "no sleep left behind");
}

#[tokio::test]
async fn background_jobs_do_not_outlive_a_finished_command() {
    let (_dir, tool) = tool();
    let marker = format!("300.{}3", std::process::id());
    let result = tool.execute(json!({"command": format!("sleep {marker} & echo started")}), ctx()).await.unwrap();
    assert_eq!(text(&result), "Exit code: 0\nstarted\n");
    assert!(gone(&marker).await);
}

#[tokio::test]
async fn ten_megabytes_on_both_streams_neither_hang_nor_exceed_the_bound() {
    let (_dir, tool) = tool();
    let command = "head -c 10000000 /dev/zero | tr '\\0' a; head -c 10000000 /dev/zero | tr '\\0' b >&2";
    let result = tool.execute(json!({"command": command}), ctx()).await.unwrap();
    let shown = text(&result);
    assert!(shown.len() < 2 * 256 * 1024 + 200, "{} bytes", shown.len());
    assert_eq!(shown.matches("\n... (output truncated)").count(), 2);
    assert!(shown.contains(&"a".repeat(1000)) && shown.contains(&"b".repeat(1000)));
}

#[tokio::test]
async fn deny_patterns_and_confirmation_refuse_before_anything_runs() {
    let (dir, tool) = tool();
    let error = tool.execute(json!({"command": "touch made && rm -rf / --x"}), ctx()).await.unwrap_err();
    assert!(matches!(&error, ToolError::Failed(m) if m.starts_with("Command blocked")), "{error:?}");
    let refusing = tool.clone().with_confirm(|_| false);
    let error = refusing.execute(json!({"command": "touch made"}), ctx()).await.unwrap_err();
    assert_eq!(error, ToolError::Failed("Command was not confirmed by the user.".into()));
    assert!(!dir.path().join("made").exists(), "nothing ran");
    let custom = tool.clone().with_deny_patterns(["curl"]);
    assert!(custom.execute(json!({"command": "curl example.com"}), ctx()).await.is_err());
    custom.execute(json!({"command": "touch made"}), ctx()).await.unwrap();
    assert!(dir.path().join("made").exists(), "commands run in the working directory");
}

#[tokio::test]
async fn output_streams_to_the_host_as_it_arrives_with_a_progress_note() {
    use std::sync::{Arc, Mutex};
    let (_dir, tool) = tool();
    let updates = Arc::new(Mutex::new(Vec::new()));
    let notes = Arc::new(Mutex::new(Vec::new()));
    let mut ctx = ctx();
    let (u, n) = (updates.clone(), notes.clone());
    ctx.on_update = Some(Arc::new(move |partial| u.lock().unwrap().push(sinew_core::join_text(&partial.content, ""))));
    ctx.on_progress = Some(Arc::new(move |text: &str| n.lock().unwrap().push(text.to_owned())));
    tool.execute(json!({"command": "echo one; sleep 0.2; echo two"}), ctx).await.unwrap();
    assert_eq!(*notes.lock().unwrap(), ["$ echo one; sleep 0.2; echo two"]);
    assert_eq!(*updates.lock().unwrap(), ["one\n", "two\n"], "two chunks, as they came");
}

/// `setsid` leaves the process group, and the daemon keeps the output pipe open: the call still
/// ends at its timeout (the test's own 30 s limit fails it otherwise), and nothing is left.
#[tokio::test]
async fn a_command_that_leaves_the_process_group_is_killed_and_not_waited_for() {
    let (_dir, tool) = tool();
    let tool = tool.with_timeout(Duration::from_millis(500));
    let marker = format!("300.{}4", std::process::id());
    // Finishes at once, leaving a daemon in its own session holding stdout.
    let result =
        tool.execute(json!({"command": format!("setsid sleep {marker} & echo started")}), ctx()).await.unwrap();
    assert!(text(&result).starts_with("Exit code: 0\nstarted\n"), "{}", text(&result));
    assert!(gone(&marker).await, "the escaped sleep was killed");
    // Runs past its timeout while the daemon, in a session of its own, double-forks away.
    let error = tool
        .execute(
            json!({"command": format!("(setsid sh -c 'sleep {marker} & sleep {marker}' &); sleep {marker}")}),
            ctx(),
        )
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Failed("Command timed out after 0.5s".into()));
    assert!(gone(&marker).await, "every escaped sleep was killed");
}

#[tokio::test]
async fn commands_do_not_see_the_agents_secrets_unless_passed_through() {
    let (_dir, tool) = tool();
    // The test's own variables, set for the spawned bash only through the tool's policy: the
    // process environment cannot be changed safely in a multi-threaded test, so the policy is
    // checked on names instead, and on a variable every test process has.
    let listed = |result: &sinew_core::ToolResult| text(result).lines().skip(1).map(str::to_owned).collect::<Vec<_>>();
    let result = tool.execute(json!({"command": "env | cut -d= -f1 | sort"}), ctx()).await.unwrap();
    let names = listed(&result);
    assert!(names.iter().any(|n| n == "PATH"), "{names:?}");
    assert!(names.iter().all(|n| !sinew_tools::is_secret_env_var(n)), "{names:?}");
    assert!(names.iter().any(|n| n == "SINEW_BASH_CALL"), "the call's cookie is set");
    for (name, secret) in [
        ("ANTHROPIC_API_KEY", true),
        ("OPENAI_API_KEY", true),
        ("GITHUB_TOKEN", true),
        ("AWS_SECRET_ACCESS_KEY", true),
        ("AWS_SESSION_TOKEN", true),
        ("PGPASSWORD", true),
        ("DB_PASS", true),
        ("GOOGLE_APPLICATION_CREDENTIALS", true),
        ("npm_config__authToken", true),
        ("PATH", false),
        ("HOME", false),
        ("SSH_AUTH_SOCK", false),
        ("KEYBOARD_LAYOUT", false),
        ("CARGO_HOME", false),
    ] {
        assert_eq!(sinew_tools::is_secret_env_var(name), secret, "{name}");
    }
}

#[tokio::test]
async fn a_timeout_too_large_for_the_clock_never_fires() {
    let (_dir, tool) = tool();
    let tool = tool.with_timeout(Duration::MAX);
    let result = tool.execute(json!({"command": "echo fine"}), ctx()).await.unwrap();
    assert_eq!(text(&result), "Exit code: 0\nfine\n");
}
