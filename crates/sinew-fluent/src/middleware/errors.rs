//! Error-layer middleware: retry with backoff, circuit breaker.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use serde_json::{Map, Value};
use sinew_adk::{CallbackContext, LlmRequest, LlmResponse, Tool, ToolContext, ToolError};
use tokio::time::Instant;

use super::Middleware;

/// Retries a failed model call or tool call, waiting `backoff`, then twice that, and so on (or
/// as long as the service asked, up to a minute: a longer ask ends the retries), until one attempt succeeds or `max_attempts` attempts
/// (the first included) failed; then the error stands. Only failures a retry can cure are retried:
/// a model's rate limit, network failure or unavailability, and a tool's failure (not arguments
/// the model got wrong). A model call is retried on the agent's own model, without streaming;
/// each retry counts against `max_llm_calls`. The answer a retry got passes `after_model` as any
/// answer does (ADK runs after-model callbacks on an error callback's answer), so token budgets
/// and cost trackers count it.
#[derive(Debug)]
pub struct Retry {
    max_attempts: u32,
    backoff: Duration,
}

impl Retry {
    /// At most `max_attempts` attempts per call, the first retry after `backoff`.
    pub fn new(max_attempts: u32, backoff: Duration) -> Self {
        Retry { max_attempts: max_attempts.max(1), backoff }
    }

    fn delay(&self, retry: u32) -> Duration {
        self.backoff.saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)))
    }
}

/// The longest wait a service may ask for before a retry (sinew-core's `MAX_SERVER_DELAY`).
const MAX_SERVER_DELAY: Duration = Duration::from_secs(60);

/// The complete response of one model call, or its error.
async fn call_once(model: &dyn sinew_adk::Llm, request: LlmRequest) -> sinew_adk::Result<LlmResponse> {
    let mut responses = model.generate_content(request, false);
    let mut last = None;
    while let Some(item) = responses.next().await {
        let response = item?;
        if !response.is_partial() {
            last = Some(response);
        }
    }
    last.ok_or_else(|| sinew_adk::Error::InvalidRequest("the model gave no answer".into()))
}

#[async_trait]
impl Middleware for Retry {
    fn name(&self) -> &str {
        "retry"
    }

    async fn on_model_error(
        &self,
        ctx: &CallbackContext,
        request: &LlmRequest,
        error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        let mut asked = match error {
            sinew_adk::Error::Model(e) if e.is_retryable() => e.retry_after(),
            _ => return None,
        };
        if asked.is_some_and(|delay| delay > MAX_SERVER_DELAY) {
            // A service that asks for longer than a run should wait has said no.
            return None;
        }
        let invocation = ctx.invocation();
        let model = invocation.agent().as_llm_agent()?.canonical_model(invocation.root_agent()).ok()?;
        for retry in 1..self.max_attempts {
            tokio::time::sleep(self.delay(retry).max(asked.unwrap_or_default())).await;
            if invocation.count_llm_call().is_err() {
                return None;
            }
            match call_once(model.as_ref(), request.clone()).await {
                Ok(response) => return Some(response),
                Err(sinew_adk::Error::Model(e)) if e.is_retryable() => {
                    asked = e.retry_after();
                    if asked.is_some_and(|delay| delay > MAX_SERVER_DELAY) {
                        return None;
                    }
                }
                Err(_) => return None,
            }
        }
        None
    }

    async fn on_tool_error(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        error: &ToolError,
    ) -> Option<Map<String, Value>> {
        if !matches!(error, ToolError::Failed(_)) {
            return None;
        }
        for retry in 1..self.max_attempts {
            tokio::time::sleep(self.delay(retry)).await;
            match tool.run(args.clone(), ctx).await {
                Ok(value) => return Some(sinew_adk::response_object(value)),
                Err(ToolError::Failed(_)) => {}
                Err(_) => return None,
            }
        }
        None
    }
}

/// An instant no run reaches (about thirty years from now).
fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

/// Where a circuit breaker stands for an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerState {
    /// Calls go through; this many failed in a row.
    Closed(u32),
    /// Calls are refused until the cool-down ends.
    Open,
    /// The cool-down ended: the next call is a trial.
    HalfOpen,
}

