//! What a provider keeps of a conversation's serialized history between two requests, so that a
//! long conversation is not serialized again whole on every call.
//!
//! The agent loop owns one [`WireCache`] per history and says, with each request, how many of its
//! first messages have not changed since the cache was last cleared ([`HistoryCache::unchanged`]):
//! a history that is only appended to keeps them, and whoever rewrites it clears the cache. A
//! provider that supports it writes its messages into a [`WirePrefix`] taken from the cache
//! ([`StreamRequest::resume_messages`]), resuming after the bytes it wrote for those messages in an
//! earlier request, marks the points it can resume from (after a message whose bytes depend on
//! nothing that follows), and gives the prefix back. A provider that does not ignores the cache.
//!
//! The cache holds the last request body written, the history as the last provider that used it
//! wrote it (images as base64 included) with the request's other fields, for as long as the
//! history lives; while the request is sent, the body and the cache share those bytes.
//!
//! [`StreamRequest::resume_messages`]: crate::StreamRequest::resume_messages
//!
//! ```
//! use sinew_core::wire::{WireCache, WirePrefix};
//!
//! let cache = WireCache::default();
//! // First request: nothing kept; the provider writes two messages.
//! let mut prefix = cache.take(7, 0);
//! assert_eq!(prefix.messages(), 0);
//! prefix.bytes_mut().extend_from_slice(b"{\"a\":1},");
//! prefix.mark(1);
//! prefix.bytes_mut().extend_from_slice(b"{\"b\":2},");
//! prefix.mark(2);
//! cache.keep(prefix);
//! // Next request: the first message is unchanged, the second was rewritten.
//! let prefix = cache.take(7, 1);
//! assert_eq!((prefix.messages(), prefix.bytes()), (1, &b"{\"a\":1},"[..]));
//! // Bytes written in another format are never reused.
//! cache.keep(prefix);
//! assert_eq!(cache.take(8, 1).messages(), 0);
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// Where a provider keeps the bytes it wrote for one history's messages, from one request to
/// the next (see the [module](self)). One cache belongs to one history: the agent loop makes one
/// per agent and drops what it holds whenever the history is rewritten.
#[derive(Default)]
pub struct WireCache {
    kept: Mutex<Option<WirePrefix>>,
}

impl WireCache {
    /// The kept prefix if it was written in `format`, cut back to the last point it can resume
    /// from within the first `unchanged` messages; an empty prefix in `format` otherwise.
    pub fn take(&self, format: u64, unchanged: usize) -> WirePrefix {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner).take();
        match kept {
            Some(mut prefix) if prefix.format == format => {
                prefix.cut(unchanged);
                prefix
            }
            _ => WirePrefix::new(format),
        }
    }

    /// Keeps `prefix` for the next request.
    pub fn keep(&self, prefix: WirePrefix) {
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(prefix);
    }

    /// Keeps only the bytes of the first `messages` messages (cut back to the last point it can
    /// resume from within them), whatever their format: for a caller about to say those are
    /// unchanged, whether or not the next request writes anything.
    ///
    /// ```
    /// use sinew_core::wire::WireCache;
    ///
    /// let cache = WireCache::default();
    /// let mut prefix = cache.take(7, 0);
    /// for (i, message) in [&b"{\"a\":1},"[..], b"{\"b\":2},"].into_iter().enumerate() {
    ///     prefix.bytes_mut().extend_from_slice(message);
    ///     prefix.mark(i + 1);
    /// }
    /// cache.keep(prefix);
    /// cache.cut(1);
    /// let prefix = cache.take(7, 2);
    /// assert_eq!((prefix.messages(), prefix.bytes()), (1, &b"{\"a\":1},"[..]));
    /// ```
    pub fn cut(&self, messages: usize) {
        if let Some(prefix) = self.kept.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            prefix.cut(messages);
        }
    }

    /// Drops what is kept: the history was rewritten.
    pub fn clear(&self) {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).take();
    }

    /// The bytes kept, for tests and metrics.
    pub fn kept_bytes(&self) -> usize {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map_or(0, |p| p.bytes().len())
    }
}

impl fmt::Debug for WireCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WireCache").field("kept_bytes", &self.kept_bytes()).finish()
    }
}

