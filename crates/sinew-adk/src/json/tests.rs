use serde_json::json;

use super::*;

#[test]
fn names_convert_as_pydantic_does() {
    for (snake, camel) in [
        ("thought_signature", "thoughtSignature"),
        ("text", "text"),
        ("tool_use_prompt_tokens_details", "toolUsePromptTokensDetails"),
        ("rewind_before_invocation_id", "rewindBeforeInvocationId"),
    ] {
        assert_eq!(to_camel(snake), camel);
        assert_eq!(to_snake(camel), snake);
    }
}

#[test]
fn bytes_go_out_url_safe_padded_and_come_in_from_either_alphabet() {
    assert_eq!(base64_bytes::encode(b"\xfb\xff\xfe"), "-__-");
    assert_eq!(base64_bytes::encode(b"ab"), "YWI=");
    for text in ["-__-", "+//+", "YWI=", "YWI"] {
        assert!(base64_bytes::decode(text).is_ok(), "{text}");
    }
    assert_eq!(base64_bytes::decode("+//+").unwrap(), b"\xfb\xff\xfe");
    assert!(base64_bytes::decode("not base64!").is_err());
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Sample {
    field_name: u32,
    free_map: Map<String, Value>,
    #[serde(with = "opaque")]
    genai_value: Option<Value>,
}

#[test]
fn the_snake_form_renames_fields_and_genai_keys_but_not_data() {
    let sample = Sample {
        field_name: 1,
        free_map: json!({"userKey": {"innerKey": 1}}).as_object().cloned().unwrap(),
        genai_value: Some(json!({"webSearchQueries": [{"renderedContent": "x"}]})),
    };
    assert_eq!(
        to_snake_value(&sample).unwrap(),
        json!({"field_name": 1, "free_map": {"userKey": {"innerKey": 1}},
               "genai_value": {"web_search_queries": [{"rendered_content": "x"}]}})
    );
    assert_eq!(
        serde_json::to_value(&sample).unwrap(),
        json!({"fieldName": 1, "freeMap": {"userKey": {"innerKey": 1}},
               "genaiValue": {"webSearchQueries": [{"renderedContent": "x"}]}})
    );
}

/// Data inside a genai value (header names, a request body) keeps its keys in both forms.
#[test]
fn data_inside_genai_values_keeps_its_keys() {
    let sample = Sample {
        field_name: 0,
        free_map: Map::new(),
        genai_value: Some(
            json!({"httpOptions": {"headers": {"X-Api-Key": "k"}, "extraBody": {"reasoning_effort": "low"}}}),
        ),
    };
    let snake = to_snake_value(&sample).unwrap();
    assert_eq!(
        snake["genai_value"],
        json!({"http_options": {"headers": {"X-Api-Key": "k"}, "extra_body": {"reasoning_effort": "low"}}})
    );
    let back = opaque::deserialize(snake["genai_value"].clone()).unwrap();
    assert_eq!(back, sample.genai_value);
}
