//! Chat's schema migrations, run by [refinery](https://docs.rs/refinery): SQL files under
//! `migrations/` in this crate, embedded in the binary, recorded in `refinery_schema_history`.
//!
//! - V1: agent definitions, conversations, messages, agent runs with their messages and tool
//!   calls.
//! - V2: `chat_conversations.agent_definition_id`, nullable, referencing `agent_definitions(id)`
//!   (spec 001): conversations from before it stay plain.
//!
//! The stores run them when they open; these runners are for tools and tests that migrate
//! themselves (to a given version, say).

mod sqlite_files {
    refinery::embed_migrations!("migrations/sqlite");
}

#[cfg(feature = "postgres")]
mod postgres_files {
    refinery::embed_migrations!("migrations/postgres");
}

/// The SQLite migrations.
pub fn sqlite() -> refinery::Runner {
    sqlite_files::migrations::runner()
}

/// The PostgreSQL migrations (for a connection whose `search_path` is the chat schema).
#[cfg(feature = "postgres")]
pub fn postgres() -> refinery::Runner {
    postgres_files::migrations::runner()
}