/// A history's messages as a provider wrote them, inside the request body they were written for:
/// the body's opening (`{"messages":[`), the messages, and the points a later request may resume
/// from.
///
/// The body is written in place: [`WirePrefix::open`] starts it, the messages are appended to
/// [`WirePrefix::bytes_mut`], and [`WirePrefix::close`] ends the array and appends the rest of
/// the body, sharing the bytes with the request rather than copying them. The next request built
/// on the prefix gets the same bytes back once the body is dropped, cuts them back to the kept
/// messages and appends its own: a long history is neither serialized nor copied again.
///
/// ```
/// use sinew_core::wire::WirePrefix;
///
/// let mut prefix = WirePrefix::new(7);
/// prefix.open(b"{\"messages\":[");
/// prefix.bytes_mut().extend_from_slice(b"{\"a\":1},");
/// prefix.mark(1);
/// let body = prefix.close(b"],\"stream\":true}");
/// assert_eq!(&body[..], br#"{"messages":[{"a":1}],"stream":true}"#);
/// drop(body);
/// prefix.bytes_mut().extend_from_slice(b"{\"b\":2},");
/// prefix.mark(2);
/// assert_eq!(&prefix.close(b"]}")[..], br#"{"messages":[{"a":1},{"b":2}]}"#);
/// ```
#[derive(Debug, Default)]
pub struct WirePrefix {
    format: u64,
    /// The body being written (empty while it is closed).
    bytes: Vec<u8>,
    /// The body as closed and sent, until it is written on again.
    closed: Option<Closed>,
    /// Where the messages start: the body's opening is before.
    start: usize,
    /// (messages written, where their bytes end in the body), ascending: the points a later
    /// request may resume from.
    marks: Vec<(usize, usize)>,
}

/// A closed body: its messages end at `messages_end`, and the last one's comma, at `comma`, was
/// overwritten by the array's end.
#[derive(Debug)]
struct Closed {
    body: Arc<Vec<u8>>,
    messages_end: usize,
    comma: Option<usize>,
}

/// A closed body's bytes, shared with the prefix that wrote them.
struct SharedBody(Arc<Vec<u8>>);

impl AsRef<[u8]> for SharedBody {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl WirePrefix {
    /// An empty prefix. `format` names what decides the bytes of a message (the wire format and
    /// the provider settings that shape it): bytes of another format are never reused.
    pub fn new(format: u64) -> Self {
        WirePrefix { format, ..WirePrefix::default() }
    }

    /// How many messages the bytes up to the last mark cover: where writing resumes.
    pub fn messages(&self) -> usize {
        self.marks.last().map_or(0, |&(messages, _)| messages)
    }

    /// The messages' bytes written, each followed by its comma (but the last, once the body is
    /// closed).
    pub fn bytes(&self) -> &[u8] {
        let (body, end) = match &self.closed {
            Some(closed) => (&closed.body[..], closed.comma.unwrap_or(closed.messages_end)),
            None => (&self.bytes[..], self.bytes.len()),
        };
        body.get(self.start..end).unwrap_or_default()
    }

    /// The body being written: its opening, then the messages. Only append to it: the next
    /// message's bytes, each followed by a comma, then mark them (a prefix whose bytes were cut
    /// below its marks is dropped and written again whole).
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        self.reopen()
    }

    /// Starts the body with `opening` (up to and including the `[` of the messages' array, and
    /// whatever comes in it before the history): the kept messages follow it. An opening other
    /// than the one they were written after costs one copy of them.
    pub fn open(&mut self, opening: &[u8]) {
        self.drop_if_cut();
        let start = self.start;
        let buffer = self.reopen();
        if buffer.get(..start) == Some(opening) {
            return;
        }
        let messages = buffer.get(start..).unwrap_or_default();
        let mut moved = Vec::with_capacity(opening.len() + messages.len());
        moved.extend_from_slice(opening);
        moved.extend_from_slice(messages);
        *buffer = moved;
        for mark in &mut self.marks {
            mark.1 = mark.1 - start.min(mark.1) + opening.len();
        }
        self.start = opening.len();
    }

    /// Marks the bytes written so far as those of the first `messages` messages, a point a later
    /// request may resume from: only after a message whose bytes depend on nothing that follows.
    pub fn mark(&mut self, messages: usize) {
        debug_assert!(messages >= self.messages(), "marks ascend");
        let end = self.reopen().len();
        self.marks.push((messages, end));
    }

