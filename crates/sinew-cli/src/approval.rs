//! Asking before tools act: `bash`, the file-writing tools and the MCP servers configured so
//! wait for a yes through the agent's approval suspension; "always" stops asking for that tool
//! until the process ends; `--yolo` never asks.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use sinew::{Decisions, PendingKind, Suspension, ToolCallRef};

use crate::input::{Input, Interrupts, ReadLine};
use crate::render::{Level, Render, describe_call};

/// The built-in tools that change things.
pub(crate) const GATED_TOOLS: [&str; 3] = ["bash", "write_file", "edit_file"];

/// The reason a declined call gets, which the model reads.
pub(crate) const DECLINED: &str = "The user declined this tool call.";

#[derive(Clone, Debug)]
pub(crate) struct Approvals {
    yolo: bool,
    gated: Arc<HashSet<String>>,
    always: Arc<Mutex<HashSet<String>>>,
}

/// What the user answered for the calls of a suspension.
#[derive(Debug)]
pub(crate) enum Answer {
    Decided(Decisions),
    /// Ctrl-C at the question.
    Interrupted,
}

impl Approvals {
    pub(crate) fn new(yolo: bool, gated: impl IntoIterator<Item = String>) -> Approvals {
        Approvals { yolo, gated: Arc::new(gated.into_iter().collect()), always: Arc::default() }
    }

    /// Whether a call must wait for the user: the agent's approval policy.
    pub(crate) fn needs_approval(&self, name: &str) -> bool {
        !self.yolo
            && self.gated.contains(name)
            && !self.always.lock().unwrap_or_else(PoisonError::into_inner).contains(name)
    }

    pub(crate) fn policy(&self) -> impl Fn(ToolCallRef<'_>) -> bool + Send + Sync + 'static {
        let approvals = self.clone();
        move |call| approvals.needs_approval(call.name)
    }

    /// Asks about every call of `suspension` that waits, one question each.
    pub(crate) async fn ask(
        &self,
        suspension: &Suspension,
        input: &mut Input,
        interrupts: &mut Interrupts,
        render: &mut dyn Render,
    ) -> Answer {
        let mut decisions = Decisions::new();
        for call in suspension.waiting() {
            if call.kind != PendingKind::Approval {
                continue;
            }
            // An earlier "always" in this batch covers the calls after it.
            if !self.needs_approval(&call.tool_name) {
                decisions = decisions.approve(&call.tool_call_id);
                continue;
            }
            let question = format!(
                "allow {}? [y]es / [n]o / [a]lways for {}: ",
                describe_call(&call.tool_name, &call.arguments),
                call.tool_name
            );
            loop {
                match input.read(&question, interrupts).await {
                    ReadLine::Line(answer) => match parse(&answer) {
                        Some(Choice::Yes) => decisions = decisions.approve(&call.tool_call_id),
                        Some(Choice::No) => decisions = decisions.reject(&call.tool_call_id, DECLINED),
                        Some(Choice::Always) => {
                            self.always.lock().unwrap_or_else(PoisonError::into_inner).insert(call.tool_name.clone());
                            render.notice(
                                Level::Dim,
                                &format!("{} will run without asking until you quit", call.tool_name),
                            );
                            decisions = decisions.approve(&call.tool_call_id);
                        }
                        None => {
                            render.notice(Level::Warning, "answer y, n or a");
                            continue;
                        }
                    },
                    ReadLine::Interrupted => return Answer::Interrupted,
                    ReadLine::Eof => {
                        render.notice(Level::Warning, "no answer (input closed): declined");
                        decisions = decisions.reject(&call.tool_call_id, DECLINED);
                    }
                }
                break;
            }
        }
        Answer::Decided(decisions)
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Choice {
    Yes,
    No,
    Always,
}

fn parse(answer: &str) -> Option<Choice> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Choice::Yes),
        "n" | "no" => Some(Choice::No),
        "a" | "always" => Some(Choice::Always),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_leniently_and_nothing_else_is_taken() {
        for (answer, choice) in [
            ("y", Some(Choice::Yes)),
            (" YES \n", Some(Choice::Yes)),
            ("n", Some(Choice::No)),
            ("No", Some(Choice::No)),
            ("a", Some(Choice::Always)),
            ("always", Some(Choice::Always)),
            ("", None),
            ("sure", None),
        ] {
            assert_eq!(parse(answer), choice, "{answer:?}");
        }
    }

    #[test]
    fn only_gated_tools_wait_and_always_or_yolo_stop_the_questions() {
        let approvals = Approvals::new(false, GATED_TOOLS.map(String::from));
        assert!(approvals.needs_approval("bash"));
        assert!(approvals.needs_approval("write_file"));
        assert!(!approvals.needs_approval("read_file"));
        approvals.always.lock().unwrap().insert("bash".into());
        assert!(!approvals.needs_approval("bash"));
        assert!(approvals.needs_approval("edit_file"));
        let yolo = Approvals::new(true, GATED_TOOLS.map(String::from));
        assert!(!yolo.needs_approval("bash"));
    }
}
