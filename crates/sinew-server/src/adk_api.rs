//! ADK's `api_server` dialect (google-adk 2.13's `adk api_server`): the same routes, JSON, status
//! codes and `{"detail": …}` errors, over sinew-adk agents.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt as _;
use http::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use sinew_adk::{
    Agent, ArtifactService, Error as AdkError, Event, GetSessionConfig, InMemoryArtifactService, MemoryService, Part,
    RunAgentRequest, RunConfig, Runner, Session, SessionService,
};

use crate::http::{Body, DecodeError, detail, empty_json, json_response, read_json, refuse_unless_json, sse_response};

/// The version `GET /version` reports: google-adk's, whose dialect this is.
pub const ADK_VERSION: &str = "2.13.0";

/// One ADK app: a root agent and the runner over it.
#[derive(Clone)]
struct App {
    agent: Arc<dyn Agent>,
    runner: Runner,
}

/// ADK's `api_server` routes over a set of apps and one session service.
///
/// Apps are added by name with their root agent ([`AdkApi::app`]); each gets a [`Runner`] over the
/// shared [`SessionService`]. [`AdkApi::handle`] answers one request; [`crate::serve`] runs it
/// on a listener.
#[derive(Clone)]
pub struct AdkApi {
    apps: BTreeMap<String, App>,
    sessions: Arc<dyn SessionService>,
    artifacts: Arc<dyn ArtifactService>,
    memory: Option<Arc<dyn MemoryService>>,
    plugins: Vec<Arc<dyn sinew_adk::Plugin>>,
    max_llm_calls: Option<usize>,
}

impl std::fmt::Debug for AdkApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdkApi").field("apps", &self.apps.keys().collect::<Vec<_>>()).finish_non_exhaustive()
    }
}

/// `POST …/sessions` (`CreateSessionRequest`). Unknown fields are ignored, as adk-python's
/// request models ignore them.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CreateSession {
    #[serde(default, alias = "session_id")]
    session_id: Option<String>,
    #[serde(default)]
    state: Option<Map<String, Value>>,
    #[serde(default)]
    events: Option<Vec<Event>>,
    /// Options for the session service; none of sinew's services takes any.
    #[serde(default)]
    #[allow(dead_code, reason = "accepted as adk-python accepts it, used by no sinew service")]
    options: Option<Value>,
}

/// `POST …/artifacts` (`SaveArtifactRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SaveArtifact {
    filename: String,
    artifact: Part,
    #[serde(default, alias = "custom_metadata")]
    custom_metadata: Option<Map<String, Value>>,
}

/// A version in a path: a number, or `latest`.
fn version_id(id: &str) -> Result<Option<i64>, ()> {
    if id == "latest" { Ok(None) } else { id.parse().map(Some).map_err(|_| ()) }
}

/// `PATCH …/memory` (`UpdateMemoryRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateMemory {
    #[serde(default, alias = "session_id")]
    session_id: Option<String>,
}

/// `PATCH …/sessions/{id}` (`UpdateSessionRequest`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateSession {
    #[serde(alias = "state_delta")]
    state_delta: Map<String, Value>,
}

/// The function names that belong to ADK's protocol, never to a tool: a client may not put
/// them into a session it creates.
const ADK_FUNCTIONS: [&str; 3] = ["adk_request_credential", "adk_request_confirmation", "adk_request_input"];

/// What a client-given event claims that only ADK may write (adk-python's
/// `_validate_session_initialization_events`): a confirmation or credential request, actions,
/// long-running calls. Ordinary calls and responses are allowed, so a conversation that used
/// tools can be restored.
fn forged(event: &Event) -> Option<&'static str> {
    if event.long_running_tool_ids.as_ref().is_some_and(|ids| !ids.is_empty()) {
        return Some("long-running tool IDs");
    }
    if event.actions != sinew_adk::EventActions::default() {
        return Some("event actions");
    }
    let names = event.function_calls().map(|c| c.name()).chain(event.function_responses().map(|r| r.name()));
    names.into_iter().any(|name| ADK_FUNCTIONS.contains(&name)).then_some("ADK protocol function calls")
}

