//! Apps (ADK's `App`): what a runner runs — a named root agent with the plugins of every
//! invocation.

use std::sync::Arc;

use crate::agent::{Agent, AgentNames, check_agent_tree};
use crate::compaction::EventsCompactionConfig;
use crate::error::{Error, Result};
use crate::plugin::Plugin;
use crate::runner::Runner;
use crate::session::SessionService;

/// A root agent under an app name, with its plugins (ADK's `App`).
///
/// ```
/// # use std::sync::Arc;
/// # use sinew_adk::{App, InMemorySessionService, LlmAgent, Runner};
/// # use sinew_adk::testing::ScriptedLlm;
/// let agent = LlmAgent::builder("helper").model(Arc::new(ScriptedLlm::texts(["hi"]))).build().unwrap();
/// let app = App::new("support", Arc::new(agent)).unwrap();
/// let runner = Runner::from_app(&app, Arc::new(InMemorySessionService::new())).unwrap();
/// assert_eq!(runner.app_name(), "support");
/// assert!(App::new("not a name", app.root_agent().clone()).is_err());
/// assert!(App::new("support-desk", app.root_agent().clone()).is_ok());
/// ```
#[derive(Clone)]
pub struct App {
    name: String,
    root_agent: Arc<dyn Agent>,
    plugins: Vec<Arc<dyn Plugin>>,
    compaction: Option<EventsCompactionConfig>,
    resumable: bool,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("name", &self.name)
            .field("root_agent", &self.root_agent.name())
            .field("plugins", &self.plugins.iter().map(|p| p.name().to_owned()).collect::<Vec<_>>())
            .finish()
    }
}

impl App {
    /// An app named `name` (a letter, then letters, digits, `_` and `-`, as ADK's
    /// `validate_app_name` requires) around
    /// `root_agent`, whose tree must follow ADK's naming rule.
    pub fn new(name: impl Into<String>, root_agent: Arc<dyn Agent>) -> Result<Self> {
        let name = name.into();
        // adk-python 2.13's `validate_app_name`: `^[a-zA-Z][a-zA-Z0-9_-]*$`.
        let mut chars = name.chars();
        let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(Error::InvalidAgent(format!(
                "Invalid app name '{name}': must start with a letter and can only consist of letters, digits, underscores, and hyphens."
            )));
        }
        if name == "user" {
            return Err(Error::InvalidAgent("App name cannot be 'user'; reserved for end-user input.".into()));
        }
        check_agent_tree(root_agent.as_ref(), AgentNames::Identifiers)?;
        Ok(App { name, root_agent, plugins: Vec::new(), compaction: None, resumable: false })
    }

    /// Adds a plugin; plugins run in the order they were added.
    #[must_use]
    pub fn with_plugin(mut self, plugin: Arc<dyn Plugin>) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Summarizes older events of its sessions as `config` says (ADK's
    /// `events_compaction_config`). Without a summarizer of its own, the root agent's model
    /// summarizes: the root must then be an [`LlmAgent`](crate::LlmAgent) with a model.
    pub fn with_events_compaction(mut self, config: EventsCompactionConfig) -> Result<Self> {
        config.resolve(&self.root_agent)?;
        self.compaction = Some(config);
        Ok(self)
    }

    /// Makes the app resumable (ADK's `ResumabilityConfig(is_resumable=True)`): agents write
    /// checkpoints into the session, and a message answering a paused invocation's long-running
    /// call resumes the workflow where it paused (see [`Runner::resumable`]).
    #[must_use]
    pub fn resumable(mut self) -> Self {
        self.resumable = true;
        self
    }

    /// Whether the app is resumable.
    pub fn is_resumable(&self) -> bool {
        self.resumable
    }

    /// The event compaction, when set.
    pub fn events_compaction(&self) -> Option<&EventsCompactionConfig> {
        self.compaction.as_ref()
    }

    /// The app's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The root agent.
    pub fn root_agent(&self) -> &Arc<dyn Agent> {
        &self.root_agent
    }

    /// The plugins, in order.
    pub fn plugins(&self) -> &[Arc<dyn Plugin>] {
        &self.plugins
    }
}

impl Runner {
    /// A runner of `app` over `sessions`, with the app's plugins.
    pub fn from_app(app: &App, sessions: Arc<dyn SessionService>) -> Result<Runner> {
        let mut runner = Runner::new(app.name.clone(), app.root_agent.clone(), sessions)?;
        if let Some(config) = &app.compaction {
            runner = runner.with_events_compaction(config)?;
        }
        if app.resumable {
            runner = runner.resumable();
        }
        Ok(app.plugins.iter().fold(runner, |runner, plugin| runner.with_plugin(plugin.clone())))
    }
}
