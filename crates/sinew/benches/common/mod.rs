//! What the end-to-end benchmarks share: options, the mock model process, the provider, the
//! `echo` tool, the CPU and memory readings and the report.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sinew::anthropic::{AnthropicConfig, AnthropicProvider};
use sinew::http::HttpClient;
use sinew::openai::{Auth, OpenAiChatConfig, OpenAiChatProvider};
use sinew::testing::FnTool;
use sinew::{RetryConfig, StreamProvider, ToolResult};

#[derive(Debug)]
pub(crate) struct Options {
    pub(crate) api: String,
    pub(crate) workload: String,
    pub(crate) turns: usize,
    pub(crate) tools: usize,
    pub(crate) tokens: usize,
    pub(crate) agents: usize,
    pub(crate) base_url: Option<String>,
    /// `bench adk` only: `sse` (fragments as events) or `none`.
    pub(crate) streaming: String,
    /// `bench adk` only: `delete` each turn's session once it is done, or `keep` them all.
    pub(crate) sessions: String,
    /// `bench e2e` only: `finish` each run (no event is built), or `read` every event of its
    /// stream, as an application showing them would.
    pub(crate) events: String,
}

pub(crate) fn options() -> Options {
    let mut o = Options {
        api: "openai".into(),
        workload: "seq".into(),
        turns: 0,
        tools: 10,
        tokens: 200,
        agents: 100,
        base_url: None,
        streaming: "sse".into(),
        sessions: "delete".into(),
        events: "finish".into(),
    };
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let number = || value.parse::<usize>().unwrap_or_else(|_| fail(&format!("{} needs a number", args[i])));
        match args[i].as_str() {
            "--api" => o.api = value.clone(),
            "--workload" => o.workload = value.clone(),
            "--turns" => o.turns = number(),
            "--tools" => o.tools = number(),
            "--tokens" => o.tokens = number(),
            "--agents" => o.agents = number(),
            "--base-url" => o.base_url = Some(value.clone()),
            "--streaming" => o.streaming = value.clone(),
            "--sessions" => o.sessions = value.clone(),
            "--events" => o.events = value.clone(),
            other => fail(&format!("unknown option {other}")),
        }
        i += 2;
    }
    if o.turns == 0 {
        o.turns = match o.workload.as_str() {
            "conc" => 5,
            "long" => 1_000,
            _ => 200,
        };
    }
    if !matches!(o.api.as_str(), "openai" | "anthropic")
        || !matches!(o.workload.as_str(), "seq" | "conc" | "long")
        || !matches!(o.streaming.as_str(), "sse" | "none")
        || !matches!(o.sessions.as_str(), "delete" | "keep")
        || !matches!(o.events.as_str(), "finish" | "read")
    {
        fail(
            "--api is openai or anthropic, --workload is seq, conc or long, --streaming is sse or none, \
             --sessions is delete or keep, --events is finish or read",
        );
    }
    if o.workload == "long" && o.turns < 2 {
        fail("--workload long needs 2 turns or more");
    }
    o
}

/// The process's CPU seconds (user + system, and user alone) at the marks `long` sets: its start,
/// the end of its first window, the start of its last window, its end.
static CPU_MARKS: std::sync::Mutex<Vec<(f64, f64)>> = std::sync::Mutex::new(Vec::new());

/// Records the CPU seconds so far (`long`'s windows).
#[allow(dead_code, reason = "`bench e2e` marks; `bench adk`, which shares this module, has no `long`")]
pub(crate) fn mark_cpu() {
    CPU_MARKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((cpu_seconds(), user_cpu_seconds()));
}

pub(crate) fn fail(message: &str) -> ! {
    eprintln!("bench: {message}");
    std::process::exit(2);
}

/// `echo`, counting its calls.
pub(crate) fn counting_echo(calls: Arc<AtomicUsize>) -> FnTool {
    FnTool::new("echo", move |arguments: Value, _| {
        calls.fetch_add(1, Ordering::Relaxed);
        async move { Ok(ToolResult::text(arguments["text"].as_str().unwrap_or_default())) }
    })
    .with_description("Returns the given text.")
    .with_schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
}

/// User + system CPU seconds of this process so far (all threads, those ended included), to the
/// microsecond: `/proc/self/stat` counts in hundredths, too coarse for a 0.06 s workload.
#[cfg(unix)]
pub(crate) fn cpu_seconds() -> f64 {
    let (user, system) = rusage_seconds();
    user + system
}

/// The user part of [`cpu_seconds`]: the client's own code, without the kernel's (which, for a
/// long conversation, is mostly sending its history on every call).
#[cfg(unix)]
pub(crate) fn user_cpu_seconds() -> f64 {
    rusage_seconds().0
}

#[cfg(unix)]
fn rusage_seconds() -> (f64, f64) {
    use nix::sys::resource::{UsageWho, getrusage};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else { return (0.0, 0.0) };
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    (seconds(usage.user_time()), seconds(usage.system_time()))
}

/// No CPU reading off unix: the figures read 0.
#[cfg(not(unix))]
pub(crate) fn cpu_seconds() -> f64 {
    0.0
}

/// No CPU reading off unix: the figures read 0.
#[cfg(not(unix))]
pub(crate) fn user_cpu_seconds() -> f64 {
    0.0
}

pub(crate) fn peak_rss_kb() -> u64 {
    sinew::testing::memory_kb("VmHWM").unwrap_or(0)
}