/// What Python names the exception a sinew-adk error stands for, in `{"error": "<Type>: …"}`.
fn error_type(error: &AdkError) -> &'static str {
    match error {
        AdkError::SessionNotFound(_) => "SessionNotFoundError",
        AdkError::SessionExists(_) => "AlreadyExistsError",
        AdkError::StaleSession { .. } => "StaleSessionError",
        AdkError::LlmCallsLimitExceeded(_) => "LlmCallsLimitExceededError",
        AdkError::Model(_) => "ModelError",
        AdkError::Tool { .. } => "ToolError",
        AdkError::Cancelled => "CancelledError",
        AdkError::Store(_) => "StoreError",
        _ => "ValueError",
    }
}

impl AdkApi {
    /// No apps yet, sessions in `sessions`.
    pub fn new(sessions: Arc<dyn SessionService>) -> Self {
        let artifacts = Arc::new(InMemoryArtifactService::new());
        AdkApi { apps: BTreeMap::new(), sessions, artifacts, memory: None, plugins: Vec::new(), max_llm_calls: None }
    }

    /// Serves `agent` as the app `name`. The name must be a plain identifier (letters, digits,
    /// `_`; not starting with a digit), as ADK's app directories are.
    pub fn app(mut self, name: &str, agent: Arc<dyn Agent>) -> sinew_adk::Result<Self> {
        if !is_app_name(name) {
            return Err(AdkError::InvalidAgent(format!("app name `{name}` is not a plain identifier")));
        }
        let mut runner =
            Runner::new(name, agent.clone(), self.sessions.clone())?.with_artifact_service(self.artifacts.clone());
        for plugin in &self.plugins {
            runner = runner.with_plugin(plugin.clone());
        }
        self.apps.insert(name.to_owned(), App { agent, runner });
        Ok(self)
    }

    /// Serves every app of `agents_dir` (each subdirectory holding a `root_agent.yaml`, ADK's
    /// layout), built with `registry`. Every file is read now: a broken one is an error here,
    /// not at the first request.
    pub fn apps_from_dir(
        mut self,
        agents_dir: &std::path::Path,
        registry: &crate::AgentRegistry,
    ) -> sinew_adk::Result<Self> {
        for name in crate::AgentRegistry::app_names(agents_dir)? {
            let agent = registry.load_app(agents_dir, &name)?;
            self = self.app(&name, agent)?;
        }
        Ok(self)
    }

    /// Keeps artifacts in `artifacts` (in memory unless set), for the routes and every app's
    /// runner, those added before and after.
    #[must_use]
    pub fn artifact_service(mut self, artifacts: Arc<dyn ArtifactService>) -> Self {
        for app in self.apps.values_mut() {
            app.runner = app.runner.clone().with_artifact_service(artifacts.clone());
        }
        self.artifacts = artifacts;
        self
    }

    /// Remembers sessions in `memory` (`PATCH …/memory`; without one that route is a 400, as in
    /// adk-python).
    #[must_use]
    pub fn memory_service(mut self, memory: Arc<dyn MemoryService>) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Adds `plugin` to every app's runner, those added before and after.
    #[must_use]
    pub fn plugin(mut self, plugin: Arc<dyn sinew_adk::Plugin>) -> Self {
        for app in self.apps.values_mut() {
            app.runner = app.runner.clone().with_plugin(plugin.clone());
        }
        self.plugins.push(plugin);
        self
    }

    /// Caps every run's model calls (`adk api_server`'s `max_llm_calls`).
    #[must_use]
    pub fn max_llm_calls(mut self, calls: usize) -> Self {
        self.max_llm_calls = Some(calls);
        self
    }

    /// The session service.
    pub fn sessions(&self) -> &Arc<dyn SessionService> {
        &self.sessions
    }

