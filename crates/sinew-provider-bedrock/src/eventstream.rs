//! `application/vnd.amazon.eventstream`: binary frames, decoded incrementally.
//!
//! A frame is a 12-byte prelude (total length, headers length, CRC32 of those 8 bytes), the
//! headers, the payload, and a CRC32 of everything before it. Both CRCs are checked; a frame
//! that fails either is rejected, never half-read.

use sinew_core::ProviderError;

/// Frames larger than this are refused (the service's own limit is 16 MiB).
pub const MAX_FRAME_LEN: usize = 16 * 1024 * 1024;

const PRELUDE_LEN: usize = 12;
const MIN_FRAME_LEN: usize = PRELUDE_LEN + 4;

/// A typed header value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    /// Types 0 (`true`) and 1 (`false`).
    Bool(bool),
    /// Type 2: a signed byte.
    Byte(i8),
    /// Type 3: a big-endian 16-bit integer.
    Short(i16),
    /// Type 4: a big-endian 32-bit integer.
    Int(i32),
    /// Type 5: a big-endian 64-bit integer.
    Long(i64),
    /// Type 6: a length-prefixed byte array.
    Bytes(Vec<u8>),
    /// Type 7: a length-prefixed UTF-8 string, like `:event-type`.
    String(String),
    /// Milliseconds since the epoch.
    Timestamp(i64),
    /// Type 9: a 16-byte UUID.
    Uuid([u8; 16]),
}

/// One decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The headers, in frame order (`:event-type`, `:message-type`, ...).
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload bytes (JSON for Bedrock's events).
    pub payload: Vec<u8>,
}

impl Frame {
    /// The string value of header `name`.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(k, v)| match v {
            HeaderValue::String(s) if k == name => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Cuts a byte stream into frames, whatever the chunking.
#[derive(Debug, Default)]
pub struct FrameDecoder {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already consumed (compacted lazily).
    start: usize,
}

impl FrameDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        FrameDecoder::default()
    }

    /// Appends `bytes` and the frames they complete to `out`. An error is final: the stream is
    /// corrupt from there on.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), ProviderError> {
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(bytes);
        loop {
            let pending = &self.buffer[self.start..];
            if pending.len() < PRELUDE_LEN {
                return Ok(());
            }
            let total = read_u32(pending, 0) as usize;
            let headers_len = read_u32(pending, 4) as usize;
            if crc32fast::hash(&pending[..8]) != read_u32(pending, 8) {
                return Err(corrupt("prelude CRC mismatch"));
            }
            if !(MIN_FRAME_LEN..=MAX_FRAME_LEN).contains(&total) || headers_len > total - MIN_FRAME_LEN {
                return Err(corrupt(&format!("impossible lengths (total {total}, headers {headers_len})")));
            }
            if pending.len() < total {
                return Ok(());
            }
            let frame = &pending[..total];
            if crc32fast::hash(&frame[..total - 4]) != read_u32(frame, total - 4) {
                return Err(corrupt("message CRC mismatch"));
            }
            let headers = parse_headers(&frame[PRELUDE_LEN..PRELUDE_LEN + headers_len])?;
            let payload = frame[PRELUDE_LEN + headers_len..total - 4].to_vec();
            out.push(Frame { headers, payload });
            self.start += total;
        }
    }

    /// Whether bytes of an unfinished frame are buffered.
    pub fn has_partial_frame(&self) -> bool {
        self.start < self.buffer.len()
    }
}

fn corrupt(why: &str) -> ProviderError {
    ProviderError::Protocol(format!("corrupt eventstream frame: {why}"))
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, HeaderValue)>, ProviderError> {
    let mut headers = Vec::new();
    let truncated = || corrupt("truncated header");
    while !bytes.is_empty() {
        let name_len = usize::from(bytes[0]);
        let name = bytes.get(1..1 + name_len).ok_or_else(truncated)?;
        let name = std::str::from_utf8(name).map_err(|_| corrupt("header name is not UTF-8"))?.to_owned();
        let kind = *bytes.get(1 + name_len).ok_or_else(truncated)?;
        let rest = &bytes[2 + name_len..];
        let fixed = |n: usize| rest.get(..n).ok_or_else(truncated);
        let (value, used) = match kind {
            0 => (HeaderValue::Bool(true), 0),
            1 => (HeaderValue::Bool(false), 0),
            2 => (HeaderValue::Byte(fixed(1)?[0] as i8), 1),
            3 => (HeaderValue::Short(i16::from_be_bytes(fixed(2)?.try_into().map_err(|_| truncated())?)), 2),
            4 => (HeaderValue::Int(i32::from_be_bytes(fixed(4)?.try_into().map_err(|_| truncated())?)), 4),
            5 | 8 => {
                let n = i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| truncated())?);
                (if kind == 5 { HeaderValue::Long(n) } else { HeaderValue::Timestamp(n) }, 8)
            }
            6 | 7 => {
                let len = usize::from(u16::from_be_bytes(fixed(2)?.try_into().map_err(|_| truncated())?));
                let data = rest.get(2..2 + len).ok_or_else(truncated)?;
                let value = if kind == 6 {
                    HeaderValue::Bytes(data.to_vec())
                } else {
                    HeaderValue::String(
                        std::str::from_utf8(data).map_err(|_| corrupt("header value is not UTF-8"))?.to_owned(),
                    )
                };
                (value, 2 + len)
            }
            9 => (HeaderValue::Uuid(fixed(16)?.try_into().map_err(|_| truncated())?), 16),
            other => return Err(corrupt(&format!("unknown header type {other}"))),
        };
        headers.push((name, value));
        bytes = &rest[used..];
    }
    Ok(headers)
}

