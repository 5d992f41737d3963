//! The ConverseStream request, built from a [`StreamRequest`], and its SigV4 signature (pure:
//! the time and the credentials are inputs).

use bytes::Bytes;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use serde::Serialize;
use serde_json::{Value, json};
use sinew_core::{
    AssistantMessage, Content, Message, ProviderError, ResponseFormat, StopReason, StreamRequest, ThinkingLevel,
    ToolChoice, WirePrefix,
};
use sinew_http::json::ObjectArguments;
use sinew_http::{Authorizer, HttpRequest, env_var};

use crate::decode::PROVIDER_ID;

/// AWS credentials. `Debug` never shows the secret or the session token.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// The access key id (`AWS_ACCESS_KEY_ID`); `Debug` shows it.
    pub access_key_id: String,
    /// The secret key (`AWS_SECRET_ACCESS_KEY`).
    pub secret_access_key: String,
    /// Set for temporary credentials (STS, SSO, instance roles).
    pub session_token: Option<String>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"****")
            .field("session_token", &self.session_token.as_ref().map(|_| "****"))
            .finish()
    }
}

impl AwsCredentials {
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, if set, `AWS_SESSION_TOKEN`.
    pub fn from_env() -> Result<Self, ProviderError> {
        match (env_var("AWS_ACCESS_KEY_ID"), env_var("AWS_SECRET_ACCESS_KEY")) {
            (Some(access_key_id), Some(secret_access_key)) => {
                Ok(AwsCredentials { access_key_id, secret_access_key, session_token: env_var("AWS_SESSION_TOKEN") })
            }
            _ => Err(ProviderError::Auth(
                "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary credentials), or AWS_BEARER_TOKEN_BEDROCK".into(),
            )),
        }
    }
}

/// Where credentials come from, asked before every attempt is sent so rotating ones stay fresh
/// (an implementation that fetches them caches them: see [`sinew_http::CredentialCache`]).
#[async_trait]
pub trait CredentialsProvider: Send + Sync + fmt::Debug {
    /// The credentials to sign the next attempt with; an error fails that attempt (and is
    /// retried when it is [retryable](ProviderError::is_retryable)).
    async fn credentials(&self) -> Result<AwsCredentials, ProviderError>;

    /// The service refused the last credentials handed out (401 or 403) before they expired. A
    /// provider that keeps them forgets them, so the next call fetches new ones, and says whether
    /// it did; the default keeps nothing to forget.
    fn invalidate(&self) -> bool {
        false
    }
}

#[async_trait]
impl CredentialsProvider for AwsCredentials {
    async fn credentials(&self) -> Result<AwsCredentials, ProviderError> {
        Ok(self.clone())
    }
}

/// Reads the `AWS_*` variables at each request (picks up refreshed session tokens).
#[derive(Clone, Copy, Debug, Default)]
pub struct EnvCredentials;

#[async_trait]
impl CredentialsProvider for EnvCredentials {
    async fn credentials(&self) -> Result<AwsCredentials, ProviderError> {
        AwsCredentials::from_env()
    }
}

/// Signs each attempt with SigV4, with credentials the provider gives then, at the time it is
/// sent (what [`BedrockConfig::authorizer`] returns).
#[derive(Clone, Debug)]
pub struct SigV4Authorizer {
    credentials: Arc<dyn CredentialsProvider>,
    region: String,
}

#[async_trait]
impl Authorizer for SigV4Authorizer {
    async fn authorize(&self, request: &mut HttpRequest) -> Result<(), ProviderError> {
        let credentials = self.credentials.credentials().await?;
        sign_request(request, &credentials, &self.region, "bedrock", SystemTime::now())
    }

    fn rejected(&self) -> bool {
        self.credentials.invalidate()
    }
}

/// How requests authenticate.
#[derive(Clone, Debug)]
pub enum BedrockAuth {
    /// Signature Version 4 with credentials from the provider, signed when each attempt is
    /// sent.
    SigV4(Arc<dyn CredentialsProvider>),
    /// A Bedrock API key (`Authorization: Bearer`). `Debug` hides it.
    ApiKey(Secret),
}

/// A secret string whose `Debug` shows `****`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"****\"")
    }
}

