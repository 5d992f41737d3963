//! Server-sent events, decoded incrementally as the WHATWG HTML standard defines them.
//!
//! Bytes go in as they arrive, in chunks split anywhere (inside a line terminator, inside a
//! UTF-8 sequence); complete events come out. Lines end with CRLF, LF or CR; `:` lines are
//! comments; `data:` lines accumulate; `event:`, `id:` and `retry:` may come in any order; a
//! blank line dispatches. The work is linear in the input: each byte is scanned once.
//!
//! What the decoder holds is bounded: an event's data, and any one line, may not exceed
//! [`SseDecoder::max_event_bytes`] (so it holds at most twice that); past it, `feed` fails with
//! [`EventTooLarge`] and the decoder takes nothing more. Where the chunks split never changes
//! what is accepted.

use std::time::Duration;

/// The default bound on one event: 16 MiB, as for Bedrock frames and MCP messages. The largest
/// real events (a Gemini image inline, a long tool call's arguments in one piece) are far below.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// The data buffer (and the split-line buffer) kept from one event to the next; a larger one is
/// let go after its event.
const KEPT_DATA_BYTES: usize = 64 * 1024;

/// An event, or a line, grew past the decoder's bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a server-sent event exceeded the {limit}-byte limit")]
pub struct EventTooLarge {
    /// The decoder's bound, in bytes.
    pub limit: usize,
}

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `"message"` when the event named none.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id in force when the event was dispatched (empty if none was ever set).
    pub id: String,
}

/// An incremental SSE decoder: feed it bytes, get events.
#[derive(Debug)]
pub struct SseDecoder {
    /// An incomplete line carried over from the previous chunk.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF starting the next one belongs to it.
    after_cr: bool,
    /// The byte-order mark check is done (it only applies to the stream's first bytes).
    bom_checked: bool,
    /// The event being read (its name empty until an `event:` line), handed out borrowed at
    /// dispatch and cleared: its buffers serve every event of the stream.
    pending: SseEvent,
    has_data: bool,
    last_event_id: String,
    retry: Option<Duration>,
    comment_lines: usize,
    max_event_bytes: usize,
    /// The bound was exceeded: everything after is refused.
    too_large: bool,
}

impl Default for SseDecoder {
    fn default() -> Self {
        SseDecoder {
            line: Vec::new(),
            after_cr: false,
            bom_checked: false,
            pending: SseEvent::default(),
            has_data: false,
            last_event_id: String::new(),
            retry: None,
            comment_lines: 0,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            too_large: false,
        }
    }
}

impl SseDecoder {
    /// A decoder bounding events at [`DEFAULT_MAX_EVENT_BYTES`].
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// A decoder bounding each event (and each line) at `max` bytes.
    pub fn with_max_event_bytes(max: usize) -> Self {
        SseDecoder { max_event_bytes: max, ..SseDecoder::default() }
    }

    /// The bound on one event.
    pub fn max_event_bytes(&self) -> usize {
        self.max_event_bytes
    }

