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
    AgentTool, EndReason, RequestOptions, ResponseFormat, ToolChoice, ToolContext, ToolError, ToolResult, Usage,
    valid_tool_name,
};

use crate::agent::Agent;
use crate::config::BeforeTurnFn;
use crate::error::{Error, Result};
use crate::typed::{SchemaValidator, schema_for};

/// How many times an answer that does not fit is sent back for correction by default.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// How the model is asked for the structured answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExtractMode {
    /// [`Native`](Self::Native) unless the agent's model is known to lack native structured
    /// output ([`has_native_structured_output`]: Claude models before 4.5 but Opus 4.1, on
    /// Anthropic or Bedrock, Bedrock's other families, DeepSeek, Gemini 2.x with tools), then
    /// [`Tool`](Self::Tool). Decided at each extraction, for the model and tools the agent has
    /// then.
    #[default]
    Auto,
    /// The service's own structured output ([`ResponseFormat::JsonSchema`]): OpenAI's
    /// `response_format` / `text.format`, Gemini's `responseJsonSchema`, Anthropic's
    /// `output_config`, Bedrock's `outputConfig` (the schema as given, for the models that take
    /// one). The answer is the model's final text. Gemini 2.x refuses a JSON answer together
    /// with tools; Gemini 3 takes both.
    Native,
    /// A tool whose parameters are the schema, which the model is made to call; its arguments
    /// are the answer. For models without native structured output (older Claude models, most
    /// models on Bedrock, servers speaking the Chat protocol without `json_schema`). The forced
    /// choice holds until the model's first tool call, so its other tools come after; Anthropic
    /// refuses a forced tool with extended thinking.
    Tool,
}

/// Whether `model`, served by the provider `provider_id`, has native structured output as far
/// as is known (with tools in the request when `with_tools`): every model but Claude models
/// before 4.5 (except Opus 4.1), on Anthropic or Bedrock; Bedrock's families other than Claude;
/// DeepSeek (JSON mode only); Gemini 2.x together with tools.
pub fn has_native_structured_output(provider_id: &str, model: &str, with_tools: bool) -> bool {
    const OLDER_CLAUDE: &[&str] = &[
        "claude-instant",
        "claude-2",
        "claude-3",
        "claude-sonnet-4-0",
        "claude-opus-4-0",
        "claude-sonnet-4-2025",
        "claude-opus-4-2025",
        "claude-sonnet-4@",
        "claude-opus-4@",
        "claude-sonnet-4-v1",
        "claude-opus-4-v1",
    ];
    if model.contains("claude") {
        return !OLDER_CLAUDE.iter().any(|older| model.contains(older));
    }
    if with_tools && model.contains("gemini-2") {
        return false;
    }
    !matches!(provider_id, "bedrock" | "deepseek")
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
    /// The schema as asked for: the caller's, or wrapped in an object (see `wrapped`).
    validator: SchemaValidator,
    /// A schema whose root is not an object is asked for as `{"value": ...}`: services want an
    /// object at the root of an answer or a tool's parameters.
    wrapped: bool,
    name: String,
    mode: ExtractMode,
    /// The mode the agent is set up for: `mode`, or what `Auto` chose.
    configured: ExtractMode,
    strict: bool,
    max_retries: u32,
    /// The agent's own request options and `before_turn` hook, which a mode's setup starts from.
    own_options: RequestOptions,
    own_before_turn: Option<BeforeTurnFn>,
    /// The submit tool, while in tool mode.
    submit: Option<Arc<dyn AgentTool>>,
    /// Where the submit tool leaves the arguments of its calls (tool mode).
    submitted: Arc<Mutex<Submission>>,
    _answer: PhantomData<fn() -> T>,
}

#[derive(Default)]
struct Submission {
    /// An extraction is running (the agent's other runs are left alone).
    active: bool,
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
    /// Whether the extraction's run should end: an answer fits, or no attempt is left.
    fn done(&self) -> bool {
        self.active && (self.valid.is_some() || self.calls >= self.max_calls)
    }
}

impl<T: DeserializeOwned + JsonSchema> Extractor<T> {
    /// An extractor over `agent` with the schema derived from `T`, named after `T`.
    ///
    /// # Panics
    /// When `T`'s `JsonSchema` gives a schema that is not valid JSON Schema; derived ones always
    /// are, so only a hand-written implementation can.
    pub fn new(agent: Agent) -> Self {
        let name = valid_tool_name(&T::schema_name());
        Self::with_schema(agent, name, schema_for::<T>())
            .unwrap_or_else(|error| panic!("the schema of {}: {error}", T::schema_name()))
    }
}

