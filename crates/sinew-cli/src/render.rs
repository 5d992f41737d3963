//! What the user sees: a run's events drawn on the terminal, or printed as JSON lines.
//!
//! The answer's text goes to stdout, so `sinew "question" > answer.md` keeps only the answer;
//! everything else (thinking, tool lines, the spinner, usage, notices) goes to stderr. With
//! `--json-schema` the answer streams to stderr too, and stdout gets only the checked value.

use std::io::{IsTerminal, Write};
use std::time::Instant;

use serde_json::Value;
use sinew::{AgentEvent, StreamDelta, ToolResult, Usage, join_text};

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const DIM: &str = "2";
const BOLD: &str = "1";
const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";
const CYAN: &str = "36";

/// How a run is shown.
pub(crate) trait Render {
    fn on_event(&mut self, event: &AgentEvent);
    /// Redraws the spinner, if one is showing.
    fn tick(&mut self) {}
    fn spinning(&self) -> bool {
        false
    }
    /// A line for the user (on stderr), in a colour if it is an error or a warning.
    fn notice(&mut self, level: Level, text: &str);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    Info,
    Dim,
    Success,
    Warning,
    Error,
}

/// Colours (unless `NO_COLOR` is set or stderr is not a terminal) and the spinner (only on a
/// terminal).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Terminal {
    pub(crate) color: bool,
    pub(crate) live: bool,
}

impl Terminal {
    pub(crate) fn detect() -> Terminal {
        let tty = std::io::stderr().is_terminal();
        Terminal { color: tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()), live: tty }
    }

    pub(crate) fn paint(self, code: &str, text: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    fn level(self, level: Level, text: &str) -> String {
        match level {
            Level::Info => text.to_owned(),
            Level::Dim => self.paint(DIM, text),
            Level::Success => self.paint(GREEN, text),
            Level::Warning => self.paint(YELLOW, text),
            Level::Error => self.paint(RED, text),
        }
    }
}

/// The human display.
#[derive(Debug)]
pub(crate) struct Display {
    term: Terminal,
    /// A REPL, where `/thinking` exists.
    interactive: bool,
    /// Thinking printed in full, dimmed; else one line per thinking block.
    pub(crate) show_thinking: bool,
    /// The thinking of the latest message, for `/thinking` to expand.
    pub(crate) last_thinking: String,
    thinking: Option<Thinking>,
    /// The answer's text is mid-line.
    text_open: bool,
    spinner: Option<Spinner>,
    /// The timestamp of the message whose usage was shown last.
    last_usage_at: Option<u64>,
    /// The model the run asked for.
    run_model: String,
    /// Answer text goes to stderr ([`Display::with_answer_on_stderr`]).
    answer_on_stderr: bool,
}

/// A thinking block being streamed, its words counted as they come (never recounted).
#[derive(Debug, Default)]
struct Thinking {
    text: String,
    words: usize,
    in_word: bool,
}

impl Thinking {
    fn push(&mut self, delta: &str) {
        for c in delta.chars() {
            let word = !c.is_whitespace();
            if word && !self.in_word {
                self.words += 1;
            }
            self.in_word = word;
        }
        self.text.push_str(delta);
    }
}

#[derive(Debug)]
struct Spinner {
    label: String,
    since: Instant,
    frame: usize,
    drawn: bool,
}

impl Display {
    pub(crate) fn new(term: Terminal, show_thinking: bool, interactive: bool) -> Display {
        Display {
            term,
            interactive,
            show_thinking,
            last_thinking: String::new(),
            thinking: None,
            text_open: false,
            spinner: None,
            last_usage_at: None,
            run_model: String::new(),
            answer_on_stderr: false,
        }
    }

    pub(crate) fn terminal(&self) -> Terminal {
        self.term
    }

    fn err_line(&mut self, line: &str) {
        self.clear_spinner();
        self.close_text();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
        let _ = err.flush();
    }

    fn close_text(&mut self) {
        if self.text_open {
            self.text_open = false;
            self.write_answer("\n");
        }
    }

    /// Shows the answer's text on stderr rather than stdout, which then carries only what the
    /// caller prints (`--json-schema`: the checked answer).
    pub(crate) fn with_answer_on_stderr(mut self) -> Display {
        self.answer_on_stderr = true;
        self
    }

