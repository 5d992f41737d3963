//! The server ADK's conformance harness runs against (`cargo xtask conformance`), built outside
//! sinew's workspace on the crates' public API: the twin of the harness's demo agent with the
//! replay plugin (reading recordings under `--recordings DIR`, default the current directory),
//! sessions in memory, on `127.0.0.1:<port>` (`--port`, default 8000, where the harness looks).
//! Runs until Ctrl-C.

use std::sync::Arc;

use sinew_adk::InMemorySessionService;
use sinew_adk::testing::{ScriptedAnswer, ScriptedLlm};
use sinew_server::conformance::{ReplayPlugin, demo_agent};
use sinew_server::{AdkApi, ServerConfig, serve};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut port: u16 = 8000;
    let mut recordings = std::env::current_dir()?;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match (flag.as_str(), args.next()) {
            ("--port", Some(value)) => port = value.parse()?,
            ("--recordings", Some(value)) => recordings = value.into(),
            _ => return Err("usage: sinew-conformance-server [--port N] [--recordings DIR]".into()),
        }
    }
    // The twin's own model answers nothing: under replay the recorded model answers.
    let model = Arc::new(ScriptedLlm::new(Vec::<ScriptedAnswer>::new()).named("fake-llm"));
    let api = AdkApi::new(Arc::new(InMemorySessionService::new()))
        .plugin(Arc::new(ReplayPlugin::new(recordings)))
        .app("demo_agent", Arc::new(demo_agent(model)?))?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let shutdown = async {
        // Without a signal handler the server runs until it is killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    serve(listener, api, ServerConfig::default(), shutdown).await?;
    Ok(())
}
