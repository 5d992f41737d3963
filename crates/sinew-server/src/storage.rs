//! Session storage chosen by URI, as `adk api_server --session_service_uri` chooses it.

use std::sync::Arc;

use sinew_adk::{Error, InMemorySessionService, Result, SessionService, SqliteSessionService};

/// The session service `uri` names:
///
/// - `memory://`: sessions in memory, gone when the process ends;
/// - `sqlite:///path` (also `sqlite+aiosqlite:///path`): a SQLite file in adk-python's schema,
///   the path relative after three slashes, absolute after four (`sqlite:////var/lib/adk.db`);
/// - `postgresql://…` (also `postgres://…`, `postgresql+asyncpg://…`): PostgreSQL in
///   adk-python's schema (feature `postgres`, on by default).
///
/// Anything else is an error that names what is understood.
pub async fn session_service_from_uri(uri: &str) -> Result<Arc<dyn SessionService>> {
    let (scheme, rest) = uri.split_once("://").ok_or_else(|| unknown(uri))?;
    match scheme {
        "memory" => Ok(Arc::new(InMemorySessionService::new())),
        "sqlite" | "sqlite+aiosqlite" => {
            let path = rest.strip_prefix('/').filter(|p| !p.is_empty()).ok_or_else(|| unknown(uri))?;
            Ok(Arc::new(SqliteSessionService::open(path)?))
        }
        "postgresql" | "postgres" | "postgresql+asyncpg" => postgres(rest).await,
        _ => Err(unknown(uri)),
    }
}

#[cfg(feature = "postgres")]
async fn postgres(rest: &str) -> Result<Arc<dyn SessionService>> {
    Ok(Arc::new(sinew_adk::PostgresSessionService::connect(&format!("postgres://{rest}")).await?))
}

#[cfg(not(feature = "postgres"))]
async fn postgres(_: &str) -> Result<Arc<dyn SessionService>> {
    Err(Error::InvalidRequest("this build of sinew-server has no PostgreSQL support (feature `postgres`)".into()))
}

fn unknown(uri: &str) -> Error {
    // The URI may hold a password: only its scheme is repeated.
    let scheme = uri.split_once("://").map_or("(none)", |(scheme, _)| scheme);
    Error::InvalidRequest(format!(
        "unsupported session service URI (scheme `{scheme}`): use memory://, sqlite:///path or postgresql://…"
    ))
}
