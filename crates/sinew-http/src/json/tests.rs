use serde_json::Map;

use super::*;

#[derive(serde::Deserialize)]
struct Fields<'a> {
    #[serde(default, borrow)]
    a: MaybeStr<'a>,
    #[serde(default, borrow)]
    b: MaybeStr<'a>,
}

#[test]
fn text_is_what_display_gives() {
    let value = serde_json::json!({"b": [1, 2.5, null, true], "a": "quote \" and \u{1}", "c": {"d": {}}});
    assert_eq!(text(&value), value.to_string());
    assert_eq!(bytes(&value), value.to_string().into_bytes());
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

#[derive(Debug, serde::Deserialize, PartialEq)]
struct Inner<'a> {
    #[serde(default, borrow)]
    text: MaybeStr<'a>,
}

#[test]
fn an_object_field_reads_only_objects() {
    #[derive(serde::Deserialize)]
    struct Outer<'a> {
        #[serde(default, borrow)]
        inner: Object<Inner<'a>>,
    }
    let read =
        |json: &str| serde_json::from_str::<Outer<'_>>(json).unwrap().inner.0.map(|i| i.text.0.map(Cow::into_owned));
    assert_eq!(read(r#"{"inner": {"text": "t"}}"#), Some(Some("t".to_owned())));
    for other in [r#"["t"]"#, "null", "\"t\"", "1", "true", "[[1], {}]"] {
        assert_eq!(read(&format!(r#"{{"inner": {other}}}"#)), None, "{other}: not read by position");
    }
    assert_eq!(read("{}"), None);
}

#[test]
fn only_objects_are_objects() {
    assert!(is_object(b" \r\n {\"a\": 1}"));
    for other in [&b"[{}]"[..], b"42", b"", b"  ", b"\"{\""] {
        assert!(!is_object(other), "{other:?}");
    }
}

/// What the typed readings let through that a `Value` would refuse: only inside skipped fields.
#[test]
fn skipped_fields_are_only_checked_to_be_well_formed() {
    for skipped in [r#""\ud800""#, "1e400", &"[".repeat(200)] {
        let closing = if skipped.starts_with('[') { "]".repeat(200) } else { String::new() };
        let json = format!(r#"{{"skipped": {skipped}{closing}, "text": "kept"}}"#);
        assert!(serde_json::from_str::<serde_json::Value>(&json).is_err(), "a Value refuses {skipped:.8}");
        let inner: Inner<'_> = serde_json::from_str(&json).unwrap();
        assert_eq!(inner.text.as_str(), Some("kept"));
    }
    assert!(serde_json::from_str::<Inner<'_>>(r#"{"skipped": [1, }"#).is_err(), "malformed JSON is refused");
}

/// A history array written between [`array_opening`] and [`array_closing`] makes a valid object
/// whatever is empty, which reads as the object built whole.
#[test]
fn an_array_between_members_reads_as_the_object_built_whole() {
    let members =
        |pairs: &[(&str, Value)]| pairs.iter().cloned().map(|(k, v)| (k.to_owned(), v)).collect::<Map<String, Value>>();
    for (before, after) in [
        (members(&[]), members(&[])),
        (members(&[("model", serde_json::json!("m"))]), members(&[])),
        (members(&[]), members(&[("stream", serde_json::json!(true)), ("zeta", serde_json::json!(null))])),
        (members(&[("additional", serde_json::json!({}))]), members(&[("include", serde_json::json!(["x"]))])),
    ] {
        for items in [&b""[..], b"{\"a\":1},[2]"] {
            let mut body = array_opening(&bytes(&Value::Object(before.clone())), "input");
            body.extend_from_slice(items);
            body.extend_from_slice(&array_closing(&bytes(&Value::Object(after.clone()))));
            let mut whole = before.clone();
            whole.extend(after.clone());
            let array: Value = serde_json::from_slice(&[b"[", items, b"]"].concat()).unwrap();
            whole.insert("input".into(), array);
            let read: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(read, Value::Object(whole), "{}", String::from_utf8_lossy(&body));
        }
    }
}

/// What [`Scan`] reads of a whole value, as a tree (a negative integer, which it only skips, as
/// `null`); `None` where it gives up.
fn scanned(scan: &mut Scan<'_>, depth: usize) -> Option<Value> {
    if depth > 16 {
        return None;
    }
    match scan.peek()? {
        b'{' => {
            let mut map = Map::new();
            scan.object(|scan, key| {
                let value = scanned(scan, depth + 1)?;
                map.insert(key.to_owned(), value);
                Some(())
            })?;
            Some(Value::Object(map))
        }
        b'[' => {
            let mut items = Vec::new();
            scan.array(|scan| {
                items.push(scanned(scan, depth + 1)?);
                Some(())
            })?;
            Some(Value::Array(items))
        }
        b'"' => scan.string().map(Value::from),
        b'0'..=b'9' => scan.u64().map(Value::from),
        b'-' => scan.skip_scalar().map(|()| Value::Null),
        _ if scan.null() => Some(Value::Null),
        _ => {
            let before = scan.at;
            scan.skip_scalar()?;
            Some(Value::Bool(scan.text.get(before..scan.at)?.trim_start().starts_with('t')))
        }
    }
}

/// What [`Scan::skip_value`] accepts whole.
fn skips_whole(text: &str) -> bool {
    let mut scan = Scan::new(text);
    scan.skip_value().is_some() && scan.end().is_some()
}

fn scan_whole(text: &str) -> Option<Value> {
    let mut scan = Scan::new(text);
    let value = scanned(&mut scan, 0)?;
    scan.end().map(|()| value)
}

/// serde_json's tree, negative integers as `null` (what [`scanned`] makes of them).
fn as_scanned(value: Value) -> Value {
    match value {
        Value::Number(n) if n.as_f64().is_some_and(f64::is_sign_negative) => Value::Null,
        Value::Array(items) => Value::Array(items.into_iter().map(as_scanned).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, as_scanned(v))).collect()),
        other => other,
    }
}

/// JSON values with the scalars `Scan` reads: integers, strings without escapes, literals.
fn plain_values() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (i64::MIN..0).prop_map(Value::from),
        "[ -!#-\\[\\]-~é😀]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(("[a-z]{0,3}", inner), 0..4)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

/// `text` with whitespace after some of its structural characters.
fn spaced(text: &str, spaces: &[bool]) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut in_string = false;
    for (i, c) in text.chars().enumerate() {
        out.push(c);
        if c == '"' {
            in_string = !in_string;
        }
        if !in_string
            && matches!(c, '{' | '[' | ':' | ',' | '}' | ']')
            && spaces.get(i % spaces.len().max(1)) == Some(&true)
        {
            out.push_str(" \n\t");
        }
    }
    out
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(2048))]

    /// What `Scan` reads whole, it reads as serde_json does: every plain value, spaced or not.
    #[test]
    fn plain_json_is_scanned_as_serde_reads_it(value in plain_values(), spaces in proptest::collection::vec(proptest::bool::ANY, 1..8)) {
        let text = spaced(&value.to_string(), &spaces);
        let read: Value = serde_json::from_str(&text).unwrap();
        proptest::prop_assert_eq!(scan_whole(&text), Some(as_scanned(read)), "{}", text);
    }

    /// Whatever it accepts of a damaged or hostile text, serde_json accepts and reads alike: a
    /// byte removed, doubled or replaced by one JSON gives meaning to.
    #[test]
    fn damaged_json_is_refused_or_read_as_serde_reads_it(
        value in plain_values(),
        at in proptest::num::usize::ANY,
        edit in 0..3_u8,
        byte in proptest::sample::select(b"{}[]:,\"-0.e+\\\n\x01 tnulfa9".to_vec()),
    ) {
        let mut bytes = value.to_string().into_bytes();
        let at = at % (bytes.len() + 1);
        match edit {
            0 if at < bytes.len() => drop(bytes.remove(at)),
            1 => bytes.insert(at, byte),
            _ if at < bytes.len() => bytes[at] = byte,
            _ => bytes.push(byte),
        }
        if let Ok(text) = std::str::from_utf8(&bytes)
            && let Some(scanned) = scan_whole(text)
        {
            let read: Result<Value, _> = serde_json::from_str(text);
            proptest::prop_assert!(read.is_ok(), "scanned what serde_json refuses: {}", text);
            proptest::prop_assert_eq!(scanned, as_scanned(read.unwrap()), "{}", text);
        }
        // Skipping accepts exactly what reading does (nothing here nests deeper than 16).
        if let Ok(text) = std::str::from_utf8(&bytes) {
            proptest::prop_assert_eq!(skips_whole(text), scan_whole(text).is_some(), "{}", text);
        }
    }
}

#[test]
fn scan_refuses_what_it_does_not_read() {
    for text in [
        r#"{"a": "\n"}"#,
        "{\"a\": \"x\ny\"}",
        r#"{"a": 1.5}"#,
        r#"{"a": 1e3}"#,
        r#"{"a": 01}"#,
        r#"{"a": - 1}"#,
        r#"{"a": 18446744073709551616}"#,
        r#"{"a": nul}"#,
        r#"{"a": "x",}"#,
        r#"{"a" "x"}"#,
        r#"{"a": "x"} x"#,
        r#"["a" "b"]"#,
    ] {
        assert_eq!(scan_whole(text), None, "{text}");
    }
    assert_eq!(scan_whole(" { \"a\" : [ ] , \"b\" : { } } \n"), Some(serde_json::json!({"a": [], "b": {}})));
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(skips_whole(&nested(16)) && !skips_whole(&nested(17)));
}

proptest::proptest! {
    /// The word-at-a-time search finds what a byte-at-a-time one does: the first quote, backslash
    /// or control character, in any text (UTF-8 sequences and every byte value around the bounds
    /// included).
    #[test]
    fn a_string_ends_where_a_plain_search_says(
        bytes in proptest::collection::vec(
            proptest::prop_oneof![
                1 => proptest::strategy::Just(b'"'),
                1 => 0_u8..0x20,
                1 => proptest::strategy::Just(b'\\'),
                5 => 0x5a_u8..0x5e,
                10 => 0x1e_u8..0x24,
                10 => 0x7e_u8..=0xff,
                20 => proptest::strategy::Just(b'a'),
            ],
            0..64,
        )
    ) {
        let plain = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        proptest::prop_assert_eq!(string_length(&bytes), plain);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(2048))]

    /// A string with escapes reads as serde_json reads it: any text written by serde_json and,
    /// damaged, exactly what serde_json still reads. Without escapes it stays borrowed.
    #[test]
    fn a_string_with_escapes_reads_as_serde_reads_it(
        text in "(\\PC|[\"\\\\\u{0}-\u{1f}\u{7f}\u{2028}]){0,24}",
        at in proptest::num::usize::ANY,
        edit in 0..4_u8,
        byte in proptest::sample::select(b"\"\\u0aZ\n\x01/bfnrt".to_vec()),
    ) {
        let written = serde_json::to_string(&text).unwrap();
        let mut scan = Scan::new(&written);
        let read = scan.string_unescaped();
        proptest::prop_assert_eq!(read.as_deref(), Some(text.as_str()));
        proptest::prop_assert_eq!(matches!(read, Some(Cow::Borrowed(_))), !written.contains('\\'));
        proptest::prop_assert!(scan.end().is_some());
        // Every character escaped as UTF-16 units, upper or lower case: surrogate pairs too.
        let units: String = text
            .encode_utf16()
            .enumerate()
            .map(|(i, u)| if i % 2 == 0 { format!("\\u{u:04x}") } else { format!("\\u{u:04X}") })
            .collect();
        let all_escaped = format!("\"{units}\"");
        let read = Scan::new(&all_escaped).string_unescaped();
        proptest::prop_assert_eq!(read.as_deref(), Some(text.as_str()), "{}", all_escaped);

        let mut bytes = written.into_bytes();
        let at = at % (bytes.len() + 1);
        match edit {
            0 if at < bytes.len() => drop(bytes.remove(at)),
            1 => bytes.insert(at, byte),
            2 if at < bytes.len() => bytes[at] = byte,
            _ => bytes.push(byte),
        }
        if let Ok(damaged) = std::str::from_utf8(&bytes) {
            let mut scan = Scan::new(damaged);
            let scanned = scan.string_unescaped().filter(|_| scan.end().is_some());
            let read: Result<String, _> = serde_json::from_str(damaged);
            match scanned {
                Some(scanned) => {
                    proptest::prop_assert_eq!(Some(scanned.as_ref()), read.as_deref().ok(), "{}", damaged);
                }
                // Refused: serde_json refuses it too.
                None => proptest::prop_assert!(read.is_err(), "refused what serde_json reads: {}", damaged),
            }
        }
    }
}

