//! ADK's conformance harness (`adk conformance test`) against sinew-server: the replay plugin,
//! and the twin of the harness's demo agent.
//!
//! The harness is an HTTP client. For each user message it sends, the run's state delta carries
//! `_adk_replay_config` (`{"dir", "user_message_index", "streaming_mode"}`); with it,
//! [`ReplayPlugin`] makes every model call answer what `adk conformance record` recorded in
//! `<dir>/generated-recordings[-sse].yaml`, after checking that our request equals the recorded
//! one, and checks every tool call against the recorded call, runs the tool for its side effects
//! and answers the recorded response, as adk-python's `ReplayPlugin` does. A mismatch fails the
//! run (a model call) or the recorded session (a tool call) loudly.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures::StreamExt as _;
use futures::stream::BoxStream;
use serde_json::{Map, Value};
use sinew_adk::{CallbackContext, Error, InvocationContext, Llm, LlmRequest, LlmResponse, Plugin, Tool, ToolContext};

/// The state key that turns replay on.
pub const REPLAY_CONFIG: &str = "_adk_replay_config";

/// One user message's replay: where the recordings are and which message it is.
#[derive(Clone, Debug, PartialEq)]
struct Replay {
    file: PathBuf,
    user_message_index: i64,
}

impl Replay {
    /// The replay `state` asks for, `None` when it asks for none.
    fn of(state: &Map<String, Value>) -> Result<Option<Replay>, String> {
        let Some(config) = state.get(REPLAY_CONFIG).filter(|c| !c.is_null()) else { return Ok(None) };
        let (Some(dir), Some(index)) = (config["dir"].as_str(), config["user_message_index"].as_i64()) else {
            return Ok(None);
        };
        let file = match config["streaming_mode"].as_str() {
            Some("sse") => "generated-recordings-sse.yaml",
            Some("none") => "generated-recordings.yaml",
            other => return Err(format!("ReplayConfigError: unsupported streaming mode: {other:?}")),
        };
        Ok(Some(Replay { file: Path::new(dir).join(file), user_message_index: index }))
    }
}

/// Invocations whose progress is kept: one that never ended (its client went away, so neither
/// `after_run` nor `on_run_error` came) is forgotten, oldest first, beyond this many.
const MAX_INVOCATIONS: usize = 1024;

/// What one invocation has replayed so far, per agent.
#[derive(Debug, Default)]
struct Progress {
    /// When it was first seen (a sequence number), for forgetting the oldest.
    seen: u64,
    model_calls: HashMap<String, usize>,
    tool_calls: HashMap<String, usize>,
    /// Recorded responses for calls that passed the check, by call id, given back after the tool ran.
    responses: HashMap<String, Map<String, Value>>,
}

/// adk-python's `ReplayPlugin`, for ADK's conformance harness (see the module's documentation).
///
/// The recordings' directory comes from the session state, which a client writes: the plugin
/// reads recordings under its root only. Never serve it to clients you do not trust: the
/// recordings decide which tools run, with which arguments.
#[derive(Debug)]
pub struct ReplayPlugin {
    root: PathBuf,
    recordings: Mutex<HashMap<PathBuf, Arc<Vec<Value>>>>,
    /// By invocation id and user message index; at most [`MAX_INVOCATIONS`] entries.
    progress: Mutex<Invocations>,
}

/// The progress of the invocations under way.
#[derive(Debug, Default)]
struct Invocations {
    by_key: HashMap<(String, i64), Progress>,
    next: u64,
}

impl Invocations {
    /// The progress of `key`, made when new; the oldest entry goes when there are too many.
    fn entry(&mut self, key: (String, i64)) -> &mut Progress {
        if !self.by_key.contains_key(&key) {
            if self.by_key.len() >= MAX_INVOCATIONS
                && let Some(oldest) = self.by_key.iter().min_by_key(|(_, p)| p.seen).map(|(k, _)| k.clone())
            {
                self.by_key.remove(&oldest);
            }
            self.next += 1;
            self.by_key.insert(key.clone(), Progress { seen: self.next, ..Progress::default() });
        }
        self.by_key.entry(key).or_default()
    }

    fn forget(&mut self, invocation: &str) {
        self.by_key.retain(|(id, _), _| id != invocation);
    }
}

