//! A map keyed by strings that keeps at most a fixed number of entries, dropping the oldest: the
//! per-call, per-invocation and per-session state middleware and resources keep, which a run that
//! fails or is dropped never cleans up.

use std::collections::{HashMap, VecDeque};

/// At most this many entries by default.
pub(crate) const MAX_ENTRIES: usize = 4096;

/// Entries by key, in insertion order, at most `cap` of them.
#[derive(Debug)]
pub(crate) struct BoundedMap<V> {
    map: HashMap<String, V>,
    order: VecDeque<String>,
    cap: usize,
}

impl<V> Default for BoundedMap<V> {
    fn default() -> Self {
        BoundedMap { map: HashMap::new(), order: VecDeque::new(), cap: MAX_ENTRIES }
    }
}

impl<V> BoundedMap<V> {
    /// A map of at most `cap` entries (at least one).
    pub(crate) fn with_cap(cap: usize) -> Self {
        BoundedMap { cap: cap.max(1), ..BoundedMap::default() }
    }

    /// Makes room for one more key: the oldest entries go.
    fn make_room(&mut self) {
        while self.order.len() >= self.cap.max(1) {
            match self.order.pop_front() {
                Some(oldest) => self.map.remove(&oldest),
                None => break,
            };
        }
    }

    /// The entry of `key`, made with `make` when missing (the oldest entry goes past the cap).
    pub(crate) fn entry_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        if !self.map.contains_key(key) {
            self.make_room();
            self.order.push_back(key.to_owned());
        }
        self.map.entry(key.to_owned()).or_insert_with(make)
    }

    /// Sets `key` to `value` (a new key past the cap drops the oldest entry).
    pub(crate) fn insert(&mut self, key: &str, value: V) {
        match self.map.get_mut(key) {
            Some(slot) => *slot = value,
            None => {
                self.make_room();
                self.order.push_back(key.to_owned());
                self.map.insert(key.to_owned(), value);
            }
        }
    }

    /// The entry of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&V> {
        self.map.get(key)
    }

    /// Takes the entry of `key` out.
    pub(crate) fn remove(&mut self, key: &str) -> Option<V> {
        let value = self.map.remove(key)?;
        if let Some(at) = self.order.iter().position(|k| k == key) {
            self.order.remove(at);
        }
        Some(value)
    }

    /// How many entries there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests;
