//! Retry policy for model calls.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How often and how patiently a failed model call is retried.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Retries after the first attempt; 0 disables retrying.
    pub max_retries: u32,
    /// The delay before the first retry, in milliseconds. Default 1,000.
    pub initial_delay_ms: u64,
    /// The factor each next delay grows by. Default 2.0.
    pub backoff_multiplier: f64,
    /// The cap on any one delay, in milliseconds. Default 30,000.
    pub max_delay_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig { max_retries: 3, initial_delay_ms: 1_000, backoff_multiplier: 2.0, max_delay_ms: 30_000 }
    }
}

impl RetryConfig {
    /// No retries at all.
    pub fn none() -> Self {
        RetryConfig { max_retries: 0, ..RetryConfig::default() }
    }

    /// `max_retries` retries, the first after `initial_delay_ms`, each next one `multiplier`
    /// times longer, none longer than `max_delay_ms`.
    pub fn new(max_retries: u32, initial_delay_ms: u64, multiplier: f64, max_delay_ms: u64) -> Self {
        RetryConfig { max_retries, initial_delay_ms, backoff_multiplier: multiplier, max_delay_ms }
    }

    /// This policy with `max_retries` retries.
    #[must_use]
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }
}

/// The longest delay a server may ask for (`retry-after`) and be obeyed. A longer one falls back
/// to the backoff of the [`RetryConfig`], as the official SDKs do: a call never silently sleeps
/// for minutes (or a day) because a server said so.
pub const MAX_SERVER_DELAY: Duration = Duration::from_secs(60);

/// The delay before retry number `attempt` (1-based): `initial * multiplier^(attempt-1)`, capped at
/// `max_delay_ms`, times a uniform jitter in `[0.8, 1.2]`.
pub fn delay_for_attempt(config: &RetryConfig, attempt: u32) -> Duration {
    let exponent = attempt.saturating_sub(1).min(64) as i32;
    let base = config.initial_delay_ms as f64 * config.backoff_multiplier.powi(exponent);
    // `max` and `min` drop a NaN from a NaN multiplier; a huge product saturates.
    let capped = base.min(config.max_delay_ms as f64).max(0.0);
    let jitter = 0.8 + fastrand::f64() * 0.4;
    Duration::try_from_secs_f64(capped * jitter / 1000.0).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(config: &RetryConfig, attempt: u32) -> (Duration, Duration) {
        let samples: Vec<Duration> = (0..10_000).map(|_| delay_for_attempt(config, attempt)).collect();
        (*samples.iter().min().unwrap(), *samples.iter().max().unwrap())
    }

    #[test]
    fn defaults_are_documented_values() {
        assert_eq!(
            RetryConfig::default(),
            RetryConfig { max_retries: 3, initial_delay_ms: 1000, backoff_multiplier: 2.0, max_delay_ms: 30_000 }
        );
    }

    #[test]
    fn grows_exponentially_with_jitter_in_bounds() {
        let c = RetryConfig::default();
        for (attempt, base_ms) in [(1u32, 1000u64), (2, 2000), (3, 4000), (4, 8000)] {
            let (lo, hi) = range(&c, attempt);
            assert!(lo >= Duration::from_millis(base_ms * 8 / 10), "attempt {attempt}: {lo:?}");
            assert!(hi <= Duration::from_millis(base_ms * 12 / 10), "attempt {attempt}: {hi:?}");
            // 10,000 samples spread over most of the jitter range.
            assert!(hi - lo > Duration::from_millis(base_ms * 3 / 10), "attempt {attempt}: no jitter");
        }
    }

    #[test]
    fn cap_is_respected() {
        let c = RetryConfig::default();
        for attempt in [6, 10, 100, u32::MAX] {
            let (_, hi) = range(&c, attempt);
            assert!(hi <= Duration::from_millis(36_000), "attempt {attempt}: {hi:?}");
        }
    }

    #[test]
    fn absurd_configurations_never_panic() {
        for (initial_delay_ms, backoff_multiplier, max_delay_ms) in
            [(u64::MAX, f64::MAX, u64::MAX), (1, f64::NAN, 10), (1, f64::INFINITY, 10), (1, -3.0, 10), (1, 2.0, 0)]
        {
            let config = RetryConfig { max_retries: 3, initial_delay_ms, backoff_multiplier, max_delay_ms };
            for attempt in [1, 2, 64, u32::MAX] {
                let delay = delay_for_attempt(&config, attempt);
                assert!(
                    delay.as_secs_f64() <= max_delay_ms as f64 * 1.2 / 1000.0 + 1.0,
                    "{config:?} {attempt}: {delay:?}"
                );
            }
        }
    }
}