#[test]
fn plain_strings_refuse_escapes_and_unescaped_ones_take_them() {
    let text = r#"{"k": "a\"b", "e": "\u00e9\ud83d\ude00", "p": "plain", "bad": "\x"}"#;
    let mut scan = Scan::new(text);
    let mut read = Vec::new();
    let whole = scan.object(|scan, key| {
        let value = scan.string_unescaped()?;
        read.push((key, value));
        Some(())
    });
    // The invalid escape ends the reading; what came before was read.
    assert!(whole.is_none());
    assert_eq!(
        read,
        [("k", Cow::Owned("a\"b".to_owned())), ("e", Cow::Owned("é😀".to_owned())), ("p", Cow::Borrowed("plain"))]
    );
    assert_eq!(Scan::new(r#""a\"b""#).string(), None);
    let check = |text: &str, expected: Option<&str>| {
        assert_eq!(Scan::new(text).string_unescaped().as_deref(), expected, "{text}");
    };
    check(r#""\"""#, Some("\""));
    check(r#""\""#, None);
    check("\"a\nb\"", None); // a raw control character
    // Every escape, surrogate pairs in either case, and the ways serde_json refuses them: the
    // same reading as serde_json's.
    for text in [
        r#""\"\\\/\b\f\n\r\t""#,
        r#""\u00e9\u0000\u001F\uFFFF""#,
        r#""\ud83d\ude00 \uD83D\uDE00""#,
        r#""\ud83d""#,
        r#""\ude00""#,
        r#""\ud83d\u0041""#,
        r#""\ud83dx""#,
        r#""\ud83d\""#,
        r#""\u12""#,
        r#""\u12G4""#,
        r#""\x""#,
        r#""é\né""#,
    ] {
        check(text, serde_json::from_str::<String>(text).ok().as_deref());
    }
    assert_eq!(Scan::new(r#"{"a\u0062": 1}"#).object(|scan, _| scan.u64().map(drop)), None, "an escaped key");
}
