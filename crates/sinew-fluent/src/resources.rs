//! Resources (spec 003 §8): values a tool needs that are not the model's business (a database
//! pool, an HTTP client, a per-user cache), injected by type and hidden from the tool's schema.
//!
//! A [`ResourceTool`] declares the resource type it takes; the backend gives it the instance of
//! the right lifetime when it runs: one per compiled app ([`Lifetime::App`]), one per session
//! ([`Lifetime::Session`]) or one per invocation ([`Lifetime::Invocation`], dropped when the
//! invocation ends).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use serde_json::json;
//! use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
//! use sinew_fluent::resources::{Lifetime, ResourceTool, Resources};
//! use sinew_fluent::{AdkBackend, Agent, Backend as _, Execute as _, ExecutionConfig, RunOptions, final_text};
//!
//! struct Catalog(Vec<&'static str>);
//! let search = ResourceTool::new("search", "Searches the catalog.", json!({"type": "object"}), |_args, _ctx, catalog: Arc<Catalog>| async move {
//!     Ok(json!({"items": catalog.0}))
//! });
//! let model = Arc::new(ScriptedLlm::new([ScriptedAnswer::call("search", json!({})), ScriptedAnswer::text("Found two.")]));
//! let node = Agent::new("shop", model).resource_tool(search).build().unwrap();
//! let backend = AdkBackend::new().with_resources(Resources::new().provide(Lifetime::App, || Catalog(vec!["tea", "cups"])));
//! let app = backend.compile(&node, &ExecutionConfig::default()).unwrap();
//! let events = backend.run(&app, "what do you sell?", RunOptions::default()).await.unwrap();
//! assert_eq!(events[1].tool_responses[0].result, json!({"items": ["tea", "cups"]}));
//! assert_eq!(final_text(&events), "Found two.");
//! # });
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use sinew_adk::{FunctionTool, InvocationContext, Plugin, Tool, ToolContext, ToolError};

use crate::bounded::BoundedMap;

/// How long an instance of a resource lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lifetime {
    /// One instance per compiled app, made at its first use.
    App,
    /// One instance per session.
    Session,
    /// One instance per invocation, dropped when the invocation ends.
    Invocation,
}

type Instance = Arc<dyn Any + Send + Sync>;
type Factory = Arc<dyn Fn() -> Instance + Send + Sync>;

/// The resources a backend provides, by type.
#[derive(Clone, Default)]
pub struct Resources {
    providers: HashMap<TypeId, (Lifetime, Factory, &'static str)>,
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<(&str, Lifetime)> = self.providers.values().map(|(l, _, n)| (*n, *l)).collect();
        names.sort_unstable_by_key(|(n, _)| *n);
        f.debug_struct("Resources").field("providers", &names).finish()
    }
}

impl Resources {
    /// No resources.
    pub fn new() -> Self {
        Resources::default()
    }

    /// Provides `R`, made by `factory`, for `lifetime` (a type provided twice keeps the last).
    #[must_use]
    pub fn provide<R: Send + Sync + 'static>(
        mut self,
        lifetime: Lifetime,
        factory: impl Fn() -> R + Send + Sync + 'static,
    ) -> Self {
        let factory: Factory = Arc::new(move || Arc::new(factory()) as Instance);
        self.providers.insert(TypeId::of::<R>(), (lifetime, factory, std::any::type_name::<R>()));
        self
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.providers.is_empty()
    }

    pub(crate) fn provides(&self, id: TypeId) -> bool {
        self.providers.contains_key(&id)
    }
}

/// Instances by type, for one scope.
type Scope = HashMap<TypeId, Instance>;

/// Scopes by key; at most `MAX_ENTRIES` sessions' and
/// invocations' instances are kept, the oldest dropped first (an invocation whose run was dropped
/// never reaches its end).
type Scopes = BoundedMap<Scope>;

fn get_or_make(scopes: &mut Scopes, key: &str, id: TypeId, factory: &Factory) -> Instance {
    scopes.entry_or_insert_with(key, Scope::new).entry(id).or_insert_with(|| factory()).clone()
}

/// The resource instances of one compiled app (made by the backend; opaque).
pub struct ResourceStore {
    resources: Resources,
    app: Mutex<Scope>,
    sessions: Mutex<Scopes>,
    invocations: Mutex<Scopes>,
}

