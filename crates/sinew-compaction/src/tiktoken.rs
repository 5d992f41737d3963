//! A real BPE tokenizer for OpenAI-family models (feature `tiktoken`).

use sinew_core::TokenCounter;
use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

/// Counts tokens with OpenAI's own encodings, through `tiktoken-rs` (the encodings are built in:
/// no download). Other families' tokenizers differ, but an OpenAI encoding is still closer to them
/// than the 4-bytes heuristic.
#[derive(Clone, Copy)]
pub struct TiktokenCounter {
    bpe: &'static CoreBPE,
    tokenizer: Tokenizer,
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter").field("tokenizer", &self.tokenizer).finish()
    }
}

impl TiktokenCounter {
    /// The `o200k_base` encoding (GPT-4o, GPT-4.1, GPT-5, o-series).
    pub fn o200k() -> Self {
        TiktokenCounter::with(Tokenizer::O200kBase)
    }

    /// The `cl100k_base` encoding (GPT-4, GPT-3.5).
    pub fn cl100k() -> Self {
        TiktokenCounter::with(Tokenizer::Cl100kBase)
    }

    /// The encoding of an OpenAI model, by name or prefix (`gpt-4o-mini`, `ft:gpt-4.1:...`);
    /// `None` for a model tiktoken does not know.
    pub fn for_model(model: &str) -> Option<Self> {
        get_tokenizer(model).map(TiktokenCounter::with)
    }

    fn with(tokenizer: Tokenizer) -> Self {
        let bpe = match tokenizer {
            Tokenizer::O200kHarmony => tiktoken_rs::o200k_harmony_singleton(),
            Tokenizer::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Tokenizer::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
            Tokenizer::R50kBase | Tokenizer::Gpt2 => tiktoken_rs::r50k_base_singleton(),
            Tokenizer::P50kBase => tiktoken_rs::p50k_base_singleton(),
            Tokenizer::P50kEdit => tiktoken_rs::p50k_edit_singleton(),
        };
        TiktokenCounter { bpe, tokenizer }
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_like_openai() {
        // Reference counts from OpenAI's tiktoken.
        let o200k = TiktokenCounter::o200k();
        assert_eq!(o200k.count("hello world"), 2);
        assert_eq!(o200k.count(""), 0);
        let cl100k = TiktokenCounter::cl100k();
        assert_eq!(cl100k.count("tiktoken is great!"), 6);
    }

    #[test]
    fn models_pick_their_encoding() {
        assert!(format!("{:?}", TiktokenCounter::for_model("gpt-4o-mini").unwrap()).contains("O200kBase"));
        assert!(format!("{:?}", TiktokenCounter::for_model("gpt-4").unwrap()).contains("Cl100kBase"));
        assert!(TiktokenCounter::for_model("claude-sonnet-4-5").is_none());
    }
}
