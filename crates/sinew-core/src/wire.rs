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
//! The cache holds a second copy of the history as the last provider that used it wrote it
//! (images as base64 included), for as long as the history lives.
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
use std::sync::{Mutex, PoisonError};

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
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).as_ref().map_or(0, |p| p.bytes.len())
    }
}

impl fmt::Debug for WireCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WireCache").field("kept_bytes", &self.kept_bytes()).finish()
    }
}

/// A history's messages as a provider wrote them: the bytes, and the points it can resume from.
#[derive(Debug, Default)]
pub struct WirePrefix {
    format: u64,
    bytes: Vec<u8>,
    /// (messages written, bytes written then), ascending: the points a later request may resume
    /// from.
    marks: Vec<(usize, usize)>,
}

impl WirePrefix {
    /// An empty prefix. `format` names what decides the bytes of a message (the wire format and
    /// the provider settings that shape it): bytes of another format are never reused.
    pub fn new(format: u64) -> Self {
        WirePrefix { format, bytes: Vec::new(), marks: Vec::new() }
    }

    /// How many messages the bytes up to the last mark cover: where writing resumes.
    pub fn messages(&self) -> usize {
        self.marks.last().map_or(0, |&(messages, _)| messages)
    }

    /// The bytes written.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The buffer to write the next messages into.
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Marks the bytes written so far as those of the first `messages` messages, a point a later
    /// request may resume from: only after a message whose bytes depend on nothing that follows.
    pub fn mark(&mut self, messages: usize) {
        debug_assert!(messages >= self.messages(), "marks ascend");
        self.marks.push((messages, self.bytes.len()));
    }

    /// Cuts back to the last mark within the first `messages` messages.
    fn cut(&mut self, messages: usize) {
        let keep = self.marks.partition_point(|&(count, _)| count <= messages);
        self.marks.truncate(keep);
        self.bytes.truncate(self.marks.last().map_or(0, |&(_, len)| len));
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
}
