//! JSON-RPC 2.0 messages, as MCP frames them.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::McpError;

/// A request id: a number or a string. Servers number their own requests independently of ours
/// (server-filesystem's first `roots/list` has id 0), so ids are only compared within a direction.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id, as `1`.
    Number(i64),
    /// A string id, as `"abc"`.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => f.write_str(s),
        }
    }
}

/// The `error` member of a response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error `code`; [`crate::codes`] lists the protocol's.
    pub code: i64,
    /// A short description of the error (`message`).
    pub message: String,
    /// Extra information about the error (`data`); `None`: left out of the JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message`, and no `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }
}

impl From<RpcError> for McpError {
    fn from(error: RpcError) -> Self {
        McpError::JsonRpc { code: error.code, message: error.message, data: error.data }
    }
}

/// One incoming message, classified.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Message {
    Request { id: RequestId, method: String, params: Value },
    Notification { method: String, params: Value },
    Response { id: RequestId, result: Result<Value, RpcError> },
}

/// The members a JSON-RPC message may have, read in one pass.
#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// `Some(Value::Null)` for a member present as `null`, so `"result": null` is still a result.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// Parses a frame: one message, or a batch (an array of them, as 2025-03-26 allowed). The bytes
/// are read once, straight into the message's members: a large tool result is not copied.
pub(crate) fn parse_frame(text: &[u8]) -> Result<Vec<Message>, McpError> {
    let refused = |error: serde_json::Error| {
        let what = if error.is_data() { "not a JSON-RPC message" } else { "not JSON" };
        McpError::Protocol(format!("{what} ({error}): {}", excerpt_bytes(text)))
    };
    if text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let batch: Vec<Raw> = serde_json::from_slice(text).map_err(refused)?;
        return batch.into_iter().map(|raw| classify(raw, text)).collect();
    }
    let raw: Raw = serde_json::from_slice(text).map_err(refused)?;
    Ok(vec![classify(raw, text)?])
}

fn classify(raw: Raw, text: &[u8]) -> Result<Message, McpError> {
    let shown = || excerpt_bytes(text);
    if raw.jsonrpc.as_deref() != Some("2.0") {
        return Err(McpError::Protocol(format!("not a JSON-RPC 2.0 message: {}", shown())));
    }
    let id = match raw.id {
        None | Some(Value::Null) => None,
        Some(id) => Some(
            serde_json::from_value::<RequestId>(id)
                .map_err(|_| McpError::Protocol(format!("invalid id: {}", shown())))?,
        ),
    };
    match (raw.method, id) {
        (Some(method), Some(id)) => Ok(Message::Request { id, method, params: raw.params.unwrap_or(Value::Null) }),
        (Some(method), None) => Ok(Message::Notification { method, params: raw.params.unwrap_or(Value::Null) }),
        (None, id) => {
            let result = match (raw.result, raw.error) {
                (_, Some(error)) => Err(error),
                (Some(result), None) => Ok(result),
                (None, None) => {
                    return Err(McpError::Protocol(format!("a response with neither result nor error: {}", shown())));
                }
            };
            match id {
                Some(id) => Ok(Message::Response { id, result }),
                // An error about a message the server could not read carries no id.
                None => match result {
                    Err(error) => Err(McpError::from(error)),
                    Ok(_) => Err(McpError::Protocol(format!("a result without an id: {}", shown()))),
                },
            }
        }
    }
}

/// The serialized request `{"jsonrpc":"2.0","id":..,"method":..,"params":..}`.
pub(crate) fn request(id: &RequestId, method: &str, params: &Value) -> Vec<u8> {
    let mut object = Map::with_capacity(4);
    object.insert("jsonrpc".into(), Value::from("2.0"));
    object.insert("id".into(), serde_json::to_value(id).unwrap_or(Value::Null));
    object.insert("method".into(), Value::from(method));
    if !params.is_null() {
        object.insert("params".into(), params.clone());
    }
    serde_json::to_vec(&object).unwrap_or_default()
}

/// The serialized notification.
pub(crate) fn notification(method: &str, params: &Value) -> Vec<u8> {
    let mut object = Map::with_capacity(3);
    object.insert("jsonrpc".into(), Value::from("2.0"));
    object.insert("method".into(), Value::from(method));
    if !params.is_null() {
        object.insert("params".into(), params.clone());
    }
    serde_json::to_vec(&object).unwrap_or_default()
}

/// The serialized response to a server's request.
pub(crate) fn response(id: &RequestId, result: Result<Value, RpcError>) -> Vec<u8> {
    let mut object = Map::with_capacity(3);
    object.insert("jsonrpc".into(), Value::from("2.0"));
    object.insert("id".into(), serde_json::to_value(id).unwrap_or(Value::Null));
    match result {
        Ok(result) => object.insert("result".into(), result),
        Err(error) => object.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null)),
    };
    serde_json::to_vec(&object).unwrap_or_default()
}

/// At most 200 characters of `bytes`, lossily decoded, for error messages.
pub(crate) fn excerpt_bytes(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(800)];
    let text = String::from_utf8_lossy(head);
    let mut shown: String = text.chars().take(200).collect();
    if shown.len() < bytes.len() {
        shown.push('…');
    }
    shown
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn classifies_every_kind_of_message() {
        let frame = br#"[{"jsonrpc":"2.0","id":0,"method":"roots/list"},
            {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}},
            {"jsonrpc":"2.0","id":"a","result":null},
            {"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}]"#;
        let messages = parse_frame(frame).unwrap();
        assert_eq!(
            messages[0],
            Message::Request { id: RequestId::Number(0), method: "roots/list".into(), params: Value::Null }
        );
        assert_eq!(
            messages[1],
            Message::Notification { method: "notifications/progress".into(), params: json!({"progress": 1}) }
        );
        assert_eq!(messages[2], Message::Response { id: RequestId::String("a".into()), result: Ok(Value::Null) });
        assert_eq!(
            messages[3],
            Message::Response { id: RequestId::Number(7), result: Err(RpcError::new(-32601, "Method not found")) }
        );
    }

    #[test]
    fn refuses_what_is_not_json_rpc() {
        for (frame, expected) in [
            (&b"Starting server..."[..], "not JSON"),
            (br#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#, "not a JSON-RPC message"),
            (br#"{"id":1,"result":{}}"#, "not a JSON-RPC 2.0 message"),
            (br#"{"jsonrpc":"2.0","id":1}"#, "neither result nor error"),
            (br#"{"jsonrpc":"2.0","id":{"x":1},"method":"m"}"#, "invalid id"),
            (br#"{"jsonrpc":"2.0","result":{}}"#, "a result without an id"),
        ] {
            let error = parse_frame(frame).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
        let error =
            parse_frame(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#).unwrap_err();
        assert_eq!(error.code(), Some(-32700));
    }

    #[test]
    fn serializes_requests_notifications_and_responses() {
        let request = request(&RequestId::Number(3), "tools/list", &Value::Null);
        assert_eq!(request, br#"{"id":3,"jsonrpc":"2.0","method":"tools/list"}"#.to_vec());
        let note = notification("notifications/cancelled", &json!({"requestId": 3}));
        assert_eq!(
            serde_json::from_slice::<Value>(&note).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
        );
        let error = response(&RequestId::String("s".into()), Err(RpcError::new(-32601, "Method not found")));
        assert_eq!(
            serde_json::from_slice::<Value>(&error).unwrap(),
            json!({"jsonrpc": "2.0", "id": "s", "error": {"code": -32601, "message": "Method not found"}})
        );
    }
}