    /// Ends the body: the messages' array ends where the last comma written is, then `closing`
    /// (`]` and what follows the array, to the body's last `}`) is appended. The body shares its
    /// bytes with the prefix: once it is dropped, the next request takes them back, uncopied.
    pub fn close(&mut self, closing: &[u8]) -> bytes::Bytes {
        let buffer = self.reopen();
        let messages_end = buffer.len();
        let comma = (buffer.last() == Some(&b',')).then(|| messages_end - 1);
        if let Some(at) = comma {
            buffer.truncate(at);
        }
        buffer.extend_from_slice(closing);
        let body = Arc::new(std::mem::take(buffer));
        self.closed = Some(Closed { body: Arc::clone(&body), messages_end, comma });
        bytes::Bytes::from_owner(SharedBody(body))
    }

    /// Cuts back to the last mark within the first `messages` messages.
    fn cut(&mut self, messages: usize) {
        self.drop_if_cut();
        let keep = self.marks.partition_point(|&(count, _)| count <= messages);
        self.marks.truncate(keep);
        let end = self.marks.last().map_or(self.start, |&(_, end)| end);
        self.reopen().truncate(end);
    }

    /// Starts again from nothing if the bytes were cut below the opening or a mark (only appending
    /// is allowed): what the marks claim is written must be there.
    fn drop_if_cut(&mut self) {
        let claimed = self.marks.last().map_or(self.start, |&(_, end)| end).max(self.start);
        if self.reopen().len() < claimed {
            *self = WirePrefix::new(self.format);
        }
    }

    /// The buffer to write in: a closed body's bytes taken back (copied only while the body is
    /// still alive elsewhere), its messages' last comma put back.
    fn reopen(&mut self) -> &mut Vec<u8> {
        if let Some(Closed { body, messages_end, comma }) = self.closed.take() {
            self.bytes =
                Arc::try_unwrap(body).unwrap_or_else(|shared| shared.get(..messages_end).unwrap_or(&shared).to_vec());
            self.bytes.truncate(messages_end);
            if let Some(at) = comma {
                // The comma was the messages' last byte.
                self.bytes.truncate(at);
                self.bytes.push(b',');
            }
        }
        &mut self.bytes
    }
}

