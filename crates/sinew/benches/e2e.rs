//! `cargo xtask bench e2e`: the reference workload of DESIGN.md over real HTTP.
//!
//! ```text
//! cargo xtask bench e2e [--api openai|anthropic] [--workload seq|conc|long] [--turns N] [--tools K]
//!                       [--tokens T] [--agents A] [--base-url URL] [--events finish|read]
//! ```
//!
//! A turn is a prompt (`tools=K tokens=T turn=i`), which the model answers with K parallel
//! `echo` calls; the agent runs them and sends the results; the model streams T tokens. `seq`
//! runs N turns (200) with one agent, each in a fresh conversation, as the peers were measured;
//! `conc` runs A agents (100) of N continued turns (5) each at once; `long` runs one conversation
//! of N continued turns (1,000) and reports the CPU per turn of its first and last 100 turns,
//! which a linear history keeps close, and the user part alone (the kernel's part grows with the
//! history every call sends). Each run is finished (`AgentRun::finish`, which builds no events)
//! unless `--events read` reads every event of its stream, as an application showing them
//! would. The mock model
//! (`sinew-mockllm`, started here unless `--base-url` is given) runs in its own process, so the
//! CPU time reported is the client's alone. The last line is `RESULT {json}`; the exit status is
//! non-zero when a tool call or a final text is missing.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use common::{Options, counting_echo, mark_cpu, run_workload};
use futures::StreamExt;
use sinew::testing::mockllm::expected_text;
use sinew::{Agent, StreamProvider};

/// One agent's turns; returns the number of final texts that were right.
async fn run_agent(
    provider: Arc<dyn StreamProvider>,
    options: Arc<Options>,
    calls: Arc<AtomicUsize>,
    expected: Arc<str>,
) -> usize {
    let mut agent = Agent::with_provider_arc(provider, "mock-1").with_tool(counting_echo(calls));
    let mut right = 0;
    let long = options.workload == "long";
    let window = (options.turns / 2).min(100);
    for turn in 0..options.turns {
        if options.workload == "seq" {
            agent.reset();
        }
        if long && (turn == 0 || turn == window || turn == options.turns - window) {
            mark_cpu();
        }
        let mut run = agent.prompt(format!("tools={} tokens={} turn={turn}", options.tools, options.tokens));
        let finished;
        let outcome = if options.events == "read" {
            // Each event taken and dropped, as an application showing them would.
            while run.next().await.is_some() {}
            run.outcome()
        } else {
            finished = run.finish().await;
            Some(&finished)
        };
        match outcome {
            Some(outcome) if outcome.final_text().as_deref() == Some(&*expected) => right += 1,
            Some(outcome) => eprintln!("turn {turn}: {}", outcome.error.as_deref().unwrap_or("a wrong answer")),
            None => eprintln!("turn {turn}: no outcome"),
        }
    }
    if long {
        mark_cpu();
    }
    right
}

fn main() {
    run_workload("e2e", |provider, options, calls, agents| {
        // The answer to check against, written once: not the client's work.
        let expected: Arc<str> = expected_text(options.tokens).into();
        (0..agents)
            .map(|_| tokio::spawn(run_agent(provider.clone(), options.clone(), calls.clone(), expected.clone())))
            .collect()
    });
}
