//! Plain configuration types shared by the agent loop and providers.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How much the model should reason before answering. Providers map it to their own knobs: an
/// effort where the API takes one, else a token budget ([`ThinkingLevel::token_budget`] for
/// Anthropic and Bedrock, raised to their 1,024-token minimum; Gemini's own budgets or levels),
/// as `docs/providers.md` lists per provider.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ThinkingLevel {
    /// No reasoning: providers send no thinking parameters.
    #[default]
    Off,
    /// The least reasoning: effort `"minimal"` where the API has it (Responses; Chat Completions
    /// sends `"low"`).
    Minimal,
    /// Effort `"low"`.
    Low,
    /// Effort `"medium"`.
    Medium,
    /// Effort `"high"`.
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
    /// No breakpoints, as if caching were off.
    Disabled,
    /// Breakpoints only where the flags say.
    #[serde(rename_all = "camelCase")]
    Manual {
        /// A breakpoint after the system prompt.
        cache_system: bool,
        /// A breakpoint after the last tool definition.
        cache_tools: bool,
        /// A breakpoint on the second-to-last message.
        cache_messages: bool,
    },
}

/// Prompt caching settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CacheConfig {
    /// Whether to ask for prompt caching at all; `false` overrides `strategy`. Default `true`.
    pub enabled: bool,
    /// Where breakpoints go when enabled. Default [`CacheStrategy::Auto`].
    pub strategy: CacheStrategy,
}

impl CacheConfig {
    /// Settings with caching `enabled` or not, and breakpoints per `strategy`.
    pub fn new(enabled: bool, strategy: CacheStrategy) -> Self {
        CacheConfig { enabled, strategy }
    }

    /// Caching is on with breakpoints placed by hand, which services that cache by themselves
    /// (OpenAI, Gemini) cannot honour: they log it at debug level and go on.
    pub fn has_manual_breakpoints(&self) -> bool {
        self.enabled && matches!(self.strategy, CacheStrategy::Manual { .. })
    }

    /// Whether a breakpoint goes on the second-to-last message (when there is one).
    pub fn caches_messages(&self) -> bool {
        match (self.enabled, self.strategy) {
            (false, _) | (true, CacheStrategy::Disabled) => false,
            (true, CacheStrategy::Auto) => true,
            (true, CacheStrategy::Manual { cache_messages, .. }) => cache_messages,
        }
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
    Batched {
        /// Calls per group; 0 counts as 1.
        size: usize,
    },
}

/// Limits on one agent run. Exceeding one stops the run with a note in the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ExecutionLimits {
    /// Turns (model calls) a run may start. Default 50.
    pub max_turns: usize,
    /// Tokens summed over the run's model calls: the total each call reports (cached prompt
    /// tokens included), at least input plus output. Default 1,000,000.
    pub max_total_tokens: u64,
    /// Wall-clock time from the run's start; a model call or tool batch still running then is
    /// cut. Default 10 minutes.
    pub max_duration: Duration,
}

impl ExecutionLimits {
    /// Limits with the given maximum turns, total tokens and duration.
    pub const fn new(max_turns: usize, max_total_tokens: u64, max_duration: Duration) -> Self {
        ExecutionLimits { max_turns, max_total_tokens, max_duration }
    }

    /// Sets [`max_turns`](Self::max_turns).
    #[must_use]
    pub fn with_max_turns(mut self, max_turns: usize) -> Self {
        self.max_turns = max_turns;
        self
    }

    /// Sets [`max_total_tokens`](Self::max_total_tokens).
    #[must_use]
    pub fn with_max_total_tokens(mut self, max_total_tokens: u64) -> Self {
        self.max_total_tokens = max_total_tokens;
        self
    }

    /// Sets [`max_duration`](Self::max_duration).
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
    /// The limits checked by [`check_limits`](Self::check_limits).
    pub limits: ExecutionLimits,
    /// Turns finished so far.
    pub turns: usize,
    /// Tokens used by the finished turns, saturating at `u64::MAX`.
    pub tokens_used: u64,
    /// When the tracker was created; the duration limit counts from here.
    pub started_at: Instant,
}

impl ExecutionTracker {
    /// A tracker at zero turns and tokens, its clock starting now.
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
    Rerun {
        /// The caller's tag for the rerun.
        tag: String,
    },
    /// A different path from a shared point.
    Branch {
        /// The caller's tag for the branch.
        tag: String,
    },
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
