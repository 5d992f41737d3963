//! The model adapter: spec 000's "Model adapter streams LLM responses", "SystemInstruction
//! Forwarding" and "convertMessages forwards FunctionCall ID", over `MockProvider` and over the
//! Anthropic provider against a real HTTP server.

use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Value, json};
use sinew_adk::genai::{FunctionResponse, Tool};
use sinew_adk::{
    Content, FunctionCall, FunctionDeclaration, Llm, LlmRequest, LlmResponse, ModelAdapter, Part, SystemInstruction,
};
use sinew_core::{CancellationToken, Message, ProviderError, StreamEvent, StreamProvider, StreamRequest};
use sinew_testing::{MockProvider, MockResponse};

fn request(contents: Vec<Content>, system: Option<SystemInstruction>) -> LlmRequest {
    let mut request = LlmRequest::default();
    request.model = Some("mock-model".into());
    request.contents = contents;
    request.config.system_instruction = system;
    request
}

async fn run(
    responses: Vec<MockResponse>,
    request: LlmRequest,
    stream: bool,
) -> (Vec<Result<LlmResponse, String>>, Arc<MockProvider>) {
    let provider = Arc::new(MockProvider::new(responses));
    let adapter = ModelAdapter::new(provider.clone(), "mock-model");
    let items = adapter.generate_content(request, stream).map(|r| r.map_err(|e| e.to_string())).collect().await;
    (items, provider)
}

fn text_of(response: &LlmResponse) -> String {
    response.content.as_ref().map(Content::text).unwrap_or_default()
}

#[tokio::test]
async fn non_streaming_mode_accumulates_complete_response() {
    let hello = || MockResponse::new().text_delta("Hello ").text_delta("world").usage(10, 5);
    let (items, _) = run(vec![hello()], request(vec![Content::user_text("hi")], None), false).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let response = items[0].as_ref().unwrap();
    assert_eq!((response.partial, response.turn_complete), (Some(false), Some(true)));
    assert_eq!(text_of(response), "Hello world");
    assert_eq!(response.content.as_ref().unwrap().parts().len(), 1);
    assert_eq!(response.finish_reason.as_deref(), Some("STOP"));
    let usage = response.usage_metadata.as_ref().unwrap();
    assert_eq!(
        (usage.prompt_token_count, usage.candidates_token_count, usage.total_token_count),
        (Some(10), Some(5), Some(15))
    );
}

#[tokio::test]
async fn non_streaming_mode_accumulates_tool_calls() {
    let call =
        MockResponse::new().text_delta("Let me check.").tool_call("call-1", "get_weather", json!({"city": "Paris"}));
    let (items, _) = run(vec![call], request(vec![Content::user_text("weather?")], None), false).await;
    assert_eq!(items.len(), 1, "{items:?}");
    let response = items[0].as_ref().unwrap();
    assert_eq!((response.partial, response.turn_complete), (Some(false), Some(true)));
    let calls: Vec<&FunctionCall> = response.content.as_ref().unwrap().function_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!((calls[0].id(), calls[0].name()), ("call-1", "get_weather"));
    assert_eq!(calls[0].args.as_ref().unwrap()["city"], "Paris");
}

#[tokio::test]
async fn streaming_mode_yields_partial_events_and_complete_final() {
    let answer = MockResponse::new().thinking_delta("hmm").text_delta("Hello ").text_delta("world");
    let (items, _) = run(vec![answer], request(vec![Content::user_text("hi")], None), true).await;
    let items: Vec<LlmResponse> = items.into_iter().map(Result::unwrap).collect();
    assert_eq!(items.len(), 4, "{items:#?}");
    for (fragment, expected) in items[..3].iter().zip(["", "Hello ", "world"]) {
        assert_eq!((fragment.partial, fragment.turn_complete), (Some(true), None));
        assert_eq!(text_of(fragment), expected);
    }
    assert!(items[0].content.as_ref().unwrap().parts()[0].is_thought());
    let last = &items[3];
    assert_eq!((last.partial, last.turn_complete), (Some(false), Some(true)));
    assert_eq!(text_of(last), "Hello world");
    // The aggregate is what the non-streaming call gives.
    let again = MockResponse::new().thinking_delta("hmm").text_delta("Hello ").text_delta("world");
    let (single, _) = run(vec![again], request(vec![Content::user_text("hi")], None), false).await;
    assert_eq!(single[0].as_ref().unwrap().content, last.content);
}

