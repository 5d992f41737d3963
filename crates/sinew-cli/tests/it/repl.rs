//! The REPL in a pseudo-terminal: what a person types, and the screen they see (a vt100
//! emulator renders the output, so the spinner's redraws and colours land as on a terminal).

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};
use sinew_testing::wire::{WireTurn, openai_chat_events, sse_response};
use sinew_testing::{MockServer, ReceivedRequest, ServedResponse};

use crate::support::{BINARY, Sandbox, messages, text_of};

const ROWS: u16 = 400;
const COLS: u16 = 140;
const PROMPT: &str = "sinew> ";

/// A program running in a pseudo-terminal, its output rendered as a screen.
struct Terminal {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
    /// How many prompts have been answered.
    prompts: usize,
}

impl Terminal {
    fn spawn(sandbox: &Sandbox, args: &[&str]) -> Terminal {
        let pair = native_pty_system()
            .openpty(PtySize { rows: ROWS, cols: COLS, pixel_width: 0, pixel_height: 0 })
            .expect("a pseudo-terminal");
        let mut command = CommandBuilder::new(BINARY);
        command.args(args);
        command.env_clear();
        for (key, value) in sandbox.vars() {
            command.env(key, value);
        }
        command.env("TERM", "xterm-256color");
        command.cwd(sandbox.workspace.path());
        let child = pair.slave.spawn_command(command).expect("sinew starts");
        drop(pair.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
        let mut reader = pair.master.try_clone_reader().unwrap();
        let feed = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                feed.lock().unwrap().process(&buffer[..n]);
            }
        });
        let writer = pair.master.take_writer().unwrap();
        Terminal { screen, writer, child, _master: pair.master, prompts: 0 }
    }

    /// The screen. It is tall enough that nothing a test prints scrolls off it.
    fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    /// Waits until `check` holds for the screen; fails with the screen after 20 s.
    fn wait_for(&self, what: &str, check: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let contents = self.contents();
            if check(&contents) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; the screen:\n{contents}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait_for_text(&self, text: &str) {
        self.wait_for(&format!("{text:?}"), |screen| screen.contains(text));
    }

    fn wait_for_count(&self, text: &str, count: usize) {
        self.wait_for(&format!("{count} × {text:?}"), |screen| screen.matches(text).count() >= count);
    }

    /// Waits for the next prompt, then types `line` and Enter. (rustyline drops what was typed
    /// before it took the terminal, as line editors do.)
    fn type_line(&mut self, line: &str) {
        self.prompts += 1;
        self.wait_for_count(PROMPT, self.prompts);
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\r").unwrap();
        self.writer.flush().unwrap();
    }

    /// Ctrl-C at the next prompt.
    fn ctrl_c_at_prompt(&mut self) {
        self.prompts += 1;
        self.wait_for_count(PROMPT, self.prompts);
        self.ctrl_c();
    }

    fn ctrl_c(&mut self) {
        self.writer.write_all(&[0x03]).unwrap();
        self.writer.flush().unwrap();
    }

    fn wait_exit(&mut self) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "sinew did not exit; the screen:\n{}", self.contents());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// A prompt containing "slow" is answered one chunk every 200 ms, for a minute; anything else at
