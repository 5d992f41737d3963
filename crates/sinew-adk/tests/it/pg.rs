//! PostgreSQL test schemas (sinew-testing's), as adk-python's `DatabaseSessionService` names them.

pub(crate) use sinew_testing::postgres::TestSchema as Schema;

/// A test schema's place as adk-python (asyncpg, through `tests/data/scripts/adk_sessions.py`)
/// names it.
pub(crate) fn python_url(schema: &Schema) -> String {
    let url = sinew_testing::postgres::server_url();
    let base = url.split('?').next().unwrap_or(&url);
    let rest = base.split_once("://").map_or(base, |(_, rest)| rest);
    format!("postgresql+asyncpg://{rest}?schema={}", schema.name())
}

/// A fresh schema for one test.
pub(crate) async fn schema() -> Schema {
    Schema::create("sinew_adk_test").await
}
