//! Parallel evaluation: `agent_loop_parallel` and the five strategies (REQ-196…REQ-209).

use std::sync::Arc;

use sinew_agent::*;
use sinew_core::*;
use sinew_testing::{MockProvider, MockResponse, assert_history_valid};

fn config(provider: &Arc<MockProvider>, model: &str) -> AgentLoopConfig {
    AgentLoopConfig::new(Arc::clone(provider) as Arc<dyn StreamProvider>, model)
}

/// A branch config answering `text` with `tokens` total tokens.
fn branch(text: &str, tokens: u64) -> (Arc<MockProvider>, AgentLoopConfig) {
    let mock = Arc::new(MockProvider::new([MockResponse::text(text).usage(tokens, 0)]));
    let config = config(&mock, &format!("model-{tokens}"));
    (mock, config)
}

async fn run_parallel(
    prompts: Vec<AgentMessage>,
    context: &mut AgentContext,
    configs: &[AgentLoopConfig],
    strategy: &dyn EvaluationStrategy,
) -> (ParallelLoopResult, Vec<AgentEvent>) {
    let (tx, mut rx) = event_channel();
    let result =
        agent_loop_parallel(prompts, context, configs, strategy, &tx, &CancellationToken::new()).await.unwrap();
    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    (result, events)
}

