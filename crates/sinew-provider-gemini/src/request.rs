//! The `streamGenerateContent` request, built from a [`StreamRequest`] (pure: no I/O), for the
//! Gemini API and Vertex AI.

use bytes::Bytes;
use std::borrow::Cow;

use serde::Serialize;
use serde_json::{Map, Value, json};
use sinew_core::{
    AssistantMessage, Content, Message, ProviderError, ResponseFormat, StopReason, StreamRequest, ThinkingLevel,
    ToolChoice, WirePrefix,
};
use sinew_http::json::ObjectArguments;
use sinew_http::{Auth, HttpRequest, url_with_query};

/// Gemini 3 rejects a function call in the history without a thought signature; calls made by
/// other models carry this value, which Google documents for exactly that case.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// Where and how to call `streamGenerateContent`. `Debug` hides the credentials and the values
/// of extra headers (see [`sinew_http::Redacted`]).
#[derive(Clone)]
pub struct GeminiConfig {
    /// `"google"` or `"google_vertex"`; signatures go back only to the provider that made them.
    pub provider_id: String,
    /// The URL up to the model name: `https://generativelanguage.googleapis.com/v1beta/models`,
    /// or a Vertex publisher path.
    pub models_url: String,
    /// An `x-goog-api-key` header for the Gemini API, a bearer token for Vertex AI.
    pub auth: Auth,
    /// Sent with every request (after the protocol's own headers).
    pub extra_headers: Vec<(String, String)>,
}

impl std::fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("provider_id", &self.provider_id)
            .field("models_url", &sinew_http::redact_url(&self.models_url))
            .field("auth", &self.auth)
            .field("extra_headers", &sinew_http::Redacted::headers(&self.extra_headers))
            .finish()
    }
}

impl GeminiConfig {
    /// The Gemini API with an API key (sent as `x-goog-api-key`, never in the URL).
    pub fn gemini(api_key: impl Into<String>) -> Self {
        GeminiConfig {
            provider_id: "google".into(),
            models_url: "https://generativelanguage.googleapis.com/v1beta/models".into(),
            auth: Auth::Header { name: "x-goog-api-key".into(), value: api_key.into() },
            extra_headers: Vec::new(),
        }
    }

    /// Vertex AI in `project` at `location` (`us-central1`, or `global`) with an OAuth access
    /// token (`gcloud auth print-access-token`, or a service account's). Tokens expire within
    /// the hour: a long-running host uses [`GeminiConfig::vertex_with_auth`] with a source that
    /// refreshes them (Application Default Credentials, with the feature `adc`).
    pub fn vertex(project: &str, location: &str, access_token: impl Into<String>) -> Self {
        GeminiConfig::vertex_with_auth(project, location, Auth::Bearer(access_token.into()))
    }

    /// Vertex AI in `project` at `location` with `auth`, such as an [`Auth::Token`] whose source
    /// fetches and refreshes tokens.
    pub fn vertex_with_auth(project: &str, location: &str, auth: Auth) -> Self {
        let host = if location == "global" {
            "aiplatform.googleapis.com".to_owned()
        } else {
            format!("{location}-aiplatform.googleapis.com")
        };
        GeminiConfig {
            provider_id: "google_vertex".into(),
            models_url: format!("https://{host}/v1/projects/{project}/locations/{location}/publishers/google/models"),
            auth,
            extra_headers: Vec::new(),
        }
    }
}

/// The headers and JSON body of a streaming call, every message written (the provider resumes
/// from what [`StreamRequest::history`] kept, and checks the inputs first).
pub fn build_request(config: &GeminiConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(config, request)));
    http_request(config, request, body)
}

/// [`build_request`] for a request whose inputs are checked first ([`check_inputs`]): those of
/// the messages written again, the others were checked when they were first written.
pub(crate) fn checked_request(
    config: &GeminiConfig,
    request: &StreamRequest<'_>,
) -> Result<HttpRequest, ProviderError> {
    let body = request.resume_messages(
        message_format(config, request),
        request.messages.len(),
        |first| check_inputs_from(request, first),
        |prefix| body_bytes(config, request, prefix),
    )?;
    Ok(http_request(config, request, body))
}

fn http_request(config: &GeminiConfig, request: &StreamRequest<'_>, body: Bytes) -> HttpRequest {
    if request.cache_config.has_manual_breakpoints() {
        tracing::debug!(service = "Gemini", "the service caches by itself: the cache breakpoints are ignored");
    }
    let path = format!("/{}:streamGenerateContent", request.model);
    let url = url_with_query(&config.models_url, &path, &[("alt".into(), "sse".into())]);
    let mut http = HttpRequest::post_json(url, body).header("accept", "text/event-stream");
    config.auth.apply(&mut http);
    http.headers.extend(config.extra_headers.iter().cloned());
    http
}