    /// Writes answer text where answers go.
    fn write_answer(&self, text: &str) {
        fn write_flushed(mut out: impl Write, text: &str) {
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        match self.answer_on_stderr {
            true => write_flushed(std::io::stderr().lock(), text),
            false => write_flushed(std::io::stdout().lock(), text),
        }
    }

    /// Shows the spinner, or changes its label. A label change shows at the next tick, so fast
    /// deltas never cost a terminal write each.
    fn spin(&mut self, label: impl Into<String>) {
        let label = label.into();
        match &mut self.spinner {
            Some(spinner) => {
                spinner.label = label;
                if spinner.drawn {
                    return;
                }
            }
            None => self.spinner = Some(Spinner { label, since: Instant::now(), frame: 0, drawn: false }),
        }
        self.draw_spinner();
    }

    fn stop_spinner(&mut self) {
        self.clear_spinner();
        self.spinner = None;
    }

    fn clear_spinner(&mut self) {
        if let Some(spinner) = &mut self.spinner
            && spinner.drawn
        {
            spinner.drawn = false;
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }

    fn draw_spinner(&mut self) {
        let term = self.term;
        let text_open = self.text_open;
        let Some(spinner) = &mut self.spinner else { return };
        // Never draw over a line of the answer still being written.
        if !term.live || text_open {
            return;
        }
        let line = format!(
            "{} {} · {}s",
            SPINNER[spinner.frame % SPINNER.len()],
            clip(&spinner.label, 70),
            spinner.since.elapsed().as_secs()
        );
        spinner.drawn = true;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", term.paint(DIM, &line));
        let _ = err.flush();
    }

    /// Ends a thinking block: its summary line, or the end of its dimmed text.
    fn end_thinking(&mut self) {
        let Some(Thinking { text, words, .. }) = self.thinking.take() else { return };
        if self.show_thinking {
            self.stop_spinner();
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err);
            let _ = err.flush();
        } else {
            let hint = if self.interactive { "/thinking to expand" } else { "--show-thinking to see it" };
            let line = format!("▸ thought for {words} words ({hint})");
            self.stop_spinner();
            let line = self.term.paint(DIM, &line);
            self.err_line(&line);
        }
        self.last_thinking = text;
    }

    fn on_delta(&mut self, delta: &StreamDelta) {
        match delta {
            StreamDelta::Thinking { delta, .. } => {
                let fresh = self.thinking.is_none();
                let thinking = self.thinking.get_or_insert_with(Thinking::default);
                thinking.push(delta);
                if self.show_thinking {
                    self.stop_spinner();
                    self.close_text();
                    let mut err = std::io::stderr().lock();
                    if fresh {
                        let _ = write!(err, "{}", self.term.paint(DIM, "thinking: "));
                    }
                    let _ = write!(err, "{}", self.term.paint(DIM, delta));
                    let _ = err.flush();
                } else {
                    let words = thinking.words;
                    self.spin(format!("thinking · {words} words"));
                }
            }
            StreamDelta::Text { delta, .. } => {
                self.end_thinking();
                self.stop_spinner();
                self.write_answer(delta);
                if !delta.is_empty() {
                    self.text_open = !delta.ends_with('\n');
                }
            }
            StreamDelta::ToolCall { name, .. } => {
                self.end_thinking();
                if let Some(name) = name {
                    self.close_text();
                    self.spin(format!("preparing a {name} call"));
                }
            }
            _ => {}
        }
    }

    fn usage_line(&self, model: &str, usage: &Usage) -> String {
        let mut parts = vec![format!("{} in", thousands(usage.prompt_tokens()))];
        if usage.cache_read > 0 {
            parts.push(format!("{} cached", thousands(usage.cache_read)));
        }
        parts.push(format!("{} out", thousands(usage.output)));
        // The model the service reports, else the one asked for (a proxy may rename it).
        let cost = sinew::catalog::cost(model, usage).or_else(|| sinew::catalog::cost(&self.run_model, usage));
        parts.push(match cost {
            Some(dollars) => format!("${dollars:.4}"),
            None => format!("no price for {model}"),
        });
        self.term.paint(DIM, &format!("  ↳ {}", parts.join(" · ")))
    }
}

impl Render for Display {
    fn on_event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::AgentStart { model, .. } => self.run_model.clone_from(model),
            AgentEvent::TurnStart { .. } => self.spin("waiting for the model"),
            AgentEvent::MessageUpdate { delta, .. } => self.on_delta(delta),
            AgentEvent::MessageEnd { message, .. } if message.as_assistant().is_some() => {
                self.end_thinking();
                self.stop_spinner();
                self.close_text();
            }
            AgentEvent::TurnEnd { message, .. } => {
                self.end_thinking();
                // A turn that waited for approval ends twice, with the same message.
                let repeated = self.last_usage_at.replace(message.timestamp) == Some(message.timestamp);
                if message.usage != Usage::default() && !repeated {
                    let line = self.usage_line(&message.model, &message.usage);
                    self.err_line(&line);
                }
            }
            AgentEvent::ToolExecutionStart { tool_name, args, .. } => {
                let line = format!(
                    "{} {}",
                    self.term.paint(CYAN, "●"),
                    self.term.paint(BOLD, &describe_call(tool_name, args))
                );
                self.err_line(&line);
                self.spin(format!("running {tool_name}"));
            }
            AgentEvent::ToolExecutionUpdate { tool_name, partial_result, .. } => {
                let text = join_text(&partial_result.content, "\n");
                match text.lines().rev().find(|l| !l.trim().is_empty()) {
                    Some(last) => self.spin(format!("{tool_name}: {}", last.trim())),
                    None => self.spin(format!("running {tool_name}")),
                }
            }
            AgentEvent::ToolExecutionEnd { tool_name, result, is_error, .. } => {
                self.stop_spinner();
                let summary = summarize_result(result);
                let line = if *is_error {
                    self.term.paint(RED, &format!("  ⎿ {tool_name} failed: {summary}"))
                } else {
                    format!(
                        "  {} {}",
                        self.term.paint(GREEN, "⎿"),
                        self.term.paint(DIM, &format!("{tool_name}: {summary}"))
                    )
                };
                self.err_line(&line);
            }
            AgentEvent::ProviderRetry { attempt, max_retries, delay_ms, error, .. } => {
                let line = format!(
                    "retrying in {:.1}s (attempt {attempt} of {max_retries}): {}",
                    *delay_ms as f64 / 1000.0,
                    clip(error, 200)
                );
                self.notice(Level::Warning, &line);
            }
            AgentEvent::ContextCompacted { messages_before, messages_after, tokens_before, tokens_after, .. } => {
                let line = format!(
                    "context compacted: {messages_before} → {messages_after} messages, ~{} → ~{} tokens",
                    thousands(*tokens_before as u64),
                    thousands(*tokens_after as u64)
                );
                self.notice(Level::Dim, &line);
            }
            AgentEvent::InputRejected { reason, .. } => {
                self.notice(Level::Error, &format!("prompt rejected: {reason}"))
            }
            AgentEvent::AgentEnd { .. } => {
                self.end_thinking();
                self.stop_spinner();
                self.close_text();
            }
            _ => {}
        }
    }

    fn tick(&mut self) {
        if let Some(spinner) = &mut self.spinner {
            spinner.frame += 1;
        }
        self.draw_spinner();
    }

    fn spinning(&self) -> bool {
        self.term.live && self.spinner.is_some()
    }

    fn notice(&mut self, level: Level, text: &str) {
        let line = self.term.level(level, text);
        self.err_line(&line);
    }
}

