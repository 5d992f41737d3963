//! The request options beyond the basics: tool choice, stop sequences, sampling, a seed, penalties
//! and an end-user id. Each provider maps them to its service's own fields, and refuses a call
//! that sets one its service has no equivalent for ([`RequestOptions::check`]): dropping it
//! silently would change what the caller asked for.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ProviderError;

/// Whether the model may, must or must not call tools, or which one it must call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (every service's default).
    #[default]
    Auto,
    /// The model must answer without calling a tool.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool {
        /// The tool's name, as in its definition.
        name: String,
    },
}

impl ToolChoice {
    /// The model must call tool `name`.
    pub fn tool(name: impl Into<String>) -> Self {
        ToolChoice::Tool { name: name.into() }
    }

    /// The choice forces a tool call ([`ToolChoice::Required`] or [`ToolChoice::Tool`]).
    pub fn is_forced(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Tool { .. })
    }
}

/// The shape of the answer: free text, any JSON object, or JSON that fits a schema.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum ResponseFormat {
    /// Free text (every service's default).
    #[default]
    Text,
    /// A JSON object, of no particular shape ("JSON mode").
    JsonObject,
    /// JSON that fits `schema` (a JSON Schema), as the service enforces it.
    JsonSchema {
        /// A name for the schema, as services that take one show it to the model.
        name: String,
        /// The JSON Schema the answer must fit.
        schema: Value,
        /// Ask the service to enforce the schema exactly (OpenAI's strict mode; the schema must
        /// then follow its rules: every property required, `additionalProperties: false`).
        strict: bool,
    },
}

impl ResponseFormat {
    /// JSON that fits `schema`, enforced strictly where the service can.
    pub fn json_schema(name: impl Into<String>, schema: Value) -> Self {
        ResponseFormat::JsonSchema { name: name.into(), schema, strict: true }
    }
}

/// Options of a model call beyond model, prompt, tools, thinking, token cap and temperature.
///
/// Everything is unset by default, which leaves each service's own default. A provider sends
/// what its service supports under the service's names and refuses (with
/// [`ProviderError::Other`], before any byte is sent) a call that sets an option its service
/// lacks. Which service takes which option is in `docs/providers.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// Whether and which tools the model must call. Default [`ToolChoice::Auto`].
    pub tool_choice: ToolChoice,
    /// `Some(false)`: at most one tool call per answer; `None`: the service's default (several).
    pub parallel_tool_calls: Option<bool>,
    /// Strings that end the answer when the model produces one; empty: none.
    pub stop_sequences: Vec<String>,
    /// Nucleus sampling: only tokens within this cumulative probability are considered.
    pub top_p: Option<f32>,
    /// Only this many of the most likely tokens are considered.
    pub top_k: Option<u32>,
    /// A seed for best-effort reproducible sampling.
    pub seed: Option<i64>,
    /// Penalizes tokens that appeared at all, to steer towards new topics (-2.0 to 2.0).
    pub presence_penalty: Option<f32>,
    /// Penalizes tokens by how often they appeared, to reduce repetition (-2.0 to 2.0).
    pub frequency_penalty: Option<f32>,
    /// A stable id of the end user, for the service's abuse monitoring; never a name or email.
    pub user: Option<String>,
    /// The shape of the answer. Default [`ResponseFormat::Text`].
    pub response_format: ResponseFormat,
}

impl RequestOptions {
    /// No option set: every service's defaults.
    pub const DEFAULT: RequestOptions = RequestOptions {
        tool_choice: ToolChoice::Auto,
        parallel_tool_calls: None,
        stop_sequences: Vec::new(),
        top_p: None,
        top_k: None,
        seed: None,
        presence_penalty: None,
        frequency_penalty: None,
        user: None,
        response_format: ResponseFormat::Text,
    };

