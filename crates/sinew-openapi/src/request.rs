//! Tool arguments → an HTTP request, with OpenAPI's parameter serialization styles.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use sinew_http::HttpRequest;

use crate::operation::{Location, Operation, Parameter};

/// Everything but RFC 3986's unreserved characters is encoded.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

fn encode(text: &str) -> String {
    utf8_percent_encode(text, COMPONENT).to_string()
}

/// A primitive as text (`null` is empty).
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Builds the request for `operation` at `base_url` (no trailing slash needed).
pub(crate) fn build(operation: &Operation, base_url: &str, arguments: &Value) -> Result<HttpRequest, String> {
    let arguments = match arguments {
        Value::Object(_) => arguments,
        Value::Null => &Value::Null,
        _ => return Err("the arguments must be a JSON object".into()),
    };
    let mut path = operation.path.clone();
    let mut query: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<String> = Vec::new();
    for parameter in &operation.parameters {
        let value = match arguments.get(&parameter.argument) {
            None | Some(Value::Null) if parameter.required => {
                return Err(format!("missing required argument `{}`", parameter.argument));
            }
            None | Some(Value::Null) => continue,
            Some(value) => value,
        };
        match parameter.location {
            Location::Path => {
                let text = path_value(parameter, value);
                path = path.replace(&format!("{{{}}}", parameter.name), &text);
            }
            Location::Query => query.extend(query_pairs(parameter, value)),
            Location::Header => {
                headers.push((parameter.name.clone(), simple(value, parameter.explode, &|s| s.to_owned())))
            }
            Location::Cookie => cookies.push(format!("{}={}", parameter.name, simple(value, false, &encode))),
        }
    }
    let mut url = format!("{}{path}", base_url.trim_end_matches('/'));
    if !query.is_empty() {
        let joined: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(&joined.join("&"));
    }
    let mut request =
        HttpRequest { method: operation.method.clone(), url, headers: Vec::new(), body: bytes::Bytes::new() };
    request.headers.push(("accept".into(), "application/json, */*;q=0.8".into()));
    request.headers.extend(headers);
    if !cookies.is_empty() {
        request.headers.push(("cookie".into(), cookies.join("; ")));
    }
    if let Some(body) = &operation.body {
        match arguments.get(&body.argument) {
            None | Some(Value::Null) if body.required => {
                return Err(format!("missing required argument `{}`", body.argument));
            }
            None | Some(Value::Null) => {}
            Some(value) => {
                let mut content_type = body.content_type.clone();
                let bytes = if body.content_type.starts_with("multipart/form-data") {
                    let Value::Object(fields) = value else {
                        return Err(format!("`{}` must be an object", body.argument));
                    };
                    let (bytes, boundary) = multipart(fields);
                    content_type = format!("multipart/form-data; boundary={boundary}");
                    bytes
                } else if body.content_type.starts_with("application/x-www-form-urlencoded") {
                    let Value::Object(fields) = value else {
                        return Err(format!("`{}` must be an object", body.argument));
                    };
                    let pairs: Vec<String> =
                        fields.iter().map(|(k, v)| format!("{}={}", encode(k), encode(&scalar(v)))).collect();
                    pairs.join("&").into_bytes()
                } else if let (false, Value::String(text)) = (body.content_type.contains("json"), value) {
                    text.clone().into_bytes()
                } else {
                    serde_json::to_vec(value).map_err(|e| e.to_string())?
                };
                request.headers.push(("content-type".into(), content_type));
                request.body = bytes.into();
            }
        }
    }
    Ok(request)
}

