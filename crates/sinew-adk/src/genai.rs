//! google-genai's `Content` and `Part`, and the request types ADK builds from them.
//!
//! Like the Python types, a part is a struct of optional fields (one of them set in practice), and
//! every type rejects unknown keys (`extra="forbid"`). The field kinds sinew works with are typed;
//! the rest are kept losslessly as [`Value`]s, in the camelCase form.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::{base64_bytes, opaque, opaque_boxed};

/// The role of a user turn (also of tool results, as in ADK).
pub const USER: &str = "user";
/// The role of a model turn.
pub const MODEL: &str = "model";

/// A turn: a role and its parts (`google.genai.types.Content`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Content {
    /// The turn's parts, in order.
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

/// One part of a turn (`google.genai.types.Part`). The structured kinds and the opaque values are
/// boxed: a part stays small (every streamed fragment is one), and history is made of many.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct Part {
    /// The resolution to read the part's media at (`mediaResolution`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "media_resolution")]
    pub media_resolution: Option<Box<Value>>,
    /// The result of running code (`codeExecutionResult`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "code_execution_result")]
    pub code_execution_result: Option<Box<CodeExecutionResult>>,
    /// Code the model wrote, to be run (`executableCode`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "executable_code")]
    pub executable_code: Option<Box<ExecutableCode>>,
    /// A file by URI (`fileData`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "file_data")]
    pub file_data: Option<Box<FileData>>,
    /// A call of a function by the model (`functionCall`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "function_call")]
    pub function_call: Option<Box<FunctionCall>>,
    /// A function's result, for the model (`functionResponse`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "function_response")]
    pub function_response: Option<Box<FunctionResponse>>,
    /// Inline bytes: an image, audio, a PDF... (`inlineData`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "inline_data")]
    pub inline_data: Option<Box<Blob>>,
    /// The text; the model's reasoning when `thought` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether the part is the model's reasoning rather than its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    /// The provider's opaque signature of a thought, sent back with it in later requests
    /// (`thoughtSignature`, base64 in JSON).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_bytes::option",
        alias = "thought_signature"
    )]
    pub thought_signature: Option<Vec<u8>>,
    /// Which stretch of a video to read, and at what frame rate (`videoMetadata`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "video_metadata")]
    pub video_metadata: Option<Box<Value>>,
    /// A call of a built-in tool that the model's server runs (`toolCall`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "tool_call")]
    pub tool_call: Option<Box<Value>>,
    /// The output of a server-side tool call (`toolResponse`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "tool_response")]
    pub tool_response: Option<Box<Value>>,
    /// The application's own metadata of the part, such as its source file (`partMetadata`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "part_metadata")]
    pub part_metadata: Option<Map<String, Value>>,
    /// The transcription of an audio part (`audioTranscription`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "audio_transcription")]
    pub audio_transcription: Option<Box<Value>>,
    /// How the model processes the part's media (`mediaProcessing`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "media_processing")]
    pub media_processing: Option<Box<Value>>,
    /// Speech synthesis settings of a text part, such as speaker and style (`speechMetadata`), kept
    /// as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque_boxed", alias = "speech_metadata")]
    pub speech_metadata: Option<Box<Value>>,
}

// Every streamed fragment is a part: what is rare stays boxed, and a part this small.
const _: () = assert!(std::mem::size_of::<Part>() <= 192);

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
    /// The call's id, which its response repeats; ADK gives one (`adk-` and a uuid4) when the model
    /// did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The arguments, by parameter name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// The name of the function to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The arguments streamed so far, when the call arrives in pieces (`partialArgs`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "partial_args")]
    pub partial_args: Option<Value>,
    /// Whether more pieces of this call follow (`willContinue`).
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
    /// Whether more responses to the same non-blocking call follow (`willContinue`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "will_continue")]
    pub will_continue: Option<bool>,
    /// When the model takes a non-blocking call's response in: `SILENT`, `WHEN_IDLE` (the default)
    /// or `INTERRUPT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<String>,
    /// Media parts that go with the response, kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque")]
    pub parts: Option<Value>,
    /// The id of the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The name of the function that was called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The function's result: ADK puts a value under `result`, a failure under `error`.
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
    /// The bytes (base64 in JSON).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "base64_bytes::option")]
    pub data: Option<Vec<u8>>,
    /// A label or file name for the data (`displayName`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "display_name")]
    pub display_name: Option<String>,
    /// The data's IANA MIME type (`mimeType`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "mime_type")]
    pub mime_type: Option<String>,
}

