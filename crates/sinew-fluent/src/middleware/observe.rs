//! Observability middleware: a structured JSON log, and PII redaction.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use regex::Regex;
use serde_json::{Map, Value, json};
use sinew_adk::{
    CallbackContext, Content, InvocationContext, LlmRequest, LlmResponse, SystemInstruction, Tool, ToolContext,
    ToolError,
};

use super::Middleware;

type Sink = Arc<Mutex<Box<dyn Write + Send>>>;

/// One JSON object per line for every runner, agent, model and tool step: which invocation, which
/// agent, the model's token counts, the tool's name and argument and result names, and each
/// error's kind. Values (messages, arguments, results, error texts, which may quote them) are
/// never written: they may hold secrets.
pub struct StructuredLog {
    sink: Sink,
}

impl std::fmt::Debug for StructuredLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredLog").finish_non_exhaustive()
    }
}

impl StructuredLog {
    /// A log written to standard error.
    pub fn stderr() -> Self {
        StructuredLog::to_writer(std::io::stderr())
    }

    /// A log written to `writer`.
    pub fn to_writer(writer: impl Write + Send + 'static) -> Self {
        StructuredLog { sink: Arc::new(Mutex::new(Box::new(writer))) }
    }

    fn write(&self, hook: &str, invocation_id: &str, agent: Option<&str>, fields: Value) {
        let mut line = json!({"hook": hook, "invocation_id": invocation_id});
        if let Some(agent) = agent {
            line["agent"] = json!(agent);
        }
        if let (Value::Object(line), Value::Object(fields)) = (&mut line, fields) {
            line.extend(fields);
        }
        let mut sink = self.sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // A log that cannot be written must not fail the run.
        let _ = writeln!(sink, "{line}");
        let _ = sink.flush();
    }
}

/// What kind of failure a model error is, without its text (which may quote the request).
fn model_error_kind(error: &sinew_adk::Error) -> &'static str {
    match error {
        sinew_adk::Error::Model(e) if e.is_retryable() => "model_unavailable",
        sinew_adk::Error::Model(_) => "model_error",
        sinew_adk::Error::LlmCallsLimitExceeded(_) => "llm_calls_limit_exceeded",
        sinew_adk::Error::Cancelled => "cancelled",
        _ => "error",
    }
}

/// What kind of failure a tool error is, without its text (which may quote the arguments).
fn tool_error_kind(error: &ToolError) -> &'static str {
    match error {
        ToolError::Failed(_) => "failed",
        ToolError::NotFound(_) => "not_found",
        ToolError::InvalidArgs(_) => "invalid_args",
        ToolError::Cancelled => "cancelled",
        _ => "error",
    }
}

fn keys(map: &Map<String, Value>) -> Vec<&String> {
    map.keys().collect()
}

#[async_trait]
impl Middleware for StructuredLog {
    fn name(&self) -> &str {
        "structured_log"
    }

    async fn before_run(&self, ctx: &InvocationContext) -> Option<Content> {
        self.write("before_run", ctx.invocation_id(), Some(ctx.agent().name()), json!({}));
        None
    }

    async fn after_run(&self, ctx: &InvocationContext) {
        self.write("after_run", ctx.invocation_id(), None, json!({}));
    }

    async fn before_agent(&self, ctx: &CallbackContext, agent: &str) -> Option<Content> {
        self.write("before_agent", ctx.invocation_id(), Some(agent), json!({}));
        None
    }

    async fn after_agent(&self, ctx: &CallbackContext, agent: &str) -> Option<Content> {
        self.write("after_agent", ctx.invocation_id(), Some(agent), json!({}));
        None
    }