/// A `multipart/form-data` body: one text part per field (files are sent as their text), and
/// the boundary, chosen so that no value contains it.
fn multipart(fields: &serde_json::Map<String, Value>) -> (Vec<u8>, String) {
    let values: Vec<(String, String)> = fields.iter().map(|(k, v)| (k.replace('"', "%22"), scalar(v))).collect();
    let mut boundary = "sinew-form-boundary".to_owned();
    while values.iter().any(|(_, v)| v.contains(&boundary)) {
        boundary.push('x');
    }
    let mut body = String::new();
    for (name, value) in &values {
        body.push_str(&format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    (body.into_bytes(), boundary)
}

/// `simple` style: `a,b,c`; objects `k,v,k2,v2`, or `k=v,k2=v2` exploded.
fn simple(value: &Value, explode: bool, each: &dyn Fn(&str) -> String) -> String {
    match value {
        Value::Array(items) => items.iter().map(|v| each(&scalar(v))).collect::<Vec<_>>().join(","),
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| {
                if explode {
                    format!("{}={}", each(k), each(&scalar(v)))
                } else {
                    format!("{},{}", each(k), each(&scalar(v)))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        other => each(&scalar(other)),
    }
}

fn path_value(parameter: &Parameter, value: &Value) -> String {
    match parameter.style.as_str() {
        "label" => format!(
            ".{}",
            simple(value, parameter.explode, &encode).replace(',', if parameter.explode { "." } else { "," })
        ),
        "matrix" => match value {
            Value::Array(items) if parameter.explode => {
                items.iter().map(|v| format!(";{}={}", parameter.name, encode(&scalar(v)))).collect()
            }
            _ => format!(";{}={}", parameter.name, simple(value, parameter.explode, &encode)),
        },
        _ => simple(value, parameter.explode, &encode),
    }
}

/// Query pairs, already encoded, for `form` (exploded or not), `spaceDelimited`,
/// `pipeDelimited` and `deepObject`.
fn query_pairs(parameter: &Parameter, value: &Value) -> Vec<(String, String)> {
    let name = encode(&parameter.name);
    match (value, parameter.style.as_str()) {
        (Value::Array(items), "spaceDelimited" | "pipeDelimited") if !parameter.explode => {
            let separator = if parameter.style == "spaceDelimited" { "%20" } else { "|" };
            let joined = items.iter().map(|v| encode(&scalar(v))).collect::<Vec<_>>().join(separator);
            vec![(name, joined)]
        }
        (Value::Array(items), _) if parameter.explode => {
            items.iter().map(|v| (name.clone(), encode(&scalar(v)))).collect()
        }
        (Value::Object(fields), "deepObject") => {
            fields.iter().map(|(k, v)| (format!("{name}%5B{}%5D", encode(k)), encode(&scalar(v)))).collect()
        }
        (Value::Object(fields), _) if parameter.explode => {
            fields.iter().map(|(k, v)| (encode(k), encode(&scalar(v)))).collect()
        }
        (other, _) => vec![(name, simple(other, false, &encode))],
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::operation::RequestBody;

    fn parameter(name: &str, location: Location, style: &str, explode: bool) -> Parameter {
        Parameter {
            name: name.into(),
            argument: name.into(),
            location,
            required: false,
            style: style.into(),
            explode,
            schema: json!({}),
        }
    }

    fn operation(parameters: Vec<Parameter>, body: Option<RequestBody>) -> Operation {
        Operation {
            operation_id: None,
            tags: Vec::new(),
            tool_name: "t".into(),
            method: http::Method::POST,
            path: "/items/{id}".into(),
            description: String::new(),
            parameters,
            body,
            security: Vec::new(),
            input_schema: json!({}),
        }
    }

    #[test]
    fn query_styles_serialize_as_openapi_says() {
        let cases = [
            (parameter("s", Location::Query, "form", true), json!(["a", "b c"]), "s=a&s=b%20c"),
            (parameter("s", Location::Query, "form", false), json!(["a", "b"]), "s=a,b"),
            (parameter("s", Location::Query, "spaceDelimited", false), json!(["a", "b"]), "s=a%20b"),
            (parameter("s", Location::Query, "pipeDelimited", false), json!(["a", "b"]), "s=a|b"),
            (parameter("o", Location::Query, "form", true), json!({"x": 1, "y": "z"}), "x=1&y=z"),
            (parameter("o", Location::Query, "form", false), json!({"x": 1, "y": "z"}), "o=x,1,y,z"),
            (parameter("o", Location::Query, "deepObject", true), json!({"x": 1}), "o%5Bx%5D=1"),
            (parameter("q", Location::Query, "form", true), json!("a&b=c"), "q=a%26b%3Dc"),
            (parameter("n", Location::Query, "form", true), json!(3.5), "n=3.5"),
        ];
        for (parameter, value, expected) in cases {
            let pairs: Vec<String> =
                query_pairs(&parameter, &value).into_iter().map(|(k, v)| format!("{k}={v}")).collect();
            assert_eq!(pairs.join("&"), expected, "{parameter:?}");
        }
    }

    #[test]
    fn path_and_header_styles_serialize_as_openapi_says() {
        let cases = [
            (parameter("id", Location::Path, "simple", false), json!([3, 4]), "3,4"),
            (parameter("id", Location::Path, "simple", true), json!({"a": 1, "b": "x y"}), "a=1,b=x%20y"),
            (parameter("id", Location::Path, "simple", false), json!({"a": 1}), "a,1"),
            (parameter("id", Location::Path, "label", false), json!([3, 4]), ".3,4"),
            (parameter("id", Location::Path, "label", true), json!([3, 4]), ".3.4"),
            (parameter("id", Location::Path, "matrix", false), json!([3, 4]), ";id=3,4"),
            (parameter("id", Location::Path, "matrix", true), json!([3, 4]), ";id=3;id=4"),
            (parameter("id", Location::Path, "matrix", false), json!("a/b"), ";id=a%2Fb"),
        ];
        for (parameter, value, expected) in cases {
            assert_eq!(path_value(&parameter, &value), expected, "{parameter:?} {value}");
        }
        let header = parameter("X-Obj", Location::Header, "simple", true);
        let op = Operation { path: "/h".into(), ..operation(vec![header], None) };
        let request = build(&op, "http://h.test", &json!({"X-Obj": {"a": 1, "b": 2}})).unwrap();
        assert_eq!(request.header_value("X-Obj"), Some("a=1,b=2"));
    }

    #[test]
    fn requests_carry_path_query_headers_cookies_and_bodies() {
        let mut id = parameter("id", Location::Path, "simple", false);
        id.required = true;
        let op = operation(
            vec![
                id,
                parameter("tags", Location::Query, "form", true),
                parameter("X-Trace", Location::Header, "simple", false),
                parameter("session", Location::Cookie, "form", true),
            ],
            Some(RequestBody {
                content_type: "application/json".into(),
                required: true,
                schema: json!({}),
                argument: "body".into(),
            }),
        );
        let args =
            json!({"id": "a/b", "tags": ["x", "y"], "X-Trace": ["1", "2"], "session": "s 1", "body": {"name": "Rex"}});
        let request = build(&op, "http://h.test/api/", &args).unwrap();
        assert_eq!(request.url, "http://h.test/api/items/a%2Fb?tags=x&tags=y");
        assert_eq!(request.header_value("X-Trace"), Some("1,2"));
        assert_eq!(request.header_value("cookie"), Some("session=s%201"));
        assert_eq!(request.header_value("content-type"), Some("application/json"));
        assert_eq!(&request.body[..], br#"{"name":"Rex"}"#);

        let missing = build(&op, "http://h.test", &json!({"body": {}})).unwrap_err();
        assert_eq!(missing, "missing required argument `id`");
        let no_body = build(&op, "http://h.test", &json!({"id": 1})).unwrap_err();
        assert_eq!(no_body, "missing required argument `body`");
        assert!(build(&op, "http://h.test", &json!([1])).is_err());
    }

    #[test]
    fn form_bodies_are_url_encoded() {
        let op = operation(
            Vec::new(),
            Some(RequestBody {
                content_type: "application/x-www-form-urlencoded".into(),
                required: false,
                schema: json!({}),
                argument: "body".into(),
            }),
        );
        let op = Operation { path: "/form".into(), ..op };
        let request = build(&op, "http://h.test", &json!({"body": {"name": "a b", "n": 2}})).unwrap();
        assert_eq!(&request.body[..], b"n=2&name=a%20b");
        assert_eq!(build(&op, "http://h.test", &json!({})).unwrap().body.len(), 0, "an optional body may be left out");
    }

    #[test]
    fn multipart_bodies_have_a_boundary_no_value_contains() {
        let body = RequestBody {
            content_type: "multipart/form-data".into(),
            required: true,
            schema: json!({}),
            argument: "body".into(),
        };
        let op = Operation { path: "/upload".into(), ..operation(Vec::new(), Some(body)) };
        let request =
            build(&op, "http://h.test", &json!({"body": {"note": "has --sinew-form-boundary inside", "n": 1}}))
                .unwrap();
        let content_type = request.header_value("content-type").unwrap();
        assert_eq!(content_type, "multipart/form-data; boundary=sinew-form-boundaryx");
        let text = String::from_utf8(request.body.to_vec()).unwrap();
        assert_eq!(
            text,
            "--sinew-form-boundaryx\r\nContent-Disposition: form-data; name=\"n\"\r\n\r\n1\r\n\
             --sinew-form-boundaryx\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhas --sinew-form-boundary inside\r\n\
             --sinew-form-boundaryx--\r\n"
        );
    }
}