/// Where and how to call ConverseStream.
#[derive(Clone, Debug)]
pub struct BedrockConfig {
    /// The AWS region, such as `us-east-1`; SigV4 signatures are made for it.
    pub region: String,
    /// `https://bedrock-runtime.{region}.amazonaws.com` unless overridden (VPC endpoints, tests).
    pub endpoint: String,
    /// SigV4 credentials or a Bedrock API key.
    pub auth: BedrockAuth,
}

impl BedrockConfig {
    /// SigV4-signed requests to `region` with `credentials`.
    pub fn new(region: impl Into<String>, credentials: impl CredentialsProvider + 'static) -> Self {
        let region = region.into();
        BedrockConfig {
            endpoint: format!("https://bedrock-runtime.{region}.amazonaws.com"),
            region,
            auth: BedrockAuth::SigV4(Arc::new(credentials)),
        }
    }

    /// Requests to `region` signed with credentials from `credentials`, shared with others.
    pub fn with_credentials(region: impl Into<String>, credentials: Arc<dyn CredentialsProvider>) -> Self {
        let region = region.into();
        BedrockConfig {
            endpoint: format!("https://bedrock-runtime.{region}.amazonaws.com"),
            region,
            auth: BedrockAuth::SigV4(credentials),
        }
    }

    /// What signs each attempt when it is sent: `Some` for SigV4, `None` for an API key (which
    /// [`build_request`] adds).
    pub fn authorizer(&self) -> Option<Arc<dyn Authorizer>> {
        match &self.auth {
            BedrockAuth::SigV4(credentials) => {
                Some(Arc::new(SigV4Authorizer { credentials: Arc::clone(credentials), region: self.region.clone() }))
            }
            BedrockAuth::ApiKey(_) => None,
        }
    }

    /// Requests to `region` with a Bedrock API key.
    pub fn with_api_key(region: impl Into<String>, api_key: impl Into<String>) -> Self {
        let region = region.into();
        BedrockConfig {
            endpoint: format!("https://bedrock-runtime.{region}.amazonaws.com"),
            region,
            auth: BedrockAuth::ApiKey(Secret(api_key.into())),
        }
    }
}

/// The request of a ConverseStream call, every message written (the provider resumes from what
/// [`StreamRequest::history`] kept, and checks the inputs first). An API key is in it; a SigV4
/// signature is added when it is sent ([`BedrockConfig::authorizer`], or [`sign_request`] with
/// credentials and a time of your own).
pub fn build_request(config: &BedrockConfig, request: &StreamRequest<'_>) -> HttpRequest {
    let (body, _) = body_bytes(request, WirePrefix::new(message_format(request)));
    unsigned_request(config, request, body)
}

/// [`build_request`] for a request whose inputs are checked first ([`check_inputs`]): those of
/// the messages written again, the others were checked when they were first written (and hold no
/// document: a point to resume from comes before the first one, so the count of five holds).
pub(crate) fn checked_request(
    config: &BedrockConfig,
    request: &StreamRequest<'_>,
) -> Result<HttpRequest, ProviderError> {
    let body = request.resume_messages(
        message_format(request),
        resumable_within(request),
        |first| check_inputs_from(request, first),
        |prefix| body_bytes(request, prefix),
    )?;
    Ok(unsigned_request(config, request, body))
}

fn unsigned_request(config: &BedrockConfig, request: &StreamRequest<'_>, body: Bytes) -> HttpRequest {
    let url = format!(
        "{}/model/{}/converse-stream",
        config.endpoint.trim_end_matches('/'),
        encode_path_segment(request.model)
    );
    let mut http = HttpRequest::post_json(url, body).header("accept", "application/vnd.amazon.eventstream");
    if let BedrockAuth::ApiKey(key) = &config.auth {
        http.headers.push(("authorization".into(), format!("Bearer {}", key.0)));
    }
    http
}

/// What decides the bytes of a history message here: this builder, and whether messages get a
/// `cachePoint` (which the model decides too; its message, which moves, is never kept).
fn message_format(request: &StreamRequest<'_>) -> u64 {
    const BUILDER: u64 = 0x6265_6472_6f63_6b31; // "bedrock1"
    BUILDER ^ u64::from(caches_messages(request))
}

/// Whether messages get a `cachePoint` in this request (when there are enough).
fn caches_messages(request: &StreamRequest<'_>) -> bool {
    takes_cache_points(request.model) && request.cache_config.caches_messages()
}