impl std::fmt::Debug for ResourceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceStore").field("resources", &self.resources).finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ResourceStore {
    pub(crate) fn new(resources: Resources) -> Arc<Self> {
        Arc::new(ResourceStore {
            resources,
            app: Mutex::default(),
            sessions: Mutex::default(),
            invocations: Mutex::default(),
        })
    }

    /// The instance of `R` for the call `ctx` is running.
    fn get<R: Send + Sync + 'static>(&self, ctx: &ToolContext) -> Result<Arc<R>, ToolError> {
        let id = TypeId::of::<R>();
        let Some((lifetime, factory, _)) = self.resources.providers.get(&id) else {
            return Err(ToolError::InvalidArgs(format!(
                "no resource of type `{}` is provided: give it to the backend with `Resources::provide`",
                std::any::type_name::<R>()
            )));
        };
        let instance = match lifetime {
            Lifetime::App => lock(&self.app).entry(id).or_insert_with(|| factory()).clone(),
            Lifetime::Session => {
                let invocation = ctx.invocation();
                let key =
                    format!("{}\u{0}{}\u{0}{}", invocation.app_name(), invocation.user_id(), invocation.session_id());
                get_or_make(&mut lock(&self.sessions), &key, id, factory)
            }
            Lifetime::Invocation => get_or_make(&mut lock(&self.invocations), ctx.invocation_id(), id, factory),
        };
        instance.downcast::<R>().map_err(|_| ToolError::InvalidArgs("a resource of another type".into()))
    }
}

/// Drops an invocation's instances when it ends.
pub(crate) struct ResourcePlugin(pub(crate) Arc<ResourceStore>);

#[async_trait]
impl Plugin for ResourcePlugin {
    fn name(&self) -> &str {
        "sinew_fluent_resources"
    }

    async fn after_run(&self, ctx: &InvocationContext) {
        lock(&self.0.invocations).remove(ctx.invocation_id());
    }

    async fn on_run_error(&self, ctx: &InvocationContext, _error: &sinew_adk::Error) {
        lock(&self.0.invocations).remove(ctx.invocation_id());
    }
}

type Handler<R> =
    Arc<dyn Fn(Map<String, Value>, ToolContext, Arc<R>) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// A tool that takes a resource of type `R` besides its arguments. The model sees `parameters`
/// only; the resource comes from the backend's [`Resources`].
pub struct ResourceTool<R> {
    name: String,
    description: String,
    parameters: Value,
    handler: Handler<R>,
}

impl<R> std::fmt::Debug for ResourceTool<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTool").field("name", &self.name).finish_non_exhaustive()
    }
}

impl<R: Send + Sync + 'static> ResourceTool<R> {
    /// `name` runs `handler` with the call's arguments, its context and the resource; `parameters`
    /// is the arguments' JSON schema.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, parameters: Value, handler: F) -> Self
    where
        F: Fn(Map<String, Value>, ToolContext, Arc<R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        ResourceTool {
            name: name.into(),
            description: description.into(),
            parameters,
            handler: Arc::new(move |args, ctx, resource| Box::pin(handler(args, ctx, resource))),
        }
    }
}

/// A tool the backend makes when it compiles, bound to its resources.
pub trait BindTool: Send + Sync {
    /// The tool's name.
    fn name(&self) -> &str;

    /// The resource type it takes, and that type's name.
    fn resource(&self) -> (TypeId, &'static str);

    /// The tool, taking its resources from `store`.
    #[doc(hidden)]
    fn bind(&self, store: &Arc<ResourceStore>) -> Arc<dyn Tool>;
}

impl<R: Send + Sync + 'static> BindTool for ResourceTool<R> {
    fn name(&self) -> &str {
        &self.name
    }

    fn resource(&self) -> (TypeId, &'static str) {
        (TypeId::of::<R>(), std::any::type_name::<R>())
    }

    fn bind(&self, store: &Arc<ResourceStore>) -> Arc<dyn Tool> {
        let (store, handler) = (store.clone(), self.handler.clone());
        Arc::new(FunctionTool::new(&self.name, &self.description, self.parameters.clone(), move |args, ctx| {
            let (store, handler) = (store.clone(), handler.clone());
            async move {
                let resource = store.get::<R>(&ctx)?;
                handler(args, ctx, resource).await
            }
        }))
    }
}
