//! google-genai's `Content` and `Part`, and the request types ADK builds from them.
//!
//! Like the Python types, a part is a struct of optional fields (one of them set in practice), and
//! every type rejects unknown keys (`extra="forbid"`). The field kinds sinew works with are typed;
//! the rest are kept losslessly as [`Value`]s, in the camelCase form.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::{base64_bytes, opaque};

/// The role of a user turn (also of tool results, as in ADK).
pub const USER: &str = "user";
/// The role of a model turn.
pub const MODEL: &str = "model";

/// A turn: a role and its parts (`google.genai.types.Content`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Content {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<Part>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// `user` or `model`; a borrowed `&'static str` for the two usual ones, so that building a
    /// turn (every streamed fragment is one) allocates nothing for it.
    pub role: Option<std::borrow::Cow<'static, str>>,
}

impl Content {
    /// A content with `role` and `parts`.
    pub fn new(role: impl Into<String> + AsRef<str>, parts: Vec<Part>) -> Self {
        let role = match role.as_ref() {
            USER => std::borrow::Cow::Borrowed(USER),
            MODEL => std::borrow::Cow::Borrowed(MODEL),
            _ => std::borrow::Cow::Owned(role.into()),
        };
        Content { parts: Some(parts), role: Some(role) }
    }

    /// A content with `parts` and no role (a callback's answer, say).
    pub fn from_parts(parts: Vec<Part>) -> Self {
        Content { parts: Some(parts), role: None }
    }

    /// A user turn holding one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Content::new(USER, vec![Part::text(text)])
    }

    /// A model turn holding one text part.
    pub fn model_text(text: impl Into<String>) -> Self {
        Content::new(MODEL, vec![Part::text(text)])
    }

    /// The parts, empty when absent.
    pub fn parts(&self) -> &[Part] {
        self.parts.as_deref().unwrap_or_default()
    }

    /// The role, `""` when absent.
    pub fn role(&self) -> &str {
        self.role.as_deref().unwrap_or_default()
    }

    /// The function calls among the parts.
    pub fn function_calls(&self) -> impl Iterator<Item = &FunctionCall> {
        self.parts().iter().filter_map(|p| p.function_call.as_deref())
    }

    /// The function responses among the parts.
    pub fn function_responses(&self) -> impl Iterator<Item = &FunctionResponse> {
        self.parts().iter().filter_map(|p| p.function_response.as_deref())
    }

    /// The non-thought text parts joined without separator, as ADK's `output_key` takes them.
    pub fn text(&self) -> String {
        self.parts().iter().filter(|p| p.thought != Some(true)).filter_map(|p| p.text.as_deref()).collect()
    }
}

/// One part of a turn (`google.genai.types.Part`). The structured kinds are boxed: a part stays
/// small, and history is made of many.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct Part {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "media_resolution")]
    pub media_resolution: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "code_execution_result")]
    pub code_execution_result: Option<Box<CodeExecutionResult>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "executable_code")]
    pub executable_code: Option<Box<ExecutableCode>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "file_data")]
    pub file_data: Option<Box<FileData>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "function_call")]
    pub function_call: Option<Box<FunctionCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "function_response")]
    pub function_response: Option<Box<FunctionResponse>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "inline_data")]
    pub inline_data: Option<Box<Blob>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_bytes::option",
        alias = "thought_signature"
    )]
    pub thought_signature: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "video_metadata")]
    pub video_metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "tool_call")]
    pub tool_call: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "tool_response")]
    pub tool_response: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "part_metadata")]
    pub part_metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "audio_transcription")]
    pub audio_transcription: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "media_processing")]
    pub media_processing: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "speech_metadata")]
    pub speech_metadata: Option<Value>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part { text: Some(text.into()), ..Part::default() }
    }

    /// A thought (reasoning) part, with the provider's signature when it gave one.
    pub fn thought(text: impl Into<String>, signature: Option<Vec<u8>>) -> Self {
        Part { text: Some(text.into()), thought: Some(true), thought_signature: signature, ..Part::default() }
    }

    /// A function-call part.
    pub fn function_call(call: FunctionCall) -> Self {
        Part { function_call: Some(Box::new(call)), ..Part::default() }
    }

    /// A function-response part.
    pub fn function_response(response: FunctionResponse) -> Self {
        Part { function_response: Some(Box::new(response)), ..Part::default() }
    }

    /// An inline binary part (an image, a PDF...).
    pub fn inline_data(mime_type: impl Into<String>, data: Vec<u8>) -> Self {
        Part {
            inline_data: Some(Box::new(Blob {
                data: Some(data),
                display_name: None,
                mime_type: Some(mime_type.into()),
            })),
            ..Part::default()
        }
    }

    /// Whether this is a thought part.
    pub fn is_thought(&self) -> bool {
        self.thought == Some(true)
    }
}

