//! Every sample adk-python wrote reads into our types and writes back equal (modulo key order), in
//! both the camelCase REST form and the snake_case storage form.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sinew_adk::{Content, Event, LlmRequest, Part, RunAgentRequest, Session, to_snake_value};

use crate::data;

/// `value` read as `T` and written back in the camelCase form is `value` again.
fn round_trip<T: DeserializeOwned + Serialize>(value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{e}\n{value:#}"));
    assert_eq!(&serde_json::to_value(&typed).unwrap(), value, "round trip changed the JSON");
    typed
}

fn sse_frames(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| l.strip_prefix("data: ")).map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn rest_samples_round_trip() {
    let events = |file: &str| serde_json::from_str::<Vec<Value>>(&data(file)).unwrap();
    let mut count = 0;
    for file in [
        "samples/02_run_weather.json",
        "samples/03_run_confirmation_request.json",
        "samples/04_run_confirmation_response.json",
    ] {
        for event in events(file) {
            round_trip::<Event>(&event);
            count += 1;
        }
    }
    for file in ["samples/05_run_sse_streaming.txt", "samples/06_run_sse_nonstreaming.txt"] {
        for frame in sse_frames(&data(file)) {
            round_trip::<Event>(&frame);
            count += 1;
        }
    }
    let transfers: Value = serde_json::from_str(&data("samples/16_transfer_events.json")).unwrap();
    for event in transfers["transfer_ok"].as_array().unwrap() {
        round_trip::<Event>(event);
        count += 1;
    }
    assert_eq!(count, 3 + 3 + 2 + 5 + 1 + transfers["transfer_ok"].as_array().unwrap().len());

    let session: Session = round_trip(&serde_json::from_str(&data("samples/07_get_session.json")).unwrap());
    assert_eq!(session.events.len(), 16);
    round_trip::<Session>(&serde_json::from_str(&data("samples/01_create_session.json")).unwrap());
    round_trip::<Vec<Session>>(&serde_json::from_str(&data("samples/08_list_sessions.json")).unwrap());
    // The client left `streaming` out; adk-python writes its default, as we do.
    let mut body: Value = serde_json::from_str(&data("samples/04_request_confirmation_response.body.json")).unwrap();
    body["streaming"] = json!(false);
    let run: RunAgentRequest = round_trip(&body);
    assert_eq!(run.new_message.unwrap().function_responses().next().unwrap().name(), "adk_request_confirmation");
}

#[test]
fn the_all_actions_event_reads_from_either_form_and_writes_both() {
    let camel: Value = serde_json::from_str(&data("samples/11_event_all_actions.json")).unwrap();
    let snake: Value = serde_json::from_str(&data("samples/11_event_all_actions.storage.json")).unwrap();
    let from_camel: Event = round_trip(&camel);
    let from_snake: Event = serde_json::from_value(snake.clone()).unwrap();
    assert_eq!(from_camel, from_snake);
    assert_eq!(to_snake_value(&from_camel).unwrap(), snake);
    assert_eq!(from_camel.content.as_ref().unwrap().parts()[0].thought_signature.as_deref(), Some(&b"\x01\x02sig"[..]));
}

#[test]
fn part_kinds_round_trip() {
    let kinds: Value = serde_json::from_str(&data("samples/12_part_kinds.json")).unwrap();
    for (kind, part) in kinds.as_object().unwrap() {
        let typed: Part = round_trip(part);
        assert_eq!(to_snake_value(&typed).unwrap().as_object().unwrap().keys().next().unwrap(), kind);
    }
}

#[test]
fn stored_event_rows_round_trip_in_the_snake_form() {
    let mut rows = 0;
    for file in
        ["samples/09_sqlite_session_service_schema_and_rows.txt", "samples/17_database_session_service_sqlite.txt"]
    {
        for line in data(file).lines().filter(|l| l.starts_with("   [")) {
            let row: Vec<Value> = serde_json::from_str(line.trim()).unwrap();
            let Some(event_data) = row.last().and_then(Value::as_str).filter(|s| s.contains("\"invocation_id\""))
            else {
                continue;
            };
            // 09 shows the first 300 characters of a row; only whole rows are JSON.
            let Ok(stored) = serde_json::from_str::<Value>(event_data) else { continue };
            let event: Event = serde_json::from_value(stored.clone()).unwrap();
            assert_eq!(to_snake_value(&event).unwrap(), stored);
            rows += 1;
        }
    }
    assert!(rows >= 2, "{rows} stored events read");
}

#[test]
fn llm_requests_round_trip_in_adk_python_s_dump_form() {
    let mut requests = 0;
    for line in data("samples/10_llm_requests_seen_by_BaseLlm.jsonl").lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let request: LlmRequest = serde_json::from_value(row["llm_request"].clone()).unwrap();
        assert_eq!(request.to_json(), row["llm_request"]);
        assert!(request.system_instruction().unwrap().ends_with("The description about you is \"demo\"."));
        requests += 1;
    }
    assert_eq!(requests, 6);
}

