//! Structured answers: an agent that answers with a Rust value, its JSON checked against the
//! schema and corrected by the model when it does not fit.

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sinew_core::{
    AgentTool, EndReason, ResponseFormat, ToolChoice, ToolContext, ToolError, ToolResult, Usage, valid_tool_name,
};

use crate::agent::Agent;
use crate::typed::{InvalidSchema, SchemaValidator, schema_for};

/// How many times an answer that does not fit is sent back for correction by default.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// How the model is asked for the structured answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtractMode {
    /// The service's own structured output ([`ResponseFormat::JsonSchema`]): OpenAI's
    /// `response_format` / `text.format`, Gemini's `responseJsonSchema`, Anthropic's and
    /// Bedrock's output config. The answer is the model's final text.
    #[default]
    Native,
    /// A tool whose parameters are the schema, which the model is made to call; its arguments
    /// are the answer. For models without native structured output (older Claude models,
    /// most models on Bedrock, servers speaking the Chat protocol without `json_schema`).
    Tool,
}

/// Why no value came out.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    /// The schema is not valid JSON Schema.
    #[error(transparent)]
    Schema(#[from] InvalidSchema),
    /// The run did not end with an answer: it failed (the error), was aborted, stopped by a
    /// hook or a limit, or suspended waiting for an approval.
    #[error("the run ended without an answer ({reason:?}){}", error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    Run {
        /// How the run ended.
        reason: EndReason,
        /// The model call's error, when it failed.
        error: Option<String>,
    },
    /// Every answer, the retries included, was invalid.
    #[error("no valid answer after {attempts} attempts: {problem}")]
    Invalid {
        /// How many answers were read.
        attempts: u32,
        /// What was wrong with the last one.
        problem: String,
        /// The last answer as the model gave it (text, or the tool call's arguments as JSON).
        answer: String,
    },
}

/// A value extracted, with what it took.
#[derive(Clone, Debug, PartialEq)]
pub struct Extracted<T> {
    /// The answer.
    pub value: T,
    /// How many answers were read (1 when the first one fit).
    pub attempts: u32,
    /// Usage of every model call it took.
    pub usage: Usage,
}