/// A call of a function by the model (`google.genai.types.FunctionCall`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct FunctionCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "partial_args")]
    pub partial_args: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "will_continue")]
    pub will_continue: Option<bool>,
}

impl FunctionCall {
    /// A call of `name` with `args`, and its id when one is known.
    pub fn new(id: Option<String>, name: impl Into<String>, args: Map<String, Value>) -> Self {
        FunctionCall { id, args: Some(args), name: Some(name.into()), partial_args: None, will_continue: None }
    }

    /// The function's name, `""` when absent.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// The call's id, `""` when absent.
    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or_default()
    }
}

/// The result of a function call (`google.genai.types.FunctionResponse`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct FunctionResponse {
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "will_continue")]
    pub will_continue: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque")]
    pub parts: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Map<String, Value>>,
}

impl FunctionResponse {
    /// The response `response` to the call `id` of `name`.
    pub fn new(id: Option<String>, name: impl Into<String>, response: Map<String, Value>) -> Self {
        FunctionResponse {
            will_continue: None,
            scheduling: None,
            parts: None,
            id,
            name: Some(name.into()),
            response: Some(response),
        }
    }

    /// The function's name, `""` when absent.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// The call's id, `""` when absent.
    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or_default()
    }
}

/// Inline bytes (`google.genai.types.Blob`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct Blob {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "base64_bytes::option")]
    pub data: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "display_name")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "mime_type")]
    pub mime_type: Option<String>,
}

/// A file by URI (`google.genai.types.FileData`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct FileData {
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "display_name")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "file_uri")]
    pub file_uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "mime_type")]
    pub mime_type: Option<String>,
}

/// Code the model wrote for a code executor (`google.genai.types.ExecutableCode`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ExecutableCode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// The result of running [`ExecutableCode`] (`google.genai.types.CodeExecutionResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CodeExecutionResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Token counts of a response (`google.genai.types.GenerateContentResponseUsageMetadata`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct UsageMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "cache_tokens_details")]
    pub cache_tokens_details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "cached_content_token_count")]
    pub cached_content_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "candidates_token_count")]
    pub candidates_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "candidates_tokens_details")]
    pub candidates_tokens_details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "prompt_token_count")]
    pub prompt_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "prompt_tokens_details")]
    pub prompt_tokens_details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thoughts_token_count")]
    pub thoughts_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "tool_use_prompt_token_count")]
    pub tool_use_prompt_token_count: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opaque",
        alias = "tool_use_prompt_tokens_details"
    )]
    pub tool_use_prompt_tokens_details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "total_token_count")]
    pub total_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "traffic_type")]
    pub traffic_type: Option<String>,
}

/// The system instruction of a request: ADK sets a string; a callback may set a content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SystemInstruction {
    Text(String),
    Content(Content),
}

impl SystemInstruction {
    /// The instruction's text: the string, or the text parts joined with `\n` (spec 000,
    /// "SystemInstruction Forwarding").
    pub fn text(&self) -> String {
        match self {
            SystemInstruction::Text(text) => text.clone(),
            SystemInstruction::Content(content) => {
                let texts: Vec<&str> = content.parts().iter().filter_map(|p| p.text.as_deref()).collect();
                texts.join("\n")
            }
        }
    }
}