/// What decides the bytes of a history message here: this builder, the provider id (signatures
/// go back to their own service) and whether the model is a Gemini 3 (its calls need one).
fn message_format(config: &GeminiConfig, request: &StreamRequest<'_>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    ("gemini/1", &config.provider_id, is_gemini3(request.model)).hash(&mut hasher);
    hasher.finish()
}

fn is_gemini3(model: &str) -> bool {
    model.contains("gemini-3")
}

/// The body, written straight from borrowed wire structs (the history is resent every turn, so no
/// `Value` tree is built for it), `contents` resumed after the messages `prefix` holds (see
/// [`sinew_core::wire`]). Returns the body and the prefix of this request's messages.
fn body_bytes(config: &GeminiConfig, request: &StreamRequest<'_>, mut prefix: WirePrefix) -> (Bytes, WirePrefix) {
    prefix.open(&sinew_http::json::array_opening(b"{}", "contents"));
    write_contents(config, request, &mut prefix);
    let rest = sinew_http::json::bytes(&wire_body(request));
    let body = prefix.close(&sinew_http::json::array_closing(&rest));
    (body, prefix)
}

/// The request options Gemini and Vertex AI take; they have no switch for parallel calls and no
/// end-user id.
pub const SUPPORTED_OPTIONS: &[&str] = &[
    "tool_choice",
    "stop_sequences",
    "top_p",
    "top_k",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "response_format",
];

/// Refuses options Gemini has no equivalent for.
pub fn check_options(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    request.check_options("Gemini", SUPPORTED_OPTIONS)
}

/// The JSON body (exposed for snapshot tests and hosts that bring their own transport), read
/// back from the bytes [`build_request`] sends (see [`sinew_http::json::read_body`]).
pub fn body(config: &GeminiConfig, request: &StreamRequest<'_>) -> Value {
    let (body, _) = body_bytes(config, request, WirePrefix::new(message_format(config, request)));
    sinew_http::json::read_body(&body)
}

/// The body's fields after `contents`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<[Declarations<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<Value>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    generation_config: GenerationConfig<'a>,
}

#[derive(Serialize)]
struct SystemInstruction<'a> {
    parts: [Part<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Declarations<'a> {
    function_declarations: Vec<Declaration<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Declaration<'a> {
    name: &'a str,
    description: &'a str,
    parameters_json_schema: Value,
}

#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<Value>,
}

impl GenerationConfig<'_> {
    fn is_empty(&self) -> bool {
        *self == GenerationConfig::default()
    }
}

fn wire_body<'a>(request: &StreamRequest<'a>) -> Body<'a> {
    let options = request.options;
    let tool_config = match &options.tool_choice {
        ToolChoice::None => Some(json!({"mode": "NONE"})),
        ToolChoice::Required => Some(json!({"mode": "ANY"})),
        ToolChoice::Tool { name } => Some(json!({"mode": "ANY", "allowedFunctionNames": [name]})),
        _ => None,
    };
    let (response_mime_type, response_json_schema) = match &options.response_format {
        ResponseFormat::JsonObject => (Some("application/json"), None),
        ResponseFormat::JsonSchema { schema, .. } => (Some("application/json"), Some(json_schema(schema))),
        _ => (None, None),
    };
    let has_tools = !request.tools.is_empty();
    Body {
        system_instruction: (!request.system_prompt.is_empty())
            .then(|| SystemInstruction { parts: [Part::text(request.system_prompt)] }),
        tools: has_tools.then(|| {
            [Declarations {
                function_declarations: request
                    .tools
                    .iter()
                    .map(|t| Declaration {
                        name: &t.name,
                        description: &t.description,
                        parameters_json_schema: json_schema(&t.parameters),
                    })
                    .collect(),
            }]
        }),
        tool_config: tool_config.filter(|_| has_tools).map(|calling| json!({"functionCallingConfig": calling})),
        generation_config: GenerationConfig {
            max_output_tokens: request.max_tokens,
            temperature: request.temperature.map(sinew_http::json_f32),
            stop_sequences: &options.stop_sequences,
            top_p: options.top_p.map(sinew_http::json_f32),
            top_k: options.top_k,
            seed: options.seed,
            presence_penalty: options.presence_penalty.map(sinew_http::json_f32),
            frequency_penalty: options.frequency_penalty.map(sinew_http::json_f32),
            response_mime_type,
            response_json_schema,
            thinking_config: thinking_config(request.model, request.thinking_level),
        },
    }
}

