//! No provider configuration shows a secret in its `Debug` output: keys, tokens, and the values
//! of extra headers and query parameters (only the protocols' own are shown).

use sinew::anthropic::AnthropicConfig;
use sinew::gemini::GeminiConfig;
use sinew::openai::OpenAiChatConfig;
use sinew::openai_responses::ResponsesConfig;

fn check(shown: String) {
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(shown.contains("x-proxy-token"), "header names are shown: {shown}");
}

#[test]
fn configs_hide_keys_and_the_values_of_extra_headers_and_query() {
    let header = || ("x-proxy-token".to_owned(), "SECRET-HEADER".to_owned());
    let mut anthropic = AnthropicConfig::new("SECRET-KEY");
    anthropic.extra_headers.push(header());
    check(format!("{anthropic:?}"));

    let mut gemini = GeminiConfig::gemini("SECRET-KEY");
    gemini.extra_headers.push(header());
    check(format!("{gemini:?}"));

    let mut chat = OpenAiChatConfig::openai("SECRET-KEY");
    chat.extra_headers.push(header());
    chat.query.push(("sig".into(), "SECRET-SAS".into()));
    chat.query.push(("api-version".into(), "2024-10-21".into()));
    let shown = format!("{chat:?}");
    assert!(shown.contains("2024-10-21"), "public query values are shown: {shown}");
    check(shown);

    let mut responses = ResponsesConfig::openai("SECRET-KEY");
    responses.extra_headers.push(header());
    responses.query.push(("token".into(), "SECRET-TOKEN".into()));
    check(format!("{responses:?}"));
}
