//! Model-layer middleware: token budget, cost tracker, response cache, rate limiter.

use std::collections::BTreeMap;
use std::hash::BuildHasher as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use sinew_adk::{CallbackContext, InvocationContext, LlmRequest, LlmResponse};

use super::{Middleware, call_key};
use crate::bounded::BoundedMap;

/// Requests longer than this, written out, are not cached (the key is the request itself).
const MAX_CACHED_REQUEST: usize = 1 << 20;

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The tokens a response used: prompt, answer (thoughts included) and cached prompt tokens
/// (ADK's `usageMetadata`).
fn tokens(response: &LlmResponse) -> (u64, u64, u64) {
    response.usage_metadata.as_ref().map_or((0, 0, 0), |u| {
        (
            u.prompt_token_count.unwrap_or(0),
            // Thinking is billed as output.
            u.candidates_token_count.unwrap_or(0).saturating_add(u.thoughts_token_count.unwrap_or(0)),
            u.cached_content_token_count.unwrap_or(0),
        )
    })
}

/// Whether a response is a complete answer (not a streamed fragment, not an error).
fn complete(response: &LlmResponse) -> bool {
    !response.is_partial() && response.error_code.is_none()
}

/// A token limit: once the tokens models used (prompt and answer, as they report them) reach it,
/// model calls are answered with an error response (`TOKEN_BUDGET_EXCEEDED`) instead of made.
#[derive(Debug)]
pub struct TokenBudget {
    limit: u64,
    per_invocation: bool,
    used: Mutex<BoundedMap<u64>>,
}

impl TokenBudget {
    /// At most `limit` tokens per invocation.
    pub fn per_invocation(limit: u64) -> Self {
        TokenBudget { limit, per_invocation: true, used: Mutex::default() }
    }

    /// At most `limit` tokens over every run of the backend.
    pub fn total(limit: u64) -> Self {
        TokenBudget { limit, per_invocation: false, used: Mutex::default() }
    }

    fn key(&self, invocation_id: &str) -> String {
        if self.per_invocation { invocation_id.to_owned() } else { String::new() }
    }

    /// The tokens used so far: by the invocation `invocation_id` (per-invocation budgets, while it
    /// runs), or in total.
    pub fn used(&self, invocation_id: &str) -> u64 {
        lock(&self.used).get(&self.key(invocation_id)).copied().unwrap_or(0)
    }
}

#[async_trait]
impl Middleware for TokenBudget {
    fn name(&self) -> &str {
        "token_budget"
    }

    async fn before_model(&self, ctx: &CallbackContext, _request: &mut LlmRequest) -> Option<LlmResponse> {
        let used = self.used(ctx.invocation_id());
        (used >= self.limit).then(|| {
            LlmResponse::error(
                "TOKEN_BUDGET_EXCEEDED",
                format!("the token budget of {} is spent ({used} used)", self.limit),
            )
        })
    }

    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        if complete(response) {
            let (prompt, answer, _) = tokens(response);
            *lock(&self.used).entry_or_insert_with(&self.key(ctx.invocation_id()), || 0) += prompt + answer;
        }
        None
    }

    async fn after_run(&self, ctx: &InvocationContext) {
        if self.per_invocation {
            lock(&self.used).remove(ctx.invocation_id());
        }
    }
}

/// A model's price in dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from a cache.
    pub cache_read: f64,
}

impl Price {
    /// A price for input and output tokens (cache reads at the input price).
    pub fn new(input: f64, output: f64) -> Self {
        Price { input, output, cache_read: input }
    }

    /// With a price for cached input tokens.
    #[must_use]
    pub fn with_cache_read(mut self, cache_read: f64) -> Self {
        self.cache_read = cache_read;
        self
    }
}

/// What an agent's model calls used and cost.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AgentCost {
    /// Model calls answered.
    pub calls: u64,
    /// Prompt tokens (cached ones included).
    pub input_tokens: u64,
    /// Of which read from a cache.
    pub cached_tokens: u64,
    /// Answer tokens.
    pub output_tokens: u64,
    /// Dollars, for the calls whose model has a price.
    pub cost: f64,
    /// Calls whose model has no price (their tokens are counted, their cost is not).
    pub unpriced_calls: u64,
}

type PriceLookup = Box<dyn Fn(&str) -> Option<Price> + Send + Sync>;

/// Adds up tokens and cost per agent from the usage models report. Prices come from `prices`
/// (the facade's model catalog: `sinew::catalog::fluent_price`, or a table of your own).
pub struct CostTracker {
    prices: PriceLookup,
    models: Mutex<BoundedMap<Option<String>>>,
    costs: Mutex<BTreeMap<String, AgentCost>>,
}

impl std::fmt::Debug for CostTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CostTracker").field("costs", &*lock(&self.costs)).finish_non_exhaustive()
    }
}

impl CostTracker {
    /// A tracker pricing each model by name with `prices`.
    pub fn new(prices: impl Fn(&str) -> Option<Price> + Send + Sync + 'static) -> Self {
        CostTracker { prices: Box::new(prices), models: Mutex::default(), costs: Mutex::new(BTreeMap::new()) }
    }

    /// What each agent used and cost so far, by agent name.
    pub fn costs(&self) -> BTreeMap<String, AgentCost> {
        lock(&self.costs).clone()
    }

    /// The dollars spent so far.
    pub fn total(&self) -> f64 {
        lock(&self.costs).values().map(|c| c.cost).sum()
    }
}

#[async_trait]
impl Middleware for CostTracker {
    fn name(&self) -> &str {
        "cost_tracker"
    }

