//! Known models: protocol, limits, reasoning support and prices, generated from
//! `data/models.toml` by `cargo xtask codegen`.

use sinew_core::Usage;

mod models;

/// US dollars per million tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Price {
    /// Per million uncached input tokens.
    pub input: f64,
    /// Per million output tokens, reasoning included.
    pub output: f64,
    /// Per million input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Per million input tokens written to the prompt cache.
    pub cache_write: f64,
}

/// What sinew knows about a model.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelInfo {
    /// The model's id as its provider names it (`"claude-sonnet-4-5"`); ids with a version
    /// suffix added find the entry too.
    pub id: &'static str,
    /// The provider id that serves it (`anthropic`, `openai`, `openai_responses`, `google`,
    /// `bedrock`, or a compatible server's id).
    pub protocol: &'static str,
    /// The context window, in tokens; the agent sizes its default compaction budget from it.
    pub context_window: u32,
    /// The most output tokens one call may produce.
    pub max_output_tokens: u32,
    /// Whether it thinks (a thinking level has an effect).
    pub reasoning: bool,
    /// What its tokens cost.
    pub price: Price,
    /// Where the figures come from, and when they were read.
    pub source: &'static str,
    /// When the figures were read from `source`, such as `"2025-10"`.
    pub as_of: &'static str,
}

impl ModelInfo {
    /// What `usage` cost on this model, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let p = &self.price;
        (usage.input as f64 * p.input
            + usage.output as f64 * p.output
            + usage.cache_read as f64 * p.cache_read
            + usage.cache_write as f64 * p.cache_write)
            / 1_000_000.0
    }
}

/// Every model in the catalog.
pub fn models() -> &'static [ModelInfo] {
    models::MODELS
}

/// The catalog entry of `model`: an exact id, else the longest catalog id that `model` extends
/// with a version suffix (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`,
/// `gpt-4o-2024-08-06` → `gpt-4o`). A `provider/` prefix is ignored.
pub fn model(model: &str) -> Option<&'static ModelInfo> {
    let model = model.rsplit_once('/').map_or(model, |(_, m)| m);
    if let Some(exact) = models::MODELS.iter().find(|m| m.id == model) {
        return Some(exact);
    }
    models::MODELS
        .iter()
        .filter(|m| {
            model
                .strip_prefix(m.id)
                .is_some_and(|rest| rest.starts_with('-') && rest[1..].starts_with(|c: char| c.is_ascii_digit()))
        })
        .max_by_key(|m| m.id.len())
}

/// What `usage` cost on `model`, in US dollars; `None` for a model the catalog does not know
/// (unknown is not free).
pub fn cost(model: &str, usage: &Usage) -> Option<f64> {
    self::model(model).map(|info| info.cost(usage))
}

/// The catalog's price of `model` for sinew-fluent's cost tracker
/// (`CostTracker::new(sinew::catalog::fluent_price)`); `None` for a model the catalog does not
/// know.
#[cfg(feature = "fluent")]
pub fn fluent_price(model: &str) -> Option<sinew_fluent::middleware::Price> {
    self::model(model).map(|info| {
        sinew_fluent::middleware::Price::new(info.price.input, info.price.output).with_cache_read(info.price.cache_read)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups_follow_dated_versions_but_not_other_models() {
        assert_eq!(model("claude-sonnet-4-5").unwrap().protocol, "anthropic");
        assert_eq!(model("claude-sonnet-4-5-20250929").unwrap().id, "claude-sonnet-4-5");
        assert_eq!(model("gpt-4o-2024-08-06").unwrap().id, "gpt-4o");
        assert_eq!(model("gpt-4o-mini-2024-07-18").unwrap().id, "gpt-4o-mini", "the longest match wins");
        assert_eq!(model("openai/gpt-5").unwrap().id, "gpt-5");
        assert!(model("gpt-4o-audio-preview").is_none(), "a suffix that is not a version is another model");
        assert!(model("my-local-llama").is_none());
    }

    #[test]
    fn usage_is_priced_and_unknown_models_are_not_free() {
        let usage = Usage::new(1_000_000, 100_000).with_cache(2_000_000, 0).with_total(3_100_000);
        // claude-sonnet-4-5: $3 in, $15 out, $0.30 cache read per million.
        let dollars = cost("claude-sonnet-4-5-20250929", &usage).unwrap();
        assert!((dollars - (3.0 + 1.5 + 0.6)).abs() < 1e-9, "{dollars}");
        assert_eq!(cost("my-local-llama", &usage), None);
    }

    #[cfg(feature = "fluent")]
    #[test]
    fn the_fluent_cost_tracker_reads_the_catalogs_prices() {
        let price = fluent_price("anthropic/claude-sonnet-4-5-20250929").unwrap();
        assert_eq!((price.input, price.output, price.cache_read), (3.0, 15.0, 0.3));
        assert!(fluent_price("my-local-llama").is_none());
    }

    #[test]
    fn every_entry_is_plausible() {
        assert!(models().len() >= 20);
        for m in models() {
            assert!(m.max_output_tokens <= m.context_window, "{}", m.id);
            assert!(m.price.input > 0.0 && m.price.output >= m.price.input, "{}", m.id);
            assert!(m.price.cache_read < m.price.input, "{}: cached input is cheaper", m.id);
            assert!(m.source.starts_with("https://") && m.as_of.len() == 7, "{}", m.id);
        }
    }
}
