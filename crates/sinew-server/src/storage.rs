//! Storage chosen by URI: sessions as `adk api_server --session_service_uri` chooses them, and
//! chat's tables.

use std::sync::Arc;

use sinew_adk::{Error, InMemorySessionService, Result, SessionService, SqliteSessionService};

use crate::chat::{ChatError, ChatResult, ChatStore, SqliteChatStore};

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

/// The chat store `uri` names: `sqlite:///path` (relative; four slashes for an absolute path) or
/// `postgresql://…` (tables in schema `kb`, or the schema a `?schema=NAME` parameter names).
pub async fn chat_store_from_uri(uri: &str) -> ChatResult<Arc<dyn ChatStore>> {
    let unknown = || {
        let scheme = uri.split_once("://").map_or("(none)", |(scheme, _)| scheme);
        ChatError::Invalid(format!(
            "unsupported chat store URI (scheme `{scheme}`): use sqlite:///path or postgresql://…"
        ))
    };
    let (scheme, rest) = uri.split_once("://").ok_or_else(unknown)?;
    match scheme {
        "sqlite" => {
            let path = rest.strip_prefix('/').filter(|p| !p.is_empty()).ok_or_else(unknown)?;
            Ok(Arc::new(SqliteChatStore::open(path)?))
        }
        "postgresql" | "postgres" => chat_postgres(rest).await,
        _ => Err(unknown()),
    }
}

#[cfg(feature = "postgres")]
async fn chat_postgres(rest: &str) -> ChatResult<Arc<dyn ChatStore>> {
    // `schema` is ours, not libpq's: it comes out of the query before the URL is parsed.
    let (base, query) = rest.split_once('?').unwrap_or((rest, ""));
    let mut schema = crate::chat::DEFAULT_SCHEMA.to_owned();
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.strip_prefix("schema=") {
            Some(name) => schema = name.to_owned(),
            None => kept.push(pair),
        }
    }
    let url =
        if kept.is_empty() { format!("postgres://{base}") } else { format!("postgres://{base}?{}", kept.join("&")) };
    Ok(Arc::new(crate::chat::PostgresChatStore::connect_in(&url, &schema).await?))
}

#[cfg(not(feature = "postgres"))]
async fn chat_postgres(_: &str) -> ChatResult<Arc<dyn ChatStore>> {
    Err(ChatError::Invalid("this build of sinew-server has no PostgreSQL support (feature `postgres`)".into()))
}