/// A function the model may call (`google.genai.types.FunctionDeclaration`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct FunctionDeclaration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An OpenAPI `Schema` object (genai's own schema type); ADK's function tools use
    /// [`FunctionDeclaration::parameters_json_schema`] instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "parameters_json_schema")]
    pub parameters_json_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_json_schema")]
    pub response_json_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<String>,
}

impl FunctionDeclaration {
    /// A declaration of `name` whose parameters are the JSON schema `parameters`.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Option<Value>) -> Self {
        FunctionDeclaration {
            description: Some(description.into()),
            name: Some(name.into()),
            parameters_json_schema: parameters,
            ..FunctionDeclaration::default()
        }
    }
}

/// A tool offered to the model (`google.genai.types.Tool`): function declarations, or one of the
/// model's built-in tools, kept as given.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque")]
    pub retrieval: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "computer_use")]
    pub computer_use: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "file_search")]
    pub file_search: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "google_search")]
    pub google_search: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "google_maps")]
    pub google_maps: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "code_execution")]
    pub code_execution: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "enterprise_web_search")]
    pub enterprise_web_search: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "function_declarations")]
    pub function_declarations: Option<Vec<FunctionDeclaration>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "google_search_retrieval")]
    pub google_search_retrieval: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "parallel_ai_search")]
    pub parallel_ai_search: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "url_context")]
    pub url_context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "mcp_servers")]
    pub mcp_servers: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "exa_ai_search")]
    pub exa_ai_search: Option<Value>,
}

impl Tool {
    /// A tool holding function declarations.
    pub fn functions(declarations: Vec<FunctionDeclaration>) -> Self {
        Tool { function_declarations: Some(declarations), ..Tool::default() }
    }
}

/// How the model thinks (`google.genai.types.ThinkingConfig`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct ThinkingConfig {
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "include_thoughts")]
    pub include_thoughts: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thinking_budget")]
    pub thinking_budget: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thinking_level")]
    pub thinking_level: Option<String>,
}

/// The generation settings of a request (`google.genai.types.GenerateContentConfig`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct GenerateContentConfig {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "http_options")]
    pub http_options: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "should_return_http_response")]
    pub should_return_http_response: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "system_instruction")]
    pub system_instruction: Option<SystemInstruction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "top_p")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "top_k")]
    pub top_k: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "candidate_count")]
    pub candidate_count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "max_output_tokens")]
    pub max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "stop_sequences")]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_logprobs")]
    pub response_logprobs: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "presence_penalty")]
    pub presence_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "frequency_penalty")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_mime_type")]
    pub response_mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_schema")]
    pub response_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_json_schema")]
    pub response_json_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "routing_config")]
    pub routing_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "model_selection_config")]
    pub model_selection_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "safety_settings")]
    pub safety_settings: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "tool_config")]
    pub tool_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "cached_content")]
    pub cached_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_modalities")]
    pub response_modalities: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "media_resolution")]
    pub media_resolution: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "speech_config")]
    pub speech_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "audio_timestamp")]
    pub audio_timestamp: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "automatic_function_calling")]
    pub automatic_function_calling: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thinking_config")]
    pub thinking_config: Option<ThinkingConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "image_config")]
    pub image_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "enable_enhanced_civic_answers")]
    pub enable_enhanced_civic_answers: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "model_armor_config")]
    pub model_armor_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "service_tier")]
    pub service_tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "audio_transcription_config")]
    pub audio_transcription_config: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_bytes::option",
        alias = "continuation_token"
    )]
    pub continuation_token: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "automatic_continuation")]
    pub automatic_continuation: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "generation_output_config")]
    pub generation_output_config: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
}

impl GenerateContentConfig {
    /// The function declarations of every tool, in order.
    pub fn function_declarations(&self) -> impl Iterator<Item = &FunctionDeclaration> {
        self.tools.iter().flatten().filter_map(|t| t.function_declarations.as_ref()).flatten()
    }
}
