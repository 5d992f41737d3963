//! For random scripted runs with random aborts, the history never has an unmatched tool call.

use std::time::Duration;

use futures::StreamExt;
use proptest::prelude::*;
use serde_json::json;
use sinew_agent::Agent;
use sinew_core::*;
use sinew_testing::{EchoTool, FnTool, MockProvider, MockResponse, assert_history_valid};

#[derive(Clone, Debug)]
enum Call {
    Echo,
    Slow,
    Fail,
    Missing,
}

#[derive(Clone, Debug)]
enum Ending {
    Done,
    ErrorMidStream,
    ErrorBefore,
    Hang,
}

#[derive(Clone, Debug)]
struct Step {
    text: bool,
    calls: Vec<Call>,
    ending: Ending,
}

fn step() -> impl Strategy<Value = Step> {
    let call = prop_oneof![Just(Call::Echo), Just(Call::Slow), Just(Call::Fail), Just(Call::Missing)];
    let ending = prop_oneof![
        6 => Just(Ending::Done),
        1 => Just(Ending::ErrorMidStream),
        1 => Just(Ending::ErrorBefore),
        1 => Just(Ending::Hang),
    ];
    (any::<bool>(), proptest::collection::vec(call, 0..4), ending).prop_map(|(text, calls, ending)| Step {
        text,
        calls,
        ending,
    })
}

fn response(step: &Step, n: usize) -> MockResponse {
    if matches!(step.ending, Ending::ErrorBefore) {
        return MockResponse::error(ProviderError::Auth("denied".into()));
    }
    let mut r = MockResponse::new();
    if step.text {
        r = r.text_delta("thinking out loud ");
    }
    for (i, call) in step.calls.iter().enumerate() {
        let name = match call {
            Call::Echo => "echo",
            Call::Slow => "slow",
            Call::Fail => "fail",
            Call::Missing => "missing",
        };
        r = r.tool_call(format!("call_{n}_{i}"), name, json!({"text": "x"}));
    }
    match step.ending {
        Ending::Done | Ending::ErrorBefore => r,
        Ending::ErrorMidStream => r.then_error(ProviderError::Network("reset".into())),
        // An hour on tokio's paused clock: instant unless an abort lands while it waits.
        Ending::Hang => r.delay(Duration::from_secs(3600)).text_delta("late"),
    }
}

fn run_case(steps: Vec<Step>, abort_at: Option<usize>, mode: ToolExecution) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    rt.block_on(async {
        let script: Vec<MockResponse> = steps.iter().enumerate().map(|(n, s)| response(s, n)).collect();
        let slow = FnTool::new("slow", |_, _| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(ToolResult::text("slow done"))
        });
        let fail = FnTool::new("fail", |_, _| async { Err(ToolError::Failed("nope".into())) });
        let mut agent = Agent::new(MockProvider::new(script).without_recording(), "m")
            .with_tool(EchoTool)
            .with_tool(slow)
            .with_tool(fail)
            .with_tool_execution(mode)
            .with_retry_config(RetryConfig::none())
            .with_execution_limits(Some(ExecutionLimits::default().with_max_turns(6)));
        for prompt in 0..2 {
            let handle = agent.handle();
            let mut run = agent.prompt(format!("prompt {prompt}"));
            let mut seen = 0;
            let mut ends = 0;
            let mut last = "";
            while let Some(event) = run.next().await {
                seen += 1;
                if Some(seen) == abort_at {
                    handle.abort();
                }
                ends += usize::from(event.kind() == "agent_end");
                last = event.kind();
            }
            drop(run);
            assert_eq!((ends, last), (1, "agent_end"), "exactly one AgentEnd, last");
            assert_history_valid(agent.messages());
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn histories_stay_valid_whatever_happens(
        steps in proptest::collection::vec(step(), 1..6),
        abort_at in proptest::option::of(1usize..40),
        mode in prop_oneof![Just(ToolExecution::Parallel), Just(ToolExecution::Sequential), Just(ToolExecution::Batched { size: 2 })],
    ) {
        run_case(steps, abort_at, mode);
    }
}