#[derive(Clone, Copy, Debug)]
enum Circuit {
    Closed(u32),
    /// Refusing calls until the instant; after it, the next call is the trial.
    Open(Instant),
    /// The one trial call went out at this instant: others are refused until it answers, or
    /// until a cool-down passed without an answer (a trial whose run was dropped, or answered by
    /// middleware before the breaker).
    Trial(Instant),
}

/// Stops calling a failing model: after `threshold` failed calls in a row an agent's calls are
/// answered with an error response (`CIRCUIT_OPEN`) for `cool_down`; then one trial call goes
/// through (others are refused while it is out), and its answer closes the circuit, its failure
/// opens it again.
#[derive(Debug)]
pub struct CircuitBreaker {
    threshold: u32,
    cool_down: Duration,
    circuits: Mutex<HashMap<String, Circuit>>,
}

impl CircuitBreaker {
    /// Opens after `threshold` failures in a row, for `cool_down`.
    pub fn new(threshold: u32, cool_down: Duration) -> Self {
        CircuitBreaker { threshold: threshold.max(1), cool_down, circuits: Mutex::new(HashMap::new()) }
    }

    /// Open until the cool-down ends (for good, when it is too long to count).
    fn open(&self) -> Circuit {
        Circuit::Open(Instant::now().checked_add(self.cool_down).unwrap_or_else(far_future))
    }

    fn circuits(&self) -> std::sync::MutexGuard<'_, HashMap<String, Circuit>> {
        self.circuits.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where the breaker stands for agent `agent`.
    pub fn state(&self, agent: &str) -> BreakerState {
        match self.circuits().get(agent).copied().unwrap_or(Circuit::Closed(0)) {
            Circuit::Closed(n) => BreakerState::Closed(n),
            Circuit::Open(until) if Instant::now() < until => BreakerState::Open,
            Circuit::Open(_) | Circuit::Trial(_) => BreakerState::HalfOpen,
        }
    }
}

#[async_trait]
impl Middleware for CircuitBreaker {
    fn name(&self) -> &str {
        "circuit_breaker"
    }

    async fn before_model(&self, ctx: &CallbackContext, _request: &mut LlmRequest) -> Option<LlmResponse> {
        let mut circuits = self.circuits();
        let circuit = circuits.entry(ctx.agent_name().to_owned()).or_insert(Circuit::Closed(0));
        let now = Instant::now();
        let trial_expired = |started: Instant| now.duration_since(started) >= self.cool_down;
        let refuse = match *circuit {
            Circuit::Open(until) if now < until => true,
            Circuit::Trial(started) if !trial_expired(started) => true,
            Circuit::Open(_) | Circuit::Trial(_) => {
                *circuit = Circuit::Trial(now);
                false
            }
            Circuit::Closed(_) => false,
        };
        refuse.then(|| {
            LlmResponse::error(
                CIRCUIT_OPEN,
                format!("calls of agent `{}` are paused after {} failures in a row", ctx.agent_name(), self.threshold),
            )
        })
    }

    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        if response.is_partial() || response.error_code.as_deref() == Some(CIRCUIT_OPEN) {
            return None;
        }
        let mut circuits = self.circuits();
        let circuit = circuits.entry(ctx.agent_name().to_owned()).or_insert(Circuit::Closed(0));
        match (*circuit, response.error_code.is_some()) {
            // An answer closes the circuit; a failed trial opens it again.
            (_, false) => *circuit = Circuit::Closed(0),
            (Circuit::Trial(_), true) => *circuit = self.open(),
            (_, true) => {}
        }
        None
    }

    async fn on_model_error(
        &self,
        ctx: &CallbackContext,
        _request: &LlmRequest,
        _error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        let mut circuits = self.circuits();
        let circuit = circuits.entry(ctx.agent_name().to_owned()).or_insert(Circuit::Closed(0));
        *circuit = match *circuit {
            Circuit::Closed(n) if n + 1 < self.threshold => Circuit::Closed(n + 1),
            _ => self.open(),
        };
        None
    }
}

/// The error code of a call the breaker refused.
const CIRCUIT_OPEN: &str = "CIRCUIT_OPEN";