    /// Bodies are read without a deadline of their own: [`serve`](crate::serve) gives each
    /// request [`ServerConfig::body_timeout`](crate::ServerConfig), and a caller of its own
    /// bounds the body likewise.
    pub async fn handle<B>(&self, request: Request<B>, max_body: usize) -> Response<Body>
    where
        B: http_body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        if let Some(refused) = refuse_unless_json(&parts.headers) {
            return refused;
        }
        let segments: Vec<String> = parts
            .uri
            .path()
            .split('/')
            .skip(1)
            .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
            .collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let query = parts.uri.query().unwrap_or_default();
        let method = parts.method;
        let result = match (&method, segments.as_slice()) {
            (&Method::GET, ["health"]) => Ok(json_response(StatusCode::OK, &json!({"status": "ok"}))),
            (&Method::GET, ["version"]) => Ok(json_response(
                StatusCode::OK,
                &json!({"version": ADK_VERSION, "language": "rust", "language_version": env!("CARGO_PKG_RUST_VERSION")}),
            )),
            (&Method::GET, ["list-apps"]) => Ok(self.list_apps(query)),
            (&Method::GET, ["apps", app, "app-info"]) => self.app_info(app),
            (&Method::POST, ["apps", app, "users", user, "sessions"]) => {
                self.create_session(app, user, None, read_json::<Option<CreateSession>, _>(body, max_body).await).await
            }
            (&Method::POST, ["apps", app, "users", user, "sessions", id]) => {
                let state = read_json::<Option<Map<String, Value>>, _>(body, max_body).await;
                let request = state.map(|state| Some(CreateSession { state, ..CreateSession::default() }));
                self.create_session(app, user, Some(id), request).await
            }
            (&Method::GET, ["apps", app, "users", user, "sessions"]) => self.list_sessions(app, user).await,
            (&Method::GET, ["apps", app, "users", user, "sessions", id]) => self.get_session(app, user, id).await,
            (&Method::PATCH, ["apps", app, "users", user, "sessions", id]) => {
                self.update_session(app, user, id, read_json(body, max_body).await).await
            }
            (&Method::DELETE, ["apps", app, "users", user, "sessions", id]) => {
                self.sessions.delete_session(app, user, id).await.map(|()| empty_json())
            }
            (_, ["apps", app, "users", _, "sessions", _, "artifacts", ..]) if !self.known(app) => {
                Ok(app_not_found(app))
            }
            (_, ["apps", app, "users", user, "sessions", id, "artifacts", rest @ ..]) => {
                self.artifacts(&method, app, user, id, rest, query, body, max_body).await
            }
            (&Method::PATCH, ["apps", app, "users", user, "memory"]) => {
                self.add_to_memory(app, user, read_json(body, max_body).await).await
            }
            (&Method::POST, ["run"]) => self.run(read_json(body, max_body).await).await,
            (&Method::POST, ["run_sse"]) => self.run_sse(read_json(body, max_body).await).await,
            (_, _) => Ok(detail(StatusCode::NOT_FOUND, "Not Found")),
        };
        result.unwrap_or_else(|error| internal_error(&error))
    }

    fn list_apps(&self, query: &str) -> Response<Body> {
        let detailed = query.split('&').any(|pair| matches!(pair, "detailed=true" | "detailed=True" | "detailed=1"));
        if !detailed {
            return json_response(StatusCode::OK, &json!(self.apps.keys().collect::<Vec<_>>()));
        }
        let apps: Vec<Value> = self.apps.iter().map(|(name, app)| app_info(name, &app.agent)).collect();
        json_response(StatusCode::OK, &json!({ "apps": apps }))
    }

    fn app_info(&self, name: &str) -> Result<Response<Body>, AdkError> {
        Ok(match self.apps.get(name) {
            Some(app) => detailed_app_info(name, &app.agent),
            None => app_not_found(name),
        })
    }

    fn known(&self, app: &str) -> bool {
        self.apps.contains_key(app)
    }

    async fn create_session(
        &self,
        app: &str,
        user: &str,
        id: Option<&str>,
        request: Result<Option<CreateSession>, DecodeError>,
    ) -> Result<Response<Body>, AdkError> {
        let request = match request {
            Ok(request) => request.unwrap_or_default(),
            Err(error) => return Ok(error.response()),
        };
        if !self.known(app) {
            return Ok(app_not_found(app));
        }
        let events = request.events.unwrap_or_default();
        if let Some((index, what)) = events.iter().enumerate().find_map(|(i, e)| forged(e).map(|what| (i, what))) {
            // Refused before anything is stored.
            return Ok(detail(
                StatusCode::BAD_REQUEST,
                &format!("Session initialization event {index} cannot include {what}."),
            ));
        }
        let id = id.or(request.session_id.as_deref());
        let state = request.state.unwrap_or_default();
        let mut session = match self.sessions.create_session(app, user, id, state).await {
            Ok(session) => session,
            Err(AdkError::SessionExists(id)) => {
                return Ok(detail(StatusCode::CONFLICT, &format!("Session already exists: {id}")));
            }
            Err(other) => return Err(other),
        };
        for event in events {
            self.sessions.append_event(&mut session, event).await?;
        }
        Ok(json_response(StatusCode::OK, &session))
    }

    async fn list_sessions(&self, app: &str, user: &str) -> Result<Response<Body>, AdkError> {
        let sessions = self.sessions.list_sessions(app, Some(user)).await?;
        // Sessions made by evaluations are hidden, as adk-python hides them.
        let shown: Vec<&Session> = sessions
            .iter()
            .filter(|s| !s.id.starts_with("___eval___session___") && !s.id.starts_with("ADK-EVAL-"))
            .collect();
        Ok(json_response(StatusCode::OK, &shown))
    }

    async fn get_session(&self, app: &str, user: &str, id: &str) -> Result<Response<Body>, AdkError> {
        Ok(match self.sessions.get_session(app, user, id, GetSessionConfig::default()).await? {
            Some(session) => json_response(StatusCode::OK, &session),
            None => detail(StatusCode::NOT_FOUND, "Session not found"),
        })
    }

    async fn update_session(
        &self,
        app: &str,
        user: &str,
        id: &str,
        request: Result<UpdateSession, DecodeError>,
    ) -> Result<Response<Body>, AdkError> {
        let request = match request {
            Ok(request) => request,
            Err(error) => return Ok(error.response()),
        };
        let Some(mut session) = self.sessions.get_session(app, user, id, GetSessionConfig::default()).await? else {
            return Ok(detail(StatusCode::NOT_FOUND, "Session not found"));
        };
        // The state change is an event of its own, as adk-python records it.
        let mut event =
            Event::from_response(format!("p-{}", sinew_adk::new_event_id()), "user", sinew_adk::LlmResponse::default());
        event.actions.state_delta = request.state_delta;
        self.sessions.append_event(&mut session, event).await?;
        Ok(json_response(StatusCode::OK, &session))
    }

    async fn add_to_memory(
        &self,
        app: &str,
        user: &str,
        request: Result<UpdateMemory, DecodeError>,
    ) -> Result<Response<Body>, AdkError> {
        let request = match request {
            Ok(request) => request,
            Err(error) => return Ok(error.response()),
        };
        let Some(memory) = &self.memory else {
            return Ok(detail(StatusCode::BAD_REQUEST, "Memory service is not configured."));
        };
        let Some(session_id) = request.session_id else {
            return Ok(detail(StatusCode::BAD_REQUEST, "Update memory request is invalid."));
        };
        let Some(session) = self.sessions.get_session(app, user, &session_id, GetSessionConfig::default()).await?
        else {
            return Ok(detail(StatusCode::NOT_FOUND, "Session not found"));
        };
        memory.add_session_to_memory(&session).await?;
        Ok(empty_json())
    }

    /// The artifact routes below `…/sessions/{id}/artifacts` (`rest` is what follows).
    #[allow(clippy::too_many_arguments, reason = "one route's parts")]
    async fn artifacts<B>(
        &self,
        method: &Method,
        app: &str,
        user: &str,
        session: &str,
        rest: &[&str],
        query: &str,
        body: B,
        max_body: usize,
    ) -> Result<Response<Body>, AdkError>
    where
        B: http_body::Body<Data = Bytes> + Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let a = &self.artifacts;
        let invalid_version = || detail(StatusCode::UNPROCESSABLE_ENTITY, "Invalid version ID");
        let answer = |found: Result<Response<Body>, AdkError>| match found {
            // A name or id the service refuses (a path outside its place) is the caller's error.
            Err(AdkError::InvalidRequest(message)) => Ok(detail(StatusCode::BAD_REQUEST, &message)),
            other => other,
        };
        let (name, tail) = match rest.iter().position(|s| *s == "versions") {
            Some(at) => (rest[..at].join("/"), &rest[at..]),
            None => (rest.join("/"), &rest[rest.len()..]),
        };
        answer(match (method, name.is_empty(), tail) {
            (&Method::GET, true, []) => {
                a.list_artifact_keys(app, user, session).await.map(|k| json_response(StatusCode::OK, &k))
            }
            (&Method::POST, true, []) => {
                let request: SaveArtifact = match read_json(body, max_body).await {
                    Ok(request) => request,
                    Err(error) => return Ok(error.response()),
                };
                let metadata = request.custom_metadata.unwrap_or_default();
                let saved = a
                    .save_artifact_with_metadata(app, user, session, &request.filename, request.artifact, metadata)
                    .await;
                match saved {
                    Ok(version) => {
                        match a.artifact_version(app, user, session, &request.filename, Some(version)).await? {
                            Some(meta) => Ok(json_response(StatusCode::OK, &meta)),
                            None => Ok(detail(StatusCode::INTERNAL_SERVER_ERROR, "Artifact metadata unavailable")),
                        }
                    }
                    Err(error) => Err(error),
                }
            }
            (&Method::GET, false, []) => {
                let version = query.split('&').find_map(|p| p.strip_prefix("version="));
                let version = match version.map(str::parse::<i64>).transpose() {
                    Ok(version) => version,
                    Err(_) => return Ok(invalid_version()),
                };
                a.load_artifact(app, user, session, &name, version).await.map(part_or_404)
            }
            (&Method::DELETE, false, []) => a.delete_artifact(app, user, session, &name).await.map(|()| empty_json()),
            (&Method::GET, false, ["versions"]) => {
                a.list_versions(app, user, session, &name).await.map(|v| json_response(StatusCode::OK, &v))
            }
            (&Method::GET, false, ["versions", "metadata"]) => {
                a.list_artifact_versions(app, user, session, &name).await.map(|v| json_response(StatusCode::OK, &v))
            }
            (&Method::GET, false, ["versions", id]) => match version_id(id) {
                Ok(version) => a.load_artifact(app, user, session, &name, version).await.map(part_or_404),
                Err(()) => Ok(invalid_version()),
            },
            (&Method::GET, false, ["versions", id, "metadata"]) => match version_id(id) {
                Ok(version) => a.artifact_version(app, user, session, &name, version).await.map(|found| match found {
                    Some(meta) => json_response(StatusCode::OK, &meta),
                    None => detail(StatusCode::NOT_FOUND, "Artifact version not found"),
                }),
                Err(()) => Ok(invalid_version()),
            },
            _ => Ok(detail(StatusCode::NOT_FOUND, "Not Found")),
        })
    }

    /// The runner of the request's app, its run configuration, and the request.
    fn prepare(
        &self,
        request: Result<RunAgentRequest, DecodeError>,
    ) -> Result<(Runner, RunConfig, RunAgentRequest), Box<Response<Body>>> {
        let request = request.map_err(|error| Box::new(error.response()))?;
        let Some(app_name) = request.app_name.as_deref() else {
            let message = "app_name is required when ADK_DEFAULT_APP_NAME is not set";
            return Err(Box::new(detail(StatusCode::BAD_REQUEST, message)));
        };
        let Some(app) = self.apps.get(app_name) else { return Err(Box::new(app_not_found(app_name))) };
        let mut config = RunConfig::default();
        if request.streaming {
            config = config.sse();
        }
        if let Some(metadata) = request.custom_metadata.clone() {
            config = config.with_custom_metadata(metadata);
        }
        if let Some(calls) = self.max_llm_calls {
            config = config.with_max_llm_calls(calls);
        }
        Ok((app.runner.clone(), config, request))
    }

    async fn run(&self, request: Result<RunAgentRequest, DecodeError>) -> Result<Response<Body>, AdkError> {
        let (runner, config, request) = match self.prepare(request) {
            Ok(prepared) => prepared,
            Err(response) => return Ok(*response),
        };
        let mut stream =
            runner.run(&request.user_id, &request.session_id, request.new_message, request.state_delta, config);
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => events.push(event),
                Err(AdkError::SessionNotFound(id)) => {
                    return Ok(detail(StatusCode::NOT_FOUND, &format!("Session not found: {id}")));
                }
                Err(error) => return Err(error),
            }
        }
        Ok(json_response(StatusCode::OK, &events))
    }

    async fn run_sse(&self, request: Result<RunAgentRequest, DecodeError>) -> Result<Response<Body>, AdkError> {
        let (runner, config, request) = match self.prepare(request) {
            Ok(prepared) => prepared,
            Err(response) => return Ok(*response),
        };
        let app = runner.app_name().to_owned();
        // A missing session is a 404 before the stream starts.
        if self
            .sessions
            .get_session(&app, &request.user_id, &request.session_id, GetSessionConfig::recent(0))
            .await?
            .is_none()
        {
            return Ok(detail(StatusCode::NOT_FOUND, &format!("Session not found: {}", request.session_id)));
        }
        let split_artifacts = request.function_call_event_id.is_none();
        let events =
            runner.run(&request.user_id, &request.session_id, request.new_message, request.state_delta, config);
        let frames = events.flat_map(move |event| futures::stream::iter(sse_frames(event, split_artifacts)));
        Ok(sse_response(frames))
    }
}

