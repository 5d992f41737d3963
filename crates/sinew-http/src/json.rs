//! What the stream decoders share to read events into typed, borrowed structs rather than a
//! `serde_json::Value` tree (which allocates a map per object, a string per key). A typed reading
//! is a fast path: it reads what a `Value` lookup would, and where it cannot (a field of another
//! shape than expected), the decoder reads the event whole instead. Fields a typed reading skips
//! are checked to be well-formed JSON, not validated further: a lone surrogate escape, a number
//! out of `f64`'s range or nesting deeper than the 128 levels a tree reading takes, inside a
//! skipped field, is let through.

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// `value` as compact JSON text, what `value.to_string()` gives, written straight into a buffer
/// rather than through the `Display` machinery: request bodies hold whole histories, and tool
/// arguments are sent as text on every call.
pub fn text(value: &Value) -> String {
    // A `Value` always serializes: its keys are strings, its numbers finite.
    serde_json::to_string(value).unwrap_or_default()
}

/// [`text`] as bytes, for a request body; also a builder's borrowed wire structs, which always
/// serialize as well (their keys are strings; serde_json writes a float that is not finite as
/// `null`).
pub fn bytes(value: &(impl Serialize + ?Sized)) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

/// A tool call's arguments for a service that takes an object: an object as it is, any other value
/// wrapped as `{"value": ...}`.
///
/// ```
/// use sinew_http::json::{ObjectArguments, bytes};
///
/// assert_eq!(bytes(&ObjectArguments::new(&serde_json::json!({"a": 1}))), br#"{"a":1}"#);
/// assert_eq!(bytes(&ObjectArguments::new(&serde_json::json!([1]))), br#"{"value":[1]}"#);
/// ```
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(untagged)]
pub enum ObjectArguments<'a> {
    /// An object, as it is.
    Object(&'a Value),
    /// Any other value, under `value`.
    Wrapped {
        /// The arguments.
        value: &'a Value,
    },
}

impl<'a> ObjectArguments<'a> {
    /// `arguments` as an object.
    pub fn new(arguments: &'a Value) -> Self {
        if arguments.is_object() {
            ObjectArguments::Object(arguments)
        } else {
            ObjectArguments::Wrapped { value: arguments }
        }
    }
}

/// [`bytes()`] written at the end of `out`.
pub fn write(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    let _ = serde_json::to_writer(out, value);
}

/// The start of a request body whose history array a [`WirePrefix`] writes in place: `{`, the
/// members of `before` (a serialized object, `{...}`), then `"key":[`. [`array_closing`] ends it.
///
/// ```
/// use sinew_http::json::{array_closing, array_opening};
///
/// let mut body = array_opening(br#"{"model":"m"}"#, "messages");
/// body.extend_from_slice(b"1,2");
/// body.extend_from_slice(&array_closing(br#"{"stream":true}"#));
/// assert_eq!(body, br#"{"model":"m","messages":[1,2],"stream":true}"#);
/// assert_eq!([array_opening(b"{}", "contents"), array_closing(b"{}")].concat(), br#"{"contents":[]}"#);
/// ```
///
/// [`WirePrefix`]: sinew_core::WirePrefix
pub fn array_opening(before: &[u8], key: &str) -> Vec<u8> {
    let before = members(before);
    let mut opening = Vec::with_capacity(before.len() + key.len() + 6);
    opening.push(b'{');
    if !before.is_empty() {
        opening.extend_from_slice(before);
        opening.push(b',');
    }
    opening.push(b'"');
    opening.extend_from_slice(key.as_bytes());
    opening.extend_from_slice(b"\":[");
    opening
}

/// The end of a body [`array_opening`] started: `]`, the members of `after` (a serialized
/// object), `}`.
pub fn array_closing(after: &[u8]) -> Vec<u8> {
    let after = members(after);
    let mut closing = Vec::with_capacity(after.len() + 3);
    closing.push(b']');
    if !after.is_empty() {
        closing.push(b',');
        closing.extend_from_slice(after);
    }
    closing.push(b'}');
    closing
}

/// What is between a serialized object's braces.
fn members(object: &[u8]) -> &[u8] {
    object.get(1..object.len().saturating_sub(1)).unwrap_or_default()
}