/// The keywords of JSON Schema Gemini takes (`parametersJsonSchema`, `responseJsonSchema`), as
/// its API reference lists them.
const GEMINI_KEYWORDS: &[&str] = &[
    "$id",
    "$defs",
    "$ref",
    "$anchor",
    "type",
    "format",
    "title",
    "description",
    "enum",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "anyOf",
    "oneOf",
    "properties",
    "additionalProperties",
    "required",
    "propertyOrdering",
];

/// `schema` in Gemini's subset of JSON Schema: keywords outside [`GEMINI_KEYWORDS`] removed,
/// after what can be said in the subset is: `definitions` (draft 7) become `$defs` and their
/// references follow, `const` a one-value `enum`, a one-branch `allOf` an `anyOf`; an `enum` that
/// holds other values than strings and numbers is removed whole; a `$ref` with sibling keywords
/// (which Gemini refuses) moves into an `anyOf` of its own. Everything removed only loosens the
/// schema; answers are still checked against the original.
pub(crate) fn json_schema(schema: &Value) -> Value {
    let mut schema = schema.clone();
    sinew_core::schema::walk_mut(&mut schema, &mut |node| {
        if let Some(Value::Object(definitions)) = node.remove("definitions")
            && let Value::Object(defs) = node.entry("$defs").or_insert_with(|| Value::Object(Map::new()))
        {
            for (name, definition) in definitions {
                defs.entry(name).or_insert(definition);
            }
        }
        if let Some(Value::String(reference)) = node.get_mut("$ref")
            && let Some(name) = reference.strip_prefix("#/definitions/")
        {
            *reference = format!("#/$defs/{name}");
        }
        if let Some(value) = node.remove("const")
            && !node.contains_key("enum")
        {
            node.insert("enum".into(), Value::Array(vec![value]));
        }
        if let Some(Value::Array(values)) = node.get("enum")
            && !values.iter().all(|v| v.is_string() || v.is_number())
        {
            node.remove("enum");
        }
        if let Some(Value::Array(branches)) = node.get("allOf")
            && branches.len() == 1
            && !node.contains_key("anyOf")
        {
            let branches = node.remove("allOf").unwrap_or_default();
            node.insert("anyOf".into(), branches);
        }
        node.retain(|keyword, _| GEMINI_KEYWORDS.contains(&keyword.as_str()));
        sinew_core::schema::isolate_ref(node);
    });
    schema
}

/// Gemini 3 takes a `thinkingLevel` (low or high); 2.5 a token budget.
fn thinking_config(model: &str, level: ThinkingLevel) -> Option<Value> {
    let gemini3 = model.contains("gemini-3");
    let (gemini3_level, budget) = match level {
        ThinkingLevel::Off => return None,
        ThinkingLevel::Minimal => ("low", 128),
        ThinkingLevel::Low => ("low", 1024),
        ThinkingLevel::Medium => ("high", 8192),
        ThinkingLevel::High => ("high", 24576),
    };
    Some(if gemini3 {
        json!({"thinkingLevel": gemini3_level, "includeThoughts": true})
    } else {
        json!({"thinkingBudget": budget, "includeThoughts": true})
    })
}

/// A turn of `contents`.
#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    parts: Vec<Part<'a>>,
}

