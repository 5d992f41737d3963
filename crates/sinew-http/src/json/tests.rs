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

/// A history array goes where its key sorts among the other members, the object stays valid
/// whatever is empty, and the result reads as the object built whole.
#[test]
fn an_array_goes_where_its_key_sorts() {
    let members =
        |pairs: &[(&str, Value)]| pairs.iter().cloned().map(|(k, v)| (k.to_owned(), v)).collect::<Map<String, Value>>();
    let items: [&[u8]; 2] = [b"{\"a\":1},", b"[2],"];
    for others in [
        members(&[]),
        members(&[("include", serde_json::json!(["x"]))]),
        members(&[("model", serde_json::json!("m")), ("stream", serde_json::json!(true))]),
        members(&[("additional", serde_json::json!({})), ("zeta", serde_json::json!(null))]),
    ] {
        let body = sorted_object_with_array(others.clone(), "input", &items);
        let mut whole = others;
        whole.insert("input".into(), serde_json::json!([{"a": 1}, [2]]));
        assert_eq!(body, bytes(&Value::Object(whole)), "{}", String::from_utf8_lossy(&body));
    }
    assert_eq!(sorted_object_with_array(Map::new(), "input", &[]), br#"{"input":[]}"#);
}