impl ReplayPlugin {
    /// A plugin that reads recordings under `root` only (the harness's test directory).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = root.canonicalize().unwrap_or(root);
        ReplayPlugin { root, recordings: Mutex::default(), progress: Mutex::default() }
    }

    fn load(&self, file: &Path) -> Result<Arc<Vec<Value>>, String> {
        let inside = file.canonicalize().is_ok_and(|f| f.starts_with(&self.root));
        if !inside {
            return Err(format!(
                "ReplayConfigError: recordings file {} is not under the replay root {}",
                file.display(),
                self.root.display()
            ));
        }
        let mut cache = self.recordings.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(recordings) = cache.get(file) {
            return Ok(recordings.clone());
        }
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("ReplayConfigError: recordings file {}: {e}", file.display()))?;
        let value: Value = serde_yaml_ng::from_str(&text)
            .map_err(|e| format!("ReplayConfigError: failed to load recordings from {}: {e}", file.display()))?;
        let recordings = Arc::new(value["recordings"].as_array().cloned().unwrap_or_default());
        cache.insert(file.to_owned(), recordings.clone());
        Ok(recordings)
    }

    /// The next recording of `kind` (`llm_recording` or `tool_recording`) for `agent` in this
    /// invocation's user message.
    fn next(&self, replay: &Replay, invocation: &str, agent: &str, kind: &str) -> Result<(Value, usize), String> {
        let recordings = self.load(&replay.file)?;
        let mine: Vec<&Value> = recordings
            .iter()
            .filter(|r| {
                r["agent_name"] == agent && r["user_message_index"] == replay.user_message_index && !r[kind].is_null()
            })
            .collect();
        let mut progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        let progress = progress.entry((invocation.to_owned(), replay.user_message_index));
        let counter = if kind == "llm_recording" { &mut progress.model_calls } else { &mut progress.tool_calls };
        let index = counter.entry(agent.to_owned()).or_insert(0);
        let found = mine.get(*index).map(|r| r[kind].clone()).ok_or_else(|| {
            format!(
                "ReplayVerificationError: Runtime sent more {} requests than expected for agent '{agent}' at \
                 user_message_index {}. Expected {}, but got request at index {index}",
                if kind == "llm_recording" { "LLM" } else { "tool" },
                replay.user_message_index,
                mine.len()
            )
        })?;
        *index += 1;
        Ok((found, *index - 1))
    }

    fn with_progress<T>(&self, key: (String, i64), f: impl FnOnce(&mut Progress) -> T) -> T {
        let mut progress = self.progress.lock().unwrap_or_else(PoisonError::into_inner);
        f(progress.entry(key))
    }
}

/// A model that answers one recorded call, after checking the request.
struct ReplayLlm {
    name: String,
    agent: String,
    /// The user message (adk-python's "turn") and this agent's call within it.
    user_message_index: i64,
    turn: usize,
    expected: Value,
    responses: Vec<Value>,
    /// A configuration error found before the call: the call fails with it.
    error: Option<String>,
}

/// A request as adk-python's replay compares it: without the live settings, the HTTP options
/// and the labels.
fn comparable(mut request: Value) -> Value {
    if let Some(map) = request.as_object_mut() {
        map.remove("live_connect_config");
        if let Some(config) = map.get_mut("config").and_then(Value::as_object_mut) {
            config.remove("http_options");
            config.remove("labels");
        }
    }
    request
}

impl Llm for ReplayLlm {
    fn name(&self) -> &str {
        &self.name
    }

    fn generate_content(
        &self,
        request: LlmRequest,
        _stream: bool,
    ) -> BoxStream<'static, sinew_adk::Result<LlmResponse>> {
        let fail = |message: String| futures::stream::once(async move { Err(Error::InvalidRequest(message)) }).boxed();
        if let Some(error) = &self.error {
            return fail(error.clone());
        }
        let (ours, theirs) = (comparable(request.to_json()), comparable(self.expected.clone()));
        if ours != theirs {
            return fail(format!(
                "ReplayVerificationError: LLM request mismatch in turn {} for agent '{}' (index {}):\nrecorded: {theirs}\ncurrent: {ours}",
                self.user_message_index, self.agent, self.turn
            ));
        }
        let responses: Vec<sinew_adk::Result<LlmResponse>> = self
            .responses
            .iter()
            .map(|r| {
                serde_json::from_value(r.clone())
                    .map_err(|e| Error::InvalidRequest(format!("ReplayConfigError: a recorded response: {e}")))
            })
            .collect();
        futures::stream::iter(responses).boxed()
    }
}

#[async_trait]
impl Plugin for ReplayPlugin {
    fn name(&self) -> &str {
        "adk_replay"
    }