/// A request body a builder wrote, read back as a tree (for a builder's `body()`, which snapshot
/// tests and hosts with their own transport read). serde_json reads 128 levels of nesting: a body
/// nested deeper (a tool schema that deep) is `Value::Null`, with a warning; the bytes themselves
/// go out whole.
///
/// ```
/// use sinew_http::json::read_body;
///
/// assert_eq!(read_body(br#"{"a":[1]}"#), serde_json::json!({"a": [1]}));
/// let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
/// assert_eq!(read_body(deep.as_bytes()), serde_json::Value::Null);
/// ```
pub fn read_body(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|error| {
        tracing::warn!(%error, "the request body cannot be read back as a JSON tree");
        Value::Null
    })
}

/// A field read as a string when it is one, and as nothing when it holds anything else: a decoder
/// reads the fields it knows without failing on one whose shape it does not expect. Borrowed from
/// the event when the string has no escapes.
///
/// ```
/// use sinew_http::json::MaybeStr;
///
/// #[derive(serde::Deserialize)]
/// struct Delta<'a> {
///     #[serde(default, borrow)]
///     text: MaybeStr<'a>,
/// }
/// let delta: Delta<'_> = serde_json::from_str(r#"{"text": "Hello"}"#).unwrap();
/// assert_eq!(delta.text.as_str(), Some("Hello"));
/// let other: Delta<'_> = serde_json::from_str(r#"{"text": {"value": 1}}"#).unwrap();
/// assert_eq!(other.text.as_str(), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MaybeStr<'a>(pub Option<Cow<'a, str>>);

impl MaybeStr<'_> {
    /// The string, if the field held one.
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for MaybeStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyValue).map(|value| match value {
            Scalar::Text(text) => MaybeStr(Some(text)),
            _ => MaybeStr(None),
        })
    }
}

/// A field read as a count when it is a non-negative integer (what `Value::as_u64` finds), and as
/// nothing when it holds anything else (a float, a negative number, a string...).
///
/// ```
/// use sinew_http::json::MaybeU64;
///
/// #[derive(serde::Deserialize)]
/// struct Usage {
///     #[serde(default)]
///     tokens: MaybeU64,
/// }
/// let read = |text: &str| serde_json::from_str::<Usage>(text).unwrap().tokens.0;
/// assert_eq!(read(r#"{"tokens": 7}"#), Some(7));
/// assert_eq!((read(r#"{"tokens": 7.0}"#), read(r#"{"tokens": -0}"#), read(r#"{"tokens": [1]}"#)), (None, None, None));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaybeU64(pub Option<u64>);

impl<'de> Deserialize<'de> for MaybeU64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyValue).map(|value| match value {
            Scalar::Count(count) => MaybeU64(Some(count)),
            _ => MaybeU64(None),
        })
    }
}

/// A field read as `T` when it is a JSON object, and as nothing when it holds anything else (as a
/// `Value` lookup into it would find nothing). Unlike a derived struct alone, it never reads an
/// array as a struct by position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Object<T>(pub Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Object(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjectOnly(PhantomData))
    }
}

struct ObjectOnly<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOnly<T> {
    type Value = Object<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
    }

    fn visit_borrowed_str<E>(self, _: &'de str) -> Result<Self::Value, E> {
        Ok(Object(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Object(None))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Object(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Object(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Object(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Object(None))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Object(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Object(None))
    }
}

/// Whether `data` (an event's payload) is a JSON object: a typed reading of anything else could
/// read an array as a struct by position.
pub fn is_object(data: &[u8]) -> bool {
    data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// What a lenient field found: a string, a non-negative integer, or anything else (read whole
/// and dropped).
enum Scalar<'de> {
    Text(Cow<'de, str>),
    Count(u64),
    Other,
}

struct AnyValue;

impl<'de> Visitor<'de> for AnyValue {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Text(Cow::Owned(v)))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::Count(v))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Other)
    }
}