#[tokio::test]
async fn branches_run_concurrently_and_the_winner_becomes_the_history() {
    let configs: Vec<AgentLoopConfig> = [("short", 10), ("long", 30)].iter().map(|(t, n)| branch(t, *n).1).collect();
    let mut context = AgentContext {
        agent_id: Some("agent".into()),
        session_id: Some("S".into()),
        loop_id: Some("S.earlier.1".into()),
        ..AgentContext::default()
    };
    let (result, events) =
        run_parallel(vec![AgentMessage::user("q")], &mut context, &configs, &TokenEfficientEvaluation).await;

    assert_eq!(result.selected_index, Some(0));
    assert_eq!(result.branches.len(), 2);
    assert!(result.branches.iter().all(|b| b.original_context_len == 0 && b.outcome.reason == EndReason::Completed));
    assert_eq!(result.total_usage().total_tokens, 40);
    // The context took the winner's history and loop id.
    assert_eq!(context.messages.len(), 2);
    assert_eq!(context.messages[1].as_assistant().unwrap().text(), "short");
    assert_eq!(context.loop_id.as_deref(), Some(result.branches[0].outcome.loop_id.as_str()));
    assert_history_valid(&context.messages);

    // Group events frame the branches'.
    let AgentEvent::ParallelLoopStart { loop_id: group, loop_ids, strategy, session_id, .. } = &events[0] else {
        panic!("{:?}", events[0]);
    };
    assert_eq!((&**group, strategy.as_str(), &**session_id), (result.group_id.as_str(), "token_efficient", "S"));
    let AgentEvent::ParallelLoopEnd { selected_loop_id, selected_index, .. } = events.last().unwrap() else {
        panic!("{:?}", events.last());
    };
    assert_eq!(selected_loop_id.as_ref(), loop_ids.first());
    assert_eq!(*selected_index, Some(0));
    // Each branch is a run of its own, a branch of the context's loop.
    let starts: Vec<(&str, Option<&str>, Option<&ContinuationKind>)> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::AgentStart { loop_id, parent_loop_id, continuation_kind, .. } => {
                Some((&**loop_id, parent_loop_id.as_deref(), continuation_kind.as_ref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 2);
    assert_ne!(starts[0].0, starts[1].0, "distinct loop ids");
    for (i, (loop_id, parent, kind)) in starts.iter().enumerate() {
        assert_eq!(*loop_id, loop_ids[i]);
        assert_eq!(*parent, Some("S.earlier.1"));
        assert_eq!(*kind, Some(&ContinuationKind::Branch { tag: format!("branch-{}", i + 1) }));
    }
}

#[tokio::test]
async fn with_no_prompts_the_branches_continue_the_history() {
    let (first, a) = branch("from a", 5);
    let (second, b) = branch("from b", 7);
    let mut context = AgentContext {
        messages: vec![AgentMessage::user("earlier"), assistant("before"), AgentMessage::user("now?")],
        ..AgentContext::default()
    };
    let (result, _) = run_parallel(Vec::new(), &mut context, &[a, b], &ElaborateEvaluation).await;
    assert_eq!(result.selected_index, Some(1));
    assert!(result.branches.iter().all(|b| b.original_context_len == 3));
    assert_eq!(context.messages.len(), 4);
    assert_eq!(context.messages[3].as_assistant().unwrap().text(), "from b");
    // Both branches saw the whole history.
    assert_eq!((first.requests()[0].messages.len(), second.requests()[0].messages.len()), (3, 3));

    // A history that ends with the model's answer cannot be continued.
    let mut done = AgentContext { messages: vec![AgentMessage::user("q"), assistant("a")], ..AgentContext::default() };
    let (tx, _rx) = event_channel();
    let configs = [branch("x", 1).1];
    let error =
        agent_loop_parallel(Vec::new(), &mut done, &configs, &PickFirstEvaluation, &tx, &CancellationToken::new())
            .await
            .unwrap_err();
    assert!(matches!(error, Error::InvalidContext(_)), "{error}");
    let error = agent_loop_parallel(Vec::new(), &mut done, &[], &PickFirstEvaluation, &tx, &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidContext(_)), "{error}");
}

fn assistant(text: &str) -> AgentMessage {
    let mut message = AssistantMessage::new("mock", "m");
    message.content = vec![Content::text(text)];
    message.into()
}

/// A finished branch for strategy tests.
fn outcome(index: usize, reason: EndReason, tokens: u64, answer: &str) -> ParallelLoopOutcome {
    ParallelLoopOutcome {
        config_index: index,
        outcome: LoopOutcome {
            loop_id: format!("S.m.{index}"),
            reason,
            messages: vec![AgentMessage::user("q"), assistant(answer)],
            usage: Usage::default().with_total(tokens),
            error: None,
            suspension: None,
        },
        original_context_len: 0,
    }
}

async fn decide(strategy: &dyn EvaluationStrategy, branches: &[ParallelLoopOutcome]) -> EvaluationDecision {
    let (tx, _rx) = event_channel();
    let prompts = [AgentMessage::user("q")];
    let input =
        EvaluationInput { prompts: &prompts, history: &[], branches, session_id: "S", group_id: "S.parallel.g" };
    strategy.evaluate(input, &tx, &CancellationToken::new()).await.decision
}

#[tokio::test]
async fn each_strategy_decides_as_documented() {
    use EvaluationDecision::{NoSelection, Select};
    let done = EndReason::Completed;
    let three = [outcome(0, done, 50, "a"), outcome(1, EndReason::Failed, 5, "b"), outcome(2, done, 20, "c")];
    assert_eq!(decide(&PickFirstEvaluation, &three).await, Select(0));
    assert!(matches!(decide(&PickFirstEvaluation, &[]).await, NoSelection(_)));
    // The failed branch used fewest tokens, but never wins.
    assert_eq!(decide(&TokenEfficientEvaluation, &three).await, Select(2));
    assert_eq!(decide(&ElaborateEvaluation, &three).await, Select(0));
    // Ties go to the first.
    let tied = [outcome(0, done, 10, "a"), outcome(1, done, 10, "b")];
    assert_eq!(decide(&TokenEfficientEvaluation, &tied).await, Select(0));
    assert_eq!(decide(&ElaborateEvaluation, &tied).await, Select(0));
    let failed = [outcome(0, EndReason::Failed, 1, "a")];
    assert_eq!(decide(&ElaborateEvaluation, &failed).await, NoSelection("no branch completed".into()));
    assert_eq!(decide(&TransparentEvaluation, &failed).await, Select(0));
    assert!(matches!(decide(&TransparentEvaluation, &tied).await, NoSelection(_)));
}

#[tokio::test]
async fn the_judge_reads_the_query_and_numbered_answers_and_names_the_winner() {
    let judge = Arc::new(MockProvider::new([MockResponse::text("Candidate 2 is best.").usage(100, 3)]));
    let strategy = LlmJudgeEvaluation::new(config(&judge, "judge-model"));
    let configs: Vec<AgentLoopConfig> =
        [("Paris is the capital.", 10), ("Lyon.", 10)].iter().map(|(t, n)| branch(t, *n).1).collect();
    let mut context = AgentContext {
        messages: vec![AgentMessage::user("Let's talk about France."), assistant("Sure.")],
        ..AgentContext::default()
    };
    let (result, events) =
        run_parallel(vec![AgentMessage::user("What is the capital of France?")], &mut context, &configs, &strategy)
            .await;
    assert_eq!(result.selected_index, Some(1));
    assert_eq!(result.evaluation_usage.input, 100);
    let request = &judge.requests()[0];
    assert_eq!(request.system_prompt, DEFAULT_JUDGE_PROMPT);
    let Message::User(user) = &request.messages[0] else { panic!("{:?}", request.messages[0]) };
    let text = content::join_text(&user.content, "");
    assert_eq!(
        text,
        "Conversation so far:\nUser: Let's talk about France.\n\nAssistant: Sure.\n\n\
         Query:\nWhat is the capital of France?\n\nCandidates:\n\n[1]\nParis is the capital.\n\n[2]\nLyon.\n\n\
         Reply with the number (1 to 2) of the best candidate only."
    );
    // The judge ran in the branches' session, between the branches and the group's end.
    let judge_start = events
        .iter()
        .position(|e| matches!(e, AgentEvent::AgentStart { agent_id, .. } if &**agent_id == "judge"))
        .unwrap();
    let AgentEvent::AgentStart { session_id, loop_id, .. } = &events[judge_start] else { unreachable!() };
    assert_eq!(&**session_id, context.session_id.as_deref().unwrap());
    assert_eq!(&**loop_id, format!("{}.judge", result.group_id));
    assert!(matches!(events.last(), Some(AgentEvent::ParallelLoopEnd { .. })));
}

#[tokio::test]
async fn a_judge_without_a_valid_number_selects_none_and_the_history_stays() {
    let judge = Arc::new(MockProvider::new([MockResponse::text("Both are fine."), MockResponse::text("7")]));
    let strategy = LlmJudgeEvaluation::new(config(&judge, "judge-model"));
    for _ in 0..2 {
        let configs: Vec<AgentLoopConfig> = [("a", 1), ("b", 2)].iter().map(|(t, n)| branch(t, *n).1).collect();
        let mut context = AgentContext::default();
        let (result, _) = run_parallel(vec![AgentMessage::user("q")], &mut context, &configs, &strategy).await;
        assert_eq!(result.selected_index, None);
        assert!(result.no_selection_reason.unwrap().starts_with("the judge named no candidate"));
        assert!(context.messages.is_empty(), "nothing adopted");
    }
}

#[tokio::test]
async fn answers_too_long_for_the_judge_are_compacted_for_it_only() {
    let judge = Arc::new(MockProvider::new([MockResponse::text("1")]));
    let mut judge_config = config(&judge, "judge-model");
    judge_config.context_config =
        Some(ContextConfig::default().with_max_context_tokens(3_000).with_system_prompt_tokens(500));
    let strategy = LlmJudgeEvaluation::new(judge_config);
    let long: String = (0..3_000).map(|i| format!("line {i} of a long answer\n")).collect();
    let configs = [branch(&long, 1).1, branch(&long, 2).1];
    let mut context = AgentContext::default();
    let (result, _) = run_parallel(vec![AgentMessage::user("q")], &mut context, &configs, &strategy).await;
    assert_eq!(result.selected_index, Some(0));
    let Message::User(user) = &judge.requests()[0].messages[0] else { panic!() };
    let judged = content::join_text(&user.content, "");
    assert!(HeuristicTokenCounter.count(&judged) <= 2_500, "{} tokens", HeuristicTokenCounter.count(&judged));
    assert!(judged.contains("earlier lines omitted"));
    // The winner's history is its own, uncompacted.
    assert_eq!(context.messages[1].as_assistant().unwrap().text(), long);
}

#[tokio::test]
async fn explore_branches_continues_one_history_in_several_ways() {
    let mock = Arc::new(MockProvider::from_fn(|request| {
        // Each branch answers what its last message said.
        let last = request.messages.last().map(|m| match m {
            Message::User(user) => content::join_text(&user.content, ""),
            _ => String::new(),
        });
        MockResponse::text(format!("answer to {}", last.unwrap_or_default()))
    }));
    let mut agent = Agent::new(Arc::clone(&mock), "main-model");
    let first = agent.prompt("start").finish().await;
    let before = agent.messages().to_vec();

    let branches = agent
        .explore_branches(vec![
            BranchSpec::new("polite").with_message(AgentMessage::user("say please")),
            BranchSpec::new("terse").with_message(AgentMessage::user("be brief")).with_model("other-model"),
            BranchSpec::new("slow").with_message(AgentMessage::user("never mind")),
        ])
        .unwrap();
    assert_eq!(agent.messages(), before, "exploring leaves the agent's history alone");
    let ids: Vec<String> = branches.iter().map(|b| b.loop_id.clone()).collect();
    assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 3, "distinct loop ids: {ids:?}");
    assert!(ids[1].contains(".other-model."), "{}", ids[1]);

    let mut outcomes = Vec::new();
    for mut branch in branches {
        let start = branch.events.recv().await.unwrap();
        let AgentEvent::AgentStart { parent_loop_id, continuation_kind, loop_id, .. } = start else {
            panic!("{start:?}")
        };
        assert_eq!(parent_loop_id.as_deref(), Some(first.loop_id.as_str()));
        assert_eq!(continuation_kind, Some(ContinuationKind::Branch { tag: branch.tag.clone() }));
        assert_eq!(*loop_id, *branch.loop_id);
        outcomes.push(branch.finish().await.unwrap());
    }
    let answers: Vec<String> = outcomes.iter().map(|o| o.outcome.final_text().unwrap()).collect();
    assert_eq!(answers, ["answer to say please", "answer to be brief", "answer to never mind"]);
    // Branches run concurrently: find the terse one's request by its model.
    let terse: Vec<usize> =
        mock.requests().iter().filter(|r| r.model == "other-model").map(|r| r.messages.len()).collect();
    assert_eq!(terse, [3], "one call on the other model, with the shared history and its message");

    agent.adopt_branch(&outcomes[1]);
    assert_eq!(agent.messages().len(), 4);
    assert_eq!(agent.last_loop_id(), Some(outcomes[1].outcome.loop_id.as_str()));
    assert_history_valid(agent.messages());

    // A branch that cannot continue (it ends with the model's answer) starts nothing.
    let error = agent.explore_branches(vec![BranchSpec::new("nothing new")]).unwrap_err();
    assert!(error.to_string().contains("branch nothing new"), "{error}");
}