    async fn before_model(&self, ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        let fields = json!({"model": request.model, "contents": request.contents.len()});
        self.write("before_model", ctx.invocation_id(), Some(ctx.agent_name()), fields);
        None
    }

    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        if response.is_partial() {
            return None;
        }
        let usage = response.usage_metadata.as_ref();
        let fields = json!({
            "input_tokens": usage.and_then(|u| u.prompt_token_count),
            "output_tokens": usage.and_then(|u| u.candidates_token_count),
            "error_code": response.error_code,
        });
        self.write("after_model", ctx.invocation_id(), Some(ctx.agent_name()), fields);
        None
    }

    async fn on_model_error(
        &self,
        ctx: &CallbackContext,
        _request: &LlmRequest,
        error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        self.write(
            "on_model_error",
            ctx.invocation_id(),
            Some(ctx.agent_name()),
            json!({"error": model_error_kind(error)}),
        );
        None
    }

    async fn before_tool(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        args: &mut Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let fields = json!({"tool": tool.name(), "call_id": ctx.function_call_id(), "args": keys(args)});
        self.write("before_tool", ctx.invocation_id(), Some(ctx.agent_name()), fields);
        None
    }

    async fn after_tool(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        _args: &Map<String, Value>,
        result: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let fields = json!({"tool": tool.name(), "call_id": ctx.function_call_id(), "result": keys(result)});
        self.write("after_tool", ctx.invocation_id(), Some(ctx.agent_name()), fields);
        None
    }

    async fn on_tool_error(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        _args: &Map<String, Value>,
        error: &ToolError,
    ) -> Option<Map<String, Value>> {
        let fields = json!({"tool": tool.name(), "call_id": ctx.function_call_id(), "error": tool_error_kind(error)});
        self.write("on_tool_error", ctx.invocation_id(), Some(ctx.agent_name()), fields);
        None
    }
}

/// Replaces personal data with placeholders before the model sees it: e-mail addresses
/// (`[EMAIL]`), payment card numbers that pass the Luhn check (`[CARD]`), US social security
/// numbers (`[SSN]`) and phone numbers written as phone numbers (`[PHONE]`: a `+` country code,
/// an area code in parentheses, or `415-555-0134`), in the system instruction, the text of every request and in tool
/// results. The session keeps what the user wrote; the model and the tools' answers do not.
#[derive(Debug)]
pub struct PiiRedaction {
    email: Regex,
    card: Regex,
    ssn: Regex,
    phone: Regex,
}

impl Default for PiiRedaction {
    fn default() -> Self {
        PiiRedaction::new()
    }
}

impl PiiRedaction {
    /// The four kinds of personal data above.
    #[allow(clippy::missing_panics_doc)]
    pub fn new() -> Self {
        let re = |pattern: &str| Regex::new(pattern).unwrap_or_else(|e| unreachable!("a fixed pattern: {e}"));
        PiiRedaction {
            email: re(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
            // Runs of up to 41 digits: the card is found inside (`redact_card`).
            card: re(r"\b\d(?:[ -]?\d){12,40}\b"),
            ssn: re(r"\b\d{3}-\d{2}-\d{4}\b"),
            // International (`+44 20 7946 0958`), an area code in parentheses (`(020) 7946 0958`),
            // or North American digits with separators (`415-555-0134`): bare runs of digits are
            // too often something else.
            phone: re(concat!(
                r"\+\d{1,3}[\s.-]?\(?\d{1,4}\)?(?:[\s.-]?\d{2,4}){2,4}\b",
                r"|\(\d{2,4}\)\s?\d{3,4}[\s.-]?\d{3,4}\b",
                r"|\b\d{3}[-.]\d{3}[-.]\d{4}\b",
            )),
        }
    }

    /// `text` with its personal data replaced (borrowed when there is none).
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let text = self.email.replace_all(text, "[EMAIL]");
        let text = match self.card.replace_all(&text, |c: &regex::Captures<'_>| redact_card(&c[0])) {
            Cow::Borrowed(_) => text,
            Cow::Owned(owned) => Cow::Owned(owned),
        };
        let text = match self.ssn.replace_all(&text, "[SSN]") {
            Cow::Borrowed(_) => text,
            Cow::Owned(owned) => Cow::Owned(owned),
        };
        match self.phone.replace_all(&text, "[PHONE]") {
            Cow::Borrowed(_) => text,
            Cow::Owned(owned) => Cow::Owned(owned),
        }
    }

