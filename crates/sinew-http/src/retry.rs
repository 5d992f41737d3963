//! Failed responses → [`ProviderError`], and retries that honour what the server asked for.

use std::time::{Duration, SystemTime};

use http::HeaderMap;
use serde_json::Value;
use sinew_core::{MAX_SERVER_DELAY, ProviderError, RetryConfig, delay_for_attempt};
use tokio_util::sync::CancellationToken;

use crate::client::{HttpClient, HttpResponse};
use crate::request::{HttpRequest, redact_url};

/// How much of an error body is read to explain the failure.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// The retries a provider makes by default before its error reaches the agent loop: two, after
/// 0.5 s and 1 s (the official SDKs' policy).
pub fn default_retry() -> RetryConfig {
    RetryConfig::new(2, 500, 2.0, 8_000)
}

/// A failed attempt: the error, whether another attempt may pass, and the delay the server
/// asked for.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) error: ProviderError,
    pub(crate) retryable: bool,
    pub(crate) server_delay: Option<Duration>,
}

impl Failure {
    /// The wait before retry number `attempt` (1-based): the server's delay up to
    /// [`MAX_SERVER_DELAY`], else `retry`'s backoff, never longer than [`MAX_SERVER_DELAY`].
    pub(crate) fn delay(&self, retry: &RetryConfig, attempt: u32) -> Duration {
        self.server_delay
            .filter(|d| *d <= MAX_SERVER_DELAY)
            .unwrap_or_else(|| delay_for_attempt(retry, attempt))
            .min(MAX_SERVER_DELAY)
    }
}