    /// Decodes `chunk`, appending every event it completes to `out`. Fails, now and on every
    /// later call, once an event outgrows [`SseDecoder::max_event_bytes`]; the events completed
    /// before it are in `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        self.feed_with(chunk, |event| out.push(event.clone()))
    }

    /// Decodes `chunk`, handing each event it completes to `each`, borrowed: one event's buffers
    /// serve the whole stream, so once they have grown to fit, decoding allocates nothing. Fails
    /// as [`SseDecoder::feed`] does; the events completed before the oversized one were handed
    /// out.
    pub fn feed_with(&mut self, chunk: &[u8], mut each: impl FnMut(&SseEvent)) -> Result<(), EventTooLarge> {
        if !self.too_large {
            self.feed_unchecked(chunk, &mut each);
        }
        if self.too_large {
            self.line = Vec::new();
            self.pending = SseEvent::default();
            return Err(EventTooLarge { limit: self.max_event_bytes });
        }
        Ok(())
    }

    fn feed_unchecked(&mut self, mut chunk: &[u8], out: &mut impl FnMut(&SseEvent)) {
        if !self.bom_checked {
            // The BOM may itself be split across chunks: wait for three bytes.
            let seen = self.line.len() + chunk.len();
            if seen < 3 && b"\xEF\xBB\xBF".starts_with(&[&self.line[..], chunk].concat()) {
                self.line.extend_from_slice(chunk);
                return;
            }
            self.bom_checked = true;
            let mut head = std::mem::take(&mut self.line);
            head.extend_from_slice(chunk);
            let start = if head.starts_with(b"\xEF\xBB\xBF") { 3 } else { 0 };
            // Re-feed the joined head once; it is at most a few bytes longer than `chunk`.
            self.feed_checked(&head[start..], out);
            return;
        }
        if self.after_cr && !chunk.is_empty() {
            // An empty chunk tells nothing about the byte after the CR: keep waiting.
            self.after_cr = false;
            if chunk[0] == b'\n' {
                chunk = &chunk[1..];
            }
        }
        self.feed_checked(chunk, out);
    }

    fn feed_checked(&mut self, chunk: &[u8], out: &mut impl FnMut(&SseEvent)) {
        let mut rest = chunk;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let terminator = rest[end];
            if self.line.is_empty() {
                self.process_line(&rest[..end], out);
            } else if self.line.len() + end > self.max_event_bytes {
                self.too_large = true;
                return;
            } else {
                self.line.extend_from_slice(&rest[..end]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out);
                // Keep the allocation for the next split line, unless one long line grew it.
                if line.capacity() <= KEPT_DATA_BYTES {
                    self.line = line;
                    self.line.clear();
                }
            }
            if self.too_large {
                return;
            }
            rest = &rest[end + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        // A line waiting for its end is bounded on its own, as a whole line is: where the
        // chunks split never changes what is accepted. Data is checked as each line completes.
        if self.line.len() + rest.len() > self.max_event_bytes {
            self.too_large = true;
            return;
        }
        self.line.extend_from_slice(rest);
    }

    fn process_line(&mut self, line: &[u8], out: &mut impl FnMut(&SseEvent)) {
        if line.len() > self.max_event_bytes {
            self.too_large = true;
            return;
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            self.comment_lines += 1;
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        // The same as `from_utf8_lossy`, faster: `from_utf8` checks valid text in bulk, and only
        // an invalid line goes through the lossy path.
        let value = match std::str::from_utf8(value) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(value),
        };
        match name {
            b"data" => {
                let data = &mut self.pending.data;
                if data.len() + value.len() + 1 > self.max_event_bytes {
                    self.too_large = true;
                    return;
                }
                if self.has_data {
                    data.push('\n');
                }
                data.push_str(&value);
                self.has_data = true;
            }
            b"event" => {
                self.pending.event.clear();
                self.pending.event.push_str(&value);
            }
            b"id" if !value.contains('\0') => {
                self.last_event_id.clear();
                self.last_event_id.push_str(&value);
            }
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok().map(Duration::from_millis);
            }
            _ => {} // unknown fields are ignored
        }
    }

    fn dispatch(&mut self, out: &mut impl FnMut(&SseEvent)) {
        let pending = &mut self.pending;
        if std::mem::take(&mut self.has_data) {
            if pending.event.is_empty() {
                pending.event.push_str("message");
            }
            pending.id.clone_from(&self.last_event_id);
            out(pending);
            pending.data.clear();
            if pending.data.capacity() > KEPT_DATA_BYTES {
                // One large event does not keep its buffer for the rest of the stream.
                pending.data = String::new();
            }
        }
        pending.event.clear();
    }

    /// Ends the stream. The standard discards an event left without its blank line; some servers
    /// (and truncated recordings) end so, so the unterminated event is returned for the caller to
    /// decide, with any unterminated last line applied first.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut last = None;
        self.finish_with(|event| last = Some(event.clone()));
        last
    }

    /// [`SseDecoder::finish`], handing the unterminated event, if any, to `each`, borrowed.
    pub fn finish_with(&mut self, mut each: impl FnMut(&SseEvent)) {
        if self.too_large {
            return;
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            // A line that is not empty never dispatches.
            self.process_line(&line, &mut each);
        }
        self.dispatch(&mut each);
    }

    /// Every event of a whole body, the unterminated last one included (see
    /// [`SseDecoder::finish`]): for tests and tools that hold a recorded stream.
    ///
    /// ```
    /// use sinew_http::sse::SseDecoder;
    ///
    /// let events = SseDecoder::events_of(b"event: a\ndata: 1\n\ndata: 2").unwrap();
    /// assert_eq!(events.iter().map(|e| (e.event.as_str(), e.data.as_str())).collect::<Vec<_>>(), [("a", "1"), ("message", "2")]);
    /// ```
    pub fn events_of(body: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut decoder = SseDecoder::default();
        let mut events = Vec::new();
        decoder.feed(body, &mut events)?;
        events.extend(decoder.finish());
        Ok(events)
    }

    /// The last `id:` seen, for resuming with `Last-Event-ID`.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The reconnection time the server asked for with `retry:`.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// How many comment lines (`:` ...) were seen.
    pub fn comment_lines(&self) -> usize {
        self.comment_lines
    }
}

#[cfg(test)]
mod tests;
