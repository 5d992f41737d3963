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

/// A frame read in place from the bytes that hold it (what [`FrameDecoder::feed_frames`] gives):
/// its headers were checked as [`Frame`]'s are, and are read again when asked for.
#[derive(Clone, Copy, Debug)]
pub struct FrameRef<'a> {
    headers: &'a [u8],
    /// The payload bytes (JSON for Bedrock's events).
    pub payload: &'a [u8],
}

impl<'a> FrameRef<'a> {
    /// The string value of header `name`.
    pub fn header_str(&self, name: &str) -> Option<&'a str> {
        self.header_bytes(name).and_then(|value| std::str::from_utf8(value).ok())
    }

    /// The bytes of header `name`'s string value (checked UTF-8 when the frame was read), to
    /// compare with known values without converting them.
    pub fn header_bytes(&self, name: &str) -> Option<&'a [u8]> {
        let mut found = None;
        // Checked when the frame was read: walked again without checking the text.
        let _ = walk_raw(self.headers, |key, kind, value| {
            if kind == STRING && key == name.as_bytes() {
                found = Some(value);
                return false;
            }
            true
        });
        found
    }

    /// The frame with its headers and payload copied out.
    pub fn to_frame(&self) -> Result<Frame, ProviderError> {
        Ok(Frame { headers: parse_headers(self.headers)?, payload: self.payload.to_vec() })
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
        let mut failed = None;
        self.feed_frames(bytes, |frame| match frame.to_frame() {
            Ok(frame) => {
                out.push(frame);
                true
            }
            Err(error) => {
                failed = Some(error);
                false
            }
        })?;
        failed.map_or(Ok(()), Err)
    }

    /// Gives `each` the frames `bytes` complete, read in place (no copy of a frame that arrives
    /// whole in `bytes`), until it answers `false` (the next call goes on from there). An error is
    /// final: the stream is corrupt from there on.
    pub fn feed_frames(
        &mut self,
        bytes: &[u8],
        mut each: impl FnMut(FrameRef<'_>) -> bool,
    ) -> Result<(), ProviderError> {
        if self.start > 0 && self.start * 2 >= self.buffer.len() {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        // With nothing buffered, frames are read from `bytes` themselves; only the unfinished
        // one at the end is kept.
        if self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
            let used = frames_in(bytes, &mut each)?;
            self.buffer.extend_from_slice(bytes.get(used..).unwrap_or_default());
            return Ok(());
        }
        self.buffer.extend_from_slice(bytes);
        let used = frames_in(&self.buffer[self.start..], &mut each)?;
        self.start += used;
        Ok(())
    }

    /// Whether bytes of an unfinished frame are buffered.
    pub fn has_partial_frame(&self) -> bool {
        self.start < self.buffer.len()
    }
}

fn corrupt(why: &str) -> ProviderError {
    ProviderError::Protocol(format!("corrupt eventstream frame: {why}"))
}

