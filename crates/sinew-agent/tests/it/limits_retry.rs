//! Execution limits, retries and input filters (REQ-061, 062, 068…074, 083, 135).

use std::time::Duration;

use serde_json::json;
use sinew_core::*;
use sinew_testing::{EchoTool, MockResponse, assert_history_valid, kinds};

use crate::{agent, text_of, user_texts};

fn tool_turn(id: &str) -> MockResponse {
    MockResponse::new().tool_call(id, "echo", json!({"text": id})).usage(50, 10)
}

#[tokio::test]
async fn max_turns_stops_after_exactly_that_many_model_calls() {
    let (agent, mock) = agent([tool_turn("1"), tool_turn("2"), tool_turn("3"), MockResponse::text("never")]);
    let limits = ExecutionLimits::default().with_max_turns(2);
    let mut agent = agent.with_tool(EchoTool).with_execution_limits(Some(limits));
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(mock.calls(), 2);
    assert_eq!(outcome.reason, EndReason::LimitReached);
    assert_eq!(text_of(agent.messages().last().unwrap()), "[Agent stopped: max turns exceeded (2)]");
    assert_history_valid(agent.messages());
}

#[tokio::test]
async fn max_total_tokens_stops_the_run() {
    let (agent, mock) = agent([tool_turn("1"), tool_turn("2"), tool_turn("3")]);
    let limits = ExecutionLimits::default().with_max_total_tokens(100);
    let mut agent = agent.with_tool(EchoTool).with_execution_limits(Some(limits));
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(mock.calls(), 2, "60 tokens, then 120 ≥ 100");
    assert_eq!(outcome.reason, EndReason::LimitReached);
    assert!(text_of(agent.messages().last().unwrap()).starts_with("[Agent stopped: max total tokens exceeded"));
}

#[tokio::test]
async fn server_counts_near_the_maximum_saturate_instead_of_wrapping_under_the_limit() {
    let huge = |id: &str| MockResponse::new().tool_call(id, "echo", json!({"text": id})).usage(u64::MAX - 1, 1);
    let (agent, mock) = agent([huge("1"), huge("2"), huge("3")]);
    let limits = ExecutionLimits::default().with_max_total_tokens(u64::MAX);
    let mut agent = agent.with_tool(EchoTool).with_execution_limits(Some(limits));
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(mock.calls(), 1, "the first call reaches the limit; a wrapped sum would have gone on");
    assert_eq!(outcome.reason, EndReason::LimitReached);
    assert_eq!(outcome.usage.input, u64::MAX - 1);
}

#[tokio::test(start_paused = true)]
async fn max_duration_stops_the_run() {
    let slow = sinew_testing::FnTool::new("echo", |_, _| async {
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(ToolResult::text("slow"))
    });
    let (agent, mock) = agent([tool_turn("1"), tool_turn("2")]);
    let limits = ExecutionLimits::default().with_max_duration(Duration::from_secs(30));
    let mut agent = agent.with_tool(slow).with_execution_limits(Some(limits));
    let started = tokio::time::Instant::now();
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(started.elapsed(), Duration::from_secs(30), "the running tool is cut at the deadline");
    assert_eq!(mock.calls(), 1);
    assert_eq!(outcome.reason, EndReason::LimitReached);
    assert!(text_of(agent.messages().last().unwrap()).starts_with("[Agent stopped: max duration exceeded"));
    // The cut call has its result, and the history stays valid.
    assert_eq!(crate::roles(agent.messages()), ["user", "assistant", "toolResult", "user"]);
    assert_history_valid(agent.messages());
    // The note is announced like any message.
    assert_eq!(kinds(&events)[kinds(&events).len() - 3..], ["message_start", "message_end", "agent_end"]);
}

#[tokio::test(start_paused = true)]
async fn max_duration_reaches_into_a_model_call_that_never_ends() {
    let (agent, mock) = agent([MockResponse::new().text_delta("thinking about it").hang()]);
    let limits = ExecutionLimits::default().with_max_duration(Duration::from_secs(30));
    let mut agent = agent.with_execution_limits(Some(limits));
    let started = tokio::time::Instant::now();
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    assert_eq!(mock.calls(), 1);
    assert_eq!(outcome.reason, EndReason::LimitReached);
    let assistant = agent.messages()[1].as_assistant().unwrap();
    assert_eq!((assistant.stop_reason, assistant.text().as_str()), (StopReason::Aborted, "thinking about it"));
    assert!(text_of(agent.messages().last().unwrap()).starts_with("[Agent stopped: max duration exceeded (30s)"));
    assert_history_valid(agent.messages());
}