impl<T: DeserializeOwned> Extractor<T> {
    /// An extractor over `agent` with an explicit `schema` named `name` (e.g. read from a file, or
    /// with `T` = [`serde_json::Value`]). Refuses a schema that is not valid JSON Schema.
    pub fn with_schema(agent: Agent, name: impl Into<String>, schema: Value) -> Result<Self> {
        let wrapped = !is_object_root(&schema);
        let validator = SchemaValidator::new(if wrapped { wrap(schema) } else { schema })?;
        let own_options = agent.config.request_options.clone();
        let own_before_turn = agent.config.hooks.before_turn.clone();
        let mut extractor = Extractor {
            agent,
            validator,
            wrapped,
            name: valid_tool_name(&name.into()),
            mode: ExtractMode::Auto,
            configured: ExtractMode::Auto,
            strict: true,
            max_retries: DEFAULT_MAX_RETRIES,
            own_options,
            own_before_turn,
            submit: None,
            submitted: Arc::default(),
            _answer: PhantomData,
        };
        extractor.configure();
        Ok(extractor)
    }

    /// Sets how the model is asked (default [`ExtractMode::Auto`]).
    #[must_use]
    pub fn with_mode(mut self, mode: ExtractMode) -> Self {
        self.mode = mode;
        self.configure();
        self
    }

