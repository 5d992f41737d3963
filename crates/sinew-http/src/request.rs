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

/// Query parameters whose values are secrets (Gemini accepts `?key=`, Azure SAS uses `sig=`).
const SENSITIVE_QUERY: &[&str] = &["key", "api-key", "api_key", "sig", "token", "access_token"];

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
            Some((name, _)) if SENSITIVE_QUERY.iter().any(|s| s.eq_ignore_ascii_case(name)) => format!("{name}=****"),
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
    pub method: http::Method,
    pub url: String,
    pub headers: Vec<(String, String)>,
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
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), if is_sensitive_header(k) { "****" } else { v.as_str() }))
            .collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &redact_url(&self.url))
            .field("headers", &headers)
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
            .header("anthropic-version", "2023-06-01");
        let shown = format!("{request:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("alt=sse&key=****"), "{shown}");
        assert!(shown.contains("2023-06-01"), "{shown}");
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