/// A part of a turn.
#[derive(Serialize)]
#[serde(untagged)]
enum Part<'a> {
    #[serde(rename_all = "camelCase")]
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought: Option<bool>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    #[serde(rename_all = "camelCase")]
    InlineData { inline_data: Blob<'a> },
    #[serde(rename_all = "camelCase")]
    FileData { file_data: FileData<'a> },
    #[serde(rename_all = "camelCase")]
    FunctionCall {
        function_call: FunctionCall<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<&'a str>,
    },
    #[serde(rename_all = "camelCase")]
    FunctionResponse { function_response: FunctionResponse<'a> },
    /// A part of the service's own, as it sent it.
    Opaque(&'a Value),
}

impl<'a> Part<'a> {
    fn text(text: &'a str) -> Self {
        Part::Text { text, thought: None, thought_signature: None }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileData<'a> {
    mime_type: &'a str,
    file_uri: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: ObjectArguments<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    response: ResponseText<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

/// A tool's text, under `output`, or `error` when it failed.
#[derive(Serialize)]
struct ResponseText<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Cow<'a, str>>,
}

/// Writes the history's turns after the messages `prefix` holds, each followed by a comma, and
/// marks where a later request may resume: after a message that leaves no turn of function
/// responses open (the results of one batch go back together, in one user turn).
fn write_contents(config: &GeminiConfig, request: &StreamRequest<'_>, prefix: &mut WirePrefix) {
    let gemini3 = is_gemini3(request.model);
    // The parts of an open user turn of function responses: the next result joins it.
    let mut results: Vec<Part<'_>> = Vec::new();
    let start = prefix.messages();
    for (index, message) in request.messages.iter().copied().enumerate().skip(start) {
        let turn = match message {
            Message::User(user) => {
                let parts: Vec<Part<'_>> = user.content.iter().filter_map(user_part).collect();
                (!parts.is_empty()).then_some(Turn { role: "user", parts })
            }
            Message::Assistant(assistant) => {
                let parts = model_parts(config, assistant, gemini3);
                (!parts.is_empty()).then_some(Turn { role: "model", parts })
            }
            Message::ToolResult(result) => {
                let text = sinew_core::joined_text(&result.content, "\n");
                let response = if result.is_error {
                    ResponseText { output: None, error: Some(text) }
                } else {
                    ResponseText { output: Some(text), error: None }
                };
                results.push(Part::FunctionResponse {
                    function_response: FunctionResponse {
                        name: &result.tool_name,
                        response,
                        // Ids the service issued go back; ids we generated never existed there.
                        id: Some(result.tool_call_id.as_str()).filter(|id| !id.contains("-fc-")),
                    },
                });
                // Images, documents and audio a tool returned follow its response as parts.
                results
                    .extend(result.content.iter().filter(|c| !matches!(c, Content::Text { .. })).filter_map(user_part));
                None
            }
        };
        if let Some(turn) = turn {
            write_turn(prefix, &mut results);
            write_value(prefix, &turn);
        }
        if results.is_empty() {
            prefix.mark(index + 1);
        }
    }
    write_turn(prefix, &mut results);
}

/// Writes the open turn of function responses, if any.
fn write_turn(prefix: &mut WirePrefix, results: &mut Vec<Part<'_>>) {
    if !results.is_empty() {
        write_value(prefix, &Turn { role: "user", parts: std::mem::take(results) });
    }
}

fn write_value(prefix: &mut WirePrefix, turn: &Turn<'_>) {
    let bytes = prefix.bytes_mut();
    sinew_http::json::write(bytes, turn);
    bytes.push(b',');
}

fn user_part(content: &Content) -> Option<Part<'_>> {
    match content {
        Content::Text { text, .. } if !text.is_empty() => Some(Part::text(text)),
        Content::Image { data, mime_type }
        | Content::Document { data, mime_type, .. }
        | Content::Audio { data, mime_type } => Some(Part::InlineData { inline_data: Blob { mime_type, data } }),
        Content::ImageUrl { url, mime_type: Some(mime_type) } | Content::DocumentUrl { url, mime_type, .. } => {
            Some(Part::FileData { file_data: FileData { mime_type, file_uri: url } })
        }
        _ => None,
    }
}

/// Refuses what Gemini cannot carry in a user message or tool result: an image URL without its
/// media type (`fileData` needs one).
pub fn check_inputs(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    check_inputs_from(request, 0)
}

fn check_inputs_from(request: &StreamRequest<'_>, first: usize) -> Result<(), ProviderError> {
    request.check_inputs_from(first, "Gemini", |content| match content {
        Content::ImageUrl { mime_type: None, .. } => Err("a file URL needs its media type (set `mime_type`)".into()),
        _ => Ok(()),
    })
}

fn model_parts<'a>(config: &GeminiConfig, message: &'a AssistantMessage, gemini3: bool) -> Vec<Part<'a>> {
    let ours = message.provider == config.provider_id;
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    let signature_of = |signature: &'a Option<String>| signature.as_deref().filter(|_| ours);
    message
        .content
        .iter()
        .filter_map(|content| match content {
            Content::Thinking { thinking, signature, redacted: false, .. }
                if ours && !failed && !thinking.is_empty() =>
            {
                Some(Part::Text { text: thinking, thought: Some(true), thought_signature: signature_of(signature) })
            }
            Content::Text { text, signature } if !text.is_empty() => {
                Some(Part::Text { text, thought: None, thought_signature: signature_of(signature) })
            }
            Content::ToolCall { id, name, arguments, signature } => {
                let mut thought_signature = signature_of(signature);
                if gemini3 && thought_signature.is_none() {
                    thought_signature = Some(SKIP_SIGNATURE);
                }
                Some(Part::FunctionCall {
                    function_call: FunctionCall {
                        name,
                        args: ObjectArguments::new(arguments),
                        // The same rule as for results, so a call and its response always agree.
                        id: Some(id.as_str()).filter(|id| !id.contains("-fc-")),
                    },
                    thought_signature,
                })
            }
            Content::Opaque { provider, data } if *provider == config.provider_id && !failed => {
                Some(Part::Opaque(data))
            }
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