/// `--json`: every event as one JSON object per line on stdout; notices on stderr.
#[derive(Debug, Default)]
pub(crate) struct JsonLines;

impl Render for JsonLines {
    fn on_event(&mut self, event: &AgentEvent) {
        let mut out = std::io::stdout().lock();
        // An event always serializes (plain data); a closed stdout ends the output, not the run.
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    fn notice(&mut self, _level: Level, text: &str) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
    }
}

/// `name(key="value", n=3)`, each value and the whole line clipped.
pub(crate) fn describe_call(name: &str, args: &Value) -> String {
    let inner = match args {
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| {
                let value = match value {
                    Value::String(s) => format!("{:?}", clip(s, 60)),
                    other => clip(&other.to_string(), 60),
                };
                format!("{key}={value}")
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => clip(&other.to_string(), 60),
    };
    clip(&format!("{name}({inner})"), 160)
}

/// The first line of a result, and how many more there are. A command's result (its details
/// carry `exit_code`) is its exit code and the first line of its output.
pub(crate) fn summarize_result(result: &ToolResult) -> String {
    let text = join_text(&result.content, "\n");
    let exit_code = result.details.get("exit_code").and_then(Value::as_i64);
    let mut lines = text.lines().filter(|l| {
        let l = l.trim();
        !l.is_empty() && !(exit_code.is_some() && (l.starts_with("Exit code:") || l == "STDOUT:" || l == "STDERR:"))
    });
    let other = result.content.iter().filter(|c| c.as_text().is_none()).count();
    let summary = match lines.next() {
        None if other == 0 => "no output".into(),
        None => format!("{other} block(s) of non-text content"),
        Some(first) => {
            let more = lines.count();
            let first = clip(first.trim(), 100);
            if more == 0 { first } else { format!("{first} (+{more} lines)") }
        }
    };
    match exit_code {
        Some(code) => format!("exit {code} · {summary}"),
        None => summary,
    }
}

/// At most `max` characters, with `…` when cut; control characters shown as spaces.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    for (count, c) in text.chars().enumerate() {
        if count == max {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

/// `1234567` → `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sinew::Content;

    use super::*;

    #[test]
    fn calls_are_one_clipped_line() {
        let check = |args: Value, expected: &str| assert_eq!(describe_call("bash", &args), expected);
        check(json!({"command": "ls -la"}), r#"bash(command="ls -la")"#);
        check(json!({"path": "a.txt", "offset": 3}), r#"bash(offset=3, path="a.txt")"#);
        check(json!({"text": "line\nbreak"}), r#"bash(text="line break")"#);
        check(json!(null), "bash()");
        let long = "x".repeat(100);
        assert_eq!(describe_call("w", &json!({"content": long})).chars().count(), "w(content=\"\")".len() + 61);
    }

    #[test]
    fn results_are_summarized_by_their_first_line() {
        let check = |text: &str, expected: &str| {
            assert_eq!(summarize_result(&ToolResult::text(text)), expected);
        };
        check("wrote 5 bytes to a.txt", "wrote 5 bytes to a.txt");
        check("a\n\nb\nc\n", "a (+2 lines)");
        check("", "no output");
        let command =
            |text: &str, code: i64| ToolResult::text(text).with_details(serde_json::json!({"exit_code": code}));
        assert_eq!(summarize_result(&command("Exit code: 0\nhello\n", 0)), "exit 0 · hello");
        assert_eq!(
            summarize_result(&command("Exit code: 2\nSTDOUT:\n\nSTDERR:\nno such file\n", 2)),
            "exit 2 · no such file"
        );
        assert_eq!(summarize_result(&command("Exit code: 0\n", 0)), "exit 0 · no output");
        assert_eq!(
            summarize_result(&ToolResult { content: vec![], details: Value::Null, child_loop_id: None }),
            "no output"
        );
        let image = ToolResult { content: vec![Content::image("aGk=", "image/png")], ..ToolResult::text("") };
        assert_eq!(summarize_result(&image), "1 block(s) of non-text content");
    }

    #[test]
    fn thinking_words_are_counted_across_any_split() {
        let text = "  The user wants\ta file.\nI will write it ";
        for cut in 0..=text.len() {
            let mut thinking = Thinking::default();
            thinking.push(&text[..cut]);
            thinking.push(&text[cut..]);
            assert_eq!(thinking.words, text.split_whitespace().count(), "cut at {cut}");
            assert_eq!(thinking.text, text);
        }
    }

    #[test]
    fn numbers_and_text_are_formatted() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(clip("héllo", 3), "hél…");
        assert_eq!(clip("héllo", 5), "héllo");
        let plain = Terminal { color: false, live: false };
        assert_eq!(plain.paint(RED, "x"), "x");
        assert_eq!(Terminal { color: true, live: false }.paint(RED, "x"), "\x1b[31mx\x1b[0m");
    }
}
