//! sinew-server's integration tests: a real server on loopback, spoken to over plain HTTP/1.1.

mod adk_api;
mod browser;
mod chat;
mod chat_store;
mod replay;
mod storage;
mod wire;
mod yaml_agents;

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// A response as it came over the wire.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The `data:` payloads of an event stream.
    pub(crate) fn frames(&self) -> Vec<serde_json::Value> {
        self.body
            .split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|f| {
                let data = f.strip_prefix("data: ").unwrap_or_else(|| panic!("not a data frame: {f:?}"));
                serde_json::from_str(data).unwrap()
            })
            .collect()
    }
}

/// Sends one request (`Connection: close`) with `extra` header lines, and reads the whole reply.
pub(crate) async fn send(addr: SocketAddr, method: &str, path: &str, body: Option<&str>, extra: &[&str]) -> Reply {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = body.unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: localhost:8000\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    if !body.is_empty() && !extra.iter().any(|l| l.to_ascii_lowercase().starts_with("content-type:")) {
        head.push_str("content-type: application/json\r\n");
    }
    for line in extra {
        head.push_str(line);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| panic!("no header end"));
    let head = String::from_utf8_lossy(&raw[..end]);
    let rest = &raw[end + 4..];
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    Reply { status, headers, body: String::from_utf8(body).unwrap() }
}

fn dechunk(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n").unwrap();
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return body;
        }
        let start = line + 2;
        body.extend_from_slice(&rest[start..start + size]);
        rest = &rest[start + size + 2..];
    }
}
