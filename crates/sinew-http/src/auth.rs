//! Credentials sent as a header, and URLs with query parameters.

use std::fmt;
use std::sync::Arc;

use crate::credentials::{Authorizer, BearerAuthorizer, TokenSource};
use crate::request::HttpRequest;

/// How requests authenticate. `Debug` never shows the secret.
#[derive(Clone)]
#[non_exhaustive]
pub enum Auth {
    /// No credentials (a local server).
    None,
    /// `Authorization: Bearer <token>`.
    Bearer(String),
    /// The key in a header of its own: Azure's `api-key`, Gemini's `x-goog-api-key`.
    Header {
        /// The header's name, such as `"api-key"`.
        name: String,
        /// The key, sent as is.
        value: String,
    },
    /// `Authorization: Bearer <token>` with a token fetched when each attempt is sent (Google's
    /// Application Default Credentials, Entra ID): see [`Auth::authorizer`].
    Token(Arc<dyn TokenSource>),
}

impl Auth {
    /// Adds the credentials known now to `request`; a [`Auth::Token`]'s are added when the
    /// request is sent, by [`Auth::authorizer`].
    pub fn apply(&self, request: &mut HttpRequest) {
        match self {
            Auth::None | Auth::Token(_) => {}
            Auth::Bearer(token) => request.headers.push(("authorization".into(), format!("Bearer {token}"))),
            Auth::Header { name, value } => request.headers.push((name.clone(), value.clone())),
        }
    }

    /// What adds the credentials fetched when a request is sent: `Some` for [`Auth::Token`]
    /// (what a [`crate::Protocol::authorizer`] returns).
    pub fn authorizer(&self) -> Option<Arc<dyn Authorizer>> {
        match self {
            Auth::Token(source) => Some(Arc::new(BearerAuthorizer(Arc::clone(source)))),
            _ => None,
        }
    }
}

/// Equal when they send the same credentials; token sources are equal when they are the same.
impl PartialEq for Auth {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Auth::None, Auth::None) => true,
            (Auth::Bearer(a), Auth::Bearer(b)) => a == b,
            (Auth::Header { name: n1, value: v1 }, Auth::Header { name: n2, value: v2 }) => n1 == n2 && v1 == v2,
            (Auth::Token(a), Auth::Token(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Auth {}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Bearer(_) => f.write_str("Bearer(\"****\")"),
            Auth::Header { name, .. } => write!(f, "Header({name}: \"****\")"),
            Auth::Token(source) => f.debug_tuple("Token").field(source).finish(),
        }
    }
}

/// `base` (its trailing slashes dropped) + `path`, then `query` percent-encoded.
pub fn url_with_query(base: &str, path: &str, query: &[(String, String)]) -> String {
    let mut url = format!("{}{path}", base.trim_end_matches('/'));
    for (i, (name, value)) in query.iter().enumerate() {
        url.push(if i == 0 && !url.contains('?') { '?' } else { '&' });
        encode_into(&mut url, name);
        url.push('=');
        encode_into(&mut url, value);
    }
    url
}

/// `name=value&...`, each part percent-encoded: an `application/x-www-form-urlencoded` body or a
/// query string.
pub fn form_urlencoded(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_into(&mut out, name);
        out.push('=');
        encode_into(&mut out, value);
    }
    out
}

fn encode_into(out: &mut String, text: &str) {
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_join_and_encode() {
        let query = [("api-version".to_owned(), "2025-04-01-preview".to_owned()), ("x".to_owned(), "a b&c".to_owned())];
        assert_eq!(
            url_with_query("https://h.test/openai/", "/responses", &query),
            "https://h.test/openai/responses?api-version=2025-04-01-preview&x=a%20b%26c"
        );
        assert_eq!(
            url_with_query("https://h.test", "/x?alt=sse", &query[..1]),
            "https://h.test/x?alt=sse&api-version=2025-04-01-preview"
        );
        assert_eq!(url_with_query("https://h.test", "/x", &[]), "https://h.test/x");
        assert_eq!(
            form_urlencoded(&[("scope", "https://x/.default"), ("a", "b c")]),
            "scope=https%3A%2F%2Fx%2F.default&a=b%20c"
        );
    }

    #[test]
    fn credentials_are_applied_and_hidden() {
        let mut request = HttpRequest::post_json("http://x", "{}");
        Auth::Bearer("SECRET1".into()).apply(&mut request);
        Auth::Header { name: "api-key".into(), value: "SECRET2".into() }.apply(&mut request);
        Auth::None.apply(&mut request);
        assert_eq!(request.header_value("authorization"), Some("Bearer SECRET1"));
        assert_eq!(request.header_value("api-key"), Some("SECRET2"));
        let shown = format!(
            "{:?} {:?}",
            Auth::Bearer("SECRET1".into()),
            Auth::Header { name: "k".into(), value: "SECRET2".into() }
        );
        assert!(!shown.contains("SECRET"), "{shown}");
    }
}