#[tokio::test]
async fn provider_error_propagates_correctly() {
    for stream in [false, true] {
        let refused = MockResponse::error(ProviderError::Auth("bad key".into()));
        let (items, _) = run(vec![refused], request(vec![Content::user_text("hi")], None), stream).await;
        assert_eq!(items, vec![Err("model: authentication failed: bad key".to_owned())], "stream={stream}");

        let broken = MockResponse::new().text_delta("Hel").then_error(ProviderError::Protocol("bad frame".into()));
        let (items, _) = run(vec![broken], request(vec![Content::user_text("hi")], None), stream).await;
        let last = items.last().unwrap();
        assert_eq!(last, &Err("model: protocol error: bad frame".to_owned()), "stream={stream}");
        // In streaming mode the fragment before the error was shown; nothing follows the error.
        assert_eq!(items.len(), if stream { 2 } else { 1 }, "{items:?}");
    }
}

/// The system prompt the provider saw for `system`; the contents alone are the messages.
async fn system_prompt_for(system: Option<SystemInstruction>) -> String {
    let (_, provider) =
        run(vec![MockResponse::text("ok")], request(vec![Content::user_text("hi")], system), false).await;
    let seen = &provider.requests()[0];
    // Only the contents are forwarded as messages: the instruction is not a message.
    assert_eq!(
        seen.messages,
        vec![Message::user("hi")].into_iter().map(|m| with_time(m, &seen.messages[0])).collect::<Vec<_>>()
    );
    seen.system_prompt.clone()
}

// sinew providers take the system message as the request's system prompt, which each protocol
// sends first, in its own way.
#[tokio::test]
async fn system_instruction_present_in_request() {
    let system = SystemInstruction::Text("You are a demo agent.".into());
    assert_eq!(system_prompt_for(Some(system)).await, "You are a demo agent.");
}

#[tokio::test]
async fn system_instruction_absent() {
    assert_eq!(system_prompt_for(None).await, "");
}

#[tokio::test]
async fn multi_part_system_instruction() {
    let multi = Content::new("user", vec![Part::text("Be brief."), Part::text("Answer in French.")]);
    assert_eq!(system_prompt_for(Some(SystemInstruction::Content(multi))).await, "Be brief.\nAnswer in French.");
}

/// `expected` with the timestamp of `seen`, which the adapter stamps.
fn with_time(expected: Message, seen: &Message) -> Message {
    match (expected, seen) {
        (Message::User(mut m), Message::User(s)) => {
            m.timestamp = s.timestamp;
            Message::User(m)
        }
        (other, _) => other,
    }
}