    /// Asks for strict structured output or not (default: strict). Strict mode (OpenAI's) wants
    /// every object closed, which a map (`HashMap`, `additionalProperties` holding a schema)
    /// cannot be: turn it off for such a schema.
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self.configure();
        self
    }

    /// Sets how many times an invalid answer is sent back (default [`DEFAULT_MAX_RETRIES`]).
    #[must_use]
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The schema asked for: the one given, or `{"value": <it>}` when its root is not an object.
    pub fn schema(&self) -> &Value {
        self.validator.schema()
    }

    /// The agent, with the conversation so far.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The agent: to steer or abort a run through its handle, or to prompt it between
    /// extractions (its own prompts run as it was set up, plus the extractor's request options
    /// and, in tool mode, its submit tool).
    pub fn agent_mut(&mut self) -> &mut Agent {
        &mut self.agent
    }

    /// Asks the agent `prompt` and returns its answer as a `T`.
    pub async fn extract(&mut self, prompt: impl Into<String>) -> Result<Extracted<T>> {
        let mut usage = Usage::default();
        let mut message = prompt.into();
        let mut attempts = 0;
        if self.configured != self.chosen_mode() {
            self.configure();
        }
        loop {
            let max_calls = self.max_retries.saturating_add(1).saturating_sub(attempts);
            *self.submitted.lock().unwrap_or_else(PoisonError::into_inner) =
                Submission { active: true, max_calls, ..Submission::default() };
            let outcome = self.agent.prompt(message).finish().await;
            usage.add(&outcome.usage);
            let submission = std::mem::take(&mut *self.submitted.lock().unwrap_or_else(PoisonError::into_inner));
            let answer = match self.configured {
                ExtractMode::Native | ExtractMode::Auto => match outcome.reason {
                    EndReason::Completed => Answer::Text(outcome.final_text().unwrap_or_default()),
                    reason => return Err(Error::NoAnswer { reason, error: outcome.error }),
                },
                ExtractMode::Tool => {
                    // Each call of the tool was one answer; the last one is judged below.
                    attempts += submission.calls.saturating_sub(1);
                    let done = submission.done();
                    match (submission, outcome.reason) {
                        (Submission { valid: Some(value), .. }, _) => Answer::Submitted(value),
                        // Stopped by the agent's own hook, not by an answer or the attempts.
                        (_, EndReason::Stopped) if !done => {
                            return Err(Error::NoAnswer { reason: EndReason::Stopped, error: outcome.error });
                        }
                        (
                            _,
                            reason @ (EndReason::Failed
                            | EndReason::Aborted
                            | EndReason::Suspended
                            | EndReason::LimitReached
                            | EndReason::Rejected),
                        ) => {
                            return Err(Error::NoAnswer { reason, error: outcome.error });
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
                return Err(Error::InvalidAnswer { attempts, problem, answer: given });
            }
            message = match self.configured {
                ExtractMode::Native | ExtractMode::Auto => correction(&problem),
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
        let value = match (self.wrapped, value) {
            (true, Value::Object(mut object)) => object.remove("value").unwrap_or_default(),
            (_, value) => value,
        };
        let given = value.to_string();
        serde_json::from_value(value)
            .map_err(|error| (format!("it does not read as the expected value: {error}"), given))
    }

    /// Sets the agent up for the mode, from its own options and hook: the response format, or
    /// the submit tool, the forced choice and the hook that ends a run once an answer fits.
    fn configure(&mut self) {
        let config = &mut self.agent.config;
        config.request_options = self.own_options.clone();
        config.hooks.before_turn = self.own_before_turn.clone();
        if let Some(submit) = self.submit.take() {
            self.agent.context.tools.retain(|tool| !Arc::ptr_eq(tool, &submit));
        }
        self.configured = self.chosen_mode();
        match self.configured {
            ExtractMode::Native | ExtractMode::Auto => {
                let schema = self.validator.schema().clone();
                self.agent.config.request_options.response_format =
                    ResponseFormat::JsonSchema { name: self.name.clone(), schema, strict: self.strict };
            }
            ExtractMode::Tool => {
                let tool: Arc<dyn AgentTool> = Arc::new(SubmitTool {
                    name: self.name.clone(),
                    validator: self.validator.clone(),
                    submitted: Arc::clone(&self.submitted),
                });
                self.agent.context.tools.push(Arc::clone(&tool));
                self.submit = Some(tool);
                self.agent.config.request_options.tool_choice = ToolChoice::tool(&self.name);
                let submitted = Arc::clone(&self.submitted);
                let own = self.own_before_turn.clone();
                self.agent.config.hooks.before_turn = Some(Arc::new(move |history, turn| {
                    let done = submitted.lock().unwrap_or_else(PoisonError::into_inner).done();
                    !done && own.as_ref().is_none_or(|own| own(history, turn))
                }));
            }
        }
    }
}

impl<T> Extractor<T> {
    /// `mode`, with `Auto` decided for the agent's current model.
    fn chosen_mode(&self) -> ExtractMode {
        match self.mode {
            ExtractMode::Auto => {
                let config = &self.agent.config;
                let provider = config.provider.provider_id_for(&config.model);
                let own = |tool: &Arc<dyn AgentTool>| self.submit.as_ref().is_some_and(|s| Arc::ptr_eq(tool, s));
                let with_tools = self.agent.context.tools.iter().any(|tool| !own(tool));
                match has_native_structured_output(provider, &config.model, with_tools) {
                    true => ExtractMode::Native,
                    false => ExtractMode::Tool,
                }
            }
            mode => mode,
        }
    }
}

/// Whether `schema`'s root is an object, as answers and tool parameters must be.
fn is_object_root(schema: &Value) -> bool {
    match schema.get("type") {
        Some(kind) => kind == "object",
        None => schema.get("properties").is_some(),
    }
}

/// `schema` as the property `value` of an object; its `$defs` / `definitions` move to the new
/// root, where its references find them.
fn wrap(mut schema: Value) -> Value {
    let mut root = serde_json::Map::new();
    if let Value::Object(inner) = &mut schema {
        for key in ["$defs", "definitions"] {
            if let Some(defs) = inner.remove(key) {
                root.insert(key.to_owned(), defs);
            }
        }
        inner.remove("$schema");
    }
    root.insert("type".into(), "object".into());
    root.insert("properties".into(), serde_json::json!({"value": schema}));
    root.insert("required".into(), serde_json::json!(["value"]));
    root.insert("additionalProperties".into(), false.into());
    Value::Object(root)
}

impl<T> fmt::Debug for Extractor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extractor")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .field("configured", &self.configured)
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
        if submitted.valid.is_some() {
            return Ok(ToolResult::text("An answer was already received."));
        }
        if submitted.done() {
            return Err(ToolError::Failed("No attempt is left for this answer.".into()));
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
    fn native_structured_output_is_assumed_except_where_it_is_known_missing() {
        for (provider, model, native) in [
            ("anthropic", "claude-sonnet-4-5", true),
            ("anthropic", "claude-opus-4-1-20250805", true),
            ("anthropic", "claude-haiku-4-5", true),
            ("anthropic", "claude-3-5-haiku-latest", false),
            ("anthropic", "claude-sonnet-4-20250514", false),
            ("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", true),
            ("bedrock", "anthropic.claude-3-haiku-20240307-v1:0", false),
            ("bedrock", "amazon.nova-pro-v1:0", false),
            ("openai", "gpt-4o", true),
            ("deepseek", "deepseek-chat", false),
            ("google", "gemini-2.5-flash", true),
        ] {
            assert_eq!(has_native_structured_output(provider, model, false), native, "{provider} {model}");
        }
        // Gemini 2.x refuses a JSON answer together with tools; Gemini 3 takes both.
        assert!(!has_native_structured_output("google", "gemini-2.5-flash", true));
        assert!(has_native_structured_output("google", "gemini-3-pro-preview", true));
    }

    #[test]
    fn errors_say_what_happened() {
        let run = Error::NoAnswer { reason: EndReason::Failed, error: Some("HTTP 500".into()) };
        assert_eq!(run.to_string(), "the run ended without an answer (Failed): HTTP 500");
    }
}