/// The `data:` frames of one run item: an event (two when it has both content and an artifact
/// delta, as ADK Web wants them), or the error that ended the run.
fn sse_frames(item: sinew_adk::Result<Event>, split_artifacts: bool) -> Vec<Bytes> {
    let frame = |value: &dyn erased::Json| Bytes::from(format!("data: {}\n\n", value.to_json()));
    match item {
        Ok(event) => {
            let has_parts = event.content.as_ref().is_some_and(|c| !c.parts().is_empty());
            if split_artifacts && !event.actions.artifact_delta.is_empty() && has_parts {
                let mut content = event.clone();
                content.actions.artifact_delta.clear();
                let mut artifacts = event;
                artifacts.content = None;
                vec![frame(&content), frame(&artifacts)]
            } else {
                vec![frame(&event)]
            }
        }
        Err(error) => {
            let kind = error_type(&error);
            let message = error.to_string();
            let details = json!({
                "error_type": kind,
                "error_message": message,
                "timestamp": sinew_adk::now_seconds(),
            });
            let body = json!({"error": format!("{kind}: {message}"), "error_details": details});
            vec![Bytes::from(format!("data: {body}\n\n"))]
        }
    }
}

mod erased {
    /// Any serializable value, as compact JSON (an event always serializes).
    pub(super) trait Json {
        fn to_json(&self) -> String;
    }

    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> String {
            serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\": \"unserializable: {e}\"}}"))
        }
    }
}

