//! OpenAPI documents' operations as an agent's tools: everything of [`sinew_openapi`], plus
//! [`AgentOpenApiExt`].

use std::path::Path;

use sinew_agent::Agent;
pub use sinew_openapi::*;

/// Adds an OpenAPI document's operations to an [`Agent`] as tools (REQ-158). `configure` sets
/// up the toolset (base URL, credentials, [`OperationFilter`], name prefix) before it is built.
///
/// ```no_run
/// # async fn demo(agent: sinew::Agent) -> Result<(), sinew::openapi::OpenApiError> {
/// use sinew::openapi::{AgentOpenApiExt, OperationFilter};
///
/// let agent = agent
///     .with_openapi_url("https://petstore3.swagger.io/api/v3/openapi.json", |tools| {
///         tools.filter(OperationFilter::ByTag(vec!["pet".into()])).name_prefix("pets")
///     })
///     .await?
///     .with_openapi_file("billing.yaml", |tools| tools.base_url("http://127.0.0.1:4010"))
///     .await?;
/// # drop(agent); Ok(()) }
/// ```
#[allow(async_fn_in_trait)]
pub trait AgentOpenApiExt: Sized {
    /// The operations of a document given as JSON or YAML text.
    fn with_openapi_spec(
        self,
        text: &str,
        configure: impl FnOnce(OpenApiToolset) -> OpenApiToolset,
    ) -> Result<Self, OpenApiError>;

    /// The operations of a document read from a file.
    async fn with_openapi_file(
        self,
        path: impl AsRef<Path>,
        configure: impl FnOnce(OpenApiToolset) -> OpenApiToolset,
    ) -> Result<Self, OpenApiError>;

    /// The operations of a document fetched from a URL (with a client from the environment's
    /// proxy settings; [`OpenApiDocument::from_url`] takes one of your own).
    async fn with_openapi_url(
        self,
        url: &str,
        configure: impl FnOnce(OpenApiToolset) -> OpenApiToolset,
    ) -> Result<Self, OpenApiError>;
}

fn add(
    agent: Agent,
    document: OpenApiDocument,
    configure: impl FnOnce(OpenApiToolset) -> OpenApiToolset,
) -> Result<Agent, OpenApiError> {
    Ok(agent.with_tools(configure(OpenApiToolset::new(document)).build_agent_tools()?))
}

impl AgentOpenApiExt for Agent {
    fn with_openapi_spec(
        self,
        text: &str,
        configure: impl FnOnce(OpenApiToolset) -> OpenApiToolset,
    ) -> Result<Self, OpenApiError> {
        add(self, OpenApiDocument::parse(text)?, configure)
    }

    async fn with_openapi_file(
        self,
        path: impl AsRef<Path>,
        configure: impl FnOnce(OpenApiToolset) -> OpenApiToolset,
    ) -> Result<Self, OpenApiError> {
        add(self, OpenApiDocument::from_file(path).await?, configure)
    }

    async fn with_openapi_url(
        self,
        url: &str,
        configure: impl FnOnce(OpenApiToolset) -> OpenApiToolset,
    ) -> Result<Self, OpenApiError> {
        let document = OpenApiDocument::from_url(url, &crate::http::HttpClient::from_env()).await?;
        add(self, document, configure)
    }
}
