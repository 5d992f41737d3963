//! Plain configuration types shared by the agent loop and providers.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How much the model should reason before answering. Providers map it to their own knobs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
}

impl ThinkingLevel {
    /// The level as reasoning-effort parameters spell it (`"minimal"` … `"high"`); `None` for
    /// `Off`.
    pub fn effort(self) -> Option<&'static str> {
        match self {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some("minimal"),
            ThinkingLevel::Low => Some("low"),
            ThinkingLevel::Medium => Some("medium"),
            ThinkingLevel::High => Some("high"),
        }
    }

    /// Thinking tokens for the level (REQ-129): 128, 512, 2,048, 8,192; `None` for `Off`.
    /// Services with a minimum budget raise it to theirs.
    pub fn token_budget(self) -> Option<u32> {
        match self {
            ThinkingLevel::Off => None,
            ThinkingLevel::Minimal => Some(128),
            ThinkingLevel::Low => Some(512),
            ThinkingLevel::Medium => Some(2048),
            ThinkingLevel::High => Some(8192),
        }
    }
}

/// Where prompt-cache breakpoints go (for providers with explicit caching, like Anthropic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum CacheStrategy {
    /// System prompt, last tool definition and the second-to-last message.
    #[default]
    Auto,
    Disabled,
    #[serde(rename_all = "camelCase")]
    Manual {
        cache_system: bool,
        cache_tools: bool,
        cache_messages: bool,
    },
}

/// Prompt caching settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CacheConfig {
    pub enabled: bool,
    pub strategy: CacheStrategy,
}

impl CacheConfig {
    pub fn new(enabled: bool, strategy: CacheStrategy) -> Self {
        CacheConfig { enabled, strategy }
    }
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig { enabled: true, strategy: CacheStrategy::Auto }
    }
}

/// How queued steering or follow-up messages are taken from their queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum QueueMode {
    /// One message per read; the rest wait for the next opportunity.
    #[default]
    OneAtATime,
    /// The whole queue per read.
    All,
}

/// How the tool calls of one model response are run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "camelCase")]
pub enum ToolExecution {
    /// One after another; steering is checked after each.
    Sequential,
    /// All at once; steering is checked when all are done.
    #[default]
    Parallel,
    /// Groups of `size` at once; steering is checked between groups.
    Batched { size: usize },
}

/// Limits on one agent run. Exceeding one stops the run with a note in the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ExecutionLimits {
    pub max_turns: usize,
    pub max_total_tokens: u64,
    pub max_duration: Duration,
}

impl ExecutionLimits {
    pub const fn new(max_turns: usize, max_total_tokens: u64, max_duration: Duration) -> Self {
        ExecutionLimits { max_turns, max_total_tokens, max_duration }
    }

    #[must_use]
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns;
        self
    }

    #[must_use]
    pub fn with_max_total_tokens(mut self, max_total_tokens: u64) -> Self {
        self.max_total_tokens = max_total_tokens;
        self
    }

    #[must_use]
    pub fn with_max_duration(mut self, max_duration: Duration) -> Self {
        self.max_duration = max_duration;
        self
    }
}

impl Default for ExecutionLimits {
    fn default() -> Self {
        ExecutionLimits { max_turns: 50, max_total_tokens: 1_000_000, max_duration: Duration::from_secs(600) }
    }
}

/// What a run has used so far, against its [`ExecutionLimits`].
#[derive(Clone, Debug)]
pub struct ExecutionTracker {
    pub limits: ExecutionLimits,
    pub turns: usize,
    pub tokens_used: u64,
    pub started_at: Instant,
}

impl ExecutionTracker {
    pub fn new(limits: ExecutionLimits) -> Self {
        ExecutionTracker { limits, turns: 0, tokens_used: 0, started_at: Instant::now() }
    }

    /// Counts one finished turn that used `tokens`.
    pub fn record_turn(&mut self, tokens: u64) {
        self.turns += 1;
        self.tokens_used = self.tokens_used.saturating_add(tokens);
    }

    /// The reason the run must stop, if a limit is reached.
    pub fn check_limits(&self) -> Option<String> {
        if self.turns >= self.limits.max_turns {
            Some(format!("max turns exceeded ({})", self.limits.max_turns))
        } else if self.tokens_used >= self.limits.max_total_tokens {
            Some(format!("max total tokens exceeded ({} of {})", self.tokens_used, self.limits.max_total_tokens))
        } else if self.started_at.elapsed() >= self.limits.max_duration {
            Some(format!("max duration exceeded ({}s)", self.limits.max_duration.as_secs_f64()))
        } else {
            None
        }
    }
}

/// Why a loop continues an existing context rather than starting from a prompt.
///
/// Tags are RFC 3339 UTC timestamps chosen by the caller.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum ContinuationKind {
    /// A plain continuation.
    #[default]
    Default,
    /// A retry from an equivalent context.
    Rerun { tag: String },
    /// A different path from a shared point.
    Branch { tag: String },
}

/// What started a turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TurnTrigger {
    /// The first turn of an origin call.
    #[default]
    User,
    /// Every later turn, and the first turn of a plain or rerun continuation.
    Continuation,
    /// The first turn of a sub-agent's run.
    SubAgent,
    /// The first turn of a branch continuation.
    Branch,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_levels_map_to_efforts_and_budgets() {
        let levels = [
            ThinkingLevel::Off,
            ThinkingLevel::Minimal,
            ThinkingLevel::Low,
            ThinkingLevel::Medium,
            ThinkingLevel::High,
        ];
        let efforts: Vec<_> = levels.iter().map(|l| l.effort()).collect();
        assert_eq!(efforts, [None, Some("minimal"), Some("low"), Some("medium"), Some("high")]);
        let budgets: Vec<_> = levels.iter().map(|l| l.token_budget()).collect();
        assert_eq!(budgets, [None, Some(128), Some(512), Some(2048), Some(8192)]);
    }

    #[test]
    fn defaults_are_documented_values() {
        assert_eq!(
            ExecutionLimits::default(),
            ExecutionLimits { max_turns: 50, max_total_tokens: 1_000_000, max_duration: Duration::from_secs(600) }
        );
        assert_eq!(CacheConfig::default(), CacheConfig { enabled: true, strategy: CacheStrategy::Auto });
        assert_eq!(QueueMode::default(), QueueMode::OneAtATime);
        assert_eq!(ToolExecution::default(), ToolExecution::Parallel);
        assert_eq!(ThinkingLevel::default(), ThinkingLevel::Off);
    }

    #[test]
    fn tracker_reports_each_limit() {
        let limits = ExecutionLimits { max_turns: 2, max_total_tokens: 100, max_duration: Duration::from_secs(3600) };
        let mut t = ExecutionTracker::new(limits);
        assert_eq!((t.turns, t.tokens_used), (0, 0));
        assert_eq!(t.check_limits(), None);
        t.record_turn(10);
        assert_eq!(t.check_limits(), None);
        t.record_turn(10);
        assert_eq!(t.check_limits().as_deref(), Some("max turns exceeded (2)"));

        let mut t = ExecutionTracker::new(ExecutionLimits { max_turns: 10, ..limits });
        t.record_turn(100);
        assert_eq!(t.check_limits().as_deref(), Some("max total tokens exceeded (100 of 100)"));

        let t = ExecutionTracker::new(ExecutionLimits { max_duration: Duration::ZERO, ..limits });
        assert_eq!(t.check_limits().as_deref(), Some("max duration exceeded (0s)"));
    }
}
