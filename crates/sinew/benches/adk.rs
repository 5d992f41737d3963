//! `cargo xtask bench adk`: the reference workload of DESIGN.md through sinew-adk's `Runner` and
//! `ModelAdapter`, over real HTTP.
//!
//! ```text
//! cargo xtask bench adk [--api openai|anthropic] [--workload seq|conc] [--turns N] [--tools K]
//!                       [--tokens T] [--agents A] [--base-url URL] [--streaming sse|none]
//!                       [--sessions delete|keep]
//! ```
//!
//! The same turns as `bench e2e` (a prompt, K parallel `echo` calls, T streamed tokens), run by an
//! ADK `LlmAgent` whose model is a `ModelAdapter` over the provider and whose tool is the `echo`
//! agent tool through `ToolAdapter`. Every turn is a new session in one `InMemorySessionService`
//! (a fresh conversation per turn, as the peers were measured), in SSE mode by default (every
//! streamed token is an event the caller receives; `--streaming none` gives one event per model
//! answer). A turn's session is deleted once the turn is done, as the plain loop of `bench e2e`
//! drops its conversation; `--sessions keep` keeps them all, which measures a heap that grows by
//! every turn's events as well. The last line is `RESULT {json}`; the exit status is non-zero when
//! a tool call or a final text is missing.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use common::{Options, counting_echo, fail, run_workload};
use futures::StreamExt as _;
use sinew::StreamProvider;
use sinew::adk::{
    Content, InMemorySessionService, LlmAgent, ModelAdapter, RunConfig, Runner, SessionService, ToolAdapter,
};
use sinew::testing::mockllm::expected_text;

/// One agent's turns, each in a new session; returns the number of final texts that were right.
async fn run_agent(
    index: usize,
    provider: Arc<dyn StreamProvider>,
    sessions: Arc<InMemorySessionService>,
    options: Arc<Options>,
    calls: Arc<AtomicUsize>,
    expected: Arc<str>,
) -> usize {
    let model = Arc::new(ModelAdapter::new(provider, "mock-1"));
    let agent = LlmAgent::builder("bench_agent")
        .model(model)
        .instruction("Call echo as asked, then answer.")
        .tool(Arc::new(ToolAdapter::new(Arc::new(counting_echo(calls)))))
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()));
    let runner = Runner::new("bench", Arc::new(agent), sessions.clone()).unwrap_or_else(|e| fail(&e.to_string()));
    let mut right = 0;
    for turn in 0..options.turns {
        let session = format!("a{index}-t{turn}");
        if let Err(error) = sessions.create_session("bench", "u", Some(&session), Default::default()).await {
            fail(&error.to_string());
        }
        let prompt = Content::user_text(format!("tools={} tokens={} turn={turn}", options.tools, options.tokens));
        let config = if options.streaming == "none" { RunConfig::default() } else { RunConfig::default().sse() };
        let mut events = runner.run("u", &session, Some(prompt), None, config);
        let mut last = None;
        while let Some(event) = events.next().await {
            match event {
                Ok(event) if !event.is_partial() => last = Some(event),
                Ok(_) => {}
                Err(error) => eprintln!("turn {turn}: {error}"),
            }
        }
        if last.and_then(|e| e.content).map(|c| c.text()).as_deref() == Some(&*expected) {
            right += 1;
        }
        if options.sessions == "delete"
            && let Err(error) = sessions.delete_session("bench", "u", &session).await
        {
            fail(&error.to_string());
        }
    }
    right
}

fn main() {
    run_workload("adk", |provider, options, calls, agents| {
        if options.workload == "long" {
            fail("bench adk runs each turn in a new session: --workload is seq or conc");
        }
        if options.events != "finish" {
            fail("bench adk reads every event of each run: --events is for bench e2e");
        }
        let sessions = Arc::new(InMemorySessionService::new());
        // The answer to check against, written once: not the client's work.
        let expected: Arc<str> = expected_text(options.tokens).into();
        (0..agents)
            .map(|i| {
                let run =
                    run_agent(i, provider.clone(), sessions.clone(), options.clone(), calls.clone(), expected.clone());
                tokio::spawn(run)
            })
            .collect()
    });
}
