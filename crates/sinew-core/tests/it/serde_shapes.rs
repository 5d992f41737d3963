//! Every message and event variant serializes to its documented shape and round-trips losslessly.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sinew_core::*;

fn check<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(value: T, expected: Value) {
    let json = serde_json::to_value(&value).unwrap();
    assert_eq!(json, expected);
    let back: T = serde_json::from_value(json).unwrap();
    assert_eq!(back, value);
}

fn assistant() -> AssistantMessage {
    AssistantMessage {
        content: vec![
            Content::Thinking { thinking: "hmm".into(), signature: Some("sig".into()), redacted: false, id: None },
            Content::Thinking { thinking: String::new(), signature: Some("ENC".into()), redacted: true, id: None },
            Content::Thinking {
                thinking: "summary".into(),
                signature: Some("encrypted".into()),
                redacted: false,
                id: Some("rs_1".into()),
            },
            Content::Text { text: "hi".into(), signature: Some("gemini-sig".into()) },
            Content::ToolCall { id: "c1".into(), name: "echo".into(), arguments: json!({"a": 1}), signature: None },
            Content::Opaque { provider: "anthropic".into(), data: json!({"type": "server_tool_use", "id": "s1"}) },
        ],
        stop_reason: StopReason::ToolUse,
        model: "m".into(),
        provider: "mock".into(),
        usage: Usage::new(1, 2).with_cache(3, 4).with_total(10),
        timestamp: 7,
        error_message: None,
    }
}

#[test]
fn content_is_tagged_by_type() {
    check(Content::text("a"), json!({"type": "text", "text": "a"}));
    check(Content::image("AAA", "image/png"), json!({"type": "image", "data": "AAA", "mimeType": "image/png"}));
    check(Content::thinking("t"), json!({"type": "thinking", "thinking": "t"}));
    check(
        Content::tool_call("1", "f", json!({})),
        json!({"type": "toolCall", "id": "1", "name": "f", "arguments": {}}),
    );
    check(
        Content::Opaque { provider: "p".into(), data: json!([1]) },
        json!({"type": "opaque", "provider": "p", "data": [1]}),
    );
}

#[test]
fn stop_reasons_are_camel_case() {
    for (reason, name) in [
        (StopReason::Stop, "stop"),
        (StopReason::Length, "length"),
        (StopReason::ToolUse, "toolUse"),
        (StopReason::Error, "error"),
        (StopReason::Aborted, "aborted"),
    ] {
        check(reason, json!(name));
    }
}

#[test]
fn messages_carry_their_role() {
    check(
        Message::User(UserMessage { content: vec![Content::text("q")], timestamp: 1 }),
        json!({"role": "user", "content": [{"type": "text", "text": "q"}], "timestamp": 1}),
    );
    let tool_result = ToolResultMessage {
        tool_call_id: "c1".into(),
        tool_name: "echo".into(),
        content: vec![Content::text("r")],
        is_error: true,
        timestamp: 2,
        details: json!({"exit_code": 1}),
    };
    check(
        Message::ToolResult(tool_result),
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "echo",
               "content": [{"type": "text", "text": "r"}], "isError": true, "timestamp": 2,
               "details": {"exit_code": 1}}),
    );
    let json = serde_json::to_value(Message::Assistant(assistant())).unwrap();
    assert_eq!(json["role"], "assistant");
    assert_eq!(json["stopReason"], "toolUse");
    assert_eq!(json["usage"], json!({"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "totalTokens": 10}));
}

#[test]
fn extension_messages_round_trip() {
    check(
        AgentMessage::Extension(ExtensionMessage { kind: "note".into(), data: json!({"x": [1, 2]}) }),
        json!({"role": "extension", "kind": "note", "data": {"x": [1, 2]}}),
    );
}

#[test]
fn a_history_with_every_message_kind_round_trips() {
    let history = vec![
        AgentMessage::user("hello"),
        AgentMessage::Llm(Message::user_content(vec![Content::text("look"), Content::image("AAAA", "image/jpeg")])),
        AgentMessage::from(assistant()),
        AgentMessage::from(ToolResultMessage::error("c1", "echo", "boom")),
        AgentMessage::Extension(ExtensionMessage { kind: "k".into(), data: Value::Null }),
        AgentMessage::from(AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some("rate limited".into()),
            content: vec![],
            ..assistant()
        }),
    ];
    let json = serde_json::to_string(&history).unwrap();
    let back: Vec<AgentMessage> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, history);
}

#[test]
fn bad_messages_get_clear_errors() {
    let err = serde_json::from_value::<AgentMessage>(json!({"role": "robot", "content": []})).unwrap_err();
    assert!(err.to_string().contains("unknown variant `robot`"), "{err}");
    let err = serde_json::from_value::<AgentMessage>(json!({"content": []})).unwrap_err();
    assert!(err.to_string().contains("missing field `role`"), "{err}");
    let err = serde_json::from_value::<AgentMessage>(json!({"role": "user"})).unwrap_err();
    assert!(err.to_string().contains("content"), "{err}");
}