/// Starts `sinew-mockllm` on a free port and waits until it listens.
pub(crate) fn start_mock() -> (Child, String) {
    let binary = std::env::var("SINEW_MOCKLLM")
        .unwrap_or_else(|_| fail("set SINEW_MOCKLLM to the sinew-mockllm binary (cargo xtask bench e2e does)"));
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(8089);
    let child = Command::new(&binary)
        .arg(port.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start {binary}: {e}")));
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            fail("the mock server did not start");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, format!("http://127.0.0.1:{port}"))
}

pub(crate) fn provider(options: &Options, base_url: &str, client: &HttpClient) -> Arc<dyn StreamProvider> {
    match options.api.as_str() {
        "anthropic" => {
            let mut config = AnthropicConfig::new("bench-key");
            config.base_url = base_url.trim_end_matches('/').to_owned();
            Arc::new(AnthropicProvider::new(config).with_client(client.clone()).with_retry(RetryConfig::none()))
        }
        _ => {
            let config =
                OpenAiChatConfig::compatible("openai", format!("{}/v1", base_url.trim_end_matches('/')), Auth::None);
            Arc::new(OpenAiChatProvider::new(config).with_client(client.clone()).with_retry(RetryConfig::none()))
        }
    }
}

/// Runs the workload of `bench` (`e2e` or `adk`): `spawn_runs` starts the agents (one for `seq`,
/// `--agents` for `conc`) on the provider, each giving back its count of right final texts; prints
/// the report and `RESULT {json}`, and exits non-zero when a tool call or a final text is missing.
pub(crate) fn run_workload<F>(bench: &str, spawn_runs: F)
where
    F: FnOnce(Arc<dyn StreamProvider>, Arc<Options>, Arc<AtomicUsize>, usize) -> Vec<tokio::task::JoinHandle<usize>>,
{
    let options = Arc::new(options());
    let (mut mock, base_url) = match &options.base_url {
        Some(url) => (None, url.clone()),
        None => {
            let (child, url) = start_mock();
            (Some(child), url)
        }
    };
    let agents = if options.workload == "conc" { options.agents } else { 1 };
    let runtime = if agents > 1 {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    }
    .expect("a tokio runtime");
    let calls = Arc::new(AtomicUsize::new(0));
    let (cpu0, wall0) = (cpu_seconds(), Instant::now());
    let final_texts: usize = runtime.block_on(async {
        let client = HttpClient::builder().pool_max_idle_per_host(agents.max(32)).build();
        let provider = provider(&options, &base_url, &client);
        let runs = spawn_runs(provider, options.clone(), calls.clone(), agents);
        let mut total = 0;
        for run in runs {
            total += run.await.unwrap_or(0);
        }
        total
    });
    let (cpu, wall) = (cpu_seconds() - cpu0, wall0.elapsed().as_secs_f64());
    if let Some(child) = &mut mock {
        let _ = child.kill();
        let _ = child.wait();
    }
    let turns = agents * options.turns;
    let tool_calls = calls.load(Ordering::Relaxed);
    let ok = tool_calls == turns * options.tools && final_texts == turns;
    let rss = peak_rss_kb();
    println!(
        "api {} workload {} agents {agents} turns {turns} tools {} tokens {}",
        options.api, options.workload, options.tools, options.tokens
    );
    println!("client CPU {cpu:.3} s, wall {wall:.3} s, peak RSS {:.1} MB", rss as f64 / 1024.0);
    println!(
        "tool calls executed {tool_calls} (expected {}), final texts {final_texts} (expected {turns})",
        turns * options.tools
    );
    let per_turn_us = |seconds: f64, turns: usize| (seconds * 1e6 / turns.max(1) as f64).round();
    let mut result = json!({
        "api": options.api, "workload": options.workload, "streaming": options.streaming, "agents": agents, "turns": turns,
        "tool_calls_executed": tool_calls, "final_texts": final_texts,
        "workload_cpu_s": (cpu * 1000.0).round() / 1000.0, "workload_wall_s": (wall * 1000.0).round() / 1000.0,
        "cpu_per_turn_us": per_turn_us(cpu, turns),
        "peak_rss_kb": rss, "ok": ok,
    });
    if bench == "adk" {
        result["sessions"] = json!(options.sessions);
    } else {
        result["events"] = json!(options.events);
    }
    let marks = CPU_MARKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    if let [start, first_end, last_start, end] = marks[..] {
        let window = (options.turns / 2).min(100);
        let per_turn = |from: f64, to: f64| per_turn_us(to - from, window);
        let (first, last) = (per_turn(start.0, first_end.0), per_turn(last_start.0, end.0));
        let (first_user, last_user) = (per_turn(start.1, first_end.1), per_turn(last_start.1, end.1));
        println!("CPU per turn: first {window} turns {first} µs, last {window} turns {last} µs");
        println!("  of which user: first {first_user} µs, last {last_user} µs");
        result["first_turns_cpu_per_turn_us"] = json!(first);
        result["last_turns_cpu_per_turn_us"] = json!(last);
        result["last_over_first"] = json!((last / first.max(1.0) * 100.0).round() / 100.0);
        result["first_turns_user_cpu_per_turn_us"] = json!(first_user);
        result["last_turns_user_cpu_per_turn_us"] = json!(last_user);
        result["user_last_over_first"] = json!((last_user / first_user.max(1.0) * 100.0).round() / 100.0);
    }
    println!("RESULT {result}");
    if !ok {
        std::process::exit(1);
    }
}