/// A file by URI (`google.genai.types.FileData`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct FileData {
    /// A label or file name for the file (`displayName`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "display_name")]
    pub display_name: Option<String>,
    /// The file's URI, such as `gs://bucket/object` (`fileUri`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "file_uri")]
    pub file_uri: Option<String>,
    /// The file's IANA MIME type (`mimeType`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "mime_type")]
    pub mime_type: Option<String>,
}

/// Code the model wrote for a code executor (`google.genai.types.ExecutableCode`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ExecutableCode {
    /// The code to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The code's language, such as `PYTHON`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The code's id, which its [`CodeExecutionResult`] repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// The result of running [`ExecutableCode`] (`google.genai.types.CodeExecutionResult`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct CodeExecutionResult {
    /// How the run went: `OUTCOME_OK`, `OUTCOME_FAILED` or `OUTCOME_DEADLINE_EXCEEDED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// What the code printed on success; its error output, or what went wrong, otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The id of the [`ExecutableCode`] this is the result of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// Token counts of a response (`google.genai.types.GenerateContentResponseUsageMetadata`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct UsageMetadata {
    /// The cached tokens by modality (`cacheTokensDetails`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "cache_tokens_details")]
    pub cache_tokens_details: Option<Value>,
    /// The prompt tokens read from the context cache (`cachedContentTokenCount`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "cached_content_token_count")]
    pub cached_content_token_count: Option<u64>,
    /// The tokens of the answer (`candidatesTokenCount`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "candidates_token_count")]
    pub candidates_token_count: Option<u64>,
    /// The answer's tokens by modality (`candidatesTokensDetails`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "candidates_tokens_details")]
    pub candidates_tokens_details: Option<Value>,
    /// The tokens of the prompt, cached ones included (`promptTokenCount`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "prompt_token_count")]
    pub prompt_token_count: Option<u64>,
    /// The prompt's tokens by modality (`promptTokensDetails`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "prompt_tokens_details")]
    pub prompt_tokens_details: Option<Value>,
    /// The tokens of the model's reasoning (`thoughtsTokenCount`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thoughts_token_count")]
    pub thoughts_token_count: Option<u64>,
    /// The tokens of server-side tool results fed back to the model (`toolUsePromptTokenCount`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "tool_use_prompt_token_count")]
    pub tool_use_prompt_token_count: Option<u64>,
    /// Those tool-result tokens by modality (`toolUsePromptTokensDetails`), kept as given.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "opaque",
        alias = "tool_use_prompt_tokens_details"
    )]
    pub tool_use_prompt_tokens_details: Option<Value>,
    /// All the call's tokens: prompt, answer, tool results and reasoning (`totalTokenCount`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "total_token_count")]
    pub total_token_count: Option<u64>,
    /// How the call was served and billed, such as `ON_DEMAND` (`trafficType`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "traffic_type")]
    pub traffic_type: Option<String>,
}

