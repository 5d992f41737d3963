//! The chat page: three static files embedded in the binary, no build step. It talks to the chat
//! API (agent definitions and their conversations) and, when the server has it, to ADK's dialect
//! (apps and their sessions, tool confirmations answered with approve and reject).

use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};

use crate::http::Body;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// Scripts and styles from this server only; nothing framed, no other origin fetched.
const POLICY: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The file at `path`, when it is one of the page's.
pub(crate) fn file(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/" | "/index.html" => Some((INDEX, "text/html; charset=utf-8")),
        "/app.js" => Some((SCRIPT, "text/javascript; charset=utf-8")),
        "/app.css" => Some((STYLE, "text/css; charset=utf-8")),
        _ => None,
    }
}

/// The page's answer to `request`, when it asks for one of its files.
pub(crate) fn serve<B>(request: &Request<B>) -> Option<Response<Body>> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return None;
    }
    let (text, kind) = file(request.uri().path())?;
    let mut response = Response::new(Full::new(bytes::Bytes::from_static(text.as_bytes())).boxed_unsync());
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Some(response)
}