/// Encodes a frame (for tests and mock servers).
pub fn encode(headers: &[(&str, HeaderValue)], payload: &[u8]) -> Vec<u8> {
    let mut header_bytes = Vec::new();
    for (name, value) in headers {
        header_bytes.push(name.len() as u8);
        header_bytes.extend_from_slice(name.as_bytes());
        match value {
            HeaderValue::Bool(b) => header_bytes.push(if *b { 0 } else { 1 }),
            HeaderValue::Byte(n) => header_bytes.extend([2, *n as u8]),
            HeaderValue::Short(n) => {
                header_bytes.push(3);
                header_bytes.extend(n.to_be_bytes());
            }
            HeaderValue::Int(n) => {
                header_bytes.push(4);
                header_bytes.extend(n.to_be_bytes());
            }
            HeaderValue::Long(n) | HeaderValue::Timestamp(n) => {
                header_bytes.push(if matches!(value, HeaderValue::Long(_)) { 5 } else { 8 });
                header_bytes.extend(n.to_be_bytes());
            }
            HeaderValue::Bytes(data) => {
                header_bytes.push(6);
                header_bytes.extend((data.len() as u16).to_be_bytes());
                header_bytes.extend_from_slice(data);
            }
            HeaderValue::String(s) => {
                header_bytes.push(7);
                header_bytes.extend((s.len() as u16).to_be_bytes());
                header_bytes.extend_from_slice(s.as_bytes());
            }
            HeaderValue::Uuid(id) => {
                header_bytes.push(9);
                header_bytes.extend_from_slice(id);
            }
        }
    }
    let total = MIN_FRAME_LEN + header_bytes.len() + payload.len();
    let mut frame = Vec::with_capacity(total);
    frame.extend((total as u32).to_be_bytes());
    frame.extend((header_bytes.len() as u32).to_be_bytes());
    frame.extend(crc32fast::hash(&frame[..8]).to_be_bytes());
    frame.extend_from_slice(&header_bytes);
    frame.extend_from_slice(payload);
    frame.extend(crc32fast::hash(&frame).to_be_bytes());
    frame
}

/// An event frame as Bedrock sends it: `:message-type: event`, `:event-type`, JSON payload.
pub fn event_frame(event_type: &str, payload: &serde_json::Value) -> Vec<u8> {
    encode(
        &[
            (":event-type", HeaderValue::String(event_type.into())),
            (":content-type", HeaderValue::String("application/json".into())),
            (":message-type", HeaderValue::String("event".into())),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An exception frame: `:message-type: exception`, `:exception-type`, `{"message"}` payload.
pub fn exception_frame(exception_type: &str, message: &str) -> Vec<u8> {
    encode(
        &[
            (":exception-type", HeaderValue::String(exception_type.into())),
            (":content-type", HeaderValue::String("application/json".into())),
            (":message-type", HeaderValue::String("exception".into())),
        ],
        serde_json::json!({ "message": message }).to_string().as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn frames_round_trip_whatever_the_chunking() {
        let frame = encode(
            &[
                ("b", HeaderValue::Bool(false)),
                ("i", HeaderValue::Int(-7)),
                ("s", HeaderValue::String("é".into())),
                ("t", HeaderValue::Timestamp(1_700_000_000_000)),
                ("u", HeaderValue::Uuid([7; 16])),
                ("y", HeaderValue::Bytes(vec![0, 255])),
                ("h", HeaderValue::Short(-2)),
                ("l", HeaderValue::Long(i64::MIN)),
                ("c", HeaderValue::Byte(-1)),
            ],
            b"{\"x\":1}",
        );
        let stream = [frame.clone(), frame].concat();
        for size in [1, 3, 7, stream.len()] {
            let mut decoder = FrameDecoder::new();
            let mut frames = Vec::new();
            for chunk in stream.chunks(size) {
                decoder.feed(chunk, &mut frames).unwrap();
            }
            assert_eq!(frames.len(), 2, "chunk size {size}");
            assert_eq!(frames[0], frames[1]);
            assert_eq!(frames[0].header_str("s"), Some("é"));
            assert_eq!(frames[0].payload, b"{\"x\":1}");
            assert!(!decoder.has_partial_frame());
        }
    }

    #[test]
    fn impossible_lengths_are_rejected_before_buffering() {
        let mut frame = vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
        frame.extend(crc32fast::hash(&frame).to_be_bytes());
        let error = FrameDecoder::new().feed(&frame, &mut Vec::new()).unwrap_err();
        assert!(error.to_string().contains("impossible lengths"), "{error}");
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut decoder = FrameDecoder::new();
            let _ = decoder.feed(&bytes, &mut Vec::new());
        }
    }
}