/// An agent that answers with a `T`.
///
/// [`extract`](Self::extract) sends the prompt, reads the answer as JSON, checks it against the
/// schema (the one derived from `T`, or given) and reads it as a `T`. An answer that is not JSON,
/// does not fit or does not read is sent back to the model with what is wrong, up to
/// [`with_max_retries`](Self::with_max_retries) times (default [`DEFAULT_MAX_RETRIES`]). The
/// conversation stays in the agent: its tools, hooks and limits apply, and later prompts see it.
/// Streaming events (the JSON arriving as text deltas) go where the agent sends them.
///
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use sinew_agent::{Agent, extract::Extractor};
/// use sinew_testing::{MockProvider, MockResponse};
///
/// #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
/// struct City {
///     name: String,
///     population: u64,
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let provider = MockProvider::new([
///     MockResponse::text(r#"{"name": "Paris"}"#),
///     MockResponse::text(r#"{"name": "Paris", "population": 2100000}"#),
/// ]);
/// let mut extractor = Extractor::<City>::new(Agent::new(provider, "mock"));
/// let city = extractor.extract("The largest city of France?").await.unwrap();
/// assert_eq!(city.value, City { name: "Paris".into(), population: 2_100_000 });
/// assert_eq!(city.attempts, 2, "the first answer lacked the population and was sent back");
/// # });
/// ```
pub struct Extractor<T> {
    agent: Agent,
    validator: SchemaValidator,
    name: String,
    mode: ExtractMode,
    max_retries: u32,
    /// Where the submit tool leaves the arguments of its calls (tool mode).
    submitted: Arc<Mutex<Submission>>,
    _answer: PhantomData<fn() -> T>,
}

#[derive(Default)]
struct Submission {
    /// Arguments that fit the schema.
    valid: Option<Value>,
    /// The last arguments that did not, and what was wrong.
    invalid: Option<(Value, String)>,
    /// How many times the tool was called in this run.
    calls: u32,
    /// The run stops once this many calls were made (the extractor's attempts left).
    max_calls: u32,
}

impl Submission {
    /// Whether the run should end: an answer fits, or no attempt is left.
    fn done(&self) -> bool {
        self.valid.is_some() || self.calls >= self.max_calls
    }
}

impl<T: DeserializeOwned + JsonSchema> Extractor<T> {
    /// An extractor over `agent` with the schema derived from `T`, named after `T`.
    pub fn new(agent: Agent) -> Self {
        let name = valid_tool_name(&T::schema_name());
        Self::with_schema(agent, name, schema_for::<T>())
            .unwrap_or_else(|error| panic!("the schema of {}: {error}", T::schema_name()))
    }
}

impl<T: DeserializeOwned> Extractor<T> {
    /// An extractor over `agent` with an explicit `schema` named `name` (e.g. read from a file, or
    /// with `T` = [`serde_json::Value`]). Refuses a schema that is not valid JSON Schema.
    pub fn with_schema(agent: Agent, name: impl Into<String>, schema: Value) -> Result<Self, ExtractError> {
        let validator = SchemaValidator::new(schema)?;
        let mut extractor = Extractor {
            agent,
            validator,
            name: valid_tool_name(&name.into()),
            mode: ExtractMode::Native,
            max_retries: DEFAULT_MAX_RETRIES,
            submitted: Arc::default(),
            _answer: PhantomData,
        };
        extractor.configure();
        Ok(extractor)
    }

    /// Sets how the model is asked (default [`ExtractMode::Native`]).
    #[must_use]
    pub fn with_mode(mut self, mode: ExtractMode) -> Self {
        self.mode = mode;
        self.configure();
        self
    }

    /// Sets how many times an invalid answer is sent back (default [`DEFAULT_MAX_RETRIES`]).
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The schema answers are checked against.
    pub fn schema(&self) -> &Value {
        self.validator.schema()
    }

    /// The agent, with the conversation so far.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The agent, e.g. to steer or abort a run from elsewhere through its handle.
    pub fn agent_mut(&mut self) -> &mut Agent {
        &mut self.agent
    }

    /// Asks the agent `prompt` and returns its answer as a `T`.
    pub async fn extract(&mut self, prompt: impl Into<String>) -> Result<Extracted<T>, ExtractError> {
        let mut usage = Usage::default();
        let mut message = prompt.into();
        let mut attempts = 0;
        loop {
            let max_calls = self.max_retries.saturating_add(1).saturating_sub(attempts);
            *self.submitted.lock().unwrap_or_else(PoisonError::into_inner) =
                Submission { max_calls, ..Submission::default() };
            let outcome = self.agent.prompt(message).finish().await;
            usage.add(&outcome.usage);
            let answer = match self.mode {
                ExtractMode::Native => match outcome.reason {
                    EndReason::Completed => Answer::Text(outcome.final_text().unwrap_or_default()),
                    reason => return Err(ExtractError::Run { reason, error: outcome.error }),
                },
                ExtractMode::Tool => {
                    let submission =
                        std::mem::take(&mut *self.submitted.lock().unwrap_or_else(PoisonError::into_inner));
                    // Each call of the tool was one answer; the last one is judged below.
                    attempts += submission.calls.saturating_sub(1);
                    match (submission, outcome.reason) {
                        (Submission { valid: Some(value), .. }, _) => Answer::Submitted(value),
                        (
                            _,
                            reason @ (EndReason::Failed
                            | EndReason::Aborted
                            | EndReason::Suspended
                            | EndReason::LimitReached
                            | EndReason::Rejected),
                        ) => {
                            return Err(ExtractError::Run { reason, error: outcome.error });
                        }
                        (Submission { invalid: Some((value, problem)), .. }, _) => Answer::Refused(value, problem),
                        _ => Answer::NotSubmitted(outcome.final_text().unwrap_or_default()),
                    }
                }
            };
            attempts += 1;
            let (problem, given) = match self.read(answer) {
                Ok(value) => return Ok(Extracted { value, attempts, usage }),
                Err(failure) => failure,
            };
            if attempts > self.max_retries {
                return Err(ExtractError::Invalid { attempts, problem, answer: given });
            }
            message = match self.mode {
                ExtractMode::Native => correction(&problem),
                ExtractMode::Tool => {
                    format!("That answer is not valid: {problem}. Call `{}` again with arguments that fit.", self.name)
                }
            };
        }
    }

    /// The value of `answer`, or what is wrong with it and the answer as given.
    fn read(&self, answer: Answer) -> Result<T, (String, String)> {
        let value = match answer {
            Answer::Text(text) => match read_answer(&text, &self.validator) {
                Ok(value) => value,
                Err(problem) => return Err((problem, text)),
            },
            Answer::Submitted(value) => value,
            Answer::Refused(value, problem) => return Err((problem, value.to_string())),
            Answer::NotSubmitted(text) => return Err((format!("`{}` was not called", self.name), text)),
        };
        let given = value.to_string();
        serde_json::from_value(value)
            .map_err(|error| (format!("it does not read as the expected value: {error}"), given))
    }

    /// Sets the agent up for the mode: response format, or submit tool and forced choice.
    fn configure(&mut self) {
        let config = &mut self.agent.config;
        config.request_options.response_format = ResponseFormat::Text;
        if config.request_options.tool_choice == ToolChoice::tool(&self.name) {
            config.request_options.tool_choice = ToolChoice::Auto;
        }
        self.agent.context.tools.retain(|tool| tool.name() != self.name);
        match self.mode {
            ExtractMode::Native => {
                let schema = self.validator.schema().clone();
                self.agent.config.request_options.response_format =
                    ResponseFormat::JsonSchema { name: self.name.clone(), schema, strict: true };
            }
            ExtractMode::Tool => {
                let tool = SubmitTool {
                    name: self.name.clone(),
                    validator: self.validator.clone(),
                    submitted: Arc::clone(&self.submitted),
                };
                self.agent.context.tools.push(Arc::new(tool));
                self.agent.config.request_options.tool_choice = ToolChoice::tool(&self.name);
                // The run ends once an answer fits, rather than asking the model for more.
                let submitted = Arc::clone(&self.submitted);
                let before = self.agent.config.hooks.before_turn.take();
                self.agent.config.hooks.before_turn = Some(Arc::new(move |history, turn| {
                    let done = submitted.lock().unwrap_or_else(PoisonError::into_inner).done();
                    !done && before.as_ref().is_none_or(|before| before(history, turn))
                }));
            }
        }
    }
}

impl<T> fmt::Debug for Extractor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extractor")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

enum Answer {
    /// The final text (native mode).
    Text(String),
    /// Arguments of the submit tool that fit the schema.
    Submitted(Value),
    /// Arguments of the submit tool that did not, and why.
    Refused(Value, String),
    /// The run ended without calling the submit tool; its final text.
    NotSubmitted(String),
}

/// The JSON value of a model's answer `text` (a Markdown code fence around it is allowed) when
/// it fits `validator`'s schema; otherwise what is wrong, worded for the model
/// ([`correction`]).
pub fn read_answer(text: &str, validator: &SchemaValidator) -> Result<Value, String> {
    let value =
        serde_json::from_str::<Value>(strip_fence(text)).map_err(|error| format!("it is not JSON ({error})"))?;
    validator.check(&value).map_err(|problem| format!("it does not fit the schema: {problem}"))?;
    Ok(value)
}

/// The message that sends an invalid answer back to the model, with `problem` as
/// [`read_answer`] words it.
pub fn correction(problem: &str) -> String {
    format!("That answer is not valid: {problem}. Answer again with only the JSON value, fitting the schema.")
}

/// `text` without a Markdown code fence around it, as models sometimes wrap JSON.
fn strip_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(inner) = trimmed.strip_prefix("```").and_then(|rest| rest.strip_suffix("```")) else {
        return trimmed;
    };
    // Drop the info string (`json`) on the opening line.
    inner.split_once('\n').map_or(inner, |(_, body)| body).trim()
}

/// The tool the model is made to call in [`ExtractMode::Tool`]: its parameters are the schema.
struct SubmitTool {
    name: String,
    validator: SchemaValidator,
    submitted: Arc<Mutex<Submission>>,
}

#[async_trait]
impl AgentTool for SubmitTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Submits the answer. Call it once, with the whole answer as its arguments."
    }

    fn parameters_schema(&self) -> Value {
        self.validator.schema().clone()
    }

    async fn execute(&self, params: Value, _ctx: ToolContext) -> Result<ToolResult, ToolError> {
        let mut submitted = self.submitted.lock().unwrap_or_else(PoisonError::into_inner);
        if submitted.done() {
            return Ok(ToolResult::text("An answer was already received."));
        }
        submitted.calls += 1;
        match self.validator.check(&params) {
            Ok(()) => {
                submitted.valid = Some(params);
                Ok(ToolResult::text("Received."))
            }
            Err(problem) => {
                submitted.invalid = Some((params, format!("it does not fit the schema: {problem}")));
                Err(ToolError::InvalidArgs(problem))
            }
        }
    }
}

impl fmt::Debug for SubmitTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SubmitTool").field("name", &self.name).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_around_json_are_dropped() {
        assert_eq!(strip_fence(" {\"a\": 1}\n"), "{\"a\": 1}");
        assert_eq!(strip_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_fence("```\n[1]\n```"), "[1]");
        assert_eq!(strip_fence("```"), "```", "a lone fence is not a fenced block");
    }

    #[test]
    fn errors_say_what_happened() {
        let run = ExtractError::Run { reason: EndReason::Failed, error: Some("HTTP 500".into()) };
        assert_eq!(run.to_string(), "the run ended without an answer (Failed): HTTP 500");
    }
}
