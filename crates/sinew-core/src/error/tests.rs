use super::*;

fn check(status: u16, body: &str, expected: ProviderError) {
    assert_eq!(ProviderError::classify(status, body), expected, "status {status}, body {body:?}");
}

#[test]
fn classify_routes_in_documented_order() {
    check(429, "slow down", ProviderError::RateLimited { retry_after_ms: None, message: "slow down".into() });
    check(401, "bad key", ProviderError::Auth("bad key".into()));
    check(403, "forbidden", ProviderError::Auth("forbidden".into()));
    check(
        400,
        "prompt is too long: 210000 tokens > 200000 maximum",
        ProviderError::ContextOverflow { message: "prompt is too long: 210000 tokens > 200000 maximum".into() },
    );
    check(413, "", ProviderError::ContextOverflow { message: "".into() });
    check(400, "  ", ProviderError::ContextOverflow { message: "  ".into() });
    check(400, "invalid tool schema", ProviderError::Api { status: Some(400), message: "invalid tool schema".into() });
    check(404, "no such model", ProviderError::Api { status: Some(404), message: "no such model".into() });
    check(500, "boom", ProviderError::Unavailable { status: 500, message: "boom".into() });
    check(529, "overloaded", ProviderError::Unavailable { status: 529, message: "overloaded".into() });
    // An overflow phrase wins over the status code.
    check(
        429,
        "This model's maximum context length is 8192 tokens",
        ProviderError::ContextOverflow { message: "This model's maximum context length is 8192 tokens".into() },
    );
}

#[test]
fn every_documented_overflow_phrase_is_recognized() {
    assert!(CONTEXT_OVERFLOW_PHRASES.len() >= 15);
    for phrase in CONTEXT_OVERFLOW_PHRASES {
        let upper = format!("Error: {}!", phrase.to_uppercase());
        assert!(is_context_overflow(400, &upper), "{phrase}");
        assert!(is_context_overflow(200, phrase), "{phrase}");
    }
}

#[test]
fn unrelated_errors_are_not_overflow() {
    for body in ["invalid api key", "model not found", "tool_choice is invalid", "rate limit reached"] {
        assert!(!is_context_overflow(400, body), "{body}");
    }
    assert!(!is_context_overflow(500, ""));
}

#[test]
fn only_transient_errors_are_retryable() {
    let retryable = [
        ProviderError::RateLimited { retry_after_ms: None, message: String::new() },
        ProviderError::Network("reset".into()),
        ProviderError::Unavailable { status: 503, message: String::new() },
    ];
    let final_ = [
        ProviderError::Auth(String::new()),
        ProviderError::Api { status: Some(400), message: String::new() },
        ProviderError::ContextOverflow { message: String::new() },
        ProviderError::Cancelled,
        ProviderError::Other(String::new()),
        ProviderError::Protocol(String::new()),
    ];
    assert!(retryable.iter().all(ProviderError::is_retryable));
    assert!(!final_.iter().any(ProviderError::is_retryable));
}

#[test]
fn retry_after_only_from_rate_limits() {
    let e = ProviderError::RateLimited { retry_after_ms: Some(5000), message: String::new() };
    assert_eq!(e.retry_after(), Some(Duration::from_millis(5000)));
    assert_eq!(ProviderError::RateLimited { retry_after_ms: None, message: String::new() }.retry_after(), None);
    assert_eq!(ProviderError::Network("x".into()).retry_after(), None);
}

#[test]
fn messages_are_lowercase_and_informative() {
    assert_eq!(
        ProviderError::Api { status: Some(400), message: "bad".into() }.to_string(),
        "api error (status 400): bad"
    );
    assert_eq!(
        ProviderError::RateLimited { retry_after_ms: Some(20), message: "wait".into() }.to_string(),
        "rate limited (retry after 20 ms): wait"
    );
    assert_eq!(ToolError::NotFound("grep".into()).to_string(), "Tool grep not found");
    assert_eq!(ToolError::Failed("oops".into()).to_string(), "oops");
}