    async fn before_model(&self, ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        lock(&self.models).insert(&call_key(ctx), request.model.clone());
        None
    }

    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        if response.is_partial() {
            return None;
        }
        // A call counts when this tracker saw it go out and the answer reports usage: a stand-in
        // (a cache's replay, a budget's refusal) reports none; a failed call that was billed does.
        let model = lock(&self.models).remove(&call_key(ctx))?;
        response.usage_metadata.as_ref()?;
        let (input, output, cached) = tokens(response);
        let price = model.as_deref().and_then(|m| (self.prices)(m));
        let mut costs = lock(&self.costs);
        let entry = costs.entry(ctx.agent_name().to_owned()).or_default();
        entry.calls += 1;
        entry.input_tokens += input;
        entry.cached_tokens += cached;
        entry.output_tokens += output;
        match price {
            Some(p) => {
                let uncached = input.saturating_sub(cached) as f64;
                entry.cost += (uncached * p.input + cached as f64 * p.cache_read + output as f64 * p.output) / 1e6;
            }
            None => entry.unpriced_calls += 1,
        }
        None
    }

    async fn on_model_error(
        &self,
        ctx: &CallbackContext,
        _request: &LlmRequest,
        _error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        lock(&self.models).remove(&call_key(ctx));
        None
    }
}

/// Answers a model request it has seen before with the answer it got then, without calling the
/// model (the replayed answer reports no token usage: nothing was used). Requests are compared
/// whole (model, history, instruction, tools, settings; by 128 bits of hash, so the cache holds
/// answers, not requests); complete answers are kept, at most `capacity` of them, the oldest
/// dropped first; requests over 1 MiB written out are not cached.
#[derive(Debug)]
pub struct ResponseCache {
    capacity: usize,
    entries: Mutex<BoundedMap<LlmResponse>>,
    pending: Mutex<BoundedMap<String>>,
    hashers: (std::hash::RandomState, std::hash::RandomState),
    hits: AtomicU64,
    misses: AtomicU64,
}

impl ResponseCache {
    /// A cache of at most `capacity` answers.
    pub fn new(capacity: usize) -> Self {
        ResponseCache {
            capacity,
            entries: Mutex::new(BoundedMap::with_cap(capacity)),
            pending: Mutex::default(),
            hashers: (std::hash::RandomState::new(), std::hash::RandomState::new()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Requests answered from the cache.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Requests that went to the model.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }
}

#[async_trait]
impl Middleware for ResponseCache {
    fn name(&self) -> &str {
        "response_cache"
    }

    async fn before_model(&self, ctx: &CallbackContext, request: &mut LlmRequest) -> Option<LlmResponse> {
        let call = call_key(ctx);
        lock(&self.pending).remove(&call);
        if self.capacity == 0 {
            return None;
        }
        let request = serde_json::to_string(request).ok().filter(|k| k.len() <= MAX_CACHED_REQUEST)?;
        // Kept as 128 bits of two independently keyed hashes, not the request itself.
        let key = format!("{:016x}{:016x}", self.hashers.0.hash_one(&request), self.hashers.1.hash_one(&request));
        if let Some(answer) = lock(&self.entries).get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            let mut answer = answer.clone();
            answer.usage_metadata = None;
            return Some(answer);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        lock(&self.pending).insert(&call, key);
        None
    }

    async fn after_model(&self, ctx: &CallbackContext, response: &LlmResponse) -> Option<LlmResponse> {
        if response.is_partial() {
            return None;
        }
        let key = lock(&self.pending).remove(&call_key(ctx))?;
        if response.error_code.is_none() {
            lock(&self.entries).insert(&key, response.clone());
        }
        None
    }

    async fn on_model_error(
        &self,
        ctx: &CallbackContext,
        _request: &LlmRequest,
        _error: &sinew_adk::Error,
    ) -> Option<LlmResponse> {
        lock(&self.pending).remove(&call_key(ctx));
        None
    }
}

/// A token bucket over model calls: `capacity` calls at once, refilled at `per_second`; a call
/// finding the bucket empty waits for the next token.
#[derive(Debug)]
pub struct RateLimiter {
    capacity: f64,
    per_second: f64,
    bucket: tokio::sync::Mutex<(f64, tokio::time::Instant)>,
}

impl RateLimiter {
    /// A bucket of `capacity` tokens (at least one) refilled at `per_second` tokens a second (at
    /// least a thousandth).
    pub fn new(capacity: f64, per_second: f64) -> Self {
        let capacity = capacity.max(1.0);
        RateLimiter {
            capacity,
            per_second: per_second.max(0.001),
            bucket: tokio::sync::Mutex::new((capacity, tokio::time::Instant::now())),
        }
    }
}

#[async_trait]
impl Middleware for RateLimiter {
    fn name(&self) -> &str {
        "rate_limiter"
    }

    async fn before_model(&self, _ctx: &CallbackContext, _request: &mut LlmRequest) -> Option<LlmResponse> {
        loop {
            let wait = {
                let mut bucket = self.bucket.lock().await;
                let now = tokio::time::Instant::now();
                let refill = now.duration_since(bucket.1).as_secs_f64() * self.per_second;
                *bucket = ((bucket.0 + refill).min(self.capacity), now);
                if bucket.0 >= 1.0 {
                    bucket.0 -= 1.0;
                    return None;
                }
                Duration::from_secs_f64((1.0 - bucket.0) / self.per_second)
            };
            tokio::time::sleep(wait).await;
        }
    }
}