#[tokio::test]
async fn a_branch_can_be_cancelled_alone() {
    let mock = Arc::new(MockProvider::from_fn(|request| {
        if request.model == "hanging" {
            MockResponse::new().text_delta("…").hang()
        } else {
            MockResponse::text("done")
        }
    }));
    let mut agent = Agent::new(Arc::clone(&mock), "m");
    agent.set_messages(vec![AgentMessage::user("q")]);
    let mut branches =
        agent.explore_branches(vec![BranchSpec::new("stuck").with_model("hanging"), BranchSpec::new("fine")]).unwrap();
    let fine = branches.pop().unwrap();
    let stuck = branches.pop().unwrap();
    stuck.cancel.cancel();
    assert_eq!(stuck.finish().await.unwrap().outcome.reason, EndReason::Aborted);
    assert_eq!(fine.finish().await.unwrap().outcome.reason, EndReason::Completed);
}

/// Reads a branch's events until its tool started.
async fn until_its_tool_runs(branch: &mut Branch) {
    loop {
        match branch.events.recv().await {
            Some(AgentEvent::ToolExecutionStart { .. }) => return,
            Some(_) => {}
            None => panic!("branch {} ended before its tool started", branch.tag),
        }
    }
}

/// Says when it is dropped: when the tool call holding it stopped.
struct Stopped(tokio::sync::mpsc::UnboundedSender<()>);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// Waits for a tool to stop; one that never does fails the test (30 s), instead of hanging it.
async fn stopped(receiver: &mut tokio::sync::mpsc::UnboundedReceiver<()>) {
    let stop = tokio::time::timeout(std::time::Duration::from_secs(30), receiver.recv()).await;
    assert!(matches!(stop, Ok(Some(()))), "the branch's tool kept running");
}