/// How many of the first messages a kept prefix may cover here. A point to resume from is where a
/// turn of one role ended because the next message has another: that message must be unchanged
/// too, or it might have joined the turn. And with a `cachePoint` on the second-to-last message,
/// none at or after where this request puts it.
fn resumable_within(request: &StreamRequest<'_>) -> usize {
    let unchanged = request.history.map_or(0, |history| history.unchanged);
    let len = request.messages.len();
    let before_cache_point = if caches_messages(request) { len.saturating_sub(2) } else { len };
    unchanged.saturating_sub(1).min(before_cache_point)
}

/// The body, written straight from borrowed wire structs (the history is resent every turn, so no
/// `Value` tree is built for it), `messages` resumed after those `prefix` holds (see
/// [`sinew_core::wire`]). Returns the body and the prefix of this request's messages.
fn body_bytes(request: &StreamRequest<'_>, mut prefix: WirePrefix) -> (Bytes, WirePrefix) {
    let before_cache_point =
        if caches_messages(request) { request.messages.len().saturating_sub(2) } else { request.messages.len() };
    let cache = cache_points(request);
    prefix.open(&sinew_http::json::array_opening(b"{}", "messages"));
    write_messages(request.messages, cache.message, before_cache_point, &mut prefix);
    let rest = sinew_http::json::bytes(&wire_body(request, cache));
    let body = prefix.close(&sinew_http::json::array_closing(&rest));
    (body, prefix)
}

/// Signs `request` with SigV4 for `service` in `region` at `time`, adding `authorization`,
/// `x-amz-date` and, for temporary credentials, `x-amz-security-token`.
pub fn sign_request(
    request: &mut HttpRequest,
    credentials: &AwsCredentials,
    region: &str,
    service: &str,
    time: SystemTime,
) -> Result<(), ProviderError> {
    let credentials = Credentials::new(
        &credentials.access_key_id,
        &credentials.secret_access_key,
        credentials.session_token.clone(),
        None,
        "sinew",
    );
    let identity = credentials.into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| ProviderError::Other(format!("cannot sign the request: {e}")))?;
    let host = http::Uri::try_from(request.url.as_str())
        .ok()
        .and_then(|uri| uri.authority().map(|a| a.as_str().to_owned()))
        .ok_or_else(|| ProviderError::Other(format!("cannot sign a request to {}", request.url)))?;
    let mut headers: Vec<(&str, &str)> = vec![("host", host.as_str())];
    headers.extend(request.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let signable = SignableRequest::new(
        request.method.as_str(),
        request.url.as_str(),
        headers.into_iter(),
        SignableBody::Bytes(&request.body),
    )
    .map_err(|e| ProviderError::Other(format!("cannot sign the request: {e}")))?;
    let (instructions, _signature) = sign(signable, &params.into())
        .map_err(|e| ProviderError::Other(format!("cannot sign the request: {e}")))?
        .into_parts();
    let (signed_headers, _) = instructions.into_parts();
    for header in signed_headers {
        request.headers.push((header.name().to_owned(), header.value().to_owned()));
    }
    Ok(())
}

/// A model id in a URL path: `anthropic.claude-3-7-sonnet-20250219-v1:0` → `...v1%3A0`, and
/// inference-profile ARNs with their slashes.
fn encode_path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The request options ConverseStream takes: a forced tool choice, stop sequences, `top_p` and a
/// schema for the answer. Its `toolChoice` has no "none", and `top_k` exists only per model family.
pub const SUPPORTED_OPTIONS: &[&str] = &["tool_choice", "stop_sequences", "top_p", "response_format"];

/// Refuses options ConverseStream has no equivalent for, and `ToolChoice::None`.
pub fn check_options(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    request.check_options("Bedrock ConverseStream", SUPPORTED_OPTIONS)?;
    if request.options.tool_choice == ToolChoice::None {
        return Err(sinew_core::options::unsupported("Bedrock ConverseStream", "tool_choice: none"));
    }
    if request.options.response_format == ResponseFormat::JsonObject {
        return Err(sinew_core::options::unsupported(
            "Bedrock ConverseStream",
            "response_format: JSON object (give a schema)",
        ));
    }
    Ok(())
}

/// The JSON body (exposed for snapshot tests and hosts that bring their own transport), read
/// back from the bytes [`build_request`] sends (see [`sinew_http::json::read_body`]).
pub fn body(request: &StreamRequest<'_>) -> Value {
    let (body, _) = body_bytes(request, WirePrefix::new(message_format(request)));
    sinew_http::json::read_body(&body)
}