/// once.
fn model(request: &ReceivedRequest) -> ServedResponse {
    let messages = messages(request);
    let prompt = messages.last().map(text_of).unwrap_or_default();
    if messages.last().is_some_and(|m| m["role"] == "user") && prompt.contains("touch") {
        let call = WireTurn::new().tool_call("call_1", "bash", serde_json::json!({"command": "touch ran.txt"}));
        return sse_response(openai_chat_events(&call), None);
    }
    if prompt.contains("slow") {
        let mut turn = WireTurn::new();
        for i in 0..300 {
            turn = turn.text(format!("chunk{i} "));
        }
        sse_response(openai_chat_events(&turn), Some(Duration::from_millis(200)))
    } else {
        let answer = format!("Answer number {}.", messages.iter().filter(|m| m["role"] == "user").count());
        sse_response(openai_chat_events(&WireTurn::new().text(answer).usage(120, 8)), None)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_repl_switches_models_clears_streams_aborts_on_ctrl_c_and_quits() {
    let server = MockServer::start(model).await;
    let base_url = format!("{}/v1", server.url());
    let sandbox = Sandbox::new(&[("OPENAI_BASE_URL", &base_url)]);
    let mut terminal = tokio::task::block_in_place(|| Terminal::spawn(&sandbox, &["--model", "first-model"]));
    tokio::task::block_in_place(|| {
        terminal.wait_for_text("sinew · openai/first-model · session ");

        terminal.type_line("/help");
        terminal.wait_for_text("/resume ID");

        terminal.type_line("/model second-model");
        terminal.wait_for_text("model: openai/second-model");

        terminal.type_line("hello");
        terminal.wait_for_text("Answer number 1.");
        terminal.wait_for_text("↳ 120 in · 8 out");

        terminal.type_line("/clear");
        terminal.wait_for_text("conversation cleared; new session");

        terminal.type_line("hello after clear");
        terminal.wait_for_count("Answer number 1.", 2);

        terminal.type_line("tell me something slow");
        terminal.wait_for_text("chunk2 ");
        terminal.ctrl_c();
        terminal.wait_for_text("turn aborted; the conversation so far is kept");

        terminal.type_line("are you there?");
        terminal.wait_for_text("Answer number 3.");

        terminal.type_line("/quit");
        let status = terminal.wait_exit();
        assert!(status.success(), "{status:?}");
    });

    let screen = terminal.contents();
    assert!(!screen.contains("chunk299"), "the aborted answer stopped streaming:\n{screen}");
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().all(|r| r.json()["model"] == "second-model"));
    // After /clear, the first exchange is gone; the aborted turn left a valid history.
    let history = messages(&requests[3]);
    let prompts: Vec<String> = history.iter().filter(|m| m["role"] == "user").map(text_of).collect();
    assert_eq!(prompts, ["hello after clear", "tell me something slow", "are you there?"]);
    let roles: Vec<&str> = history.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert!(roles.windows(2).all(|w| w != ["assistant", "assistant"]), "{roles:?}");
    // What was typed, and the conversations, are readable by their owner only.
    use std::os::unix::fs::PermissionsExt;
    for file in [sandbox.database(), sandbox.database().with_file_name("history.txt")] {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sessions_are_listed_and_resumed_and_ctrl_c_aborts_questions_or_twice_quits() {
    let server = MockServer::start(model).await;
    let base_url = format!("{}/v1", server.url());
    let sandbox = Sandbox::new(&[("OPENAI_BASE_URL", &base_url)]);
    let mut terminal = tokio::task::block_in_place(|| Terminal::spawn(&sandbox, &["--model", "m"]));
    let first_session = tokio::task::block_in_place(|| {
        terminal.type_line("remember the word marmalade");
        terminal.wait_for_text("Answer number 1.");
        terminal.type_line("/save conversation.json");
        terminal.wait_for_text("conversation written to conversation.json");
        let screen = terminal.contents();
        let line = screen.lines().find(|l| l.starts_with("session ") && l.contains("is saved in")).unwrap().to_owned();
        let id = line.split_whitespace().nth(1).unwrap().to_owned();

        terminal.type_line("/clear");
        terminal.wait_for_text("conversation cleared");
        terminal.type_line("/sessions");
        terminal.wait_for_text("remember the word marmalade");
        terminal.type_line(&format!("/resume {}", &id[..8]));
        terminal.wait_for_text(&format!("resumed session {id} (2 messages)"));
        terminal.type_line("what was the word?");
        terminal.wait_for_text("Answer number 2.");

        // Ctrl-C at an approval question aborts the turn; the call never runs.
        terminal.type_line("touch a file");
        terminal.wait_for_text(r#"allow bash(command="touch ran.txt")?"#);
        terminal.ctrl_c();
        terminal.wait_for_text("turn aborted; the conversation so far is kept");
        terminal.type_line("never mind");
        terminal.wait_for_text("Answer number 4.");

        terminal.ctrl_c_at_prompt();
        terminal.wait_for_text("(Ctrl-C again to quit, or /quit)");
        terminal.ctrl_c_at_prompt();
        assert!(terminal.wait_exit().success());
        id
    });
    let requests = server.requests();
    let resumed = messages(&requests[1]);
    let prompts: Vec<String> = resumed.iter().filter(|m| m["role"] == "user").map(text_of).collect();
    assert_eq!(prompts, ["remember the word marmalade", "what was the word?"], "the resumed history was sent");
    let last = messages(requests.last().unwrap());
    let result = last.iter().find(|m| m["role"] == "tool").expect("the pending call was answered");
    assert!(text_of(result).contains("not executed"), "{result}");
    assert!(!sandbox.workspace.path().join("ran.txt").exists(), "the interrupted call never ran");
    let written = std::fs::read_to_string(sandbox.workspace.path().join("conversation.json")).unwrap();
    let snapshot: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(snapshot["sessionId"], first_session.as_str());
    assert_eq!(snapshot["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_during_a_one_shot_answer_exits_130() {
    let server = MockServer::start(model).await;
    let base_url = format!("{}/v1", server.url());
    let sandbox = Sandbox::new(&[("OPENAI_BASE_URL", &base_url)]);
    tokio::task::block_in_place(|| {
        let mut terminal = Terminal::spawn(&sandbox, &["--model", "m", "something slow please"]);
        terminal.wait_for_text("chunk1 ");
        terminal.ctrl_c();
        terminal.wait_for_text("turn aborted; the conversation so far is kept");
        let status = terminal.wait_exit();
        assert_eq!(status.exit_code(), 130, "{}", terminal.contents());
        assert!(terminal.contents().contains("session "), "the session is still reported and saved");
    });
}