#[tokio::test(start_paused = true)]
async fn a_day_long_retry_after_is_capped_at_a_minute_and_backs_off_instead() {
    let limited = ProviderError::RateLimited { retry_after_ms: Some(86_400_000), message: "tomorrow".into() };
    let (agent, mock) = agent([MockResponse::error(limited), MockResponse::text("now")]);
    let mut agent = agent.with_retry_config(RetryConfig::default().with_max_retries(1));
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(outcome.final_text().as_deref(), Some("now"));
    let requests = mock.requests();
    let waited = requests[1].at - requests[0].at;
    assert!(waited <= Duration::from_millis(1_200), "the backoff's first delay, not a day: {waited:?}");
    let announced = events.iter().find_map(|e| match e {
        AgentEvent::ProviderRetry { delay_ms, .. } => Some(*delay_ms),
        _ => None,
    });
    // The announced delay is the one waited (the timer rounds up to the millisecond).
    let announced = announced.expect("the retry is announced");
    assert!(u64::try_from(waited.as_millis()).unwrap().abs_diff(announced) <= 1, "{announced} ms vs {waited:?}");
}

/// A provider that retries failed requests itself, as HTTP providers do: every request fails
/// with a 503, it retries as the request's policy allows and announces each retry.
struct SelfRetrying {
    requests: std::sync::atomic::AtomicU32,
}

impl StreamProvider for SelfRetrying {
    fn provider_id(&self) -> &str {
        "self-retrying"
    }

    fn stream(
        &self,
        request: &StreamRequest<'_>,
        _: CancellationToken,
    ) -> futures::stream::BoxStream<'static, StreamEvent> {
        use std::sync::atomic::Ordering;
        let retries = request.retry.expect("the loop passes its policy").max_retries;
        let unavailable = || ProviderError::Unavailable { status: 503, message: "busy".into() };
        let mut events = Vec::new();
        for attempt in 1..=retries {
            self.requests.fetch_add(1, Ordering::SeqCst);
            events.push(StreamEvent::Retry { attempt, delay: Duration::from_millis(1), error: unavailable() });
        }
        self.requests.fetch_add(1, Ordering::SeqCst);
        events.push(StreamEvent::error(unavailable(), AssistantMessage::new("self-retrying", request.model)));
        Box::pin(futures::stream::iter(events))
    }

    fn retries_requests(&self, _: &str) -> bool {
        true
    }
}

