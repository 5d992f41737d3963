//! Memory (ADK's `BaseMemoryService`): what an app remembers of a user's past sessions, searched
//! by later ones.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::Result;
use crate::event::Event;
use crate::genai::Content;
use crate::types::Session;

/// A search answers at most this many memories.
const MAX_RESULTS: usize = 10;

/// One remembered event (ADK's `MemoryEntry`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MemoryEntry {
    /// What was said.
    pub content: Content,
    /// Free-form metadata (`customMetadata`); empty when none was given.
    #[serde(default, alias = "custom_metadata")]
    pub custom_metadata: Map<String, Value>,
    /// The id of the event remembered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Who said it: `user`, or an agent's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// When it was said, ISO 8601 in UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// Where memories live.
#[async_trait]
pub trait MemoryService: Send + Sync {
    /// Remembers the events of `session` that say something (its earlier memories of the same
    /// session are replaced).
    async fn add_session_to_memory(&self, session: &Session) -> Result<()>;

    /// The memories of `user_id` in `app_name` that match `query`, best first.
    async fn search_memory(&self, app_name: &str, user_id: &str, query: &str) -> Result<Vec<MemoryEntry>>;
}

/// A session's remembered events, by its id.
type Remembered = (String, Vec<Event>);

/// Memories in memory, matched by shared words (ADK's `InMemoryMemoryService`): a search answers
/// the ten events sharing the most words with the query. For tests and development.
#[derive(Debug, Default)]
pub struct InMemoryMemoryService {
    /// By app and user, then by session in the order they were first added.
    sessions: Mutex<HashMap<(String, String), Vec<Remembered>>>,
}

impl InMemoryMemoryService {
    /// An empty memory.
    pub fn new() -> Self {
        InMemoryMemoryService::default()
    }
}

/// The lowercase words of `text` (runs of letters, digits and `_`).
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn iso8601(seconds: f64) -> String {
    crate::database::to_datetime(seconds).format("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
}

#[async_trait]
impl MemoryService for InMemoryMemoryService {
    async fn add_session_to_memory(&self, session: &Session) -> Result<()> {
        let events: Vec<Event> = session
            .events
            .iter()
            .filter(|e| e.content.as_ref().is_some_and(|c| !c.parts().is_empty()))
            .cloned()
            .collect();
        let mut sessions = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let user = sessions.entry((session.app_name.clone(), session.user_id.clone())).or_default();
        match user.iter_mut().find(|(id, _)| *id == session.id) {
            Some((_, remembered)) => *remembered = events,
            None => user.push((session.id.clone(), events)),
        }
        Ok(())
    }

    async fn search_memory(&self, app_name: &str, user_id: &str, query: &str) -> Result<Vec<MemoryEntry>> {
        let wanted = words(query);
        let sessions = self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(user) = sessions.get(&(app_name.to_owned(), user_id.to_owned())) else { return Ok(Vec::new()) };
        let mut scored: Vec<(usize, MemoryEntry)> = user
            .iter()
            .flat_map(|(_, events)| events)
            .filter_map(|event| {
                let content = event.content.as_ref()?;
                let text: Vec<&str> = content.parts().iter().filter_map(|p| p.text.as_deref()).collect();
                let said = words(&text.join(" "));
                let matched = wanted.iter().filter(|w| said.contains(*w)).count();
                (matched > 0).then(|| {
                    let entry = MemoryEntry {
                        content: content.clone(),
                        custom_metadata: Map::new(),
                        id: Some(event.id.to_string()),
                        author: Some(event.author.to_string()),
                        timestamp: Some(iso8601(event.timestamp)),
                    };
                    (matched, entry)
                })
            })
            .collect();
        // Most shared words first; a stable sort keeps the sessions' order among equals.
        scored.sort_by_key(|(matched, _)| std::cmp::Reverse(*matched));
        Ok(scored.into_iter().take(MAX_RESULTS).map(|(_, entry)| entry).collect())
    }
}
