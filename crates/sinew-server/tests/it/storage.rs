//! Session storage by URI.

use sinew_adk::{GetSessionConfig, SessionService};
use sinew_server::session_service_from_uri;

async fn round_trip(service: &dyn SessionService) {
    service.create_session("app", "u", Some("s1"), Default::default()).await.unwrap();
    assert!(service.get_session("app", "u", "s1", GetSessionConfig::default()).await.unwrap().is_some());
}

#[tokio::test]
async fn memory_and_sqlite_uris() {
    round_trip(&*session_service_from_uri("memory://").await.unwrap()).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    // Four slashes: an absolute path, as SQLAlchemy reads it.
    let uri = format!("sqlite:///{}", path.display());
    round_trip(&*session_service_from_uri(&uri).await.unwrap()).await;
    let again = session_service_from_uri(&format!("sqlite+aiosqlite:///{}", path.display())).await.unwrap();
    let read = again.get_session("app", "u", "s1", GetSessionConfig::default()).await.unwrap();
    assert!(read.is_some(), "the same file, either spelling");
}

#[tokio::test]
async fn unknown_uris_name_what_is_understood_and_hide_passwords() {
    for uri in ["mysql://root:hunter2@db/x", "sessions.db", "sqlite://"] {
        let error = session_service_from_uri(uri).await.err().unwrap().to_string();
        assert!(error.contains("memory://, sqlite:///path or postgresql://"), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
    }
}

#[tokio::test]
#[cfg_attr(not(sinew_test_postgres), ignore = "set SINEW_TEST_POSTGRES_URL to run the PostgreSQL tests")]
async fn a_postgresql_uri() {
    let schema = sinew_testing::postgres::TestSchema::create("sinew_server_test").await;
    let url = schema.url();
    let rest = url.split_once("://").unwrap().1;
    round_trip(&*session_service_from_uri(&format!("postgresql+asyncpg://{rest}")).await.unwrap()).await;
}