#[tokio::test]
async fn one_retry_policy_per_call_whoever_retries() {
    let provider = std::sync::Arc::new(SelfRetrying { requests: Default::default() });
    let mut agent = sinew_agent::Agent::new(std::sync::Arc::clone(&provider), "m")
        .with_retry_config(RetryConfig::new(3, 1, 1.0, 1));
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(outcome.reason, EndReason::Failed);
    assert_eq!(
        provider.requests.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "one attempt and the policy's three retries, not the provider's retries times the loop's"
    );
    let attempts: Vec<u32> = events
        .iter()
        .filter_map(|e| match *e {
            AgentEvent::ProviderRetry { attempt, max_retries: 3, .. } => Some(attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [1, 2, 3], "the provider's retries are announced as the run's");
}

#[tokio::test(start_paused = true)]
async fn rate_limits_are_retried_after_the_delay_the_service_asked_for() {
    let limited = ProviderError::RateLimited { retry_after_ms: Some(5_000), message: "slow down".into() };
    let (mut agent, mock) = agent([MockResponse::error(limited), MockResponse::text("finally")]);
    let (events, outcome) = agent.prompt("q").collect().await;
    assert_eq!(outcome.final_text().as_deref(), Some("finally"));
    let requests = mock.requests();
    assert_eq!(requests[1].at - requests[0].at, Duration::from_millis(5_000));
    let retry = events.iter().find_map(|e| match e {
        AgentEvent::ProviderRetry { attempt, max_retries, delay_ms, error, .. } => {
            Some((*attempt, *max_retries, *delay_ms, error.clone()))
        }
        _ => None,
    });
    assert_eq!(retry, Some((1, 3, 5_000, "rate limited (retry after 5000 ms): slow down".into())));
    // One assistant message only: the failed attempt is not in the history.
    assert_eq!(crate::roles(agent.messages()), ["user", "assistant"]);
}

#[tokio::test(start_paused = true)]
async fn transient_errors_back_off_exponentially_then_give_up() {
    let network = || MockResponse::error(ProviderError::Network("connection reset".into()));
    let (agent, mock) = agent([network(), network(), network(), network(), MockResponse::text("too late")]);
    let mut agent = agent.with_retry_config(RetryConfig::default().with_max_retries(3));
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(mock.calls(), 4, "one attempt and three retries");
    assert_eq!(outcome.reason, EndReason::Failed);
    assert_eq!(outcome.error.as_deref(), Some("network error: connection reset"));
    let at: Vec<_> = mock.requests().iter().map(|r| r.at).collect();
    for (i, (lo, hi)) in [(800, 1200), (1600, 2400), (3200, 4800)].into_iter().enumerate() {
        let gap = at[i + 1] - at[i];
        assert!(gap >= Duration::from_millis(lo) && gap <= Duration::from_millis(hi), "retry {}: {gap:?}", i + 1);
    }
    let last = agent.messages().last().unwrap().as_assistant().unwrap();
    assert_eq!((last.stop_reason, last.content.len()), (StopReason::Error, 0));
}

#[tokio::test]
async fn final_errors_are_not_retried() {
    for error in [
        ProviderError::Auth("no".into()),
        ProviderError::Api { status: Some(400), message: "bad".into() },
        ProviderError::ContextOverflow { message: "prompt is too long".into() },
    ] {
        let (agent, mock) = agent([MockResponse::error(error.clone()), MockResponse::text("x")]);
        // Without compaction, an overflow is final too.
        let mut agent = agent.with_context_config(None);
        let outcome = agent.prompt("q").finish().await;
        assert_eq!(mock.calls(), 1, "{error}");
        assert_eq!(outcome.reason, EndReason::Failed);
        assert_eq!(outcome.error, Some(error.to_string()));
    }
}

#[tokio::test]
async fn an_overflow_is_compacted_and_asked_again_once_by_default() {
    let overflow = || ProviderError::ContextOverflow { message: "prompt is too long".into() };
    let (mut agent, mock) = agent([MockResponse::error(overflow()), MockResponse::text("fits")]);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!((mock.calls(), outcome.reason), (2, EndReason::Completed));

    let (mut agent, mock) =
        crate::agent([MockResponse::error(overflow()), MockResponse::error(overflow()), MockResponse::text("x")]);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!((mock.calls(), outcome.reason), (2, EndReason::Failed), "one recovery per run");
}

#[tokio::test]
async fn errors_after_streaming_began_are_not_retried_and_keep_the_partial_text() {
    let (mut agent, mock) = agent([
        MockResponse::new().text_delta("partial an").then_error(ProviderError::Network("dropped".into())),
        MockResponse::text("x"),
    ]);
    let outcome = agent.prompt("q").finish().await;
    assert_eq!(mock.calls(), 1);
    assert_eq!(outcome.reason, EndReason::Failed);
    let last = agent.messages().last().unwrap().as_assistant().unwrap();
    assert_eq!(last.text(), "partial an");
    assert_eq!(last.error_message.as_deref(), Some("network error: dropped"));
}

#[tokio::test(start_paused = true)]
async fn abort_during_a_retry_wait_ends_the_run_at_once() {
    use futures::StreamExt;
    let limited = ProviderError::RateLimited { retry_after_ms: Some(60_000), message: String::new() };
    let (mut agent, mock) = agent([MockResponse::error(limited), MockResponse::text("never")]);
    let handle = agent.handle();
    let start = tokio::time::Instant::now();
    let mut run = agent.prompt("q");
    while let Some(event) = run.next().await {
        if event.kind() == "provider_retry" {
            handle.abort();
        }
    }
    let reason = run.outcome().map(|o| o.reason);
    drop(run);
    assert_eq!(reason, Some(EndReason::Aborted));
    assert_eq!(mock.calls(), 1);
    assert!(start.elapsed() < Duration::from_secs(60), "did not wait out the delay");
    assert_eq!(agent.messages().last().unwrap().as_assistant().unwrap().stop_reason, StopReason::Aborted);
}

#[test]
fn retries_are_logged_with_attempt_delay_and_error() {
    let logged = sinew_testing::warnings_during(|| {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        rt.block_on(async {
            let limited = ProviderError::RateLimited { retry_after_ms: Some(10), message: "busy".into() };
            let (mut agent, _) = agent([MockResponse::error(limited), MockResponse::text("ok")]);
            agent.prompt("q").finish().await;
        });
    });
    for field in ["attempt=1", "max_retries=3", "delay_ms=10", "error=rate limited (retry after 10 ms): busy"] {
        assert!(logged.contains(field), "{field} missing in {logged}");
    }
}

#[tokio::test]
async fn a_rejecting_filter_stops_the_run_before_any_model_call() {
    let (agent, mock) = agent([MockResponse::text("never")]);
    let mut agent = agent.with_input_filter(|_: &str| FilterResult::Pass).with_input_filter(|text: &str| {
        if text.contains("password") { FilterResult::Reject("contains a secret".into()) } else { FilterResult::Pass }
    });
    let (events, outcome) = agent.prompt("my password is hunter2").collect().await;
    assert_eq!(kinds(&events), ["agent_start", "input_rejected", "agent_end"]);
    assert!(matches!(&events[1], AgentEvent::InputRejected { reason, .. } if reason == "contains a secret"));
    assert!(
        matches!(&events[2], AgentEvent::AgentEnd { messages, reason: EndReason::Rejected, .. } if messages.is_empty())
    );
    assert_eq!(outcome.reason, EndReason::Rejected);
    assert_eq!(mock.calls(), 0);
    assert!(agent.messages().is_empty());
}

#[tokio::test]
async fn warnings_are_appended_to_the_user_message() {
    let (agent, mock) = agent([MockResponse::text("ok")]);
    let mut agent =
        agent.with_input_filter(|_: &str| FilterResult::Warn("long input".into())).with_input_filter(|text: &str| {
            assert_eq!(text, "hello", "filters see the user's text");
            FilterResult::Warn("mentions greetings".into())
        });
    let outcome = agent.prompt("hello").finish().await;
    assert_eq!(outcome.reason, EndReason::Completed);
    assert_eq!(user_texts(&mock.requests()[0]), ["hello\n[Warning: long input]\n[Warning: mentions greetings]"]);
}