#[test]
fn every_event_variant_round_trips() {
    let id: Arc<str> = "s.mock.1".into();
    let events = vec![
        AgentEvent::AgentStart {
            agent_id: "a".into(),
            session_id: "s".into(),
            loop_id: id.clone(),
            parent_loop_id: Some("s.mock.0".into()),
            continuation_kind: Some(ContinuationKind::Branch { tag: "2026-11-21T10:00:00Z".into() }),
            model: "mock-model".into(),
            provider: "mock".into(),
            config_id: "mock.mock-model".into(),
        },
        AgentEvent::AgentEnd {
            loop_id: id.clone(),
            messages: vec![AgentMessage::user("x")],
            reason: EndReason::Suspended,
        },
        AgentEvent::TurnStart { loop_id: id.clone(), turn: 1, triggered_by: TurnTrigger::Branch },
        AgentEvent::TurnEnd {
            loop_id: id.clone(),
            turn: 1,
            message: assistant(),
            tool_results: vec![ToolResultMessage::error("c1", "echo", "e")],
        },
        AgentEvent::MessageStart { loop_id: id.clone(), message: AgentMessage::user("x") },
        AgentEvent::MessageUpdate { loop_id: id.clone(), delta: StreamDelta::Text { index: 0, delta: "d".into() } },
        AgentEvent::MessageUpdate { loop_id: id.clone(), delta: StreamDelta::Thinking { index: 1, delta: "t".into() } },
        AgentEvent::MessageUpdate {
            loop_id: id.clone(),
            delta: StreamDelta::ToolCall { index: 2, id: Some("c".into()), name: Some("n".into()), delta: "{".into() },
        },
        AgentEvent::MessageEnd { loop_id: id.clone(), message: assistant().into() },
        AgentEvent::ToolExecutionStart {
            loop_id: id.clone(),
            tool_call_id: "c1".into(),
            tool_name: "echo".into(),
            args: json!({"text": "x"}),
        },
        AgentEvent::ToolExecutionUpdate {
            loop_id: id.clone(),
            tool_call_id: "c1".into(),
            tool_name: "echo".into(),
            partial_result: ToolResult::text("half"),
        },
        AgentEvent::ToolExecutionEnd {
            loop_id: id.clone(),
            tool_call_id: "c1".into(),
            tool_name: "echo".into(),
            result: ToolResult { child_loop_id: Some("child.1".into()), ..ToolResult::text("done") },
            is_error: false,
            child_loop_id: Some("child.1".into()),
        },
        AgentEvent::ProgressMessage {
            loop_id: id.clone(),
            tool_call_id: "c1".into(),
            tool_name: "echo".into(),
            text: "50%".into(),
        },
        AgentEvent::InputRejected { loop_id: id.clone(), reason: "no".into() },
        AgentEvent::ToolApprovalRequest {
            loop_id: id.clone(),
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            args: json!({"command": "rm -rf /"}),
            kind: PendingKind::Approval,
        },
        AgentEvent::ProviderRetry { loop_id: id.clone(), attempt: 1, max_retries: 3, delay_ms: 20, error: "e".into() },
        AgentEvent::ContextCompacted {
            loop_id: id,
            messages_before: 40,
            messages_after: 13,
            tokens_before: 9_000,
            tokens_after: 2_500,
        },
    ];
    let json = serde_json::to_string(&events).unwrap();
    let back: Vec<AgentEvent> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, events);
    let value: Value = serde_json::from_str(&json).unwrap();
    let types: Vec<&str> = value.as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[..3], ["agentStart", "agentEnd", "turnStart"]);
    assert_eq!(
        value[events.len() - 1],
        json!({"type": "contextCompacted", "loopId": "s.mock.1", "messagesBefore": 40, "messagesAfter": 13, "tokensBefore": 9_000, "tokensAfter": 2_500})
    );
    assert_eq!(value[0]["continuationKind"], json!({"kind": "branch", "tag": "2026-11-21T10:00:00Z"}));
    assert!(events.iter().all(|e| e.loop_id() == "s.mock.1"));
}

#[test]
fn continuation_kinds_and_triggers_round_trip() {
    check(ContinuationKind::Default, json!({"kind": "default"}));
    check(ContinuationKind::Rerun { tag: "t".into() }, json!({"kind": "rerun", "tag": "t"}));
    check(ContinuationKind::Branch { tag: "t".into() }, json!({"kind": "branch", "tag": "t"}));
    for (trigger, name) in [
        (TurnTrigger::User, "user"),
        (TurnTrigger::Continuation, "continuation"),
        (TurnTrigger::SubAgent, "subAgent"),
        (TurnTrigger::Branch, "branch"),
    ] {
        check(trigger, json!(name));
    }
    for (level, name) in [
        (ThinkingLevel::Off, "off"),
        (ThinkingLevel::Minimal, "minimal"),
        (ThinkingLevel::Low, "low"),
        (ThinkingLevel::Medium, "medium"),
        (ThinkingLevel::High, "high"),
    ] {
        check(level, json!(name));
    }
}

#[test]
fn configs_round_trip() {
    check(
        CacheConfig::new(true, CacheStrategy::Manual { cache_system: true, cache_tools: false, cache_messages: true }),
        json!({"enabled": true, "strategy": {"mode": "manual", "cacheSystem": true, "cacheTools": false, "cacheMessages": true}}),
    );
    check(ToolExecution::Batched { size: 2 }, json!({"mode": "batched", "size": 2}));
    check(QueueMode::All, json!("all"));
    check(
        ToolDefinition { name: "f".into(), description: "d".into(), parameters: json!({"type": "object"}) },
        json!({"name": "f", "description": "d", "parameters": {"type": "object"}}),
    );
    check(
        RetryConfig::default(),
        json!({"max_retries": 3, "initial_delay_ms": 1000, "backoff_multiplier": 2.0, "max_delay_ms": 30000}),
    );
}

#[test]
fn usage_math() {
    let u = Usage::new(20, 5).with_cache(60, 20).with_total(105);
    assert!((u.cache_hit_rate() - 0.6).abs() < 1e-9);
    assert_eq!(Usage::default().cache_hit_rate(), 0.0);
    assert_eq!(u.combine(&u), Usage::new(40, 10).with_cache(120, 40).with_total(210));
}
