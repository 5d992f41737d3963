//! Typed tools in a run: arguments checked before the function, outputs and errors as results.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sinew_agent::typed::{SchemaValidator, TypedTool, schema_for};
use sinew_core::{AgentTool, CancellationToken, ToolContext, ToolError};
use sinew_testing::MockResponse;
use sinew_testing::schema::{Order, order_schema, sample_order};

use crate::{agent, tool_result_texts};

/// Looks a city up.
#[derive(Deserialize, JsonSchema)]
struct Lookup {
    /// The city's name.
    city: String,
    /// How many results, at most.
    limit: Option<u8>,
}

#[derive(Serialize)]
struct Found {
    city: String,
    hits: u8,
}

#[tokio::test]
async fn arguments_that_do_not_fit_never_reach_the_function_and_the_error_names_the_field() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let lookup = TypedTool::new("lookup", "Looks a city up.", move |args: Lookup| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move {
            match args.city.as_str() {
                "Atlantis" => Err(format!("{} is not on any map", args.city)),
                _ => Ok(Found { city: args.city, hits: args.limit.unwrap_or(1) }),
            }
        }
    });
    let shout = TypedTool::new("shout", "Shouts.", |args: Lookup| async move {
        Ok::<_, std::convert::Infallible>(args.city.to_uppercase())
    });
    let (agent, mock) = agent([
        MockResponse::new()
            .tool_call("1", "lookup", json!({"city": 5}))
            .tool_call("2", "lookup", json!({"limit": 300}))
            .tool_call("3", "lookup", json!({"city": "Atlantis"}))
            .tool_call("4", "lookup", json!({"city": "Oslo", "limit": 2}))
            .tool_call("5", "shout", json!({"city": "Oslo"})),
        MockResponse::text("done"),
    ]);
    let mut agent = agent.with_tool(lookup).with_tool(shout);
    let (events, _) = agent.prompt("q").collect().await;
    assert_eq!(
        tool_result_texts(&events),
        [
            ("1".into(), "invalid arguments: at /city: 5 is not of type \"string\"".into(), true),
            (
                "2".into(),
                "invalid arguments: at /: \"city\" is a required property; at /limit: 300 is greater than the maximum of 255"
                    .into(),
                true
            ),
            ("3".into(), "Atlantis is not on any map".into(), true),
            ("4".into(), "{\"city\":\"Oslo\",\"hits\":2}".into(), false),
            ("5".into(), "OSLO".into(), false),
        ]
    );
    assert_eq!(ran.load(Ordering::SeqCst), 2, "only the calls that fit ran");
    let offered = &mock.requests()[0].tools;
    assert_eq!(offered[0].parameters, schema_for::<Lookup>());
    assert_eq!(offered[0].parameters["properties"]["city"]["description"], "The city's name.");
}

#[tokio::test]
async fn the_result_carries_the_output_as_details_and_cancellation_ends_a_call() {
    let tool =
        TypedTool::new("order", "Reads an order.", |order: Order| async move { Ok::<_, String>(order.lines.len()) });
    assert_eq!(tool.parameters_schema(), order_schema());
    let ctx = ToolContext::new("c", "order", CancellationToken::new());
    let result = tool.execute(sample_order(), ctx).await.unwrap();
    assert_eq!((sinew_core::join_text(&result.content, ""), result.details), ("1".to_owned(), json!(1)));

    // An output that is not JSON (a map keyed by tuples) is the call's error, not a panic.
    let odd = TypedTool::new("odd", "Maps pairs.", |_: Lookup| async move {
        Ok::<_, String>(std::collections::HashMap::from([((1, 2), 3)]))
    });
    let error = odd.execute(json!({"city": "x"}), ToolContext::new("c", "odd", CancellationToken::new())).await;
    assert_eq!(error.unwrap_err().to_string(), "the result is not JSON: key must be a string");

    let slow = TypedTool::with_context("slow", "Waits.", |_: Lookup, ctx: ToolContext| async move {
        ctx.progress("waiting");
        std::future::pending::<Result<(), String>>().await
    });
    let cancel = CancellationToken::new();
    cancel.cancel();
    let call = slow.execute(json!({"city": "x"}), ToolContext::new("c", "slow", cancel));
    let error =
        tokio::time::timeout(std::time::Duration::from_secs(5), call).await.expect("cancellation ends it").unwrap_err();
    assert!(matches!(error, ToolError::Cancelled), "{error:?}");
}

#[test]
fn validation_reports_a_bounded_list_of_problems() {
    let validator = SchemaValidator::new(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
        "required": ["a", "b", "c", "d", "e", "f", "g"],
    }))
    .unwrap();
    let problems = validator.check(&json!({"a": "x", "b": "x", "c": "x"})).unwrap_err();
    assert_eq!(problems.matches("; ").count(), 5, "five problems and a count: {problems}");
    assert!(problems.ends_with("; and 2 more"), "{problems}");
    assert_eq!(validator.check(&json!({"a": 1, "b": 2, "c": 3, "d": 0, "e": 0, "f": 0, "g": 0})), Ok(()));
    // A problem that quotes a huge value is cut.
    let huge = json!({"a": "x".repeat(10_000), "b": 1, "c": 1, "d": 0, "e": 0, "f": 0, "g": 0});
    let problem = validator.check(&huge).unwrap_err();
    assert!(problem.len() <= 303 && problem.ends_with('…'), "{} bytes", problem.len());
}
