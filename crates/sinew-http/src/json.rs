//! What the stream decoders share to read events into typed, borrowed structs rather than a
//! `serde_json::Value` tree (which allocates a map per object, a string per key): the hot events
//! (one per streamed token) go through them; the rare ones are still read whole.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
        deserializer.deserialize_any(AnyValue)
    }
}

struct AnyValue;

impl<'de> Visitor<'de> for AnyValue {
    type Value = MaybeStr<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(MaybeStr(Some(Cow::Borrowed(v))))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(MaybeStr(Some(Cow::Owned(v.to_owned()))))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(MaybeStr(Some(Cow::Owned(v))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MaybeStr(None))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MaybeStr(None))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MaybeStr(None))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MaybeStr(None))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(MaybeStr(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MaybeStr(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(MaybeStr(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Fields<'a> {
        #[serde(default, borrow)]
        a: MaybeStr<'a>,
        #[serde(default, borrow)]
        b: MaybeStr<'a>,
    }

    #[test]
    fn strings_are_read_and_borrowed_when_they_can_be() {
        let fields: Fields<'_> = serde_json::from_str(r#"{"a": "plain", "b": "esc\"aped"}"#).unwrap();
        assert!(matches!(fields.a.0, Some(Cow::Borrowed("plain"))));
        assert_eq!(fields.b.as_str(), Some("esc\"aped"));
    }

    #[test]
    fn anything_else_is_nothing_and_no_error() {
        for other in ["null", "true", "-1", "2", "1.5", "[1, [2]]", r#"{"x": {"y": [3]}}"#] {
            let json = format!(r#"{{"a": {other}, "b": "after"}}"#);
            let fields: Fields<'_> = serde_json::from_str(&json).unwrap();
            assert_eq!(fields.a.as_str(), None, "{other}");
            assert_eq!(fields.b.as_str(), Some("after"), "{other}: what follows is still read");
        }
        let missing: Fields<'_> = serde_json::from_str("{}").unwrap();
        assert_eq!(missing.a, MaybeStr::default());
    }
}
