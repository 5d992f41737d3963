//! Structured answers: `Extractor` over `MockProvider`, in native and tool mode.

use serde_json::{Value, json};
use sinew_agent::Error;
use sinew_agent::extract::{ExtractMode, Extractor};
use sinew_core::{EndReason, ProviderError, ResponseFormat, ToolChoice};
use sinew_testing::MockResponse;
use sinew_testing::schema::{Order, Status, order_schema, sample_order};

use crate::{agent, user_texts};

fn order() -> Order {
    serde_json::from_value(sample_order()).unwrap()
}

#[tokio::test]
async fn a_valid_answer_is_read_at_once_and_the_schema_goes_as_the_response_format() {
    let (agent, mock) = agent([MockResponse::text(sample_order().to_string()).usage(10, 5)]);
    let mut extractor = Extractor::<Order>::new(agent);
    let extracted = extractor.extract("Read this order.").await.unwrap();
    assert_eq!((extracted.value, extracted.attempts, extracted.usage.output), (order(), 1, 5));
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].options.response_format,
        ResponseFormat::JsonSchema { name: "Order".into(), schema: order_schema(), strict: true }
    );
}

#[tokio::test]
async fn invalid_json_is_sent_back_and_the_next_answer_counts() {
    let fenced = format!("```json\n{}\n```", sample_order());
    let (agent, mock) = agent([MockResponse::text("{\"id\": 7,"), MockResponse::text(fenced)]);
    let mut extractor = Extractor::<Order>::new(agent);
    let extracted = extractor.extract("Read this order.").await.unwrap();
    assert_eq!((extracted.value, extracted.attempts), (order(), 2));
    let correction = user_texts(&mock.requests()[1]).pop().unwrap();
    assert!(correction.starts_with("That answer is not valid: it is not JSON (EOF while parsing"), "{correction}");
    sinew_testing::assert_history_valid(extractor.agent().messages());
}

#[tokio::test]
async fn a_schema_violation_is_sent_back_naming_the_field() {
    let mut wrong = sample_order();
    wrong["lines"][0]["quantity"] = json!(-1);
    wrong["status"] = json!("lost");
    let (agent, mock) = agent([MockResponse::text(wrong.to_string()), MockResponse::text(sample_order().to_string())]);
    let mut extractor = Extractor::<Order>::new(agent);
    let extracted = extractor.extract("Read this order.").await.unwrap();
    assert_eq!((extracted.value.status, extracted.attempts), (Status::Shipped, 2));
    let correction = user_texts(&mock.requests()[1]).pop().unwrap();
    assert!(correction.contains("it does not fit the schema: "), "{correction}");
    assert!(correction.contains("at /lines/0/quantity: -1 is less than the minimum of 0"), "{correction}");
    assert!(correction.contains("at /status: "), "{correction}");
}

#[tokio::test]
async fn retries_are_bounded_and_the_last_answer_is_kept() {
    let (agent, mock) = agent([
        MockResponse::text("no"),
        MockResponse::text("still no"),
        MockResponse::text("[1]"),
        MockResponse::text("{}"),
    ]);
    let mut extractor = Extractor::<Order>::new(agent).with_max_retries(2);
    let error = extractor.extract("Read this order.").await.unwrap_err();
    let Error::InvalidAnswer { attempts, problem, answer } = &error else { panic!("{error:?}") };
    assert_eq!((*attempts, answer.as_str()), (3, "[1]"));
    assert!(problem.starts_with("it does not fit the schema: at /: [1] is not of type \"object\""), "{problem}");
    assert_eq!(mock.calls(), 3, "no fourth call");
    assert_eq!(mock.remaining(), 1);
}

#[tokio::test]
async fn a_failed_run_is_an_error_not_a_retry() {
    let (agent, mock) = agent([MockResponse::error(ProviderError::Auth("bad key".into()))]);
    let mut extractor = Extractor::<Order>::new(agent);
    let error = extractor.extract("Read this order.").await.unwrap_err();
    assert!(
        matches!(&error, Error::NoAnswer { reason: EndReason::Failed, error: Some(e) } if e.contains("bad key")),
        "{error:?}"
    );
    assert_eq!(mock.calls(), 1);
}

