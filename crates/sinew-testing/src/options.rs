//! Checks of a provider's request options: which it accepts, which it refuses.

use serde_json::json;
use sinew_core::{Message, ProviderError, RequestOptions, ResponseFormat, StreamRequest, ToolChoice};

use crate::history::round_trip_tools;

/// `options` for the `'static` borrow [`StreamRequest::options`] takes in tests (leaked: tests
/// make a handful).
pub fn leak_options(options: RequestOptions) -> &'static RequestOptions {
    Box::leak(Box::new(options))
}

/// Each request option alone, by the name [`RequestOptions::set`] gives it.
pub fn each_option() -> Vec<(&'static str, RequestOptions)> {
    let none = RequestOptions::default();
    vec![
        ("tool_choice", none.clone().with_tool_choice(ToolChoice::tool("read"))),
        ("parallel_tool_calls", none.clone().with_parallel_tool_calls(false)),
        ("stop_sequences", none.clone().with_stop_sequences(["END"])),
        ("top_p", none.clone().with_top_p(0.9)),
        ("top_k", none.clone().with_top_k(40)),
        ("seed", none.clone().with_seed(7)),
        ("presence_penalty", none.clone().with_presence_penalty(0.5)),
        ("frequency_penalty", none.clone().with_frequency_penalty(0.25)),
        ("user", none.clone().with_user("user-1")),
        (
            "response_format",
            none.with_response_format(ResponseFormat::json_schema("answer", json!({"type": "object"}))),
        ),
    ]
}

/// Every option alone through `check` (a provider's `check_options`), with the round-trip tools:
/// the `supported` ones pass, every other one is refused with an error naming it. Also a forced
/// tool the request does not offer, and a required call without tools, are refused.
pub fn assert_option_support(check: impl Fn(&StreamRequest<'_>) -> Result<(), ProviderError>, supported: &[&str]) {
    let history = [Message::user("hi")];
    let refs: Vec<&Message> = history.iter().collect();
    let tools = round_trip_tools();
    for (name, options) in each_option() {
        let mut request = StreamRequest::new("m", "", &refs);
        request.tools = &tools;
        request.options = &options;
        match check(&request) {
            Ok(()) => assert!(supported.contains(&name), "`{name}` must be refused"),
            Err(error) => {
                assert!(!supported.contains(&name), "`{name}` must be accepted: {error}");
                assert!(
                    matches!(&error, ProviderError::Other(m) if m.contains(&format!("`{name}`"))),
                    "the refusal names `{name}`: {error:?}"
                );
            }
        }
    }
    if supported.contains(&"tool_choice") {
        let unknown = RequestOptions::default().with_tool_choice(ToolChoice::tool("delete_everything"));
        let mut request = StreamRequest::new("m", "", &refs);
        request.tools = &tools;
        request.options = &unknown;
        let error = check(&request).expect_err("a tool the request does not offer");
        assert!(error.to_string().contains("`delete_everything`, which is not among its tools"), "{error}");
        let required = RequestOptions::default().with_tool_choice(ToolChoice::Required);
        let mut request = StreamRequest::new("m", "", &refs);
        request.options = &required;
        let error = check(&request).expect_err("a required call without tools");
        assert!(error.to_string().contains("offers no tools"), "{error}");
    }
}

/// Sets a request's cache key and cache settings (for tests of what providers send of them).
pub fn cached_as(key: &'static str, cache: sinew_core::CacheConfig) -> impl FnOnce(&mut sinew_core::StreamRequest<'_>) {
    move |request| {
        request.cache_key = Some(key);
        request.cache_config = cache;
    }
}