#[tokio::test]
async fn function_call_with_original_id_in_convert_messages() {
    let history = vec![
        Content::user_text("weather in Paris and Rome?"),
        Content::new(
            "model",
            vec![
                Part::function_call(FunctionCall::new(
                    Some("adk-uuid-123".into()),
                    "get_weather",
                    json_map(json!({"city": "Paris"})),
                )),
                Part::function_call(FunctionCall::new(None, "get_time", json_map(json!({"city": "Rome"})))),
            ],
        ),
        Content::new(
            "user",
            vec![
                Part::function_response(FunctionResponse::new(
                    Some("adk-uuid-123".into()),
                    "get_weather",
                    json_map(json!({"forecast": "sunny"})),
                )),
                Part::function_response(FunctionResponse::new(
                    None,
                    "get_time",
                    json_map(json!({"error": "no clock"})),
                )),
            ],
        ),
    ];
    let mut req = request(history, None);
    req.config.tools = Some(vec![weather_tool()]);
    let (_, provider) = run(vec![MockResponse::text("ok")], req, false).await;
    let seen = &provider.requests()[0];
    let Message::Assistant(assistant) = &seen.messages[1] else { panic!("{:?}", seen.messages[1]) };
    let ids: Vec<&str> = assistant.tool_calls().map(|c| c.id).collect();
    assert_eq!(ids, ["adk-uuid-123", "call_get_time"]);
    let results: Vec<(&str, &str, bool)> = seen.messages[2..]
        .iter()
        .map(|m| match m {
            Message::ToolResult(r) => (r.tool_call_id.as_str(), r.tool_name.as_str(), r.is_error),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(results, [("adk-uuid-123", "get_weather", false), ("call_get_time", "get_time", true)]);
    assert_eq!(seen.tools.len(), 1);
    assert_eq!(seen.tools[0].name, "get_weather");
    assert_eq!(seen.tools[0].parameters["required"], json!(["city"]));
}

fn json_map(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn weather_tool() -> Tool {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    Tool::functions(vec![FunctionDeclaration::new("get_weather", "Returns the weather.", Some(schema))])
}

/// A provider that keeps the cancellation token of its call and never answers.
#[derive(Default)]
struct Hanging(Mutex<Option<CancellationToken>>);

impl StreamProvider for Hanging {
    fn provider_id(&self) -> &str {
        "hanging"
    }

    fn stream(&self, _request: &StreamRequest<'_>, cancel: CancellationToken) -> BoxStream<'static, StreamEvent> {
        *self.0.lock().unwrap() = Some(cancel);
        futures::stream::pending().boxed()
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_request() {
    let provider = Arc::new(Hanging::default());
    let adapter = ModelAdapter::new(provider.clone(), "m");
    let stream = adapter.generate_content(request(vec![Content::user_text("hi")], None), true);
    let token = provider.0.lock().unwrap().clone().unwrap();
    assert!(!token.is_cancelled());
    drop(stream);
    assert!(token.is_cancelled());
}

/// What a provider answers comes back into the history losslessly: thoughts and their
/// signatures, text signatures, call ids, images, documents, audio and opaque provider blocks.
#[test]
fn answers_convert_to_parts_and_back() {
    use sinew_core::Content as Block;
    let blocks = vec![
        Block::Thinking { thinking: "hmm".into(), signature: Some("c2lnLWJ5dGVz".into()), redacted: false, id: None },
        Block::Text { text: "Hi".into(), signature: Some("AQJzaWc=".into()) },
        Block::Text { text: "plain".into(), signature: None },
        Block::ToolCall { id: "toolu_1".into(), name: "f".into(), arguments: json!({"a": 1}), signature: None },
        Block::image("iVBORw==", "image/png"),
        Block::Opaque { provider: "openai-responses".into(), data: json!({"type": "reasoning", "id": "rs_1"}) },
    ];
    // Images by URL, documents and audio as `inlineData` / `fileData` parts.
    let blocks = [blocks, sinew_testing::attachments()].concat();
    let parts: Vec<Part> = blocks.iter().cloned().filter_map(sinew_adk::model::to_part).collect();
    assert_eq!(parts.len(), blocks.len(), "every block has a part");
    assert_eq!(parts[0].thought_signature.as_deref(), Some(&b"sig-bytes"[..]));
    let back = sinew_adk::model::to_messages(vec![Content::new("model", parts.clone())], "p", "m");
    let Message::Assistant(message) = &back[0] else { panic!("{back:?}") };
    assert_eq!(message.content, blocks);
    // And through the event JSON adk-python stores.
    let stored: Content =
        serde_json::from_value(sinew_adk::to_snake_value(&Content::new("model", parts.clone())).unwrap()).unwrap();
    assert_eq!(stored.parts(), parts.as_slice());
}

/// Part metadata is the caller's JSON: an opaque-block key holding something else is no block (and
/// no panic), and metadata without it leaves the part's other content as it is.
#[test]
fn odd_part_metadata_converts_without_failing() {
    let odd = |metadata: Value| {
        let mut part = Part::default();
        part.part_metadata = serde_json::from_value(metadata).ok();
        part
    };
    let mut redacted = odd(json!({"k": 1}));
    redacted.thought = Some(true);
    redacted.thought_signature = Some(b"sig".to_vec());
    let parts = vec![odd(json!({"sinew_opaque": "x"})), odd(json!({"sinew_opaque": [1]})), redacted];
    let back = sinew_adk::model::to_messages(vec![Content::new("model", parts)], "p", "m");
    let Message::Assistant(message) = &back[0] else { panic!("{back:?}") };
    assert_eq!(
        message.content,
        [
            sinew_core::Content::Opaque { provider: String::new(), data: Value::Null },
            sinew_core::Content::Opaque { provider: String::new(), data: Value::Null },
            sinew_core::Content::Thinking {
                thinking: String::new(),
                signature: Some("c2ln".into()),
                redacted: true,
                id: None
            },
        ]
    );
}

/// The same adapter over a real provider: the Anthropic provider talking HTTP to a server that
/// streams what Anthropic streams.
#[tokio::test]
async fn over_the_anthropic_provider() {
    use sinew_provider_anthropic::{AnthropicConfig, AnthropicProvider};
    use sinew_testing::MockServer;
    use sinew_testing::wire::{WireTurn, anthropic_events, sse_response};

    let turn = WireTurn::new()
        .text("Let me check.")
        .tool_call("toolu_1", "get_weather", json!({"city": "Paris"}))
        .usage(12, 7);
    let server = MockServer::scripted([sse_response(anthropic_events(&turn), None)]).await;
    let mut config = AnthropicConfig::new("sk-ant-test");
    config.base_url = server.url();
    let adapter = ModelAdapter::new(Arc::new(AnthropicProvider::new(config)), "claude-test");
    let mut req = request(
        vec![
            Content::user_text("hi"),
            Content::new(
                "model",
                vec![Part::function_call(FunctionCall::new(None, "get_weather", json_map(json!({"city": "Rome"}))))],
            ),
            Content::new(
                "user",
                vec![Part::function_response(FunctionResponse::new(
                    None,
                    "get_weather",
                    json_map(json!({"forecast": "rain"})),
                ))],
            ),
        ],
        Some(SystemInstruction::Text("Be brief.\n\nYou are an agent.".into())),
    );
    req.model = Some("claude-test".into());
    req.config.tools = Some(vec![weather_tool()]);
    let items: Vec<_> = adapter.generate_content(req, true).collect().await;
    let items: Vec<LlmResponse> = items.into_iter().map(Result::unwrap).collect();
    let last = items.last().unwrap();
    assert!(items[..items.len() - 1].iter().all(LlmResponse::is_partial));
    assert_eq!(text_of(last), "Let me check.");
    let call = last.content.as_ref().unwrap().function_calls().next().unwrap();
    assert_eq!((call.id(), call.name()), ("toolu_1", "get_weather"));
    assert_eq!(last.usage_metadata.as_ref().unwrap().prompt_token_count, Some(12));

    let body = server.requests()[0].json();
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["system"][0]["text"], "Be brief.\n\nYou are an agent.");
    assert_eq!(body["messages"][1]["content"][0]["id"], "call_get_weather");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "call_get_weather");
    assert_eq!(body["tools"][0]["name"], "get_weather");
}

#[tokio::test]
async fn the_model_always_has_a_user_turn_to_answer() {
    let cases = [
        (vec![], sinew_adk::model::EMPTY_CONTENTS_FILLER),
        (vec![Content::user_text("hi"), Content::model_text("hello")], sinew_adk::model::CONTINUE_NUDGE),
    ];
    for (contents, added) in cases {
        let (_, provider) = run(vec![MockResponse::text("ok")], request(contents.clone(), None), false).await;
        let seen = &provider.requests()[0];
        assert_eq!(seen.messages.len(), contents.len() + 1);
        let Message::User(last) = seen.messages.last().unwrap() else { panic!("{:?}", seen.messages) };
        assert_eq!(last.content, vec![sinew_core::Content::text(added)]);
    }
    let (_, provider) = run(vec![MockResponse::text("ok")], request(vec![Content::user_text("hi")], None), false).await;
    assert_eq!(provider.requests()[0].messages.len(), 1, "a user turn last needs nothing");
}

/// `GenerateContentConfig`'s sampling fields and `toolConfig` reach the provider as request
/// options (adk-python hands them to google-genai the same way).
#[tokio::test]
async fn generation_config_becomes_request_options() {
    let mut llm_request = request(vec![Content::user_text("hi")], None);
    llm_request.config = serde_json::from_value(json!({
        "topP": 0.9, "topK": 40.0, "stopSequences": ["END"], "seed": 7,
        "presencePenalty": 0.5, "frequencyPenalty": 0.25,
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}}
    }))
    .unwrap();
    let (_, provider) = run(vec![MockResponse::text("ok")], llm_request, false).await;
    let options = &provider.requests()[0].options;
    let expected = sinew_core::RequestOptions::default()
        .with_tool_choice(sinew_core::ToolChoice::tool("lookup"))
        .with_stop_sequences(["END"])
        .with_top_p(0.9)
        .with_top_k(40)
        .with_seed(7)
        .with_presence_penalty(0.5)
        .with_frequency_penalty(0.25);
    assert_eq!(options, &expected);
    for (config, choice) in [
        (json!({"mode": "ANY"}), sinew_core::ToolChoice::Required),
        (json!({"mode": "NONE"}), sinew_core::ToolChoice::None),
        (json!({"mode": "AUTO"}), sinew_core::ToolChoice::Auto),
    ] {
        let mut llm_request = request(vec![Content::user_text("hi")], None);
        llm_request.config = serde_json::from_value(json!({"toolConfig": {"functionCallingConfig": config}})).unwrap();
        let (_, provider) = run(vec![MockResponse::text("ok")], llm_request, false).await;
        assert_eq!(provider.requests()[0].options.tool_choice, choice);
    }
    let (_, provider) = run(vec![MockResponse::text("ok")], request(vec![Content::user_text("hi")], None), false).await;
    assert_eq!(provider.requests()[0].options, sinew_core::RequestOptions::default(), "nothing set, nothing sent");
}

/// An agent's `output_schema` (ADK sets it as `responseJsonSchema`) and JSON mode become the
/// service's structured output.
#[tokio::test]
async fn a_response_schema_becomes_structured_output() {
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let mut llm_request = request(vec![Content::user_text("hi")], None);
    llm_request.config =
        serde_json::from_value(json!({"responseMimeType": "application/json", "responseJsonSchema": schema})).unwrap();
    let (_, provider) = run(vec![MockResponse::text("{\"city\": \"Paris\"}")], llm_request, false).await;
    assert_eq!(
        provider.requests()[0].options.response_format,
        sinew_core::ResponseFormat::JsonSchema { name: "response".into(), schema, strict: false }
    );
    let mut llm_request = request(vec![Content::user_text("hi")], None);
    llm_request.config = serde_json::from_value(json!({"responseMimeType": "application/json"})).unwrap();
    let (_, provider) = run(vec![MockResponse::text("{}")], llm_request, false).await;
    assert_eq!(provider.requests()[0].options.response_format, sinew_core::ResponseFormat::JsonObject);
}

/// A conversation of `rounds` tool rounds after a first question, as ADK builds its contents:
/// a user turn, then for each round a model turn calling the tool and a user turn answering.
fn conversation(first: &str, rounds: usize) -> Vec<Content> {
    edited(first, rounds, usize::MAX)
}

/// [`conversation`], its calls from round `from` on asking for other days (a session edited or
/// rewound and continued otherwise).
fn edited(first: &str, rounds: usize, from: usize) -> Vec<Content> {
    let mut contents = vec![Content::user_text(first)];
    for i in 0..rounds {
        let id = format!("call-{i}");
        let day = if i >= from { i + 100 } else { i };
        contents.push(Content::new(
            "model",
            vec![Part::function_call(FunctionCall::new(
                Some(id.clone()),
                "get_weather",
                json_map(json!({"day": day})),
            ))],
        ));
        contents.push(Content::new(
            "user",
            vec![Part::function_response(FunctionResponse::new(Some(id), "get_weather", json_map(json!({"rain": i}))))],
        ));
    }
    contents
}

/// What each request the adapter made said was unchanged since the previous request of its
/// conversation.
async fn claims(adapter: &ModelAdapter, provider: &MockProvider, requests: Vec<Vec<Content>>) -> Vec<Option<usize>> {
    for contents in requests {
        let items: Vec<_> = adapter.generate_content(request(contents, None), false).collect().await;
        assert!(items.iter().all(Result::is_ok), "{items:?}");
    }
    provider.requests().into_iter().map(|r| r.history_unchanged).collect()
}

/// ADK rebuilds its contents on every call; the adapter finds what a request shares with the
/// previous one of its conversation (the provider then writes only what follows): the messages
/// of a growing conversation, none of a rewritten one, each conversation its own when they
/// interleave, and less after a history was cut back (rewound).
#[tokio::test]
async fn each_request_claims_what_it_shares_with_its_conversations_last() {
    let answers = || (0..9).map(|_| MockResponse::new().text_delta("ok"));
    let provider = Arc::new(MockProvider::new(answers()));
    let adapter = ModelAdapter::new(provider.clone(), "mock-model");
    let seen = claims(
        &adapter,
        &provider,
        vec![
            conversation("a", 0),
            conversation("a", 1),
            conversation("b", 0),
            conversation("a", 3),
            conversation("b", 2),
            // Compaction rewrote the first message.
            conversation("a'", 3),
            // Rewound by a round, then by another.
            conversation("a", 2),
            conversation("a", 1),
        ],
    )
    .await;
    // Messages: one for the question, two per round; the nudge after a model turn never comes.
    assert_eq!(seen, [Some(0), Some(1), Some(0), Some(3), Some(1), Some(0), Some(5), Some(3)]);
}

/// With no history cache, requests carry none; with room for one conversation, two that
/// interleave push each other out.
#[tokio::test]
async fn the_history_cache_has_the_room_it_is_given() {
    let answers = || (0..4).map(|_| MockResponse::new().text_delta("ok"));
    let provider = Arc::new(MockProvider::new(answers()));
    let adapter = ModelAdapter::new(provider.clone(), "mock-model").with_history_cache(0);
    let seen = claims(&adapter, &provider, vec![conversation("a", 0), conversation("a", 1)]).await;
    assert_eq!(seen, [None, None]);

    let provider = Arc::new(MockProvider::new(answers()));
    let adapter = ModelAdapter::new(provider.clone(), "mock-model").with_history_cache(1);
    let requests = vec![conversation("a", 0), conversation("b", 0), conversation("a", 1), conversation("a", 2)];
    let seen = claims(&adapter, &provider, requests).await;
    assert_eq!(seen, [Some(0), Some(0), Some(0), Some(3)]);
}

/// A request sharing less than half of a kept conversation (an opening prompt other sessions
/// share too) starts a conversation of its own rather than taking that one's place.
#[tokio::test]
async fn a_request_that_only_starts_alike_takes_no_place() {
    let answers = (0..3).map(|_| MockResponse::new().text_delta("ok"));
    let provider = Arc::new(MockProvider::new(answers));
    let adapter = ModelAdapter::new(provider.clone(), "mock-model");
    let requests = vec![conversation("a", 3), edited("a", 3, 0), conversation("a", 4)];
    assert_eq!(claims(&adapter, &provider, requests).await, [Some(0), Some(0), Some(7)]);
}

/// Over a real provider the bytes are what they would be without the cache: the Anthropic
/// provider, talking HTTP, writes the same body for every request of two interleaved
/// conversations, one of them rewritten, cut back, and edited in a request the provider refuses
/// before writing it (an option Anthropic lacks) and then sent again, with and without the
/// adapter's cache.
#[tokio::test]
async fn a_resumed_body_is_the_body_written_whole() {
    use sinew_provider_anthropic::{AnthropicConfig, AnthropicProvider};
    use sinew_testing::MockServer;
    use sinew_testing::wire::{WireTurn, anthropic_events, sse_response};

    // Each request, and whether it asks for a seed, which Anthropic refuses.
    let requests = [
        (conversation("a", 0), false),
        (conversation("a", 1), false),
        (conversation("b", 2), false),
        (conversation("a", 4), false),
        (edited("a", 4, 2), true),
        (edited("a", 5, 2), false),
        (conversation("b", 3), false),
        (conversation("a'", 4), false),
        (conversation("a", 2), false),
        (conversation("a", 5), false),
    ];
    let sent = requests.iter().filter(|(_, refused)| !refused).count();
    let mut bodies = Vec::new();
    for conversations in [sinew_adk::model::DEFAULT_CONVERSATIONS, 0] {
        let answer = || sse_response(anthropic_events(&WireTurn::new().text("ok").usage(1, 1)), None);
        let server = MockServer::scripted((0..sent).map(|_| answer())).await;
        let mut config = AnthropicConfig::new("sk-ant-test");
        config.base_url = server.url();
        let adapter = ModelAdapter::new(Arc::new(AnthropicProvider::new(config)), "claude-test")
            .with_history_cache(conversations);
        for (contents, refused) in &requests {
            let mut request = request(contents.clone(), None);
            request.config.seed = refused.then_some(1);
            let items: Vec<_> = adapter.generate_content(request, false).collect().await;
            assert_eq!(items.iter().all(Result::is_ok), !refused, "{items:?}");
        }
        bodies.push(server.requests().into_iter().map(|r| String::from_utf8(r.body).unwrap()).collect::<Vec<_>>());
    }
    assert_eq!(bodies[0].len(), sent);
    for (resumed, whole) in bodies[0].iter().zip(&bodies[1]) {
        assert_eq!(resumed, whole);
    }
}