impl HttpClient {
    /// Sends `request`, retrying failures that may pass on a second try, and returns the first
    /// successful (2xx) response.
    ///
    /// Retried: connection failures, 408, 409, 429 and 5xx, unless the server answers
    /// `x-should-retry: false`; `x-should-retry: true` retries any status. The delay is the
    /// server's `retry-after-ms`, or `retry-after` in seconds or as an HTTP date, up to
    /// [`MAX_SERVER_DELAY`] (a longer one falls back to `retry`'s exponential backoff, as the
    /// official SDKs do). Each retry is logged at `WARN` with the attempt, the maximum, the delay
    /// and the error. Cancellation ends the wait at once with [`ProviderError::Cancelled`].
    pub async fn send(
        &self,
        request: &HttpRequest,
        retry: &RetryConfig,
        cancel: &CancellationToken,
    ) -> Result<HttpResponse, ProviderError> {
        let mut attempt = 0;
        loop {
            let failure = match self.attempt(request, cancel).await {
                Ok(response) => return Ok(response),
                Err(failure) => failure,
            };
            if !failure.retryable || attempt >= retry.max_retries {
                return Err(failure.error);
            }
            attempt += 1;
            let delay = failure.delay(retry, attempt);
            log_retry(request, retry, attempt, delay, &failure.error);
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// One attempt: the response when it succeeded (2xx), else what failed and whether it is
    /// worth another try. Cancellation is a failure not worth one.
    pub(crate) async fn attempt(
        &self,
        request: &HttpRequest,
        cancel: &CancellationToken,
    ) -> Result<HttpResponse, Failure> {
        let cancelled = || Failure { error: ProviderError::Cancelled, retryable: false, server_delay: None };
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(cancelled()),
            outcome = self.send_once(request) => outcome,
        };
        match outcome {
            Ok(response) if response.status.is_success() => Ok(response),
            Ok(mut response) => {
                let body = tokio::select! {
                    biased;
                    () = cancel.cancelled() => return Err(cancelled()),
                    body = response.bytes(ERROR_BODY_LIMIT) => body.unwrap_or_default(),
                };
                let status = response.status.as_u16();
                let server_delay = retry_after(&response.headers, SystemTime::now());
                let error = error_for_status(status, &body, server_delay);
                let retryable = match should_retry_header(&response.headers) {
                    Some(answer) => answer,
                    None => error.is_retryable() || status == 408 || status == 409,
                };
                Err(Failure { error, retryable, server_delay })
            }
            Err(error) => Err(Failure { retryable: error.is_retryable(), error, server_delay: None }),
        }
    }
}

pub(crate) fn log_retry(
    request: &HttpRequest,
    retry: &RetryConfig,
    attempt: u32,
    delay: Duration,
    error: &ProviderError,
) {
    tracing::warn!(
        attempt,
        max_retries = retry.max_retries,
        delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        url = %redact_url(&request.url),
        error = %error,
        "retrying HTTP request"
    );
}

/// The error a failed response stands for: [`ProviderError::classify`] of its status and the
/// message its body carries, with the server's retry delay on rate limits.
pub fn error_for_status(status: u16, body: &[u8], retry_after: Option<Duration>) -> ProviderError {
    let message = error_message(body);
    match ProviderError::classify(status, message) {
        ProviderError::RateLimited { message, .. } => {
            let retry_after_ms = retry_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
            ProviderError::RateLimited { retry_after_ms, message }
        }
        error => error,
    }
}

/// The human part of an error body. Understands the shapes the services use
/// (`{"error":{"message","type","code"}}`, `{"error":"..."}`, `{"message":"..."}`, and Gemini's
/// one-element arrays); anything else is returned as text, shortened.
pub fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let Ok(value) = serde_json::from_slice::<Value>(body) else { return shorten(text.trim()) };
    let value = match &value {
        Value::Array(items) if !items.is_empty() => &items[0],
        _ => &value,
    };
    let error = value.get("error").unwrap_or(value);
    let message = match error {
        Value::String(s) => s.clone(),
        _ => match error.get("message").and_then(Value::as_str) {
            Some(m) => m.to_owned(),
            None => return shorten(text.trim()),
        },
    };
    // A machine-readable tag helps (OpenAI's `context_length_exceeded`); strings say more than
    // numeric codes.
    let tags = || ["code", "type", "status"].into_iter().filter_map(|k| error.get(k));
    let tag = tags()
        .find_map(|v| v.as_str().map(str::to_owned))
        .or_else(|| tags().find_map(|v| v.as_i64().map(|n| n.to_string())));
    match tag {
        Some(tag) if !message.contains(&tag) => format!("{message} [{tag}]"),
        _ => message,
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 2_000;
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The delay a response asks for: `retry-after-ms`, else `retry-after` as seconds or an HTTP date.
///
/// A number too large for a [`Duration`] reads as [`Duration::MAX`]; callers cap what they honour.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Some(delay) = seconds_to_duration(ms / 1000.0)
    {
        return Some(delay);
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return seconds_to_duration(seconds);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// `seconds` as a duration: `None` when negative or not a number, saturated when too large.
fn seconds_to_duration(seconds: f64) -> Option<Duration> {
    if seconds.is_nan() || seconds < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
}

fn should_retry_header(headers: &HeaderMap) -> Option<bool> {
    match headers.get("x-should-retry")?.to_str().ok()?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use proptest::prelude::*;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_in_every_form() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(retry_after(&headers(&[("retry-after", "3")]), now), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(&headers(&[("retry-after", "0.5")]), now), Some(Duration::from_millis(500)));
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3"), ("retry-after-ms", "250")]), now),
            Some(Duration::from_millis(250)),
            "retry-after-ms wins"
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(retry_after(&headers(&[("retry-after", &date)]), now), Some(Duration::from_secs(7)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(retry_after(&headers(&[("retry-after", &past)]), now), Some(Duration::ZERO));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
        assert_eq!(retry_after(&headers(&[]), now), None);
    }

    #[test]
    fn retry_after_beyond_any_duration_saturates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        for (name, value) in [
            ("retry-after", "1e20"),
            ("retry-after", "inf"),
            ("retry-after", "18446744073709551616"),
            ("retry-after-ms", "1e300"),
            ("retry-after-ms", "1.7976931348623157e308"),
        ] {
            assert_eq!(retry_after(&headers(&[(name, value)]), now), Some(Duration::MAX), "{name}: {value}");
        }
        assert_eq!(retry_after(&headers(&[("retry-after", "NaN")]), now), None);
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "-0.5"), ("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
    }

    proptest! {
        /// Whatever a server writes in the two headers, parsing neither panics nor returns a
        /// delay for a negative or non-numeric value.
        #[test]
        fn retry_after_never_panics(
            seconds in prop_oneof![
                proptest::num::f64::ANY.prop_map(|f| f.to_string()),
                proptest::num::u128::ANY.prop_map(|n| n.to_string()),
                "[0-9eE+.-]{1,40}",
            ],
            ms in prop_oneof![
                proptest::num::f64::ANY.prop_map(|f| f.to_string()),
                "[0-9eE+.-]{1,40}",
            ],
        ) {
            let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
            for pairs in [[("retry-after", seconds.as_str())].as_slice(), &[("retry-after-ms", ms.as_str())]] {
                if let Some(delay) = retry_after(&headers(pairs), now) {
                    let value: f64 = pairs[0].1.parse().unwrap_or(f64::NAN);
                    prop_assert!(value >= 0.0 || delay == Duration::ZERO, "{pairs:?} -> {delay:?}");
                }
            }
        }
    }

    #[test]
    fn messages_of_every_service_shape() {
        let anthropic = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert_eq!(
            error_message(anthropic),
            "prompt is too long: 210000 tokens > 200000 maximum [invalid_request_error]"
        );
        let openai = br#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            error_message(openai),
            "This model's maximum context length is 8192 tokens. [context_length_exceeded]"
        );
        let gemini = br#"[{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}]"#;
        assert_eq!(error_message(gemini), "API key not valid. [INVALID_ARGUMENT]");
        assert_eq!(
            error_message(br#"{"message":"The security token included in the request is invalid."}"#),
            "The security token included in the request is invalid."
        );
        assert_eq!(error_message(br#"{"error":"model not found"}"#), "model not found");
        assert_eq!(error_message(b"<html>Bad Gateway</html>"), "<html>Bad Gateway</html>");
        assert_eq!(error_message(&[0xff, b'x']), "\u{fffd}x");
        let long = "é".repeat(3_000);
        assert!(error_message(long.as_bytes()).chars().count() <= 1_001);
    }

    #[test]
    fn statuses_map_to_errors_with_the_server_delay() {
        assert_eq!(
            error_for_status(429, br#"{"error":{"message":"slow down"}}"#, Some(Duration::from_secs(2))),
            ProviderError::RateLimited { retry_after_ms: Some(2000), message: "slow down".into() }
        );
        assert!(matches!(error_for_status(401, b"{}", None), ProviderError::Auth(_)));
        assert!(matches!(error_for_status(400, b"", None), ProviderError::ContextOverflow { .. }));
        let openai = br#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#;
        assert!(matches!(error_for_status(400, openai, None), ProviderError::ContextOverflow { .. }));
        assert!(matches!(error_for_status(529, b"overloaded", None), ProviderError::Unavailable { status: 529, .. }));
        assert!(matches!(error_for_status(404, b"nope", None), ProviderError::Api { status: Some(404), .. }));
    }

    #[test]
    fn should_retry_header_is_tri_state() {
        assert_eq!(should_retry_header(&headers(&[("x-should-retry", "true")])), Some(true));
        assert_eq!(should_retry_header(&headers(&[("x-should-retry", "false")])), Some(false));
        assert_eq!(should_retry_header(&headers(&[("x-should-retry", "maybe")])), None);
        assert_eq!(should_retry_header(&headers(&[])), None);
    }
}