    /// Sets [`tool_choice`](Self::tool_choice).
    #[must_use]
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = choice;
        self
    }

    /// Sets [`parallel_tool_calls`](Self::parallel_tool_calls).
    #[must_use]
    pub fn with_parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Sets [`stop_sequences`](Self::stop_sequences).
    #[must_use]
    pub fn with_stop_sequences(mut self, stops: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop_sequences = stops.into_iter().map(Into::into).collect();
        self
    }

    /// Sets [`top_p`](Self::top_p).
    #[must_use]
    pub fn with_top_p(mut self, top_p: f32) -> Self {
        self.top_p = Some(top_p);
        self
    }

    /// Sets [`top_k`](Self::top_k).
    #[must_use]
    pub fn with_top_k(mut self, top_k: u32) -> Self {
        self.top_k = Some(top_k);
        self
    }

    /// Sets [`seed`](Self::seed).
    #[must_use]
    pub fn with_seed(mut self, seed: i64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets [`presence_penalty`](Self::presence_penalty).
    #[must_use]
    pub fn with_presence_penalty(mut self, penalty: f32) -> Self {
        self.presence_penalty = Some(penalty);
        self
    }

    /// Sets [`frequency_penalty`](Self::frequency_penalty).
    #[must_use]
    pub fn with_frequency_penalty(mut self, penalty: f32) -> Self {
        self.frequency_penalty = Some(penalty);
        self
    }

    /// Sets [`response_format`](Self::response_format).
    #[must_use]
    pub fn with_response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = format;
        self
    }

    /// Sets [`user`](Self::user).
    #[must_use]
    pub fn with_user(mut self, user: impl Into<String>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// The names of the options that are set (`tool_choice` only when it is not `Auto`).
    pub fn set(&self) -> impl Iterator<Item = &'static str> {
        [
            ("tool_choice", self.tool_choice != ToolChoice::Auto),
            ("parallel_tool_calls", self.parallel_tool_calls.is_some()),
            ("stop_sequences", !self.stop_sequences.is_empty()),
            ("top_p", self.top_p.is_some()),
            ("top_k", self.top_k.is_some()),
            ("seed", self.seed.is_some()),
            ("presence_penalty", self.presence_penalty.is_some()),
            ("frequency_penalty", self.frequency_penalty.is_some()),
            ("user", self.user.is_some()),
            ("response_format", self.response_format != ResponseFormat::Text),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
    }

    /// Refuses the first set option that is not among `supported`, naming it and `service`.
    pub fn check(&self, service: &str, supported: &[&str]) -> Result<(), ProviderError> {
        match self.set().find(|name| !supported.contains(name)) {
            Some(name) => Err(unsupported(service, name)),
            None => Ok(()),
        }
    }
}

/// The error of a request that sets an option `service` has no equivalent for.
pub fn unsupported(service: &str, option: &str) -> ProviderError {
    ProviderError::Other(format!("{service} has no equivalent of the request option `{option}`; leave it unset"))
}

/// The default options, for requests that set none (a `'static` borrow).
pub static DEFAULT_OPTIONS: RequestOptions = RequestOptions::DEFAULT;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_set_by_default_and_the_builders_set_each_option() {
        assert_eq!(RequestOptions::default(), RequestOptions::DEFAULT);
        assert_eq!(RequestOptions::default().set().count(), 0);
        let all = RequestOptions::default()
            .with_tool_choice(ToolChoice::Required)
            .with_parallel_tool_calls(false)
            .with_stop_sequences(["END"])
            .with_top_p(0.9)
            .with_top_k(40)
            .with_seed(7)
            .with_presence_penalty(0.5)
            .with_frequency_penalty(0.25)
            .with_user("user-1")
            .with_response_format(ResponseFormat::JsonObject);
        assert_eq!(all.set().count(), 10);
        assert!(all.check("Everything", &all.set().collect::<Vec<_>>()).is_ok());
    }

    #[test]
    fn an_option_the_service_lacks_is_refused_by_name() {
        let options = RequestOptions::default().with_top_p(0.9).with_seed(7);
        assert!(options.check("S", &["top_p", "seed"]).is_ok());
        let error = options.check("Anthropic Messages", &["top_p"]).unwrap_err();
        assert_eq!(
            error.to_string(),
            ProviderError::Other(
                "Anthropic Messages has no equivalent of the request option `seed`; leave it unset".into()
            )
            .to_string()
        );
        assert!(!error.is_retryable());
    }

    #[test]
    fn response_formats_serialize_tagged() {
        let format = ResponseFormat::json_schema("answer", serde_json::json!({"type": "object"}));
        assert_eq!(
            serde_json::to_value(&format).unwrap(),
            serde_json::json!({"type": "jsonSchema", "name": "answer", "schema": {"type": "object"}, "strict": true})
        );
        assert_eq!(
            serde_json::to_value(ResponseFormat::JsonObject).unwrap(),
            serde_json::json!({"type": "jsonObject"})
        );
    }

    #[test]
    fn options_round_trip_as_camel_case_json() {
        let options = RequestOptions::default().with_tool_choice(ToolChoice::tool("search")).with_top_k(5);
        let json = serde_json::to_value(&options).unwrap();
        assert_eq!(json["toolChoice"], serde_json::json!({"type": "tool", "name": "search"}));
        assert_eq!(json["topK"], 5);
        let back: RequestOptions = serde_json::from_value(json).unwrap();
        assert_eq!(back, options);
        let sparse: RequestOptions = serde_json::from_str(r#"{"seed": 3}"#).unwrap();
        assert_eq!(sparse, RequestOptions::default().with_seed(3));
    }
}
