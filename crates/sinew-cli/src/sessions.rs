//! Saved conversations: every run is recorded and written to the store as it goes (after each
//! turn, then when the run ends), so a crash loses at most the turn in flight.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use sinew::session::{
    Formation, LoopRecord, PostgresStore, Session, SessionError, SessionRecorder, SessionStore, SqliteStore,
};
use sinew::{AgentEvent, AgentMessage, AgentSnapshot, SNAPSHOT_FORMAT_VERSION, history, now_ms};

use crate::exit::UsageError;

/// The agent id of every conversation the CLI records; `/sessions` lists these only.
pub(crate) const AGENT_ID: &str = "sinew";

/// The store, and the recorder feeding it.
pub(crate) struct Sessions {
    store: Option<Arc<dyn SessionStore>>,
    /// Where the sessions are, for messages.
    pub(crate) location: String,
    recorder: SessionRecorder,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions").field("location", &self.location).finish_non_exhaustive()
    }
}

/// One line of `/sessions`.
#[derive(Debug)]
pub(crate) struct Summary {
    pub(crate) session_id: String,
    pub(crate) updated_at: u64,
    pub(crate) prompts: usize,
    pub(crate) first_prompt: String,
    pub(crate) model: Option<String>,
}

impl Sessions {
    /// `spec` is a `postgres://` URL or a SQLite file path; without one, `sessions.db` in the
    /// user's data directory.
    pub(crate) async fn open(spec: Option<&str>) -> Result<Sessions> {
        let (store, location): (Arc<dyn SessionStore>, String) = match spec {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                let store = PostgresStore::connect(url)
                    .await
                    .with_context(|| format!("cannot open the session store {}", redact(url)))?;
                (Arc::new(store), redact(url))
            }
            spec => {
                let path = match spec {
                    Some(path) => PathBuf::from(path.strip_prefix("sqlite:").unwrap_or(path)),
                    None => crate::config::data_dir()
                        .ok_or_else(|| {
                            UsageError(
                                "cannot tell where to save sessions: set HOME, XDG_DATA_HOME or --session-store".into(),
                            )
                        })?
                        .join("sessions.db"),
                };
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
                }
                let store = SqliteStore::open(&path)
                    .with_context(|| format!("cannot open the session store {}", path.display()))?;
                (Arc::new(store), path.display().to_string())
            }
        };
        Ok(Sessions { store: Some(store), location, recorder: SessionRecorder::new(Formation::PerSessionId) })
    }

    /// Nothing is saved (`--no-save`, the demo).
    pub(crate) fn disabled() -> Sessions {
        Sessions { store: None, location: "nowhere (saving is off)".into(), recorder: SessionRecorder::default() }
    }

    pub(crate) fn is_enabled(&self) -> bool {
        self.store.is_some()
    }

    pub(crate) fn record(&mut self, event: &AgentEvent) {
        if self.store.is_some() {
            self.recorder.on_event(event);
        }
    }

    /// Writes what the recorder holds of `session_id` so far, running loops included.
    pub(crate) async fn checkpoint(&mut self, session_id: &str) -> Result<()> {
        let Some(store) = &self.store else { return Ok(()) };
        if let Some(session) = self.recorder.session(session_id) {
            store.merge(session).await.with_context(|| format!("cannot save session {session_id}"))?;
        }
        Ok(())
    }

    /// Writes every completed session and lets the recorder forget them.
    pub(crate) async fn flush(&mut self) -> Result<()> {
        let Some(store) = &self.store else { return Ok(()) };
        for session in self.recorder.flush() {
            store.merge(&session).await.with_context(|| format!("cannot save session {}", session.session_id))?;
        }
        Ok(())
    }

    /// The CLI's sessions, most recent first, at most `limit`.
    pub(crate) async fn list(&self, limit: usize) -> Result<Vec<Summary>> {
        let store = self.store.as_ref().ok_or_else(|| UsageError("sessions are not saved (--no-save)".into()))?;
        let mut summaries = Vec::new();
        for id in store.list_ids().await? {
            if summaries.len() == limit {
                break;
            }
            let session = match store.load(&id).await {
                Ok(session) => session,
                Err(SessionError::NotFound(_)) => continue,
                Err(error) => return Err(error.into()),
            };
            if session.agent_id != AGENT_ID || session.loops.is_empty() {
                continue;
            }
            summaries.push(summarize(&session));
        }
        Ok(summaries)
    }

    /// The session `id` names: its full id, or a prefix only one session id has.
    pub(crate) async fn find(&self, id: &str) -> Result<Session> {
        let store = self.store.as_ref().ok_or_else(|| UsageError("sessions are not saved (--no-save)".into()))?;
        match store.load(id).await {
            Ok(session) => return Ok(session),
            Err(SessionError::NotFound(_)) => {}
            Err(error) => return Err(error.into()),
        }
        let ids = store.list_ids().await?;
        let matching: Vec<&String> = ids.iter().filter(|s| s.starts_with(id)).collect();
        match matching.as_slice() {
            [one] => Ok(store.load(one).await?),
            [] => Err(UsageError(format!("no saved session `{id}` in {} (see /sessions)", self.location)).into()),
            many => Err(UsageError(format!("`{id}` names {} sessions; give more of the id", many.len())).into()),
        }
    }

    /// The most recently updated session of the CLI.
    pub(crate) async fn latest(&self) -> Result<Option<Session>> {
        let Some(summary) = self.list(1).await?.into_iter().next() else { return Ok(None) };
        self.find(&summary.session_id).await.map(Some)
    }
}

