//! Token usage.

use serde::{Deserialize, Serialize};

/// Tokens spent by one model call (or summed over several).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    pub input: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Prompt tokens read from the cache; 0 when the provider reports none.
    pub cache_read: u64,
    /// Prompt tokens written to the cache; 0 when the provider reports none.
    pub cache_write: u64,
    /// The total the service reported, or else the sum of the other counts.
    pub total_tokens: u64,
}

/// Counts come from servers, so every sum saturates: a hostile or buggy count can neither panic
/// nor wrap around below a token limit.
impl Usage {
    /// Input and output tokens, with no cache use; `total_tokens` is their sum.
    pub fn new(input: u64, output: u64) -> Usage {
        Usage { input, output, cache_read: 0, cache_write: 0, total_tokens: input.saturating_add(output) }
    }

    /// This usage with cache reads and writes, `total_tokens` grown by them.
    #[must_use]
    pub fn with_cache(mut self, cache_read: u64, cache_write: u64) -> Usage {
        self.cache_read = cache_read;
        self.cache_write = cache_write;
        self.total_tokens = self.all_tokens();
        self
    }

    /// This usage with the total the service reported.
    #[must_use]
    pub fn with_total(mut self, total_tokens: u64) -> Usage {
        self.total_tokens = total_tokens;
        self
    }

    /// The whole prompt: `input + cache_read + cache_write`.
    pub fn prompt_tokens(&self) -> u64 {
        self.input.saturating_add(self.cache_read).saturating_add(self.cache_write)
    }

    /// The prompt and the output: what the call cost in tokens, whatever `total_tokens` says.
    pub fn all_tokens(&self) -> u64 {
        self.prompt_tokens().saturating_add(self.output)
    }

    /// Share of the prompt served from the cache: `cache_read / (input + cache_read + cache_write)`.
    /// Zero when there was no prompt.
    pub fn cache_hit_rate(&self) -> f64 {
        let prompt = self.prompt_tokens();
        if prompt == 0 { 0.0 } else { self.cache_read as f64 / prompt as f64 }
    }

    /// Field-wise sum of two usages.
    #[must_use]
    pub fn combine(&self, other: &Usage) -> Usage {
        Usage {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
            total_tokens: self.total_tokens.saturating_add(other.total_tokens),
        }
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Usage) {
        *self = self.combine(other);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_of_server_counts_saturate() {
        let huge = Usage { input: u64::MAX, output: u64::MAX, cache_read: 7, cache_write: 1, total_tokens: u64::MAX };
        assert_eq!(huge.prompt_tokens(), u64::MAX);
        assert_eq!(huge.all_tokens(), u64::MAX);
        let mut sum = huge;
        sum.add(&huge);
        assert_eq!(
            sum,
            Usage { input: u64::MAX, output: u64::MAX, cache_read: 14, cache_write: 2, total_tokens: u64::MAX }
        );
        assert!((0.0..=1.0).contains(&huge.cache_hit_rate()));
        let small = Usage { input: 10, output: 5, cache_read: 30, cache_write: 0, total_tokens: 45 };
        assert_eq!((small.prompt_tokens(), small.all_tokens()), (40, 45));
        assert_eq!(small.cache_hit_rate(), 0.75);
    }
}