/// The body's fields after `messages`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    #[serde(skip_serializing_if = "InferenceConfig::is_empty")]
    inference_config: InferenceConfig<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_model_request_fields: Option<Value>,
}

#[derive(Serialize, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
}

impl InferenceConfig<'_> {
    fn is_empty(&self) -> bool {
        *self == InferenceConfig::default()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Tool<'a> {
    ToolSpec(ToolSpec<'a>),
    CachePoint(CachePoint),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolSpec<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: InputSchema<'a>,
}

#[derive(Serialize)]
struct InputSchema<'a> {
    json: &'a Value,
}

/// A cache checkpoint: what comes before it may be cached.
#[derive(Serialize)]
struct CachePoint {
    #[serde(rename = "type")]
    kind: &'static str,
}

const CACHE_POINT: CachePoint = CachePoint { kind: "default" };

fn wire_body<'a>(request: &StreamRequest<'a>, cache: sinew_core::CacheBreakpoints) -> Body<'a> {
    let mut system = Vec::new();
    if !request.system_prompt.is_empty() {
        system.push(Block::Text(request.system_prompt));
        if cache.system {
            system.push(Block::CachePoint(CACHE_POINT));
        }
    }
    let thinking = thinking_budget(request.model, request.thinking_level);
    let options = request.options;
    // Structured output: the schema travels as a JSON string; Claude's constrained decoding wants
    // it closed, as on Anthropic's API.
    let output_config = match &options.response_format {
        ResponseFormat::JsonSchema { name, schema, .. } => {
            let schema =
                if request.model.contains("claude") { sinew_core::schema::closed(schema) } else { schema.clone() };
            Some(
                json!({"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"name": name, "schema": schema.to_string()}}}}),
            )
        }
        _ => None,
    };
    let tool_config = (!request.tools.is_empty()).then(|| {
        let mut tools: Vec<Tool<'_>> = request
            .tools
            .iter()
            .map(|t| {
                Tool::ToolSpec(ToolSpec {
                    name: &t.name,
                    description: &t.description,
                    input_schema: InputSchema { json: &t.parameters },
                })
            })
            .collect();
        if cache.tools {
            tools.push(Tool::CachePoint(CACHE_POINT));
        }
        let tool_choice = match &options.tool_choice {
            ToolChoice::Required => Some(json!({"any": {}})),
            ToolChoice::Tool { name } => Some(json!({"tool": {"name": name}})),
            _ => None,
        };
        ToolConfig { tools, tool_choice }
    });
    Body {
        system,
        inference_config: InferenceConfig {
            max_tokens: request.max_tokens,
            temperature: request.temperature.filter(|_| thinking.is_none()).map(sinew_http::json_f32),
            stop_sequences: &options.stop_sequences,
            top_p: options.top_p.map(sinew_http::json_f32),
        },
        output_config,
        tool_config,
        additional_model_request_fields: thinking
            .map(|budget| json!({"thinking": {"type": "enabled", "budget_tokens": budget}})),
    }
}

/// The Claude families whose Bedrock models take `cachePoint`s (older ones refuse them).
const CACHING_CLAUDE: &[&str] =
    &["claude-3-5-haiku", "claude-3-7-sonnet", "claude-sonnet-4", "claude-opus-4", "claude-haiku-4"];

/// Where `cachePoint`s go: the request's breakpoints, for the model families whose Bedrock
/// models take them: Claude from 3.5 Haiku and 3.7 Sonnet on, and Nova, which caches the system
/// prompt and messages but not tools. None for the others, which refuse them.
fn cache_points(request: &StreamRequest<'_>) -> sinew_core::CacheBreakpoints {
    let model = request.model;
    if takes_cache_points(model) {
        let all = request.cache_breakpoints();
        // Nova caches the system prompt and messages, not tools.
        return if model.contains("amazon.nova") { sinew_core::CacheBreakpoints { tools: false, ..all } } else { all };
    }
    let none = sinew_core::CacheBreakpoints { system: false, tools: false, message: None };
    if request.cache_breakpoints() != none {
        tracing::debug!(model = request.model, "no prompt caching: the model takes no cachePoint");
    }
    none
}

/// Whether the model takes `cachePoint`s: Claude from 3.5 Haiku and 3.7 Sonnet on, and Nova.
fn takes_cache_points(model: &str) -> bool {
    (model.contains("anthropic.") && CACHING_CLAUDE.iter().any(|family| model.contains(family)))
        || model.contains("amazon.nova")
}

/// Claude models on Bedrock take Anthropic's thinking budget; others have no such field.
fn thinking_budget(model: &str, level: ThinkingLevel) -> Option<u32> {
    // The Anthropic API's floor of 1,024 tokens applies.
    if model.contains("anthropic.claude") { level.token_budget().map(|budget| budget.max(1024)) } else { None }
}

/// A turn of `messages`.
#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

/// A content block (also of the system prompt).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Block<'a> {
    Text(&'a str),
    Image {
        format: &'a str,
        source: Source<'a>,
    },
    Document {
        format: &'static str,
        name: String,
        source: Source<'a>,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<Block<'a>>,
        status: &'static str,
    },
    ReasoningContent(Reasoning<'a>),
    #[serde(rename_all = "camelCase")]
    ToolUse {
        tool_use_id: &'a str,
        name: &'a str,
        input: ObjectArguments<'a>,
    },
    CachePoint(CachePoint),
    /// A block of the service's own (a server tool's call or result), as it sent it.
    #[serde(untagged)]
    Opaque(&'a Value),
}

impl Block<'_> {
    fn is_reasoning(&self) -> bool {
        match self {
            Block::ReasoningContent(_) => true,
            Block::Opaque(block) => block.get("reasoningContent").is_some(),
            _ => false,
        }
    }
}

#[derive(Serialize)]
struct Source<'a> {
    bytes: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Reasoning<'a> {
    RedactedContent(&'a str),
    ReasoningText { text: &'a str, signature: &'a str },
}

/// Writes the conversation after the messages `prefix` holds, each turn followed by a comma; a
/// `cachePoint` closes message `cache_at`; consecutive messages of one role share a turn (Bedrock
/// wants roles to alternate). Marks where a later request may resume: where a turn ends because
/// the next message has another role (a mark counts the messages before that one, which must be
/// unchanged too: see [`resumable_within`]), among the first `keep_before` messages, and only
/// before the first document (their names are unique across the request).
fn write_messages(history: &[&Message], cache_at: Option<usize>, keep_before: usize, prefix: &mut WirePrefix) {
    let mut documents = Documents::default();
    // The turn being filled.
    let mut open: Option<Turn<'_>> = None;
    let start = prefix.messages();
    for (index, message) in history.iter().copied().enumerate().skip(start) {
        let (role, mut blocks) = match message {
            Message::User(user) => {
                ("user", user.content.iter().filter_map(|c| user_block(c, &mut documents)).collect::<Vec<_>>())
            }
            Message::Assistant(assistant) => ("assistant", assistant_blocks(assistant)),
            Message::ToolResult(result) => {
                let mut content: Vec<Block<'_>> =
                    result.content.iter().filter_map(|c| user_block(c, &mut documents)).collect();
                if content.is_empty() {
                    content.push(Block::Text("(no output)"));
                }
                let status = if result.is_error { "error" } else { "success" };
                ("user", vec![Block::ToolResult { tool_use_id: &result.tool_call_id, content, status }])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        // Bedrock refuses a cache point right after a reasoning block.
        if cache_at == Some(index) && blocks.last().is_some_and(|b| !b.is_reasoning()) {
            blocks.push(Block::CachePoint(CACHE_POINT));
        }
        match &mut open {
            Some(turn) if turn.role == role => turn.content.extend(blocks),
            _ => {
                if let Some(turn) = open.replace(Turn { role, content: blocks }) {
                    write_turn(prefix, &turn);
                    // What was written covers the messages before this one, whose role ended the
                    // turn; the documents before it were those of the written turns.
                    if index <= keep_before && documents.count == 0 {
                        prefix.mark(index);
                    }
                }
            }
        }
    }
    if let Some(turn) = open {
        write_turn(prefix, &turn);
    }
}

fn write_turn(prefix: &mut WirePrefix, turn: &Turn<'_>) {
    let bytes = prefix.bytes_mut();
    sinew_http::json::write(bytes, turn);
    bytes.push(b',');
}

/// The documents of a request so far: Converse wants each named, the names unique.
#[derive(Default)]
struct Documents {
    count: usize,
    /// The names given, lowercased (Converse compares them without case).
    names: std::collections::HashSet<String>,
}

impl Documents {
    /// A valid name for the next document, unique in the request.
    fn name(&mut self, name: Option<&str>) -> String {
        self.count += 1;
        let base = document_name(name, self.count);
        let mut candidate = base.clone();
        let mut n = 2;
        while !self.names.insert(candidate.to_lowercase()) {
            candidate = format!("{base} ({n})");
            n += 1;
        }
        candidate
    }
}

/// At most this many documents go in one request (Converse refuses more).
const MAX_DOCUMENTS: usize = 5;
/// A document name's longest form.
const MAX_DOCUMENT_NAME: usize = 190;

fn user_block<'a>(content: &'a Content, documents: &mut Documents) -> Option<Block<'a>> {
    match content {
        Content::Text { text, .. } if !text.is_empty() => Some(Block::Text(text)),
        Content::Image { data, mime_type } => {
            let format = mime_type.strip_prefix("image/").unwrap_or(mime_type);
            Some(Block::Image { format, source: Source { bytes: data } })
        }
        Content::Document { data, mime_type, name } => {
            let format = document_format(mime_type)?;
            let name = documents.name(name.as_deref());
            Some(Block::Document { format, name, source: Source { bytes: data } })
        }
        _ => None,
    }
}

/// The Converse document format of a media type.
fn document_format(mime_type: &str) -> Option<&'static str> {
    Some(match mime_type {
        "application/pdf" => "pdf",
        "text/csv" => "csv",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "text/html" => "html",
        "text/plain" => "txt",
        "text/markdown" => "md",
        _ => return None,
    })
}

/// A document name as Converse takes it (ASCII letters and digits, single spaces, hyphens,
/// parentheses, square brackets; 200 characters at most): other characters become spaces, a
/// long name is cut; no name, or nothing left, is `document N`.
fn document_name(name: Option<&str>, number: usize) -> String {
    let cleaned = name.map(|name| {
        let kept: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '(' | ')' | '[' | ']') { c } else { ' ' })
            .collect();
        let mut name = kept.split_whitespace().collect::<Vec<_>>().join(" ");
        name.truncate(MAX_DOCUMENT_NAME);
        name.trim_end().to_owned()
    });
    match cleaned {
        Some(name) if !name.is_empty() => name,
        _ => format!("document {number}"),
    }
}