/// A tool that never finishes by itself, and says when it stopped.
fn blocking_tool(stopped: tokio::sync::mpsc::UnboundedSender<()>) -> sinew_testing::FnTool {
    sinew_testing::FnTool::new("wait", move |_, ctx| {
        let stopped = Stopped(stopped.clone());
        async move {
            let _stopped = stopped;
            ctx.cancel.cancelled().await;
            Err(ToolError::Cancelled)
        }
    })
}

#[tokio::test]
async fn a_dropped_branch_and_an_aborted_agent_stop_their_branches_tools_included() {
    let mock = Arc::new(MockProvider::from_fn(|_| MockResponse::new().tool_call("c", "wait", serde_json::json!({}))));
    let (tx, mut cancelled) = tokio::sync::mpsc::unbounded_channel();
    let mut agent = Agent::new(Arc::clone(&mock), "m").with_tool(blocking_tool(tx));
    agent.set_messages(vec![AgentMessage::user("q")]);

    // Dropped: its run is cancelled, the tool it was running too.
    let mut branches = agent.explore_branches(vec![BranchSpec::new("dropped")]).unwrap();
    let mut branch = branches.pop().unwrap();
    until_its_tool_runs(&mut branch).await;
    drop(branch);
    stopped(&mut cancelled).await;

    // Agent::abort reaches every branch still running.
    let branches = agent.explore_branches(vec![BranchSpec::new("one"), BranchSpec::new("two")]).unwrap();
    let mut started = Vec::new();
    for mut branch in branches {
        until_its_tool_runs(&mut branch).await;
        started.push(branch);
    }
    agent.abort();
    for branch in started {
        assert_eq!(branch.finish().await.unwrap().outcome.reason, EndReason::Aborted);
        stopped(&mut cancelled).await;
    }
    // A branch started after the abort is not aborted by it.
    let later = agent.explore_branches(vec![BranchSpec::new("later")]).unwrap().pop().unwrap();
    assert!(!later.cancel.is_cancelled());
}

