//! A tiny MCP server for tests that need a real process: Python's standard library only,
//! newline-delimited JSON-RPC on stdio, the `initialize` handshake, and one tool, `shout`, that
//! upper-cases its `text`.
//!
//! Run it as `python3 -c SHOUT_SERVER`.

/// The server's source.
pub const SHOUT_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, mid = msg["method"], msg["id"]
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "upper", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "shout", "description": "Upper-cases text",
                             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": msg["params"]["arguments"]["text"].upper()}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "Method not found"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}), flush=True)
"#;