#[tokio::test]
async fn an_explicit_schema_reads_into_a_json_value_and_a_broken_one_is_refused() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
    let (counting, _mock) = agent([MockResponse::text("{\"n\": \"x\"}"), MockResponse::text("{\"n\": 3}")]);
    let mut extractor = Extractor::<Value>::with_schema(counting, "count", schema.clone()).unwrap();
    assert_eq!(extractor.schema(), &schema);
    assert_eq!(extractor.extract("Count.").await.unwrap().value, json!({"n": 3}));

    let (idle, _mock) = agent([]);
    let broken = Extractor::<Value>::with_schema(idle, "count", json!({"type": "no such type"})).unwrap_err();
    assert!(matches!(&broken, Error::InvalidSchema(_)), "{broken:?}");
    assert!(broken.to_string().starts_with("invalid JSON Schema: "), "{broken}");
}

#[tokio::test]
async fn tool_mode_forces_the_submit_tool_and_ends_the_run_once_an_answer_fits() {
    let mut wrong = sample_order();
    wrong["id"] = json!("seven");
    let (agent, mock) = agent([
        MockResponse::new().tool_call("c1", "Order", wrong),
        MockResponse::new().tool_call("c2", "Order", sample_order()),
        MockResponse::text("never asked for"),
    ]);
    let mut extractor = Extractor::<Order>::new(agent).with_mode(ExtractMode::Tool);
    let extracted = extractor.extract("Read this order.").await.unwrap();
    assert_eq!((extracted.value, extracted.attempts), (order(), 2));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the run ends after the valid call");
    assert_eq!(requests[0].options.tool_choice, ToolChoice::tool("Order"));
    assert_eq!(requests[0].options.response_format, ResponseFormat::Text);
    assert_eq!(requests[0].tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Order"]);
    assert_eq!(requests[0].tools[0].parameters, order_schema());
    // The refused call was answered with what is wrong, so the model could correct it.
    let refusal = requests[1].messages.iter().rev().find_map(|m| match m {
        sinew_core::Message::ToolResult(r) => Some((sinew_core::join_text(&r.content, ""), r.is_error)),
        _ => None,
    });
    assert_eq!(refusal, Some(("invalid arguments: at /id: \"seven\" is not of type \"integer\"".into(), true)));
    sinew_testing::assert_history_valid(extractor.agent().messages());
}

#[tokio::test]
async fn tool_mode_asks_again_when_the_tool_is_not_called_and_bounds_the_calls() {
    let (agent, mock) = agent([
        MockResponse::text("Here is the order: id 7."),
        MockResponse::new().tool_call("c1", "Order", json!({})),
        MockResponse::new().tool_call("c2", "Order", json!({"id": 1})),
        MockResponse::text("not asked for"),
    ]);
    let mut extractor = Extractor::<Order>::new(agent).with_mode(ExtractMode::Tool).with_max_retries(2);
    let error = extractor.extract("Read this order.").await.unwrap_err();
    let Error::InvalidAnswer { attempts, answer, .. } = &error else { panic!("{error:?}") };
    assert_eq!((*attempts, answer.as_str()), (3, "{\"id\":1}"));
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "the third answer was the last attempt; the run stopped there");
    assert_eq!(
        user_texts(&requests[1]).pop().unwrap(),
        "That answer is not valid: `Order` was not called. Call `Order` again with arguments that fit."
    );
    sinew_testing::assert_history_valid(extractor.agent().messages());
}

#[tokio::test]
async fn a_schema_that_is_not_an_object_is_asked_for_wrapped() {
    let (agent, mock) = agent([MockResponse::text("{\"value\": [3, 1, 2]}")]);
    let mut extractor = Extractor::<Vec<u32>>::new(agent);
    assert_eq!(extractor.extract("Three numbers.").await.unwrap().value, [3, 1, 2]);
    let ResponseFormat::JsonSchema { schema, .. } = &mock.requests()[0].options.response_format else { panic!() };
    assert_eq!(
        schema,
        &json!({
            "type": "object",
            "properties": {"value": {"title": "Array_of_uint32", "type": "array", "items": {"type": "integer", "format": "uint32", "minimum": 0}}},
            "required": ["value"],
            "additionalProperties": false,
        })
    );
}