#[tokio::test]
async fn continuing_branches_are_judged_on_the_last_user_message_and_what_came_before() {
    let judge = Arc::new(MockProvider::new([MockResponse::text("1")]));
    let strategy = LlmJudgeEvaluation::new(config(&judge, "judge-model"));
    let history = vec![AgentMessage::user("Hi."), assistant("Hello."), AgentMessage::user("And now?")];
    let branches = [outcome(0, EndReason::Completed, 1, "Now this.")];
    let input =
        EvaluationInput { prompts: &[], history: &history, branches: &branches, session_id: "S", group_id: "G" };
    let (message, fit) = strategy.judge_message(&input);
    assert_eq!(fit, JudgeFit::Fits);
    assert!(
        message.starts_with(
            "Conversation so far:\nUser: Hi.\n\nAssistant: Hello.\n\nQuery:\nAnd now?\n\nCandidates:\n\n[1]\nNow this.\n"
        ),
        "{message}"
    );
}

#[tokio::test]
async fn a_judge_that_cannot_fit_the_candidates_says_so_and_judges_anyway() {
    let judge = Arc::new(MockProvider::new([MockResponse::text("2")]));
    let mut judge_config = config(&judge, "judge-model");
    judge_config.context_config =
        Some(ContextConfig::default().with_max_context_tokens(300).with_system_prompt_tokens(100));
    let strategy = LlmJudgeEvaluation::new(judge_config);
    let configs = [branch("a", 1).1, branch("b", 2).1];
    let mut context = AgentContext::default();
    let query = "why? ".repeat(1_000);
    let (result, events) = run_parallel(vec![AgentMessage::user(query)], &mut context, &configs, &strategy).await;
    assert_eq!(result.selected_index, Some(1));
    let warning = events.iter().find_map(|e| match e {
        AgentEvent::ProgressMessage { loop_id, text, .. } => Some((loop_id.to_string(), text.clone())),
        _ => None,
    });
    let (loop_id, text) = warning.expect("a warning");
    assert_eq!(loop_id, format!("{}.judge", result.group_id));
    assert!(text.contains("do not fit the judge's context"), "{text}");
}

/// A strategy that names a branch that does not exist.
struct OutOfRange;

#[async_trait::async_trait]
impl EvaluationStrategy for OutOfRange {
    fn name(&self) -> &str {
        "out_of_range"
    }

    async fn evaluate(&self, _: EvaluationInput<'_>, _: &EventSender, _: &CancellationToken) -> Evaluation {
        Evaluation::free(EvaluationDecision::Select(9))
    }
}

#[tokio::test]
async fn a_strategy_naming_no_branch_or_a_failing_judge_selects_none() {
    let configs: Vec<AgentLoopConfig> = [("a", 1), ("b", 2)].iter().map(|(t, n)| branch(t, *n).1).collect();
    let mut context = AgentContext::default();
    let (result, events) = run_parallel(vec![AgentMessage::user("q")], &mut context, &configs, &OutOfRange).await;
    assert_eq!(result.selected_index, None);
    assert_eq!(result.no_selection_reason.as_deref(), Some("the strategy selected branch 9 of 2"));
    assert!(matches!(events.last(), Some(AgentEvent::ParallelLoopEnd { selected_loop_id: None, .. })));
    assert!(context.messages.is_empty());

    let judge = Arc::new(MockProvider::new([MockResponse::error(ProviderError::Auth("bad key".into()))]));
    let strategy = LlmJudgeEvaluation::new(config(&judge, "judge-model"));
    let configs: Vec<AgentLoopConfig> = [("a", 1), ("b", 2)].iter().map(|(t, n)| branch(t, *n).1).collect();
    let (result, _) = run_parallel(vec![AgentMessage::user("q")], &mut context, &configs, &strategy).await;
    assert_eq!(result.selected_index, None);
    let reason = result.no_selection_reason.unwrap();
    assert!(reason.starts_with("the judge did not finish (Failed: "), "{reason}");
}
