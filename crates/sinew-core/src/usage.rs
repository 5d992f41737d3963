//! Token usage.

use serde::{Deserialize, Serialize};

/// Tokens spent by one model call (or summed over several).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// Share of the prompt served from the cache: `cache_read / (input + cache_read + cache_write)`.
    /// Zero when there was no prompt.
    pub fn cache_hit_rate(&self) -> f64 {
        let prompt = self.input + self.cache_read + self.cache_write;
        if prompt == 0 { 0.0 } else { self.cache_read as f64 / prompt as f64 }
    }

    /// Field-wise sum of two usages.
    #[must_use]
    pub fn combine(&self, other: &Usage) -> Usage {
        Usage {
            input: self.input + other.input,
            output: self.output + other.output,
            cache_read: self.cache_read + other.cache_read,
            cache_write: self.cache_write + other.cache_write,
            total_tokens: self.total_tokens + other.total_tokens,
        }
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &Usage) {
        *self = self.combine(other);
    }
}
