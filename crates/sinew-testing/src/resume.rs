//! The property every request builder's wire cache is held to (see `sinew_core::wire`): a body
//! whose messages resume from the bytes kept of earlier requests is the body written whole, byte
//! for byte, however the history changes between requests.
//!
//! ```
//! use proptest::prelude::*;
//! use sinew_core::Message;
//! use sinew_testing::resume::{check_resumed_bodies, history_steps};
//!
//! proptest!(|(steps in history_steps())| {
//!     let pool = [Message::user("a"), Message::user("b")];
//!     // A "builder" that writes every message (and so resumes trivially).
//!     check_resumed_bodies(&pool, &steps, |history, _cache, _variant| Some(serde_json::to_vec(history).unwrap()))?;
//! });
//! ```

use proptest::prelude::*;
use sinew_core::{Message, WireCache};

/// One change to a history between two requests.
#[derive(Clone, Debug)]
pub struct HistoryStep {
    /// Messages to append (or to put in), as indexes into the pool (taken modulo its length).
    appended: Vec<usize>,
    /// 0 and 1: append, claiming that many pairs of the last messages changed (a caller may say
    /// less than it could); 2: replace the second half with the appended messages; 3: drop the
    /// second half.
    kind: usize,
    /// Replace the whole history, claiming nothing unchanged.
    rewrite: bool,
    /// Flip the request's variant (another model or setting, which may shape the bytes).
    switch: bool,
}

/// Sequences of one to eleven [`HistoryStep`]s.
pub fn history_steps() -> impl Strategy<Value = Vec<HistoryStep>> {
    let step = (
        proptest::collection::vec(0..16_usize, 0..6),
        0..4_usize,
        proptest::bool::weighted(0.15),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(appended, kind, rewrite, switch)| HistoryStep { appended, kind, rewrite, switch });
    proptest::collection::vec(step, 1..12)
}

/// Drives `steps` over a history of messages from `pool`, one cache for the whole sequence (never
/// cleared between steps: a claim says what is unchanged). For each step, `body(history, cache,
/// variant)` writes the request's body whole (`cache` is `None`) and resumed (`Some((cache,
/// unchanged))`); both must be the same bytes of valid JSON, or both `None` (a request the
/// builder refuses: the history then starts over, the cache cleared).
pub fn check_resumed_bodies(
    pool: &[Message],
    steps: &[HistoryStep],
    mut body: impl FnMut(&[Message], Option<(&WireCache, usize)>, bool) -> Option<Vec<u8>>,
) -> Result<(), TestCaseError> {
    let cache = WireCache::default();
    let mut history: Vec<Message> = Vec::new();
    let mut variant = false;
    let message = |i: &usize| pool[i % pool.len()].clone();
    for step in steps {
        variant ^= step.switch;
        let unchanged = if step.rewrite {
            history = step.appended.iter().rev().map(message).collect();
            0
        } else if step.kind == 3 {
            history.truncate(history.len() / 2);
            history.len()
        } else if step.kind == 2 && step.appended.len() > 1 {
            history.truncate(history.len() / 2);
            let unchanged = history.len();
            history.extend(step.appended.iter().skip(1).map(message));
            unchanged
        } else {
            let unchanged = history.len().saturating_sub(step.kind * 2);
            history.extend(step.appended.iter().map(message));
            unchanged
        };
        let whole = body(&history, None, variant);
        let resumed = body(&history, Some((&cache, unchanged)), variant);
        match (whole, resumed) {
            (Some(whole), Some(resumed)) => {
                prop_assert_eq!(String::from_utf8_lossy(&resumed), String::from_utf8_lossy(&whole));
                prop_assert!(serde_json::from_slice::<serde_json::Value>(&whole).is_ok(), "not JSON");
            }
            (None, None) => {
                history.clear();
                cache.clear();
            }
            (whole, resumed) => {
                prop_assert!(false, "written whole: {}, resumed: {}", whole.is_some(), resumed.is_some());
            }
        }
    }
    Ok(())
}