    /// Redacts every string inside `value`; whether anything changed.
    fn redact_value(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => match self.redact(s) {
                Cow::Borrowed(_) => false,
                Cow::Owned(redacted) => {
                    *s = redacted;
                    true
                }
            },
            Value::Array(items) => items.iter_mut().fold(false, |changed, v| self.redact_value(v) | changed),
            Value::Object(map) => map.values_mut().fold(false, |changed, v| self.redact_value(v) | changed),
            _ => false,
        }
    }
}

/// A run of digit groups with the card number in it replaced: the longest span of whole groups,
/// 13 to 19 digits, that passes the Luhn check (a card can sit between a quantity and an expiry
/// date in one run).
fn redact_card(run: &str) -> String {
    let bytes = run.as_bytes();
    let starts: Vec<usize> =
        (0..bytes.len()).filter(|&i| bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit())).collect();
    let ends: Vec<usize> = (0..bytes.len())
        .filter(|&i| bytes[i].is_ascii_digit() && bytes.get(i + 1).is_none_or(|b| !b.is_ascii_digit()))
        .map(|i| i + 1)
        .collect();
    let mut best: Option<(usize, usize)> = None;
    for &start in &starts {
        for &end in ends.iter().filter(|&&end| end > start) {
            let span = &run[start..end];
            let digits = span.bytes().filter(u8::is_ascii_digit).count();
            let longer = best.is_none_or(|(s, e)| end - start > e - s);
            if (13..=19).contains(&digits) && longer && luhn(span) {
                best = Some((start, end));
            }
        }
    }
    match best {
        Some((start, end)) => format!("{}[CARD]{}", &run[..start], &run[end..]),
        None => run.to_owned(),
    }
}

/// Whether the digits of `number` pass the Luhn check.
fn luhn(number: &str) -> bool {
    let digits: Vec<u32> = number.chars().filter_map(|c| c.to_digit(10)).collect();
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| if i % 2 == 1 { if d * 2 > 9 { d * 2 - 9 } else { d * 2 } } else { d })
        .sum();
    digits.len() >= 13 && sum.is_multiple_of(10)
}

#[async_trait]
impl Middleware for PiiRedaction {
    fn name(&self) -> &str {
        "pii_redaction"
    }

    async fn before_model(&self, _ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        // State the instruction's templates brought in is the user's data too.
        match &mut request.config.system_instruction {
            Some(SystemInstruction::Text(text)) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            Some(SystemInstruction::Content(content)) => {
                for part in content.parts.iter_mut().flatten() {
                    if let Some(text) = &mut part.text
                        && let Cow::Owned(redacted) = self.redact(text)
                    {
                        *text = redacted;
                    }
                }
            }
            _ => {}
        }
        for content in &mut request.contents {
            for part in content.parts.iter_mut().flatten() {
                if let Some(text) = &mut part.text
                    && let Cow::Owned(redacted) = self.redact(text)
                {
                    *text = redacted;
                }
                if let Some(response) = part.function_response.as_mut().and_then(|r| r.response.as_mut()) {
                    let mut value = Value::Object(std::mem::take(response));
                    self.redact_value(&mut value);
                    if let Value::Object(map) = value {
                        *response = map;
                    }
                }
            }
        }
        None
    }

    async fn after_tool(
        &self,
        _ctx: &ToolContext,
        _tool: &dyn Tool,
        _args: &Map<String, Value>,
        result: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let mut value = Value::Object(result.clone());
        if !self.redact_value(&mut value) {
            return None;
        }
        match value {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }
}