/// The system instruction of a request: ADK sets a string; a callback may set a content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum SystemInstruction {
    /// A plain string, as ADK sets it.
    Text(String),
    /// A content, whose text parts make the instruction.
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
    /// What the function does, for the model to decide when to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The function's name, as the model calls it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// An OpenAPI `Schema` object (genai's own schema type); ADK's function tools use
    /// [`FunctionDeclaration::parameters_json_schema`] instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// The parameters as a JSON schema (`parametersJsonSchema`), as ADK's function tools give them.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "parameters_json_schema")]
    pub parameters_json_schema: Option<Value>,
    /// The result's shape as an OpenAPI `Schema` object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    /// The result's shape as a JSON schema (`responseJsonSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_json_schema")]
    pub response_json_schema: Option<Value>,
    /// Whether a call blocks the conversation (`BLOCKING`) or runs beside it (`NON_BLOCKING`), in
    /// live mode.
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
    /// Retrieval from a document store, kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque")]
    pub retrieval: Option<Value>,
    /// Computer use: the model operates a browser or desktop (`computerUse`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "computer_use")]
    pub computer_use: Option<Value>,
    /// Search over the server's file search stores (`fileSearch`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "file_search")]
    pub file_search: Option<Value>,
    /// Grounding with Google Search (`googleSearch`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "google_search")]
    pub google_search: Option<Value>,
    /// Grounding with Google Maps (`googleMaps`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "google_maps")]
    pub google_maps: Option<Value>,
    /// Code execution on the model's server (`codeExecution`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "code_execution")]
    pub code_execution: Option<Value>,
    /// Grounding with enterprise web search (`enterpriseWebSearch`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "enterprise_web_search")]
    pub enterprise_web_search: Option<Value>,
    /// Functions the model may call, which the agent runs (`functionDeclarations`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "function_declarations")]
    pub function_declarations: Option<Vec<FunctionDeclaration>>,
    /// The older Google Search retrieval tool (`googleSearchRetrieval`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "google_search_retrieval")]
    pub google_search_retrieval: Option<Value>,
    /// Web search through Parallel (`parallelAiSearch`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "parallel_ai_search")]
    pub parallel_ai_search: Option<Value>,
    /// Reading the pages at the URLs the prompt gives (`urlContext`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "url_context")]
    pub url_context: Option<Value>,
    /// MCP servers the model's server calls itself (`mcpServers`).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "mcp_servers")]
    pub mcp_servers: Option<Value>,
    /// Web search through Exa (`exaAiSearch`).
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
    /// Whether the answer includes the model's thoughts (`includeThoughts`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "include_thoughts")]
    pub include_thoughts: Option<bool>,
    /// The most tokens the model may think with (`thinkingBudget`): 0 turns thinking off, -1 lets
    /// the model decide.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thinking_budget")]
    pub thinking_budget: Option<i64>,
    /// How much the model thinks, such as `LOW` or `HIGH` (`thinkingLevel`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thinking_level")]
    pub thinking_level: Option<String>,
}