/// A request's link to its history's [`WireCache`] ([`StreamRequest::history`]).
///
/// [`StreamRequest::history`]: crate::StreamRequest::history
#[derive(Clone, Copy, Debug)]
pub struct HistoryCache<'a> {
    /// The history's cache.
    pub cache: &'a WireCache,
    /// How many of the request's first messages have not changed since `cache` was last cleared
    /// (the agent loop: how many its previous request sent; it clears the cache when the
    /// history is rewritten). Only bytes written for those are reused.
    pub unchanged: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(marks: &[usize]) -> WireCache {
        let cache = WireCache::default();
        let mut prefix = WirePrefix::new(1);
        let mut last = 0;
        for &mark in marks {
            for message in last..mark {
                prefix.bytes_mut().extend_from_slice(format!("m{message},").as_bytes());
            }
            prefix.mark(mark);
            last = mark;
        }
        prefix.bytes_mut().extend_from_slice(b"tail,");
        cache.keep(prefix);
        cache
    }

    #[test]
    fn a_prefix_is_cut_back_to_a_mark_within_the_unchanged_messages() {
        // Marks after 1, 3 and 4 messages (none after the second: its bytes depend on the third).
        for (unchanged, messages, bytes) in [
            (0, 0, ""),
            (1, 1, "m0,"),
            (2, 1, "m0,"),
            (3, 3, "m0,m1,m2,"),
            (4, 4, "m0,m1,m2,m3,"),
            (9, 4, "m0,m1,m2,m3,"),
        ] {
            let prefix = written(&[1, 3, 4]).take(1, unchanged);
            assert_eq!((prefix.messages(), prefix.bytes()), (messages, bytes.as_bytes()), "unchanged {unchanged}");
        }
    }

    #[test]
    fn a_prefix_is_taken_once_and_never_in_another_format() {
        let cache = written(&[2]);
        assert_eq!(cache.take(2, 2).messages(), 0, "another format");
        assert_eq!(cache.kept_bytes(), 0, "taking empties the cache");
        let cache = written(&[2]);
        assert_eq!(cache.take(1, 2).messages(), 2);
        assert_eq!(cache.take(1, 2).messages(), 0, "taken already");
        let cache = written(&[2]);
        cache.clear();
        assert_eq!(cache.take(1, 2).messages(), 0);
    }

    /// Writes `{"messages":[` + one message per `marks` entry, closes, and keeps.
    fn body_of(cache: &WireCache, opening: &[u8], messages: std::ops::Range<usize>) -> bytes::Bytes {
        let mut prefix = cache.take(1, messages.start);
        prefix.open(opening);
        for message in messages {
            prefix.bytes_mut().extend_from_slice(format!("{{\"m\":{message}}},").as_bytes());
            prefix.mark(message + 1);
        }
        let body = prefix.close(b"],\"stream\":true}");
        cache.keep(prefix);
        body
    }

    #[test]
    fn a_body_is_written_in_place_and_taken_back_uncopied_once_dropped() {
        let cache = WireCache::default();
        let first = body_of(&cache, b"{\"messages\":[", 0..2);
        assert_eq!(&first[..], br#"{"messages":[{"m":0},{"m":1}],"stream":true}"#);
        let address = first.as_ptr();
        drop(first);
        let second = body_of(&cache, b"{\"messages\":[", 2..3);
        assert_eq!(&second[..], br#"{"messages":[{"m":0},{"m":1},{"m":2}],"stream":true}"#);
        assert_eq!(second.as_ptr(), address, "the history's bytes were written on, not copied");
    }

    #[test]
    fn a_body_still_alive_is_copied_and_left_as_sent() {
        let cache = WireCache::default();
        let first = body_of(&cache, b"{\"messages\":[", 0..2);
        // One message kept: the next body cuts back to it while the first is still held.
        let second = body_of(&cache, b"{\"messages\":[", 1..2);
        assert_eq!(&first[..], br#"{"messages":[{"m":0},{"m":1}],"stream":true}"#, "unchanged");
        assert_eq!(&second[..], br#"{"messages":[{"m":0},{"m":1}],"stream":true}"#);
        assert_ne!(first.as_ptr(), second.as_ptr());
    }

    #[test]
    fn the_array_ends_on_the_last_comma_even_one_of_the_opening() {
        let cache = WireCache::default();
        // An opening with an element of its own (a system message) and no history.
        let body = body_of(&cache, b"{\"messages\":[{\"s\":1},", 0..0);
        assert_eq!(&body[..], br#"{"messages":[{"s":1}],"stream":true}"#);
        drop(body);
        let body = body_of(&cache, b"{\"messages\":[{\"s\":1},", 0..1);
        assert_eq!(&body[..], br#"{"messages":[{"s":1},{"m":0}],"stream":true}"#, "the comma was put back");
        let empty = WirePrefix::new(1).close(b"]}");
        assert_eq!(&empty[..], b"]}", "nothing opened: only the closing");
    }

    #[test]
    fn another_opening_moves_the_kept_messages_behind_it() {
        let cache = WireCache::default();
        drop(body_of(&cache, b"{\"model\":\"a\",\"messages\":[", 0..2));
        let body = body_of(&cache, b"{\"model\":\"bb\",\"messages\":[", 2..3);
        assert_eq!(&body[..], br#"{"model":"bb","messages":[{"m":0},{"m":1},{"m":2}],"stream":true}"#);
        drop(body);
        // The marks moved with the messages: cutting back to one keeps exactly the first.
        let prefix = cache.take(1, 1);
        assert_eq!((prefix.messages(), prefix.bytes()), (1, &br#"{"m":0},"#[..]));
    }

    #[test]
    fn bytes_cut_below_the_marks_are_written_again_whole() {
        let cache = WireCache::default();
        drop(body_of(&cache, b"{\"messages\":[", 0..2));
        let mut prefix = cache.take(1, 2);
        assert_eq!(prefix.messages(), 2);
        prefix.bytes_mut().truncate(5);
        cache.keep(prefix);
        let mut prefix = cache.take(1, 2);
        assert_eq!(prefix.messages(), 0, "the marks claimed bytes that are gone");
        prefix.open(b"{\"messages\":[");
        prefix.bytes_mut().extend_from_slice(b"{\"m\":0},");
        assert_eq!(&prefix.close(b"]}")[..], br#"{"messages":[{"m":0}]}"#);
    }
}
