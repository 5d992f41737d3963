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

/// Retries a failed model call or tool call, waiting `backoff`, then twice that, and so on,
/// until one attempt succeeds or `max_attempts` attempts (the first included) failed; then the
/// last error stands. A model call is retried on the agent's own model, without streaming.
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
        _error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        let invocation = ctx.invocation();
        let model = invocation.agent().as_llm_agent()?.canonical_model(invocation.root_agent()).ok()?;
        for retry in 1..self.max_attempts {
            tokio::time::sleep(self.delay(retry)).await;
            if invocation.count_llm_call().is_err() {
                return None;
            }
            if let Ok(response) = call_once(model.as_ref(), request.clone()).await {
                return Some(response);
            }
        }
        None
    }

    async fn on_tool_error(
        &self,
        ctx: &ToolContext,
        tool: &dyn Tool,
        args: &Map<String, Value>,
        _error: &ToolError,
    ) -> Option<Map<String, Value>> {
        for retry in 1..self.max_attempts {
            tokio::time::sleep(self.delay(retry)).await;
            if let Ok(value) = tool.run(args.clone(), ctx).await {
                return Some(sinew_adk::response_object(value));
            }
        }
        None
    }
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
    Open(Instant),
    HalfOpen,
}

/// Stops calling a failing model: after `threshold` failed calls in a row an agent's calls are
/// answered with an error response (`CIRCUIT_OPEN`) for `cool_down`; then one trial call goes
/// through, and its success closes the circuit, its failure opens it again.
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

    fn circuits(&self) -> std::sync::MutexGuard<'_, HashMap<String, Circuit>> {
        self.circuits.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Where the breaker stands for agent `agent`.
    pub fn state(&self, agent: &str) -> BreakerState {
        match self.circuits().get(agent).copied().unwrap_or(Circuit::Closed(0)) {
            Circuit::Closed(n) => BreakerState::Closed(n),
            Circuit::Open(until) if Instant::now() < until => BreakerState::Open,
            Circuit::Open(_) | Circuit::HalfOpen => BreakerState::HalfOpen,
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
        match *circuit {
            Circuit::Open(until) if Instant::now() < until => Some(LlmResponse::error(
                "CIRCUIT_OPEN",
                format!("calls of agent `{}` are paused after {} failures in a row", ctx.agent_name(), self.threshold),
            )),
            Circuit::Open(_) => {
                *circuit = Circuit::HalfOpen;
                None
            }
            Circuit::Closed(_) | Circuit::HalfOpen => None,
        }
    }

    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        if !response.is_partial() && response.error_code.as_deref() != Some("CIRCUIT_OPEN") {
            self.circuits().insert(ctx.agent_name().to_owned(), Circuit::Closed(0));
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
            _ => Circuit::Open(Instant::now() + self.cool_down),
        };
        None
    }
}