/// The generation settings of a request (`google.genai.types.GenerateContentConfig`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct GenerateContentConfig {
    /// HTTP settings of the call: headers, timeout, base URL (`httpOptions`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "http_options")]
    pub http_options: Option<Value>,
    /// Whether to return the raw HTTP response as well (`shouldReturnHttpResponse`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "should_return_http_response")]
    pub should_return_http_response: Option<bool>,
    /// The system instruction (`systemInstruction`): the agent's instruction, identity and any
    /// transfer or output-schema instructions ADK adds.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "system_instruction")]
    pub system_instruction: Option<SystemInstruction>,
    /// The sampling temperature: higher is more random.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass of the tokens sampled from (`topP`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "top_p")]
    pub top_p: Option<f64>,
    /// Sample from the `k` most likely tokens (`topK`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "top_k")]
    pub top_k: Option<f64>,
    /// How many answers to generate (`candidateCount`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "candidate_count")]
    pub candidate_count: Option<u32>,
    /// The most tokens the answer may have (`maxOutputTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "max_output_tokens")]
    pub max_output_tokens: Option<u32>,
    /// Texts that end the answer when generated (`stopSequences`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "stop_sequences")]
    pub stop_sequences: Option<Vec<String>>,
    /// Whether to return the chosen tokens' log probabilities (`responseLogprobs`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_logprobs")]
    pub response_logprobs: Option<bool>,
    /// How many top candidate tokens to return log probabilities of, at each step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<i64>,
    /// Penalizes tokens already in the answer, for more varied topics (`presencePenalty`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "presence_penalty")]
    pub presence_penalty: Option<f64>,
    /// Penalizes tokens by how often they already appear, for less repetition (`frequencyPenalty`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "frequency_penalty")]
    pub frequency_penalty: Option<f64>,
    /// The sampling seed, for repeatable answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// The answer's MIME type, such as `application/json` (`responseMimeType`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_mime_type")]
    pub response_mime_type: Option<String>,
    /// The answer's shape as an OpenAPI `Schema` object (`responseSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_schema")]
    pub response_schema: Option<Value>,
    /// The answer's shape as a JSON schema (`responseJsonSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_json_schema")]
    pub response_json_schema: Option<Value>,
    /// How the request is routed among models (`routingConfig`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "routing_config")]
    pub routing_config: Option<Value>,
    /// How the model is chosen (`modelSelectionConfig`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "model_selection_config")]
    pub model_selection_config: Option<Value>,
    /// Safety filter thresholds by harm category (`safetySettings`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "safety_settings")]
    pub safety_settings: Option<Value>,
    /// The tools offered to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// How the model may use the tools, such as the function calling mode (`toolConfig`), kept as
    /// given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "tool_config")]
    pub tool_config: Option<Value>,
    /// Labels for billing and tracing; ADK sets `adk_agent_name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Map<String, Value>>,
    /// The name of a context cache to read the prompt's start from (`cachedContent`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "cached_content")]
    pub cached_content: Option<String>,
    /// The kinds of output wanted, such as `TEXT` or `AUDIO` (`responseModalities`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "response_modalities")]
    pub response_modalities: Option<Vec<String>>,
    /// The resolution to read input media at (`mediaResolution`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "media_resolution")]
    pub media_resolution: Option<String>,
    /// The voice of spoken answers (`speechConfig`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "speech_config")]
    pub speech_config: Option<Value>,
    /// Whether the model reads timestamps in audio input (`audioTimestamp`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "audio_timestamp")]
    pub audio_timestamp: Option<bool>,
    /// The genai SDK's automatic function calling settings (`automaticFunctionCalling`), kept as
    /// given; ADK runs the tools itself.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "automatic_function_calling")]
    pub automatic_function_calling: Option<Value>,
    /// How the model thinks (`thinkingConfig`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "thinking_config")]
    pub thinking_config: Option<ThinkingConfig>,
    /// Settings of generated images, such as the aspect ratio (`imageConfig`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "image_config")]
    pub image_config: Option<Value>,
    /// Whether to enable enhanced answers on civic topics such as elections
    /// (`enableEnhancedCivicAnswers`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "enable_enhanced_civic_answers")]
    pub enable_enhanced_civic_answers: Option<bool>,
    /// Screening of prompts and answers by Model Armor (`modelArmorConfig`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "model_armor_config")]
    pub model_armor_config: Option<Value>,
    /// The service tier to serve the request at (`serviceTier`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "service_tier")]
    pub service_tier: Option<String>,
    /// How audio is transcribed (`audioTranscriptionConfig`), kept as given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "audio_transcription_config")]
    pub audio_transcription_config: Option<Value>,
    /// An opaque token from an earlier response, to continue its generation (`continuationToken`,
    /// base64 in JSON).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "base64_bytes::option",
        alias = "continuation_token"
    )]
    pub continuation_token: Option<Vec<u8>>,
    /// Whether the service continues a generation on its own (`automaticContinuation`).
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "automatic_continuation")]
    pub automatic_continuation: Option<bool>,
    /// Where to persist generated assets in external storage (`generationOutputConfig`), kept as
    /// given.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "opaque", alias = "generation_output_config")]
    pub generation_output_config: Option<Value>,
    /// Whether the service may store the request and its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
}

impl GenerateContentConfig {
    /// The function declarations of every tool, in order.
    pub fn function_declarations(&self) -> impl Iterator<Item = &FunctionDeclaration> {
        self.tools.iter().flatten().filter_map(|t| t.function_declarations.as_ref()).flatten()
    }
}