fn app_info(name: &str, agent: &Arc<dyn Agent>) -> Value {
    json!({
        "name": name,
        "rootAgentName": agent.name(),
        "description": agent.description(),
        "language": "rust",
        "isComputerUse": false,
    })
}

/// `GET /apps/{app}/app-info`, as adk-python answers it: the root `LlmAgent` and every
/// `LlmAgent` below it through `LlmAgent`s, each with its instruction (a provider as
/// `<InstructionProvider>`), its tools' declarations and its `LlmAgent` sub-agents; a root that
/// is not an `LlmAgent` is a 400.
fn detailed_app_info(name: &str, agent: &Arc<dyn Agent>) -> Response<Body> {
    fn traverse(agent: &sinew_adk::LlmAgent, into: &mut Map<String, Value>) {
        if into.contains_key(agent.name()) {
            return;
        }
        let mut sub_agents = Vec::new();
        for sub in agent.sub_agents() {
            if let Some(llm) = sub.as_llm_agent() {
                traverse(llm, into);
                sub_agents.push(llm.name().to_owned());
            }
        }
        let instruction = match agent.instruction() {
            None => String::new(),
            Some(sinew_adk::Instruction::Template(text)) => text.clone(),
            Some(_) => "<InstructionProvider>".to_owned(),
        };
        let tools: Vec<Value> = agent
            .tools()
            .iter()
            .filter_map(|tool| tool.declaration())
            .map(|declaration| json!({"functionDeclarations": [declaration]}))
            .collect();
        into.insert(
            agent.name().to_owned(),
            json!({
                "name": agent.name(),
                "description": agent.description(),
                "instruction": instruction,
                "tools": tools,
                "sub_agents": sub_agents,
            }),
        );
    }
    let Some(root) = agent.as_llm_agent() else {
        return detail(StatusCode::BAD_REQUEST, "Root agent is not an LlmAgent");
    };
    let mut agents = Map::new();
    traverse(root, &mut agents);
    let mut info = app_info(name, agent);
    info["agents"] = Value::Object(agents);
    json_response(StatusCode::OK, &info)
}

fn part_or_404(part: Option<Part>) -> Response<Body> {
    match part {
        Some(part) => json_response(StatusCode::OK, &part),
        None => detail(StatusCode::NOT_FOUND, "Artifact not found"),
    }
}

fn app_not_found(name: &str) -> Response<Body> {
    detail(StatusCode::NOT_FOUND, &format!("App not found: {name}"))
}

/// A failure the request did not cause: 500 with what went wrong.
/// What a failed request answers: 409 when another writer changed the session meanwhile (read it
/// again and retry), 404 when the session went away, 500 for what the request did not cause.
fn internal_error(error: &AdkError) -> Response<Body> {
    match error {
        AdkError::StaleSession { .. } => detail(StatusCode::CONFLICT, &error.to_string()),
        AdkError::SessionNotFound(id) => detail(StatusCode::NOT_FOUND, &format!("Session not found: {id}")),
        _ => {
            tracing::warn!(%error, "request failed");
            detail(StatusCode::INTERNAL_SERVER_ERROR, &format!("{}: {error}", error_type(error)))
        }
    }
}

/// An app name ADK would find as a directory: a plain identifier, never a path.
pub fn is_app_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}