/// `user:password@` taken out of a database URL.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://…@{}", &url[..scheme], &url[at + 1..]),
        _ => url.to_owned(),
    }
}

fn summarize(session: &Session) -> Summary {
    let history = conversation(session);
    let prompts: Vec<String> = history.iter().filter(|m| m.is_user()).map(user_text).collect();
    Summary {
        session_id: session.session_id.clone(),
        updated_at: session.updated_at,
        prompts: prompts.len(),
        first_prompt: prompts.into_iter().next().unwrap_or_default(),
        model: session.loops.iter().rev().find_map(|l| l.config.as_ref()).map(|c| c.model.clone()),
    }
}

pub(crate) fn user_text(message: &AgentMessage) -> String {
    match message.as_llm() {
        Some(sinew::Message::User(user)) => sinew::join_text(&user.content, " "),
        _ => String::new(),
    }
}

/// The conversation a session holds: the messages of its runs, in order. A run that never
/// ended (the process died) is rebuilt from its recorded messages, with an error result for any
/// tool call it left unanswered, so the history stays valid to send.
pub(crate) fn conversation(session: &Session) -> Vec<AgentMessage> {
    let mut messages = Vec::new();
    for record in &session.loops {
        if record.status.is_closed() {
            messages.extend(record.messages.iter().cloned());
        } else {
            messages.extend(recorded_messages(record));
        }
    }
    let missing = history::synthesize_missing_results(&messages, "the session ended before this tool call finished");
    messages.extend(missing.into_iter().map(AgentMessage::from));
    messages
}

fn recorded_messages(record: &LoopRecord) -> impl Iterator<Item = AgentMessage> + '_ {
    record.events.iter().filter_map(|e| match &e.event {
        AgentEvent::MessageEnd { message, .. } => Some(message.clone()),
        _ => None,
    })
}

/// An agent state that continues `session`: its ids, its conversation, and loop counters past
/// its runs (so new runs never reuse a stored loop id).
pub(crate) fn snapshot_of(session: &Session, system_prompt: &str) -> AgentSnapshot {
    let mut loop_counters = BTreeMap::new();
    for record in &session.loops {
        if let Some((key, n)) = record.loop_id.rsplit_once('.')
            && let Ok(n) = n.parse::<usize>()
        {
            let counter = loop_counters.entry(key.to_owned()).or_insert(0);
            *counter = (*counter).max(n);
        }
    }
    AgentSnapshot {
        format_version: SNAPSHOT_FORMAT_VERSION,
        agent_id: AGENT_ID.to_owned(),
        session_id: session.session_id.clone(),
        last_loop_id: session.loops.last().map(|l| l.loop_id.clone()),
        loop_counters,
        system_prompt: system_prompt.to_owned(),
        messages: conversation(session),
        suspension: None,
        created_at: now_ms(),
    }
}