/// A reader of the JSON that per-token events hold, for a decoder's fast path ahead of its
/// serde reading: objects, arrays, strings, integers and the three literals, read in place. A
/// string with escapes is read only where the caller asks for one that may have them
/// ([`Scan::string_unescaped`], which serde_json decodes); [`Scan::string`], and so every key,
/// refuses it. It answers `None` wherever it meets anything else (fractions, exponents, nesting a
/// caller did not ask for), and the decoder then reads the event its general way; so whatever it
/// accepts, serde_json reads alike. A caller keeps the rule serde's derived structs follow: a
/// known key given twice is no fast path either.
///
/// ```
/// use sinew_http::json::Scan;
///
/// let mut scan = Scan::new(r#"{"a": "x", "b": [1, null]}"#);
/// let mut seen = Vec::new();
/// let read = scan.object(|scan, key| {
///     match key {
///         "a" => seen.push(scan.string()?.to_owned()),
///         _ => scan.array(|scan| scan.skip_scalar())?,
///     }
///     Some(())
/// });
/// assert!(read.is_some() && scan.end().is_some());
/// assert_eq!(seen, ["x"]);
/// assert!(Scan::new(r#""\n""#).string().is_none());
/// assert_eq!(Scan::new(r#""\n""#).string_unescaped().as_deref(), Some("\n"));
/// ```
#[derive(Debug)]
pub struct Scan<'a> {
    text: &'a str,
    at: usize,
}

/// Where a string's plain text ends: at the first `"`, `\\` or control character, read eight
/// bytes at a time (most strings here are keys, ids and tokens, too short for a vector search to
/// pay).
fn string_length(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let mut eight = [0; 8];
        eight.copy_from_slice(word);
        let x = u64::from_le_bytes(eight);
        let quotes = x ^ (ONES * u64::from(b'"'));
        let backslashes = x ^ (ONES * u64::from(b'\\'));
        // A byte's high bit is set where it is zero (a quote, a backslash), or below 0x20; the
        // lowest set bit is always a true match (a false one only follows a true one).
        let zero = |y: u64| y.wrapping_sub(ONES) & !y;
        let found = (zero(quotes) | zero(backslashes) | (x.wrapping_sub(ONES * 0x20) & !x)) & HIGHS;
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words.remainder().iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20).map(|i| at + i)
}

impl<'a> Scan<'a> {
    /// A reader of `text`, from its start.
    pub fn new(text: &'a str) -> Self {
        Scan { text, at: 0 }
    }