/// Reads the whole frames at the start of `bytes` (until `each` answers `false`), checked; returns
/// how many bytes they took.
fn frames_in(bytes: &[u8], each: &mut impl FnMut(FrameRef<'_>) -> bool) -> Result<usize, ProviderError> {
    let mut start = 0;
    loop {
        let pending = &bytes[start..];
        if pending.len() < PRELUDE_LEN {
            return Ok(start);
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
            return Ok(start);
        }
        let frame = &pending[..total];
        if crc32fast::hash(&frame[..total - 4]) != read_u32(frame, total - 4) {
            return Err(corrupt("message CRC mismatch"));
        }
        let headers = &frame[PRELUDE_LEN..PRELUDE_LEN + headers_len];
        if headers.is_ascii() {
            // Every name and string in it is then UTF-8: one pass over the block, not one check
            // per field (Bedrock's headers are ASCII).
            walk_raw(headers, |_, _, _| true)?;
        } else {
            walk_headers(headers, |_, _, _| {})?;
        }
        start += total;
        if !each(FrameRef { headers, payload: &frame[PRELUDE_LEN + headers_len..total - 4] }) {
            return Ok(start);
        }
    }
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The header type of strings (`:event-type` and the others Bedrock sends).
const STRING: u8 = 7;

/// Walks the headers of a frame, checked (names and strings UTF-8, lengths within the bytes, known
/// types), giving `each` every name, type and value bytes.
fn walk_headers<'a>(bytes: &'a [u8], mut each: impl FnMut(&'a str, u8, &'a [u8])) -> Result<(), ProviderError> {
    let mut error = None;
    walk_raw(bytes, |name, kind, value| {
        let Ok(name) = std::str::from_utf8(name) else {
            error = Some(corrupt("header name is not UTF-8"));
            return false;
        };
        if kind == STRING && std::str::from_utf8(value).is_err() {
            error = Some(corrupt("header value is not UTF-8"));
            return false;
        }
        each(name, kind, value);
        true
    })?;
    error.map_or(Ok(()), Err)
}

/// Walks the headers of a frame (lengths within the bytes, known types), giving `each` every name,
/// type and value bytes until it answers `false`.
fn walk_raw<'a>(
    mut bytes: &'a [u8],
    mut each: impl FnMut(&'a [u8], u8, &'a [u8]) -> bool,
) -> Result<(), ProviderError> {
    let truncated = || corrupt("truncated header");
    while let Some(&name_len) = bytes.first() {
        let name_len = usize::from(name_len);
        let name = bytes.get(1..1 + name_len).ok_or_else(truncated)?;
        let kind = *bytes.get(1 + name_len).ok_or_else(truncated)?;
        let rest = &bytes[2 + name_len..];
        let (value, used) = match kind {
            0 | 1 => (&rest[..0], 0),
            2 => (rest.get(..1).ok_or_else(truncated)?, 1),
            3 => (rest.get(..2).ok_or_else(truncated)?, 2),
            4 => (rest.get(..4).ok_or_else(truncated)?, 4),
            5 | 8 => (rest.get(..8).ok_or_else(truncated)?, 8),
            6 | 7 => {
                let len = rest.get(..2).ok_or_else(truncated)?;
                let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                (rest.get(2..2 + len).ok_or_else(truncated)?, 2 + len)
            }
            9 => (rest.get(..16).ok_or_else(truncated)?, 16),
            other => return Err(corrupt(&format!("unknown header type {other}"))),
        };
        if !each(name, kind, value) {
            return Ok(());
        }
        bytes = &rest[used..];
    }
    Ok(())
}