/// adk-python rejects these, and so do we.
#[test]
fn what_adk_python_forbids_is_rejected() {
    let event = |extra: Value| {
        let mut e = json!({"author": "user", "invocationId": "e-1", "id": "x", "timestamp": 1.5});
        e.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value::<Event>(e)
    };
    let rejected = [
        json!({"content": {"parts": [{"name": "f", "args": {}, "id": "1"}]}}),
        json!({"content": {"parts": [{"text": "a"}], "role": "user", "extra": 1}}),
        json!({"content": {"parts": [{"functionCall": {"name": "f", "arguments": {}}}]}}),
        json!({"actions": {"toolConfirmation": {}}}),
        json!({"actions": {"requestedToolConfirmations": {"c": {"hint": "h", "approved": true}}}}),
        json!({"usageMetadata": {"promptTokens": 1}}),
        json!({"timestamp": "2026-11-21T09:44:15Z"}),
        json!({"content": {"parts": [{"inlineData": {"data": "not base64!"}}]}}),
    ];
    for extra in rejected {
        assert!(event(extra.clone()).is_err(), "accepted {extra}");
    }
    // The event itself ignores unknown keys, as `extra="ignore"` does.
    assert_eq!(event(json!({"somethingNew": 1})).unwrap().author, "user");
    assert!(serde_json::from_value::<Session>(json!({"id": "s", "appName": "a", "userId": "u", "x": 1})).is_err());
}

#[test]
fn snake_case_input_comes_out_camel_case() {
    let event: Event = serde_json::from_value(json!({
        "author": "a", "invocation_id": "e-1", "id": "x", "timestamp": 2.0,
        "content": {"role": "model", "parts": [{"function_call": {"name": "f", "args": {"user_key": 1}}},
                                               {"inline_data": {"mime_type": "image/png", "data": "+//+"}}]},
        "grounding_metadata": {"web_search_queries": ["q"]},
        "long_running_tool_ids": ["b", "a"],
        "actions": {"state_delta": {"snake_key": 1}}
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&event).unwrap(),
        json!({
            "author": "a", "invocationId": "e-1", "id": "x", "timestamp": 2.0,
            "content": {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"user_key": 1}}},
                                                   {"inlineData": {"mimeType": "image/png", "data": "-__-"}}]},
            "groundingMetadata": {"webSearchQueries": ["q"]},
            "longRunningToolIds": ["a", "b"],
            "nodeInfo": {"path": ""},
            "actions": {"stateDelta": {"snake_key": 1}, "artifactDelta": {}, "requestedAuthConfigs": {},
                        "requestedToolConfirmations": {}}
        })
    );
}

#[test]
fn content_helpers_read_the_parts() {
    let content = Content::new("model", vec![Part::thought("hmm", None), Part::text("Answer "), Part::text("is 42.")]);
    assert_eq!(content.text(), "Answer is 42.");
    assert_eq!(content.role(), "model");
}

/// Ids, authors and node paths are shared strings: they read, compare and serialize as strings.
#[test]
fn shared_strings_behave_as_strings() {
    let event = Event::user("e-1", Content::user_text("hi"));
    assert_eq!(event.author, "user");
    assert!("user" == event.author);
    assert_eq!(event.invocation_id.as_str(), "e-1");
    assert_eq!(format!("{}/{:?}", event.invocation_id, event.author), "e-1/\"user\"");
    let copy = event.clone();
    assert_eq!(copy.id, event.id);
    let wire = serde_json::to_value(&event).unwrap();
    assert_eq!(wire["author"], "user");
    assert_eq!(serde_json::from_value::<Event>(wire).unwrap(), event);
    let owned: String = event.author.clone().into();
    assert_eq!(owned, "user");
    // A role is borrowed for the usual two and owned for anything else.
    assert!(matches!(Content::model_text("x").role, Some(std::borrow::Cow::Borrowed("model"))));
    let read: Content = serde_json::from_value(json!({"role": "function", "parts": []})).unwrap();
    assert_eq!(read.role(), "function");
}

/// Times read back exactly as written: adk-python prints the shortest repr of a float, and a
/// best-effort float parser is off by one ulp on some of them, which makes a session's
/// `lastUpdateTime` unequal to adk-python's (sinew-adk turns on serde_json's `float_roundtrip`).
#[test]
fn times_read_back_to_the_same_float() {
    let mut rng = fastrand::Rng::with_seed(17);
    for _ in 0..20_000 {
        let time = 1_795_000_000.0 + rng.f64() * 1_000_000.0;
        let text = format!(r#"{{"invocationId": "e", "author": "user", "timestamp": {time}}}"#);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["timestamp"].as_f64(), Some(time), "{time}");
        let event: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(event.timestamp, time);
    }
}