    fn rest(&self) -> &'a [u8] {
        self.text.as_bytes().get(self.at..).unwrap_or_default()
    }

    /// The next byte after whitespace, not taken.
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(self.at) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.at += 1;
        }
        None
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn literal(&mut self, word: &str) -> bool {
        let found = self.peek().is_some() && self.rest().starts_with(word.as_bytes());
        if found {
            self.at += word.len();
        }
        found
    }

    /// Takes a `null`; `false` (and nothing taken) when the next value is something else.
    pub fn null(&mut self) -> bool {
        self.literal("null")
    }

    /// `true` or `false`.
    pub fn bool(&mut self) -> Option<bool> {
        if self.literal("true") { Some(true) } else { self.literal("false").then_some(false) }
    }

    /// A string without escapes or control characters, borrowed from the text.
    pub fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let length = string_length(self.rest())?;
        if self.rest().get(length) != Some(&b'"') {
            return None;
        }
        let start = self.at;
        self.at += length + 1;
        // Both ends are at an ASCII quote: character boundaries.
        self.text.get(start..start + length)
    }

    /// A string, or `None` for `null`.
    pub fn string_or_null(&mut self) -> Option<Option<&'a str>> {
        if self.null() { Some(None) } else { self.string().map(Some) }
    }

    /// A string that may hold escapes (a tool call's arguments, which are JSON in a string):
    /// borrowed from the text when it has none, else decoded by serde_json. `None` for what
    /// serde_json refuses, and for a control character.
    pub fn string_unescaped(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.at;
        let bytes = self.text.as_bytes();
        let mut end = start + string_length(self.rest())?;
        let mut escaped = false;
        while bytes.get(end) == Some(&b'\\') {
            // An escape is two bytes (`\u`'s four hex digits are read on as text).
            escaped = true;
            end += 2;
            end += string_length(bytes.get(end..)?)?;
        }
        if bytes.get(end) != Some(&b'"') {
            return None;
        }
        // Past the string even when serde_json refuses it below: a caller gives up on `None`.
        self.at = end + 1;
        if escaped {
            // With its quotes; both ends are at an ASCII quote, so at character boundaries.
            serde_json::from_str::<String>(self.text.get(start - 1..=end)?).ok().map(Cow::Owned)
        } else {
            self.text.get(start..end).map(Cow::Borrowed)
        }
    }

    /// [`Scan::string_unescaped`], or `None` for `null`.
    pub fn string_unescaped_or_null(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.null() { Some(None) } else { self.string_unescaped().map(Some) }
    }

    /// A non-negative integer that fits a `u64`, written as JSON writes one (no leading zero, no
    /// fraction or exponent).
    pub fn u64(&mut self) -> Option<u64> {
        self.peek()?;
        let digits = self.rest().iter().take_while(|b| b.is_ascii_digit()).count();
        let text = self.text.get(self.at..self.at + digits)?;
        if digits == 0 || (digits > 1 && text.starts_with('0')) {
            return None;
        }
        if matches!(self.rest().get(digits), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let value = text.parse().ok()?;
        self.at += digits;
        Some(value)
    }

    /// Skips a string, an integer (also negative), `true`, `false` or `null`.
    pub fn skip_scalar(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'-' => {
                self.at += 1;
                // `-` then the integer, with nothing between them.
                if !self.rest().first()?.is_ascii_digit() {
                    return None;
                }
                self.u64().map(drop)
            }
            b'0'..=b'9' => self.u64().map(drop),
            _ => (self.literal("true") || self.literal("false") || self.null()).then_some(()),
        }
    }

    /// Skips any value nested at most 16 levels deep (what serde reads and ignores of a field it
    /// does not know), its strings, integers and literals as [`Scan`] reads them.
    pub fn skip_value(&mut self) -> Option<()> {
        self.skip_nested(16)
    }

    fn skip_nested(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' if depth > 0 => self.object(|scan, _| scan.skip_nested(depth - 1)),
            b'[' if depth > 0 => self.array(|scan| scan.skip_nested(depth - 1)),
            b'{' | b'[' => None,
            _ => self.skip_scalar(),
        }
    }

    /// Reads an object, giving `member` each key, with the reader at its value (which `member`
    /// must read whole).
    pub fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(self, key)?;
            if !self.another(b'}')? {
                return Some(());
            }
        }
    }

    /// Reads an object of which the caller takes `N` keys, each numbered by `slot_of` (a `match`
    /// compiles to fewer comparisons than a search): `known` reads the value of each, at most
    /// once (a known key given twice is `None`, as serde's derived structs refuse it), `other`
    /// the value of every other key.
    ///
    /// ```
    /// use sinew_http::json::Scan;
    ///
    /// let read = |text: &str| {
    ///     let (mut a, mut others) = (None, 0);
    ///     let mut scan = Scan::new(text);
    ///     let slot_of = |key: &str| (key == "a").then_some(0);
    ///     scan.fields::<1>(slot_of, |scan, _| scan.u64().map(|n| a = Some(n)), |scan, _| {
    ///         others += 1;
    ///         scan.skip_value()
    ///     })?;
    ///     scan.end().map(|()| (a, others))
    /// };
    /// assert_eq!(read(r#"{"b": [1], "a": 2, "c": null}"#), Some((Some(2), 2)));
    /// assert_eq!(read(r#"{"a": 2, "a": 3}"#), None);
    /// ```
    pub fn fields<const N: usize>(
        &mut self,
        slot_of: impl Fn(&str) -> Option<usize>,
        mut known: impl FnMut(&mut Self, usize) -> Option<()>,
        mut other: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        let mut seen = [false; N];
        self.object(|scan, key| match slot_of(key) {
            Some(slot) if !std::mem::replace(seen.get_mut(slot)?, true) => known(scan, slot),
            Some(_) => None,
            None => other(scan, key),
        })
    }

    /// Reads an array, `element` reading each element whole.
    pub fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            if !self.another(b']')? {
                return Some(());
            }
        }
    }

    /// After a member or an element: `true` at a comma, `false` at `close`, either taken.
    fn another(&mut self, close: u8) -> Option<bool> {
        let next = self.peek()?;
        if next != b',' && next != close {
            return None;
        }
        self.at += 1;
        Some(next == b',')
    }

    /// Whether only whitespace is left.
    pub fn end(mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }
}

#[cfg(test)]
mod tests;
