//! A transport-neutral HTTP request, as the pure request builders produce it.

use std::fmt;

use bytes::Bytes;

/// Headers whose values are secrets. `Debug` and logs show `****` instead.
pub const SENSITIVE_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "x-amz-security-token",
    "cookie",
];

/// Headers whose values `Debug` output and logs show: the protocols' own, which carry no secret.
/// Every other header's value is hidden (an OpenAPI scheme's `X-Custom-Key`, a proxy's token).
pub const PUBLIC_HEADERS: &[&str] = &[
    "accept",
    "accept-encoding",
    "anthropic-beta",
    "anthropic-version",
    "cache-control",
    "content-length",
    "content-type",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "openai-beta",
    "user-agent",
];

/// Query parameters whose values `Debug` output and logs show; every other value is hidden
/// (Gemini's `key=`, Azure SAS `sig=`, an OpenAPI scheme's `apikey=`).
pub const PUBLIC_QUERY: &[&str] = &["alt", "api-version", "beta"];

/// Whether a header's value may be shown (see [`PUBLIC_HEADERS`]).
pub fn is_public_header(name: &str) -> bool {
    PUBLIC_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// Name–value pairs for `Debug`: values shown only when `public` says so, `****` otherwise.
pub struct Redacted<'a> {
    pairs: &'a [(String, String)],
    public: fn(&str) -> bool,
}

impl<'a> Redacted<'a> {
    /// Headers, values shown for [`PUBLIC_HEADERS`] only.
    pub fn headers(pairs: &'a [(String, String)]) -> Self {
        Redacted { pairs, public: is_public_header }
    }

    /// Query parameters, values shown for [`PUBLIC_QUERY`] only.
    pub fn query(pairs: &'a [(String, String)]) -> Self {
        Redacted { pairs, public: |name| PUBLIC_QUERY.iter().any(|q| q.eq_ignore_ascii_case(name)) }
    }
}

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.pairs.iter().map(|(k, v)| (k.as_str(), if (self.public)(k) { v.as_str() } else { "****" })))
            .finish()
    }
}

/// Whether a header carries a secret.
pub fn is_sensitive_header(name: &str) -> bool {
    SENSITIVE_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// `url` with the values of secret query parameters replaced by `****`.
pub fn redact_url(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else { return url.to_owned() };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if !PUBLIC_QUERY.iter().any(|s| s.eq_ignore_ascii_case(name)) => format!("{name}=****"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

/// `value` as the `f64` with the same shortest decimal form, for JSON bodies: `0.2f32` goes out as
/// `0.2`, not `0.20000000298023224`.
pub fn json_f32(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(f64::from(value))
}

/// An HTTP request, ready for any transport. `Debug` never shows secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The HTTP method; `POST` for model calls.
    pub method: http::Method,
    /// The full URL, query included; it may hold a key (`Debug` redacts it).
    pub url: String,
    /// `(name, value)` pairs, sent in order; names compare case-insensitively.
    pub headers: Vec<(String, String)>,
    /// The body, sent as is (JSON for most protocols).
    pub body: Bytes,
}

impl HttpRequest {
    /// A `POST` of a JSON body to `url`.
    pub fn post_json(url: impl Into<String>, body: impl Into<Bytes>) -> Self {
        HttpRequest {
            method: http::Method::POST,
            url: url.into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
        }
    }

    /// Appends a header.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The value of the first header called `name` (case-insensitive).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for HttpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &redact_url(&self.url))
            .field("headers", &Redacted::headers(&self.headers))
            .field("body", &String::from_utf8_lossy(&self.body))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_every_secret() {
        let request = HttpRequest::post_json("https://x.test/v1?alt=sse&key=AIzaSECRET1", "{}")
            .header("Authorization", "Bearer SECRET2")
            .header("x-api-key", "SECRET3")
            .header("api-key", "SECRET4")
            .header("x-goog-api-key", "SECRET5")
            .header("x-amz-security-token", "SECRET6")
            .header("X-Custom-Key", "SECRET7")
            .header("anthropic-version", "2023-06-01");
        let mut request = request;
        request.url.push_str("&apikey=SECRET8&api-version=2024-10-21");
        let shown = format!("{request:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("alt=sse&key=****&apikey=****&api-version=2024-10-21"), "{shown}");
        assert!(shown.contains("2023-06-01") && shown.contains("application/json"), "{shown}");
        assert!(shown.contains(r#"("X-Custom-Key", "****")"#), "{shown}");
        let pairs = vec![("X-Title".to_owned(), "SECRET9".to_owned()), ("user-agent".to_owned(), "sinew".to_owned())];
        assert_eq!(format!("{:?}", Redacted::headers(&pairs)), r#"[("X-Title", "****"), ("user-agent", "sinew")]"#);
        let query = vec![("api-version".to_owned(), "1".to_owned()), ("sig".to_owned(), "SECRET".to_owned())];
        assert_eq!(format!("{:?}", Redacted::query(&query)), r#"[("api-version", "1"), ("sig", "****")]"#);
    }

    #[test]
    fn f32_values_keep_their_short_decimal_form() {
        assert_eq!(serde_json::json!(json_f32(0.2)).to_string(), "0.2");
        assert_eq!(serde_json::json!(json_f32(1.0)).to_string(), "1.0");
        assert_eq!(json_f32(-1.5), -1.5);
    }

    #[test]
    fn header_lookup_ignores_case() {
        let request = HttpRequest::post_json("http://x", "").header("X-Thing", "1");
        assert_eq!(request.header_value("x-thing"), Some("1"));
        assert_eq!(request.header_value("content-type"), Some("application/json"));
        assert_eq!(request.header_value("missing"), None);
    }
}