fn parse_headers(bytes: &[u8]) -> Result<Vec<(String, HeaderValue)>, ProviderError> {
    let mut headers = Vec::new();
    walk_headers(bytes, |name, kind, value| {
        // A big-endian integer of `value`'s bytes, cut to its type below (two's complement).
        let integer = || {
            let mut fixed = [0; 8];
            fixed[8 - value.len()..].copy_from_slice(value);
            i64::from_be_bytes(fixed)
        };
        let value = match kind {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(value[0] as i8),
            3 => HeaderValue::Short(integer() as i16),
            4 => HeaderValue::Int(integer() as i32),
            5 => HeaderValue::Long(integer()),
            8 => HeaderValue::Timestamp(integer()),
            6 => HeaderValue::Bytes(value.to_vec()),
            STRING => HeaderValue::String(String::from_utf8_lossy(value).into_owned()),
            _ => HeaderValue::Uuid(value.try_into().unwrap_or_default()),
        };
        headers.push((name.to_owned(), value));
    })?;
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

    fn every_type() -> Vec<(&'static str, HeaderValue)> {
        vec![
            ("b", HeaderValue::Bool(false)),
            ("B", HeaderValue::Bool(true)),
            ("i", HeaderValue::Int(-7)),
            ("s", HeaderValue::String("é".into())),
            ("t", HeaderValue::Timestamp(1_700_000_000_000)),
            ("u", HeaderValue::Uuid([7; 16])),
            ("y", HeaderValue::Bytes(vec![0, 255])),
            ("h", HeaderValue::Short(-2)),
            ("l", HeaderValue::Long(i64::MIN)),
            ("c", HeaderValue::Byte(-1)),
            ("s2", HeaderValue::String(String::new())),
        ]
    }

    #[test]
    fn frames_round_trip_whatever_the_chunking() {
        let headers = every_type();
        let frame = encode(&headers, b"{\"x\":1}");
        let expected: Vec<(String, HeaderValue)> = headers.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let stream = [frame.clone(), frame].concat();
        for size in [1, 3, 7, stream.len()] {
            let mut decoder = FrameDecoder::new();
            let mut frames = Vec::new();
            for chunk in stream.chunks(size) {
                decoder.feed(chunk, &mut frames).unwrap();
            }
            assert_eq!(frames.len(), 2, "chunk size {size}");
            assert_eq!(frames[0], frames[1]);
            assert_eq!(frames[0].headers, expected);
            assert_eq!(frames[0].header_str("s"), Some("é"));
            assert_eq!(frames[0].payload, b"{\"x\":1}");
            assert!(!decoder.has_partial_frame());
        }
    }

    /// Frames read in place are those copied out, whether they come whole in a chunk or are
    /// buffered across chunks; a reader that stops is given nothing more of that chunk.
    #[test]
    fn frames_read_in_place_are_the_frames() {
        let frame = encode(&every_type(), b"{}");
        let stream = [frame.clone(), frame.clone(), frame].concat();
        for size in [1, 5, 40, stream.len()] {
            let (mut decoder, mut seen, mut stopped) = (FrameDecoder::new(), Vec::new(), false);
            for chunk in stream.chunks(size) {
                if stopped {
                    break;
                }
                decoder
                    .feed_frames(chunk, |frame| {
                        assert!(!stopped, "a frame after the reader stopped");
                        assert_eq!(frame.header_str("s"), Some("é"));
                        assert_eq!(frame.header_str("y"), None, "bytes are no string");
                        seen.push(frame.to_frame().unwrap());
                        stopped = seen.len() == 2;
                        !stopped
                    })
                    .unwrap();
            }
            assert_eq!(seen.len(), 2, "chunk size {size}");
            assert_eq!(seen[0].headers.len(), every_type().len());
        }
    }

    /// Headers that are not what the format says fail the frame, CRCs right or not.
    #[test]
    fn broken_headers_fail_the_frame() {
        let frame_with = |headers: &[u8]| {
            let total = (PRELUDE_LEN + headers.len() + 4) as u32;
            let mut frame = total.to_be_bytes().to_vec();
            frame.extend((headers.len() as u32).to_be_bytes());
            frame.extend(crc32fast::hash(&frame).to_be_bytes());
            frame.extend(headers);
            frame.extend(crc32fast::hash(&frame).to_be_bytes());
            frame
        };
        for (headers, why) in [
            (&b"\x01\xff\x00"[..], "header name is not UTF-8"),
            (b"\x01s\x07\x00\x01\xff", "header value is not UTF-8"),
            (b"\x01s\x07\x00\x09ab", "truncated header"),
            (b"\x01s\x04\x00", "truncated header"),
            (b"\x01s\x0a", "unknown header type 10"),
        ] {
            let error = FrameDecoder::new().feed(&frame_with(headers), &mut Vec::new()).unwrap_err();
            assert!(error.to_string().contains(why), "{error}");
            let error = FrameDecoder::new().feed_frames(&frame_with(headers), |_| true).unwrap_err();
            assert!(error.to_string().contains(why), "{error}");
        }
    }

    /// Headers with text past ASCII (or a length byte past 0x7f) are checked one by one, and read.
    #[test]
    fn headers_past_ascii_are_checked_and_read() {
        let long = "x".repeat(200);
        for value in ["café", long.as_str()] {
            let mut headers = b"\x01s\x07".to_vec();
            headers.extend((value.len() as u16).to_be_bytes());
            headers.extend(value.as_bytes());
            let total = (PRELUDE_LEN + headers.len() + 4) as u32;
            let mut frame = total.to_be_bytes().to_vec();
            frame.extend((headers.len() as u32).to_be_bytes());
            frame.extend(crc32fast::hash(&frame).to_be_bytes());
            frame.extend(&headers);
            frame.extend(crc32fast::hash(&frame).to_be_bytes());
            let mut read = Vec::new();
            FrameDecoder::new()
                .feed_frames(&frame, |frame| {
                    read.push((frame.header_str("s").map(str::to_owned), frame.header_bytes("s").map(<[u8]>::to_vec)));
                    true
                })
                .unwrap();
            assert_eq!(read, [(Some(value.to_owned()), Some(value.as_bytes().to_vec()))]);
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