/// Refuses what ConverseStream cannot carry in a user message or tool result: URLs (it takes
/// bytes), audio, documents in other formats than its nine, and more than five documents.
pub fn check_inputs(request: &StreamRequest<'_>) -> Result<(), ProviderError> {
    check_inputs_from(request, 0)
}

fn check_inputs_from(request: &StreamRequest<'_>, first: usize) -> Result<(), ProviderError> {
    let documents = std::cell::Cell::new(0);
    request.check_inputs_from(first, "Bedrock ConverseStream", |content| match content {
        Content::Document { .. } if documents.replace(documents.get() + 1) == MAX_DOCUMENTS => {
            Err(format!("a request holds {MAX_DOCUMENTS} documents at most"))
        }
        Content::ImageUrl { .. } | Content::DocumentUrl { .. } => Err("it takes the bytes, not a URL".into()),
        Content::Audio { .. } => Err("it takes no audio".into()),
        Content::Document { mime_type, .. } if document_format(mime_type).is_none() => {
            Err(format!("documents are PDF, CSV, DOC, DOCX, XLS, XLSX, HTML, plain text or Markdown, not {mime_type}"))
        }
        _ => Ok(()),
    })
}

fn assistant_blocks(message: &AssistantMessage) -> Vec<Block<'_>> {
    let ours = message.provider == PROVIDER_ID;
    let failed = matches!(message.stop_reason, StopReason::Error | StopReason::Aborted);
    message
        .content
        .iter()
        .filter_map(|content| match content {
            Content::Text { text, .. } if !text.is_empty() => Some(Block::Text(text)),
            Content::Thinking { signature: Some(data), redacted: true, .. } if ours => {
                Some(Block::ReasoningContent(Reasoning::RedactedContent(data)))
            }
            Content::Thinking { thinking, signature: Some(signature), redacted: false, .. } if ours && !failed => {
                Some(Block::ReasoningContent(Reasoning::ReasoningText { text: thinking, signature }))
            }
            Content::ToolCall { id, name, arguments, .. } => {
                Some(Block::ToolUse { tool_use_id: id, name, input: ObjectArguments::new(arguments) })
            }
            // A server tool's call and result, as the service sent them.
            Content::Opaque { data, .. } if ours && !failed => Some(Block::Opaque(data)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