    async fn replace_model(&self, ctx: &CallbackContext) -> Option<Arc<dyn Llm>> {
        let agent = ctx.agent_name().to_owned();
        let failing = |error: String| -> Arc<dyn Llm> {
            Arc::new(ReplayLlm {
                name: String::new(),
                agent: agent.clone(),
                user_message_index: 0,
                turn: 0,
                expected: Value::Null,
                responses: Vec::new(),
                error: Some(error),
            })
        };
        let replay = match Replay::of(&ctx.state().await) {
            Ok(Some(replay)) => replay,
            Ok(None) => return None,
            Err(error) => return Some(failing(error)),
        };
        match self.next(&replay, ctx.invocation_id(), &agent, "llm_recording") {
            Ok((recording, turn)) => Some(Arc::new(ReplayLlm {
                name: recording["llm_request"]["model"].as_str().unwrap_or_default().to_owned(),
                agent: agent.clone(),
                user_message_index: replay.user_message_index,
                turn,
                expected: recording["llm_request"].clone(),
                responses: recording["llm_responses"].as_array().cloned().unwrap_or_default(),
                error: None,
            })),
            Err(error) => Some(failing(error)),
        }
    }

    async fn before_tool(
        &self,
        tool: &dyn Tool,
        args: &mut Map<String, Value>,
        ctx: &ToolContext,
    ) -> Option<Map<String, Value>> {
        let replay = match Replay::of(&ctx.state().await) {
            Ok(Some(replay)) => replay,
            Ok(None) => return None,
            Err(error) => return Some(mismatch(error)),
        };
        let agent = ctx.agent_name().to_owned();
        let (recording, index) = match self.next(&replay, ctx.invocation_id(), &agent, "tool_recording") {
            Ok(found) => found,
            Err(error) => return Some(mismatch(error)),
        };
        let call = &recording["tool_call"];
        if call["name"] != tool.name() {
            let error = format!(
                "ReplayVerificationError: Tool name mismatch for agent '{agent}' at index {index}:\nrecorded: '{}'\ncurrent: '{}'",
                call["name"].as_str().unwrap_or_default(),
                tool.name()
            );
            return Some(mismatch(error));
        }
        let recorded_args = call["args"].as_object().cloned().unwrap_or_default();
        if recorded_args != *args {
            let error = format!(
                "ReplayVerificationError: Tool args mismatch for agent '{agent}' at index {index}:\nrecorded: {}\ncurrent: {}",
                Value::Object(recorded_args),
                Value::Object(args.clone())
            );
            return Some(mismatch(error));
        }
        // The tool runs as usual (its side effects, the confirmation gate); its answer is swapped
        // for the recorded one afterwards.
        let response = recording["tool_response"]["response"].as_object().cloned().unwrap_or_default();
        self.with_progress((ctx.invocation_id().to_owned(), replay.user_message_index), |p| {
            p.responses.insert(ctx.function_call_id().to_owned(), response);
        });
        None
    }

    async fn after_tool(
        &self,
        _tool: &dyn Tool,
        _args: &Map<String, Value>,
        ctx: &ToolContext,
        _response: &Map<String, Value>,
    ) -> Option<Map<String, Value>> {
        let replay = Replay::of(&ctx.state().await).ok()??;
        self.with_progress((ctx.invocation_id().to_owned(), replay.user_message_index), |p| {
            p.responses.remove(ctx.function_call_id())
        })
    }

    async fn after_run(&self, ctx: &InvocationContext) {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).forget(ctx.invocation_id());
    }

    async fn on_run_error(&self, ctx: &InvocationContext, _error: &sinew_adk::Error) {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner).forget(ctx.invocation_id());
    }
}

/// What a mismatched tool call answers: the error, for the recorded session to show.
fn mismatch(error: String) -> Map<String, Value> {
    tracing::error!("{error}");
    Map::from_iter([("error".to_owned(), Value::String(error))])
}

pub use sinew_adk::testing::conformance_demo_agent as demo_agent;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invocations_that_never_end_are_forgotten_oldest_first() {
        let mut invocations = Invocations::default();
        for i in 0..MAX_INVOCATIONS + 10 {
            *invocations.entry((format!("e-{i}"), 0)).model_calls.entry("a".into()).or_default() += 1;
        }
        assert_eq!(invocations.by_key.len(), MAX_INVOCATIONS);
        assert!(!invocations.by_key.contains_key(&("e-0".to_owned(), 0)), "the oldest went");
        let newest = (format!("e-{}", MAX_INVOCATIONS + 9), 0);
        assert_eq!(invocations.by_key[&newest].model_calls["a"], 1);
        // A known invocation keeps its progress.
        *invocations.entry(newest.clone()).model_calls.get_mut("a").unwrap() += 1;
        assert_eq!(invocations.by_key[&newest].model_calls["a"], 2);
        invocations.forget(&newest.0);
        assert_eq!(invocations.by_key.len(), MAX_INVOCATIONS - 1);
    }
}
