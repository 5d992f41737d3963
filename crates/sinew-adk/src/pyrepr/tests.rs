use serde_json::json;

use super::*;

/// Each `expected` is what CPython 3.11 prints for `repr(json.loads(input))`.
#[test]
fn values_print_as_python_prints_them() {
    let cases = [
        (json!({"result": null}), "{'result': None}"),
        (json!({"agent_name": "sub_a"}), "{'agent_name': 'sub_a'}"),
        (json!([true, false, 1, -2, 1.5, 2.0]), "[True, False, 1, -2, 1.5, 2.0]"),
        (json!("it's"), "\"it's\""),
        (json!("it's \"quoted\""), "'it\\'s \"quoted\"'"),
        (json!("line\nbreak\ttab\\"), "'line\\nbreak\\ttab\\\\'"),
        (json!("\u{7}bell \u{a0}nbsp é ü 日本"), "'\\x07bell \\xa0nbsp é ü 日本'"),
        (json!("\u{2028}"), "'\\u2028'"),
        (json!(1e16), "1e+16"),
        (json!(1.5e-7), "1.5e-07"),
        (json!(0.0001), "0.0001"),
        (json!(123456.789), "123456.789"),
        (json!(1e15), "1000000000000000.0"),
        (json!(-0.5), "-0.5"),
        (json!({"nested": {"a": [1, {"b": null}]}}), "{'nested': {'a': [1, {'b': None}]}}"),
    ];
    for (value, expected) in cases {
        assert_eq!(repr(&value), expected, "{value}");
    }
}

#[test]
fn call_arguments_are_sorted_at_the_top_level_only() {
    // Python: str(dict(sorted({"b": {"a": 2, "z": 1}, "a": 1}.items())))
    let args = json!({"b": {"a": 2, "z": 1}, "a": 1});
    assert_eq!(repr_sorted(args.as_object().unwrap()), "{'a': 1, 'b': {'a': 2, 'z': 1}}");
}

/// What CPython 3.11 prints for `json.dumps(value, ensure_ascii=False)`.
#[test]
fn json_dumps_writes_as_python_writes() {
    let value = json!({"answer": "cold", "confidence": 0.9, "l": [1, true, null], "n": 1e16, "s": "é\n\"\u{1}"});
    assert_eq!(
        json_dumps(&value),
        r#"{"answer": "cold", "confidence": 0.9, "l": [1, true, null], "n": 1e+16, "s": "é\n\"\u0001"}"#
    );
}