#[tokio::test]
async fn tool_mode_leaves_the_agent_usable_and_its_own_hook_in_charge() {
    let (agent, mock) = agent([
        MockResponse::new().tool_call("c1", "Order", sample_order()),
        MockResponse::text("Between extractions."),
    ]);
    // The agent's own hook: no turn after a prompt that says STOP.
    let obey = std::sync::Arc::new(|history: &[sinew_core::AgentMessage], _turn: usize| {
        let last_prompt = history.iter().rev().find_map(|m| match m.as_llm() {
            Some(sinew_core::Message::User(user)) => Some(sinew_core::join_text(&user.content, "")),
            _ => None,
        });
        !last_prompt.is_some_and(|text| text.contains("STOP"))
    });
    let mut hooks = sinew_agent::Hooks::default();
    hooks.before_turn = Some(obey);
    let mut extractor = Extractor::<Order>::new(agent.with_hooks(hooks)).with_mode(ExtractMode::Tool);
    extractor.extract("Read this order.").await.unwrap();
    // The agent's own prompt runs (the extractor's hook is idle between extractions).
    let outcome = extractor.agent_mut().prompt("And now?").finish().await;
    assert_eq!((outcome.reason, outcome.final_text().as_deref()), (EndReason::Completed, Some("Between extractions.")));

    // The agent's own hook still stops a run, and the extraction says so rather than retrying.
    let error = extractor.extract("STOP before you start.").await.unwrap_err();
    assert!(matches!(error, Error::NoAnswer { reason: EndReason::Stopped, error: None }), "{error:?}");
    assert_eq!(mock.calls(), 2, "the stopped run asked the model nothing");

    // Back to native mode: the submit tool, the forced choice and the extractor's hook are gone.
    let extractor = extractor.with_mode(ExtractMode::Native);
    assert!(extractor.agent().tools().is_empty());
    let options = &extractor.agent().config().request_options;
    assert_eq!(options.tool_choice, ToolChoice::Auto);
    assert!(matches!(options.response_format, ResponseFormat::JsonSchema { .. }));
}

#[tokio::test]
async fn no_retry_means_one_answer() {
    let (agent, mock) = agent([MockResponse::text("nope"), MockResponse::text(sample_order().to_string())]);
    let error = Extractor::<Order>::new(agent).with_max_retries(0).extract("Read.").await.unwrap_err();
    assert!(matches!(error, Error::InvalidAnswer { attempts: 1, .. }), "{error:?}");
    assert_eq!(mock.calls(), 1);
}

#[tokio::test]
async fn auto_mode_picks_a_forced_tool_for_a_model_without_native_structured_output() {
    let (agent, mock) = agent([
        MockResponse::new().tool_call("c1", "Order", sample_order()),
        MockResponse::text(sample_order().to_string()),
    ]);
    let mut extractor = Extractor::<Order>::new(agent.with_model("claude-3-5-haiku-latest"));
    assert_eq!(extractor.extract("Read.").await.unwrap().value, order());
    // The same extractor once the agent moved to a model with structured output.
    extractor.agent_mut().set_model("claude-sonnet-4-5");
    assert_eq!(extractor.extract("Read again.").await.unwrap().value, order());
    let requests = mock.requests();
    assert_eq!(
        (requests[0].options.tool_choice.clone(), requests[0].options.response_format.clone()),
        (ToolChoice::tool("Order"), ResponseFormat::Text)
    );
    assert_eq!(requests[1].options.tool_choice, ToolChoice::Auto);
    assert!(matches!(requests[1].options.response_format, ResponseFormat::JsonSchema { .. }));
    assert!(requests[1].tools.is_empty(), "the submit tool is gone");
}

#[tokio::test]
async fn calls_past_the_last_attempt_are_refused_and_a_second_answer_is_not_taken() {
    // No retry left: of two calls in one answer, the second is refused without being judged.
    let (exhausted, _mock) =
        agent([MockResponse::new().tool_call("c1", "Order", json!({})).tool_call("c2", "Order", sample_order())]);
    let mut extractor = Extractor::<Order>::new(exhausted).with_mode(ExtractMode::Tool).with_max_retries(0);
    assert!(matches!(extractor.extract("Read.").await, Err(Error::InvalidAnswer { attempts: 1, .. })));
    let results: Vec<(String, bool)> = extractor
        .agent()
        .messages()
        .iter()
        .filter_map(sinew_core::AgentMessage::as_tool_result)
        .map(|r| (sinew_core::join_text(&r.content, ""), r.is_error))
        .collect();
    assert_eq!(results[1], ("No attempt is left for this answer.".to_owned(), true));

    // Once an answer fits, a second call in the same answer is told so.
    let (twice, _mock) =
        agent([MockResponse::new().tool_call("c1", "Order", sample_order()).tool_call("c2", "Order", sample_order())]);
    let mut extractor = Extractor::<Order>::new(twice).with_mode(ExtractMode::Tool);
    assert_eq!(extractor.extract("Read.").await.unwrap().attempts, 1);
    let last = extractor.agent().messages().iter().rev().find_map(sinew_core::AgentMessage::as_tool_result).unwrap();
    assert_eq!(sinew_core::join_text(&last.content, ""), "An answer was already received.");
}