/// "5m ago", for listings.
pub(crate) fn age(at_ms: u64) -> String {
    let seconds = now_ms().saturating_sub(at_ms) / 1000;
    match seconds {
        0..60 => "just now".into(),
        60..3600 => format!("{}m ago", seconds / 60),
        3600..86_400 => format!("{}h ago", seconds / 3600),
        _ => format!("{}d ago", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use sinew::session::{LoopEvent, LoopStatus};
    use sinew::{AssistantMessage, Content, ToolResultMessage};

    use super::*;

    fn record(loop_id: &str, status: LoopStatus, messages: Vec<AgentMessage>, events: Vec<AgentEvent>) -> LoopRecord {
        LoopRecord {
            loop_id: loop_id.into(),
            status,
            messages,
            events: events.into_iter().map(|event| LoopEvent { at: 0, event }).collect(),
            ..LoopRecord::default()
        }
    }

    fn assistant_calling(id: &str) -> AgentMessage {
        let mut message = AssistantMessage::new("mock", "m");
        message.content.push(Content::tool_call(id, "bash", json!({"command": "ls"})));
        message.into()
    }

    fn end(message: AgentMessage) -> AgentEvent {
        AgentEvent::MessageEnd { loop_id: "s.a.2".into(), message }
    }

    #[test]
    fn a_conversation_joins_the_runs_and_repairs_one_cut_short() {
        let mut session = Session::new("s", AGENT_ID, 0);
        let first = vec![AgentMessage::user("one"), AssistantMessage::new("mock", "m").into()];
        session.loops.push(record("s.a.1", LoopStatus::Completed, first.clone(), vec![]));
        // The process died while `bash` ran: only the events were saved.
        session.loops.push(record(
            "s.a.2",
            LoopStatus::Running,
            vec![],
            vec![end(AgentMessage::user("two")), end(assistant_calling("call_1"))],
        ));
        let history = conversation(&session);
        assert_eq!(history.len(), 5);
        assert_eq!(&history[..2], first.as_slice());
        assert_eq!(user_text(&history[2]), "two");
        let result = history[4].as_tool_result().expect("an error result for the call");
        assert!(result.is_error && result.tool_call_id == "call_1");
        assert!(history::unmatched_tool_calls(&history).is_empty());

        let summary = summarize(&session);
        assert_eq!((summary.prompts, summary.first_prompt.as_str()), (2, "one"));
    }

    #[test]
    fn a_snapshot_continues_past_the_stored_loop_ids() {
        let mut session = Session::new("s", AGENT_ID, 0);
        for id in ["s.a.1", "s.a.2", "s.judge.1", "s.a.10"] {
            session.loops.push(record(id, LoopStatus::Completed, vec![], vec![]));
        }
        session.loops[1].messages =
            vec![AgentMessage::user("hi"), assistant_calling("c"), ToolResultMessage::error("c", "bash", "no").into()];
        let snapshot = snapshot_of(&session, "be brief");
        assert_eq!(snapshot.loop_counters["s.a"], 10);
        assert_eq!(snapshot.loop_counters["s.judge"], 1);
        assert_eq!((snapshot.session_id.as_str(), snapshot.agent_id.as_str()), ("s", AGENT_ID));
        assert_eq!(snapshot.messages.len(), 3);
        assert_eq!(snapshot.system_prompt, "be brief");
    }

    #[test]
    fn database_urls_lose_their_credentials() {
        assert_eq!(redact("postgres://me:secret@db:5432/x"), "postgres://…@db:5432/x");
        assert_eq!(redact("postgres://db/x"), "postgres://db/x");
    }

    #[tokio::test]
    async fn prefixes_find_one_session_and_say_when_they_name_several() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut sessions = Sessions::open(Some(path.to_str().unwrap())).await.unwrap();
        let store = sessions.store.clone().unwrap();
        for id in ["abc1", "abc2", "xyz"] {
            let mut session = Session::new(id, AGENT_ID, now_ms());
            session.loops.push(record(
                &format!("{id}.a.1"),
                LoopStatus::Completed,
                vec![AgentMessage::user(id)],
                vec![],
            ));
            store.save(&session).await.unwrap();
        }
        assert_eq!(sessions.find("xy").await.unwrap().session_id, "xyz");
        let error = sessions.find("abc").await.unwrap_err();
        assert!(error.to_string().contains("`abc` names 2 sessions"), "{error}");
        let error = sessions.find("nope").await.unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some_and(|e| e.0.contains("no saved session `nope`")));
        assert_eq!(sessions.list(10).await.unwrap().len(), 3);
        sessions.flush().await.unwrap();
    }
}
